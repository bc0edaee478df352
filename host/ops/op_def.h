/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/op_def.h: one table of graph ops. Every op of tandem/ops.h is an
// OpDef (its code and name, input count, parameter check, validation with shape
// inference, recording), defined once in its op's file under host/ops/ and
// listed in ops_table.cpp. Graph::op, the executor, op_name() and the plugin
// capability queries (host/plugin/capabilities.cpp) all look ops up here, so a
// query and graph_op cannot disagree.
// Not here: graph building (graph/graph.h), memory planning (graph/executor.h),
// recording helpers (ops/record.h). How to add an op: ops/README.md.
//
// Status codes (tandem.h §2), carried by Error::coded: an unknown op or a
// parameter value the host does not implement -> TDM_ERR_UNSUPPORTED; a bad
// input count or an invalid tensor -> TDM_ERR_INVALID_ARGUMENT; mismatched
// shapes -> TDM_ERR_SHAPE; a wrong element type or tensor kind -> TDM_ERR_TYPE;
// over a host limit (ops/limits.h) -> TDM_ERR_LIMIT.
#pragma once

#include <tandem/tandem.h>

#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tdm {

struct RecordContext;
class OpContext;

enum OpFlags : uint32_t {
    kOpReadsBatch = 1u << 0,    // reads the node's batch positions and sequence ids (kv_store, attention)
    kOpReadsStateIo = 1u << 1,  // reads the node's sequence ids and state_io (recurrent-state ops)
    kOpWritesKv = 1u << 2,      // writes input 0's KV layer; its output is that layer (kv_store)
    // reads / writes the device's split attention partials (graph/attention_scratch.h)
    kOpReadsSplitScratch = 1u << 3,
    kOpWritesSplitScratch = 1u << 4,
};

struct OpDef {
    tdm_op code;
    const char* name;  // "rms_norm": messages and profiles
    int min_inputs, max_inputs;
    uint32_t flags;  // OpFlags
    // The parameters alone (i[], f[], custom), no inputs: graph_op and
    // query_op both call it. nullptr: nothing to check.
    Status (*check_params)(const OpDesc& d);
    // Inputs and shapes (the input count and the parameters are checked
    // already); creates the op's output tensor(s) through the context.
    Status (*validate)(OpContext& c);
    // Records the op's dispatches. nullptr: a view, no work on the device.
    // `label` names the dispatches in profiles.
    Status (*record)(RecordContext& c, const Node& n, const std::string& label);
    // Ops that read weights: the shader families the op needs for a weight
    // type ("<family>_<type>_<tex|buf>", e.g. "matmul" -> matmul_q8_0_tex),
    // nullptr-terminated; query_weight_type looks them up. nullptr: no weights.
    const char* const* weight_shaders = nullptr;
};

// Host-internal ops: the graph adds them itself (never a plugin: graph_op and
// query_op know only the public codes). Codes far above any public one.
constexpr tdm_op kOpInternalQuantizeQ8 = tdm_op(0x40000000);  // ops/matmul_q8.cpp
constexpr tdm_op kOpInternalMatmulQ8 = tdm_op(0x40000001);
constexpr tdm_op kOpInternalNormRope = tdm_op(0x40000002);       // ops/norm_rope.cpp (graph/fusion.cpp)
constexpr tdm_op kOpInternalNormRopeStore = tdm_op(0x40000003);
constexpr tdm_op kOpInternalMatmulGroup = tdm_op(0x40000004);    // ops/matmul_group.cpp (graph/fusion.cpp)
constexpr tdm_op kOpInternalNormAdd = tdm_op(0x40000005);        // ops/norm_add.cpp (graph/fusion.cpp)
constexpr tdm_op kOpInternalArgmaxSlices = tdm_op(0x40000006);  // ops/argmax.cpp
constexpr tdm_op kOpInternalAttentionPartials = tdm_op(0x40000007);  // ops/attention_split.cpp
constexpr tdm_op kOpInternalAttentionCombine = tdm_op(0x40000008);   // (graph/split_attention.cpp)
constexpr tdm_op kOpInternalAttentionFolded = tdm_op(0x40000009);
constexpr tdm_op kOpInternalMatmulGlu = tdm_op(0x4000000A);  // ops/matmul_glu.cpp (graph/fusion_glu.cpp)
constexpr tdm_op kOpInternalMatmulActMul = tdm_op(0x4000000B);  // ops/matmul_act_mul.cpp (graph/fusion_glu.cpp)
// Columns of a row that one workgroup of argmax's first pass reduces, and the slices of a
// row of `cols` (argmax_slices' result holds a value and an index per slice and row).
constexpr uint32_t kArgmaxSlice = 1024;
uint32_t argmax_slices(int64_t cols);
// Words per row of quantize_q8's result for rows of k elements (ops/matmul_q8.cpp).
uint32_t q8_row_words(int64_t k);

