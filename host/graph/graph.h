/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/graph.h: the op graph a model builds for one batch shape.
//
// Tensors are F32 activations (or I32 ids), weights resident on the device, and
// KV layers of the pool. Every activation is a 2-D strided view: `rows` rows of
// ne[0] contiguous elements, `row_stride` elements apart, starting `off` elements
// into its storage; ne[1..3] only factor the rows. Ops are appended in execution
// order and validated as they are added (errors name the op and shapes, and
// carry a tdm_status: ops/op_def.h). The batch's positions and sequence ids are
// graph inputs that attention and kv_store use implicitly.
// Not here: memory planning and recording (executor.h), the ops themselves
// (validation and kernels: host/ops/).
#pragma once

#include <tandem/ops.h>

#include <array>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "vk/memory.h"

namespace tdm {

class DeviceWeight;
class OpContext;
struct OpDef;
struct CustomOp;

using TensorId = uint32_t;  // 0 = none
constexpr TensorId kNoTensor = 0;

enum class TensorKind : uint8_t {
    activation,  // produced by an op, placed by the planner
    input,       // written by the host before each run
    weight,
    kv,          // a KV layer of the pool
    state,       // a recurrent state of the pool (checkpointed per sequence)
    view,        // shares another tensor's storage
};

// One attention layer's KV storage in the paged pool (host/kv).
struct KvLayerBinding {
    vk::BufferSlice k, v;                       // [n_blocks][block_size][n_kv_head][d] each
    VkBufferView k_view = VK_NULL_HANDLE;       // texel views (RGBA16F / RGBA32F) on the texel path
    VkBufferView v_view = VK_NULL_HANDLE;
    bool f16 = true;
    uint32_t n_kv_head = 0, dk = 0, dv = 0;
    uint32_t block_size = 0, max_blocks = 0;    // block table: I32 [n_seq_slots][max_blocks]
    vk::BufferSlice block_table;
    // With staged I/O (vk::staged_io): the host's copy of block_table, which every graph
    // reading this layer copies into block_table at its start. Empty: the host writes
    // block_table itself (mapped device memory), or the table never changes (rings).
    vk::BufferSlice block_table_source;
    // Sliding-window ring (0 = linear): the layer keeps ring_blocks blocks per
    // sequence (max_blocks == ring_blocks) and position p lives in table entry
    // (p / block_size) % ring_blocks, i.e. slot p mod (ring_blocks * block_size).
    // Only attention with a window of at most `window` may read it.
    uint32_t ring_blocks = 0;
    uint32_t window = 0;                        // the layer's declared window (0: full attention)
    std::string name;
};

// One recurrent state (e.g. a Gated DeltaNet layer's conv or SSM state) in the
// pool: n_checkpoints copies per sequence slot. The batch's rows come in segments
// (runs of consecutive rows of one sequence); ops that update a state read, per
// segment, the checkpoint the graph's state_io input names for it, and write the
// state after row i into checkpoint state_io[1 + i] (-1: not written). state_io of
// a batch of n rows in S segments, I32 [state_io_entries(n)]:
//   [0] = S; [1 + i] = the checkpoint written after row i;
//   [1 + n + 2j] = the first row of segment j; [2 + n + 2j] = the checkpoint it reads.
// Float offset of (sequence s, checkpoint c): (s * n_checkpoints + c) * n_f32.
constexpr int64_t state_io_entries(int64_t n) { return 3 * n + 1; }
struct StateBinding {
    vk::BufferSlice buffer;
    uint64_t n_f32 = 0;
    uint32_t n_checkpoints = 0;
    std::string name;
};

struct Tensor {
    DType type = DType::F32;
    int64_t ne[4] = {1, 1, 1, 1};
    TensorKind kind = TensorKind::activation;
    TensorId base = kNoTensor;  // storage owner (itself unless a view)
    uint64_t off = 0;           // element offset into the base's storage
    uint64_t row_stride = 0;    // elements between consecutive rows
    const DeviceWeight* weight = nullptr;
    const KvLayerBinding* kv = nullptr;
    const StateBinding* state = nullptr;
    int producer = -1;          // node index, -1 for inputs/weights/kv/state
    vk::BufferSlice bound;      // an activation whose storage the caller owns (Graph::bind_storage)
    std::string name;

    int64_t cols() const { return ne[0]; }
    int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
    int64_t elements() const { return ne[0] * rows(); }
    bool contiguous() const { return row_stride == uint64_t(ne[0]); }
};

struct OpDesc {
    tdm_op op = TDM_OP_NONE;
    TensorId in[8] = {};
    int n_in = 0;
    int32_t i[16] = {};
    float f[8] = {};
    std::string name;  // optional: names the output (for taps and debugging)
    const CustomOp* custom = nullptr;  // TDM_OP_CUSTOM: the plugin's op (ops/custom_op.h)
};

struct Node {
    OpDesc desc;
    TensorId out = kNoTensor;
    TensorId out2 = kNoTensor;  // second output (top-k values)
    TensorId out3 = kNoTensor;  // third output (a fused matmul of three weights: graph/fusion.h)
    // Every result slot, kNoTensor where the node has none.
    std::array<TensorId, 3> results() const { return {out, out2, out3}; }
    // The batch the op belongs to (kv_store, attention, state ops): the graph's
    // batch inputs when the op was added. A graph that chains several steps
    // (draft heads) sets a new batch before each step.
    TensorId positions = kNoTensor, seq_ids = kNoTensor, state_io = kNoTensor;
    // A tree batch (Graph::attach_kv_tree): where each row stores its K/V and which
    // stored rows it attends to; kNoTensor: every row at its position, causally.
    TensorId kv_tree = kNoTensor;
};

// The kv_tree input of a tree batch, I32 [kKvTreeInts, n], per row {base, lo, hi}:
// (lo, hi) = 0 for an ordinary row. Otherwise the row is node i of a draft tree whose
// root is at position `base`; node j stores its K/V at position base + j; the 64-bit
// mask lo | hi << 32 has bit j set for each ancestor j of the row and for the row itself,
// so the row's key at position base + d (d = 0 .. its depth) is read from position
// base + (the d-th set bit). Attention keeps the key order, and so the reduction, of a
// plain decode of the row's path (host/speculative/draft_tree.h).
constexpr int64_t kKvTreeInts = 3;
constexpr uint32_t kKvTreeMaxNodes = 64;
struct KvTreeRow {
    int32_t base = 0;
    uint64_t ancestors = 0;  // 0: an ordinary row
};

class Graph {
public:
    Graph();

