/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/executor.h: turns a Graph into a recorded command buffer and runs it.
//
// compile() first fuses op chains (graph/fusion.h, unless CompileOptions::fuse is off)
// and gives attention in the split layout its kernels (graph/split_attention.h),
// then places every activation in one device arena by liveness (a tensor's
// memory is reused once its last reader has run), gets every pipeline, and
// records all dispatches with the barriers their read/write hazards need into a
// single command buffer. Inputs and outputs (Graph::mark_output) live in device
// memory too: the host writes the inputs before each run and reads the outputs after
// it through the mapping where device memory is host-visible, else through host-memory
// staging that the command buffer copies in at its start (with the KV block tables)
// and out at its end (vk::staged_io), so that no dispatch reads host memory. The
// recorded buffer is replayed by every run(), so a model keeps one compiled graph
// per batch shape; positions, sequence ids and block tables are device data, not
// recorded constants, so the same graph serves every step.
// Outputs named in CompileOptions::read_on_request (the logits, which a greedy step does
// not need: its token ids come from the in-graph argmax) reach the host only after a run
// that asks for them (submit(true)): on the staged path a second, copies-only command
// buffer follows the graph's in the same submission; on either path output_data() of
// such an output is null after a run that did not ask, so that a reader that forgot to
// ask fails on lavapipe as it would on a GPU.
// With CompileOptions::probe_non_finite, every op's f32 result is also scanned for
// NaN/Inf as the graph runs (graph/finite_probe.h): a debugging aid, off by default.
// Split attention (graph/split_attention.h) is the one part sized per run: submit() sets
// its passes' grids from the positions the host wrote (graph/split_attention_grid.h) and,
// when the run needs more of the device's shared partials than the buffer the graph was
// recorded with, records the graph again with a larger one (graph/attention_scratch.h).
// A graph holds that buffer only from submit() to wait(): an idle graph pins no memory,
// and records again when the device's partials were replaced while it was idle.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/attention_scratch.h"
#include "graph/finite_probe.h"
#include "graph/graph.h"
#include "graph/split_attention_grid.h"
#include "vk/recorder.h"

namespace tdm {

// What one run of a compiled graph records: deterministic for a graph's shape.
struct GraphCounts {
    uint32_t dispatches = 0;
    uint32_t barriers = 0;
    uint32_t host_memory_dispatches = 0;  // dispatches binding a host-memory buffer
};

struct CompileOptions {
    bool probe_non_finite = false;  // scan each op's result for NaN/Inf (slow: TANDEM_CHECK_NAN=1)
    bool fuse = true;               // fuse op chains first (graph/fusion.h; off under probe_non_finite)
    std::vector<TensorId> read_on_request;  // outputs read back only by submit(true)
};

class CompiledGraph {
public:
    static Result<std::unique_ptr<CompiledGraph>> compile(vk::Device& device, vk::PipelineManager& pipelines,
                                                          Graph graph, const CompileOptions& options = {});
    ~CompiledGraph();

    const Graph& graph() const { return graph_; }

    // Host memory of an input tensor (elements() * element size bytes).
    void* input_data(TensorId t) { return const_cast<void*>(std::as_const(*this).input_data(t)); }
    const void* input_data(TensorId t) const;
    template <class T>
    T* input_as(TensorId t) { return static_cast<T*>(input_data(t)); }
    // Host memory of an output tensor; valid after wait()/run(). Null for an output read
    // on request when the last submit() did not ask for it.
    const void* output_data(TensorId t) const;
    template <class T>
    const T* output_as(TensorId t) const { return static_cast<const T*>(output_data(t)); }

    // read_requested: also bring back the outputs of CompileOptions::read_on_request.
    Status submit(bool read_requested = true);
    Status wait();
    Status run(bool read_requested = true) {
        TDM_TRY(submit(read_requested));
        return wait();
    }
    bool pending() const { return cb_->pending(); }