// The op with this code (public or host-internal), or nullptr for codes this host does not know.
const OpDef* find_op(uint32_t code);
// A public op (tandem/ops.h) with this code, or nullptr: what plugins may ask for.
const OpDef* find_public_op(uint32_t code);
// Every op, by code (codes without an op are skipped).
std::span<const OpDef* const> all_ops();
// Whether a plugin of ABI `abi`, minor `minor` may use public op `code`: an op
// added in a minor version (tandem/op_list.h) only from that minor on. An
// unknown code or an op of a later minor: TDM_ERR_UNSUPPORTED.
Status op_offered(uint32_t code, uint32_t abi, uint32_t minor);
// Highest op code this host knows.
uint32_t max_op_code();
// The error for an unknown op code (TDM_ERR_UNSUPPORTED).
Error unknown_op(uint32_t code);

// What an op's validate() sees while Graph::op adds it: the inputs, checks
// shared by many ops, and the ways to create the op's result.
class OpContext {
public:
    OpContext(Graph& g, const OpDesc& d, const OpDef& def, int node, std::string name)
        : d(d), g_(g), def_(def), node_(node), name_(std::move(name)) {}

    const OpDesc& d;
    const char* op() const { return def_.name; }
    const Tensor& in(int k) const { return g_.tensors_[d.in[k]]; }
    std::string describe(int k) const { return g_.describe(d.in[k]); }
    std::string describe_tensor(TensorId t) const { return g_.describe(t); }
    const Tensor& tensor(TensorId t) const { return g_.tensors_[t]; }

    // Input k is an f32 activation (not a weight, KV layer or state). TDM_ERR_TYPE.
    Status f32(int k) const;
    // Input k is an f32 activation or a small (single-chunk) f32 weight. TDM_ERR_TYPE.
    Status f32_or_weight(int k) const;
    // Input k is a weight. TDM_ERR_TYPE.
    Status weight(int k) const;
    // The batch positions set on the graph (kv_store, attention), or an error.
    Result<const Tensor*> batch_positions() const;
    // The state_io (I32 [state_io_entries(n)]) and seq_ids inputs a state-updating op of n rows reads.
    Status state_inputs(int64_t n) const;

    // The result: a new activation of this type and shape.
    Status output(DType type, std::vector<int64_t> ne);
    // A second result, named "<name>.<suffix>" (top-k's values, add_rms_norm's norm).
    Status second_output(DType type, std::vector<int64_t> ne, const char* suffix = "values");
    // The result is a view of input k's storage (no copy).
    Status view(int k, std::vector<int64_t> ne, uint64_t off, uint64_t row_stride);
    // The result is input k itself, now produced by this node (kv_store).
    void pass_through(int k);

    TensorId out = kNoTensor, out2 = kNoTensor;

private:
    Graph& g_;
    const OpDef& def_;
    int node_;
    std::string name_;
};

}  // namespace tdm