    TensorId input(DType type, std::vector<int64_t> ne, std::string name);
    TensorId weight(const DeviceWeight* w);
    // A weight view the graph owns (DeviceWeight::prefix): lives as long as the graph.
    TensorId owned_weight(std::shared_ptr<const DeviceWeight> w);
    TensorId kv(const KvLayerBinding* layer);
    TensorId state(const StateBinding* s);

    // The batch: positions (I32 [n]) and sequence ids (I32 [n]) used by
    // kv_store/attention. Set before adding those ops.
    void set_batch(TensorId positions, TensorId seq_ids);
    TensorId batch_positions() const { return positions_; }
    TensorId batch_seq_ids() const { return seq_ids_; }
    // Makes every op of the batch `positions` read the tree rows `tree` (I32
    // [kKvTreeInts, n], see kKvTreeInts); called after the model built its graph.
    void attach_kv_tree(TensorId positions, TensorId tree);
    // Makes every attention op of the batch `positions` let row t see the keys up to
    // bound[t] (I32 [n]) instead of up to its own position; kv_store still stores at the
    // positions. A block draft (tandem/ext/block_draft.h): its rows see the whole block.
    void bound_attention(TensorId positions, TensorId bound);
    // I32 [n + 1]: the checkpoint recurrent states are read from, then the one
    // each row's state is written to (-1 = none). Needed by state-updating ops.
    void set_state_io(TensorId t) { state_io_ = t; }
    TensorId state_io() const { return state_io_; }

    // Appends an op; returns its output tensor or an error naming the problem
    // (Error::code() is its tdm_status).
    Result<TensorId> op(const OpDesc& desc);
    // The int8 activation path: from now on a matmul of a Q8_0 weight quantizes its
    // f32 input to int8 blocks (once per input tensor, shared by the matmuls that read
    // it) and multiplies in integers (ops/matmul_q8.cpp). Faster on CPU devices; the
    // logits move by about the error of 8-bit activations, in plain and speculative
    // decoding alike (batch-invariant).
    void set_int8_matmul(bool on) { int8_matmul_ = on; }
    bool int8_matmul() const { return int8_matmul_; }
    TensorId second_output(TensorId out) const;

    // Keeps a tensor alive to the end and readable by the host after a run.
    Status mark_output(TensorId t);
    // Places an op result in memory the caller owns, which outlives the compiled
    // graph: another graph (run later) can read it there, on the device, without
    // a host copy (the target's hidden rows read by a draft head). The slice
    // must hold the whole tensor; checked when the graph is compiled.
    Status bind_storage(TensorId t, vk::BufferSlice slice);

    const Tensor& tensor(TensorId id) const { return tensors_[id]; }
    Tensor& tensor_mut(TensorId id) { return tensors_[id]; }
    size_t tensor_count() const { return tensors_.size(); }
    const std::vector<Node>& nodes() const { return nodes_; }
    // Replaces the node list (graph/fusion.cpp): the same tensors, produced by other
    // nodes; tensors no node produces any more are never placed.
    void replace_nodes(std::vector<Node> nodes);
    const std::vector<TensorId>& outputs() const { return outputs_; }
    const std::vector<TensorId>& inputs() const { return inputs_; }
    TensorId find(std::string_view name) const;  // last tensor with this name

    std::string describe(TensorId id) const;  // "q_proj f32 [2048, 4]"

private:
    friend class OpContext;  // ops create their results (ops/op_def.h)
    TensorId add_tensor(Tensor t);
    // The int8 form of a Q8_0 matmul, or kNoTensor when its inputs do not allow one.
    Result<TensorId> int8_matmul_op(const OpDesc& d);
    // Argmax in two passes (ops/argmax.cpp): the argmax_slices node, then the argmax node
    // that combines its partials (its second input).
    Result<TensorId> argmax_op(const OpDesc& d);
    // Validates d against def and appends its node (the input count is checked already).
    Result<TensorId> add_node(const OpDef& def, const OpDesc& d);
    Result<TensorId> add_activation(DType type, std::vector<int64_t> ne, int producer, std::string name);
    Result<TensorId> add_view(TensorId base, std::vector<int64_t> ne, uint64_t off, uint64_t row_stride,
                              std::string name);

    std::vector<Tensor> tensors_;
    std::vector<std::shared_ptr<const DeviceWeight>> owned_weights_;
    std::vector<Node> nodes_;
    std::vector<TensorId> outputs_, inputs_;
    TensorId positions_ = kNoTensor, seq_ids_ = kNoTensor, state_io_ = kNoTensor;
    bool int8_matmul_ = false;
    std::vector<std::pair<TensorId, TensorId>> quantized_;  // f32 input -> its quantize_q8 rows
};

// The op's name from the op table ("rms_norm"); "unknown" for other codes.
const char* op_name(tdm_op op);

}  // namespace tdm