    uint64_t activation_bytes() const { return activation_bytes_; }
    uint32_t dispatch_count() const { return cb_->dispatch_count(); }
    uint32_t barrier_count() const { return barriers_; }
    // Dispatches that bind a buffer in host memory (graph inputs and outputs, KV block
    // tables): on a GPU each such read or write crosses PCIe. Deterministic, like the
    // two counts above, so tests may hold a model to a budget of each.
    uint32_t host_memory_dispatch_count() const { return host_memory_dispatches_; }
    GraphCounts counts() const { return {dispatch_count(), barriers_, host_memory_dispatches_}; }
    // What the last submit()'s split attention passes took (graph/split_attention_grid.h);
    // zero without split passes. Deterministic for the batch, like the counts.
    const SplitAttentionRun& split_attention_run() const { return split_run_; }
    // The device's split attention partials this graph records and runs with (for kernels
    // as they record; empty without split passes, and while the graph is idle).
    vk::BufferSlice split_scratch() const;

    // After wait()/run() of a graph compiled with probe_non_finite: the first op, in
    // execution order, whose result held a NaN or infinity. nullopt without probes.
    std::optional<ProbedTensor> first_non_finite() const;
    bool has_non_finite_probes() const { return probes_ != nullptr; }

    // Storage of a tensor's base (for kernels).
    vk::BufferSlice storage(TensorId t) const;
    // An RGBA32F texel view of a tensor's base storage (created on first use).
    Result<VkBufferView> texel_view(TensorId t) const;
    // A texel view of any slice (the span of several weights a grouped matmul reads),
    // created on first use and kept as long as the graph.
    Result<VkBufferView> span_view(const vk::BufferSlice& s, VkFormat format) const;

private:
    CompiledGraph(vk::Device& d, vk::PipelineManager& p, Graph g) : device_(d), pipelines_(p), graph_(std::move(g)) {}
    Status plan(const std::vector<TensorId>& read_on_request);
    bool read_on_request(TensorId t) const;
    // Records (again, after the split scratch grew) the graph's command buffers. A failure
    // leaves the graph marked unrecorded, so the next submit records again instead of running
    // half-recorded commands or ones that name a released scratch.
    Status record();
    Status record_commands();  // record()'s work
    // Before a run: the split passes' grids, and a scratch large enough for them.
    Status size_split_attention();

    vk::Device& device_;
    vk::PipelineManager& pipelines_;
    Graph graph_;
    std::unique_ptr<vk::Buffer> activations_, inputs_, outputs_;
    // staged I/O only: what the host writes and reads, copied in and out by the command buffer
    std::unique_ptr<vk::Buffer> input_staging_, output_staging_;
    // outputs_ holds the outputs always read back, then those read on request
    uint64_t in_bytes_ = 0, out_bytes_ = 0, out_always_bytes_ = 0;
    std::vector<TensorId> on_request_;  // base tensors of CompileOptions::read_on_request
    bool read_requested_ = true;        // by the last submit()
    std::unique_ptr<vk::CommandBuffer> readback_cb_;  // staged I/O: copies of the on-request outputs
    std::unordered_map<TensorId, vk::BufferSlice> storage_;  // by base tensor id
    mutable std::unordered_map<TensorId, VkBufferView> views_;  // by base tensor id
    struct SpanView {
        VkBuffer buffer;
        uint64_t offset, size;
        VkFormat format;
        VkBufferView view;
    };
    mutable std::vector<SpanView> span_views_;
    std::unique_ptr<vk::CommandBuffer> cb_;
    std::unique_ptr<FiniteProbes> probes_;  // only with probe_non_finite
    // split attention: the grids' writer, the device's scratch, the buffer held while
    // recording or in flight (null while idle) and the generation cb_ was recorded with
    std::unique_ptr<SplitAttentionGrid> split_grid_;
    std::shared_ptr<AttentionScratch> split_scratch_owner_;
    AttentionScratch::Lease split_scratch_;
    uint64_t recorded_generation_ = 0;  // 0: cb_ is not recorded against any (a failed record)
    SplitAttentionRun split_run_;
    uint64_t activation_bytes_ = 0;
    uint32_t barriers_ = 0;
    uint32_t host_memory_dispatches_ = 0;
};

}  // namespace tdm
