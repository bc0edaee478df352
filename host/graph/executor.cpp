// SPDX-License-Identifier: Apache-2.0
// host/graph/executor.cpp: memory planning, hazard tracking and recording.
#include "graph/executor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "common/clock.h"
#include "common/log.h"
#include "graph/fusion.h"
#include "graph/fusion_glu.h"
#include "graph/split_attention.h"
#include "graph/weight.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

constexpr uint64_t kAlign = 256;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// llvmpipe (lavapipe) compiles a separate variant of a shader for each
// combination of "is the buffer behind this texel view a power-of-two size"
// (lp_sampler_static_texture_state: pot_width of the resource), and a variant
// of a large kernel costs seconds of LLVM time. Graph buffers whose size
// depends on the batch would flip that bit between batch sizes; keeping them
// never a power of two gives one variant for every graph.
uint64_t jit_stable_size(uint64_t bytes) { return (bytes & (bytes - 1)) == 0 ? bytes + kAlign : bytes; }

uint64_t tensor_bytes(const Tensor& t) {
    // Activations and inputs are 4-byte elements (f32 / i32), rounded to whole
    // 16-byte texels so that any tensor can also be read through a texel view.
    return align_up(uint64_t(t.elements()) * 4, 16);
}

// A node as per-dispatch profiles name it. bytes_read: the activations it reads, and of
// a weight what a kernel streams: all of it for a matmul (matmul_id: every expert, an
// upper bound), the gathered rows for get_rows. KV and recurrent state reads are not
// counted: they depend on the positions, which a recorded graph does not know.
vk::DispatchNote dispatch_note(const Graph& g, uint32_t index, const Node& node) {
    const OpDesc& d = node.desc;
    vk::DispatchNote n;
    n.node = index;
    n.name = d.name;
    n.op = op_name(d.op);
    n.shape = g.describe(node.out);
    for (int k = 0; k < d.n_in; ++k) {
        const Tensor& t = g.tensor(d.in[k]);
        if (t.kind == TensorKind::weight && t.weight) {
            n.weight_type = std::string(dtype_name(t.weight->type()));
            uint64_t bytes = t.weight->device_bytes();
            if (d.op == TDM_OP_GET_ROWS && t.weight->rows() > 0)
                bytes = bytes / uint64_t(t.weight->rows()) * uint64_t(g.tensor(node.out).rows());
            n.bytes_read += bytes;
        } else if (t.kind == TensorKind::activation || t.kind == TensorKind::input || t.kind == TensorKind::view) {
            n.bytes_read += uint64_t(t.elements()) * 4;
        }
    }
    return n;
}

// First-fit allocator over one address range; blocks freed when their tensor dies.
class FirstFit {
public:
    uint64_t alloc(uint64_t size) {
        size = align_up(size, kAlign);
        uint64_t at = 0;
        for (const auto& [off, sz] : used_) {
            if (off >= at + size) break;
            at = std::max(at, align_up(off + sz, kAlign));
        }
        used_.emplace(at, size);
        top_ = std::max(top_, at + size);
        return at;
    }
    void free(uint64_t off) { used_.erase(off); }
    uint64_t top() const { return top_; }

private:
    std::map<uint64_t, uint64_t> used_;  // offset -> size, ordered
    uint64_t top_ = 0;
};

struct Range {
    VkBuffer buffer;
    uint64_t begin, end;
    bool host_memory;  // in a MemoryKind::host buffer: counted; hazards are found as for any range
    bool overlaps(const Range& o) const { return buffer == o.buffer && begin < o.end && o.begin < end; }
};

}  // namespace

vk::BufferSlice CompiledGraph::storage(TensorId t) const {
    auto it = storage_.find(graph_.tensor(t).base);
    TDM_ASSERT(it != storage_.end());
    return it->second;
}

Result<VkBufferView> CompiledGraph::texel_view(TensorId t) const {
    const TensorId base = graph_.tensor(t).base;
    if (auto it = views_.find(base); it != views_.end()) return it->second;
    const vk::BufferSlice s = storage(t);
    VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    ci.buffer = s.handle();
    ci.format = VK_FORMAT_R32G32B32A32_SFLOAT;
    ci.offset = s.offset;
    ci.range = s.size;
    VkBufferView view = VK_NULL_HANDLE;
    TDM_VK_CHECK(device_.fn().vkCreateBufferView(device_.handle(), &ci, nullptr, &view),
                 fmt::format("texel view of {}", graph_.describe(t)));
    views_[base] = view;
    return view;
}

Result<VkBufferView> CompiledGraph::span_view(const vk::BufferSlice& s, VkFormat format) const {
    for (const SpanView& v : span_views_)
        if (v.buffer == s.handle() && v.offset == s.offset && v.size == s.size && v.format == format) return v.view;
    VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    ci.buffer = s.handle();
    ci.format = format;
    ci.offset = s.offset;
    ci.range = s.size;
    VkBufferView view = VK_NULL_HANDLE;
    TDM_VK_CHECK(device_.fn().vkCreateBufferView(device_.handle(), &ci, nullptr, &view), "texel view of a weight span");
    span_views_.push_back({s.handle(), s.offset, s.size, format, view});
    return view;
}

vk::BufferSlice CompiledGraph::split_scratch() const {
    vk::Buffer* b = split_scratch_.buffer.get();
    if (!b) return {};
    return {b, 0, b->size()};
}

const void* CompiledGraph::input_data(TensorId t) const {
    TDM_ASSERT(graph_.tensor(t).kind == TensorKind::input);
    // the staging copy has the inputs buffer's layout
    if (input_staging_) return input_staging_->mapped() + storage(t).offset;
    return storage(t).mapped();
}

bool CompiledGraph::read_on_request(TensorId t) const {
    return std::find(on_request_.begin(), on_request_.end(), graph_.tensor(t).base) != on_request_.end();
}

const void* CompiledGraph::output_data(TensorId t) const {
    if (!read_requested_ && read_on_request(t)) return nullptr;
    const vk::BufferSlice s = storage(t);
    // outputs the graph placed (not bound ones) are read from the copy of their buffer
    if (output_staging_ && s.buffer == outputs_.get()) return output_staging_->mapped() + s.offset;
    return s.mapped();
}

Status CompiledGraph::plan(const std::vector<TensorId>& read_on_request) {
    const auto& nodes = graph_.nodes();
    const size_t n_tensors = graph_.tensor_count();
    std::vector<int> last_use(n_tensors, -1);
    std::vector<bool> is_output(n_tensors, false);
    for (TensorId o : graph_.outputs()) is_output[graph_.tensor(o).base] = true;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const OpDesc& d = nodes[i].desc;
        for (int k = 0; k < d.n_in; ++k) {
            const TensorId b = graph_.tensor(d.in[k]).base;
            last_use[b] = std::max(last_use[b], int(i));
        }
        // batch tensors of chained steps may be op results (a draft token from argmax)
        for (TensorId t : {nodes[i].positions, nodes[i].seq_ids, nodes[i].state_io, nodes[i].kv_tree})
            if (t != kNoTensor) last_use[graph_.tensor(t).base] = std::max(last_use[graph_.tensor(t).base], int(i));
    }

    // inputs and outputs: host-visible buffers
    uint64_t in_bytes = 0, out_bytes = 0;
    std::vector<uint64_t> in_off(n_tensors), out_off(n_tensors);
    for (TensorId t : graph_.inputs()) {
        in_off[t] = in_bytes;
        in_bytes = align_up(in_bytes + tensor_bytes(graph_.tensor(t)), kAlign);
    }
    for (TensorId t : read_on_request) {
        const TensorId b = graph_.tensor(t).base;
        if (!is_output[b] || graph_.tensor(b).kind != TensorKind::activation || graph_.tensor(b).bound)
            return Error::format("{} is read on request but is not a graph output", graph_.describe(t));
        on_request_.push_back(b);
    }
    // the outputs always read back first, then those read on request: two contiguous copies
    for (const bool on_request : {false, true}) {
        for (TensorId t = 1; t < n_tensors; ++t) {
            const Tensor& x = graph_.tensor(t);
            if (x.kind != TensorKind::activation || !is_output[t]) continue;
            if ((std::find(on_request_.begin(), on_request_.end(), t) != on_request_.end()) != on_request) continue;
            out_off[t] = out_bytes;
            out_bytes = align_up(out_bytes + tensor_bytes(x), kAlign);
        }
        if (!on_request) out_always_bytes_ = out_bytes;
    }

    // activations: first fit by liveness, in node order
    FirstFit ff;
    std::vector<uint64_t> act_off(n_tensors, 0);
    std::vector<bool> placed(n_tensors, false);
    for (size_t i = 0; i < nodes.size(); ++i) {
        for (TensorId o : nodes[i].results()) {
            if (o == kNoTensor) continue;
            const Tensor& x = graph_.tensor(o);
            if (x.kind != TensorKind::activation || is_output[o] || x.bound) continue;
            act_off[o] = ff.alloc(tensor_bytes(x));
            placed[o] = true;
            if (last_use[o] < 0) last_use[o] = int(i);  // unused result: dies at once
        }
        // free what dies here (after the outputs are placed: no in-place aliasing)
        const OpDesc& d = nodes[i].desc;
        for (int k = 0; k < d.n_in; ++k) {
            const TensorId b = graph_.tensor(d.in[k]).base;
            if (placed[b] && last_use[b] == int(i)) {
                ff.free(act_off[b]);
                placed[b] = false;
            }
        }
        for (TensorId o : nodes[i].results())
            if (o != kNoTensor && placed[o] && last_use[o] == int(i)) {
                ff.free(act_off[o]);
                placed[o] = false;
            }
    }
    activation_bytes_ = ff.top();

    if (activation_bytes_)
        activations_ = TDM_TRY(vk::Buffer::create(device_, jit_stable_size(activation_bytes_), vk::MemoryKind::device,
                                                  "graph activations"));
    const bool staged = vk::staged_io(device_);
    in_bytes_ = in_bytes;
    out_bytes_ = out_bytes;
    if (in_bytes) {
        inputs_ = TDM_TRY(vk::Buffer::create(device_, jit_stable_size(in_bytes), vk::MemoryKind::device, "graph inputs"));
        if (staged)
            input_staging_ = TDM_TRY(vk::Buffer::create(device_, jit_stable_size(in_bytes), vk::MemoryKind::host,
                                                        "graph inputs (host copy)"));
        // an input the host never writes (a step of a draft chain left unused) reads as
        // zeros, not as whatever the memory held: split attention sizes its grid from the
        // positions the host sees (graph/split_attention_grid.h)
        vk::Buffer& host_inputs = input_staging_ ? *input_staging_ : *inputs_;
        if (host_inputs.mapped()) std::memset(host_inputs.mapped(), 0, host_inputs.size());
    }
    if (out_bytes) {
        outputs_ =
            TDM_TRY(vk::Buffer::create(device_, jit_stable_size(out_bytes), vk::MemoryKind::device, "graph outputs"));
        if (staged)
            output_staging_ = TDM_TRY(vk::Buffer::create(device_, jit_stable_size(out_bytes), vk::MemoryKind::host,
                                                         "graph outputs (host copy)"));
    }

    for (TensorId t : graph_.inputs())
        storage_[t] = {inputs_.get(), in_off[t], std::max<uint64_t>(4, tensor_bytes(graph_.tensor(t)))};
    for (TensorId t = 1; t < n_tensors; ++t) {
        const Tensor& x = graph_.tensor(t);
        if (x.kind != TensorKind::activation) continue;
        const uint64_t bytes = tensor_bytes(x);
        if (x.bound) {
            if (x.bound.size < bytes)
                return Error::format("{} is bound to {} bytes, it needs {}", graph_.describe(t), x.bound.size, bytes);
            storage_[t] = x.bound.sub(0, bytes);
        } else if (is_output[t]) {
            storage_[t] = {outputs_.get(), out_off[t], bytes};
        } else {
            storage_[t] = {activations_.get(), act_off[t], bytes};
        }
    }
    return {};
}

Status CompiledGraph::record() {
    recorded_generation_ = 0;
    TDM_TRY(record_commands());
    recorded_generation_ = split_scratch_.generation;
    return {};
}

Status CompiledGraph::record_commands() {
    barriers_ = 0;
    host_memory_dispatches_ = 0;
    readback_cb_.reset();
    cb_ = TDM_TRY(vk::CommandBuffer::create(device_));
    TDM_TRY(cb_->begin());
    RecordContext ctx{device_, pipelines_, *cb_, graph_, *this};

    // Staged I/O: the host's inputs and block tables are copied to the device first, and
    // one barrier orders the copies before every dispatch.
    bool copied_in = false;
    if (input_staging_) {
        cb_->record_copy({input_staging_.get(), 0, in_bytes_}, {inputs_.get(), 0, in_bytes_}, in_bytes_);
        copied_in = true;
    }
    std::vector<VkBuffer> tables_copied;
    for (TensorId t = 1; t < graph_.tensor_count(); ++t) {
        const Tensor& x = graph_.tensor(t);
        if (x.kind != TensorKind::kv || !x.kv->block_table_source) continue;
        const vk::BufferSlice& src = x.kv->block_table_source;
        if (std::find(tables_copied.begin(), tables_copied.end(), src.handle()) != tables_copied.end()) continue;
        cb_->record_copy(src, x.kv->block_table, std::min(src.size, x.kv->block_table.size));
        tables_copied.push_back(src.handle());
        copied_in = true;
    }
    if (copied_in) {
        cb_->record_barrier();
        ++barriers_;
    }

    std::vector<Range> pending_reads, pending_writes;
    auto slice_range = [](const vk::BufferSlice& s) -> Range {
        return {s.handle(), s.offset, s.offset + s.size, s.buffer->kind() == vk::MemoryKind::host};
    };
    auto range_of = [&](TensorId t) -> Range { return slice_range(storage(t)); };
    // Graphs submitted before this one may still use the device's shared split scratch:
    // their use counts as a pending write, so the first pass here waits for it unless a
    // barrier comes first anyway (a barrier orders all work submitted earlier to the queue).
    if (split_scratch_.buffer && !copied_in) pending_writes.push_back(slice_range(split_scratch()));
    // A barrier before a dispatch that reads what a pending one writes, or writes what
    // a pending one reads or writes.
    auto order_after_pending = [&](const std::vector<Range>& reads, const std::vector<Range>& writes) {
        bool hazard = false;
        for (const Range& r : reads)
            for (const Range& w : pending_writes) hazard |= r.overlaps(w);
        for (const Range& w : writes) {
            for (const Range& pw : pending_writes) hazard |= w.overlaps(pw);
            for (const Range& pr : pending_reads) hazard |= w.overlaps(pr);
        }
        if (hazard) {
            cb_->record_barrier();
            ++barriers_;
            pending_reads.clear();
            pending_writes.clear();
        }
        pending_reads.insert(pending_reads.end(), reads.begin(), reads.end());
        pending_writes.insert(pending_writes.end(), writes.begin(), writes.end());
    };

    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
        const Node& node = graph_.nodes()[i];
        const OpDesc& d = node.desc;
        const OpDef* def = find_op(d.op);
        TDM_ASSERT(def);  // Graph::op added only known ops
        if (!def->record) continue;  // a view: no work
        std::vector<Range> reads, writes;
        for (int k = 0; k < d.n_in; ++k) {
            const Tensor& t = graph_.tensor(d.in[k]);
            if (t.kind == TensorKind::weight) continue;  // never written
            if (t.kind == TensorKind::kv) {
                reads.push_back(slice_range(t.kv->k));
                reads.push_back(slice_range(t.kv->v));
                reads.push_back(slice_range(t.kv->block_table));
                continue;
            }
            if (t.kind == TensorKind::state) {  // read the current checkpoint, write the next ones
                reads.push_back(slice_range(t.state->buffer));
                writes.push_back(slice_range(t.state->buffer));
                continue;
            }
            reads.push_back(range_of(d.in[k]));
        }
        if (def->flags & kOpReadsBatch) {
            reads.push_back(range_of(node.positions));
            reads.push_back(range_of(node.seq_ids));
            if (node.kv_tree != kNoTensor) reads.push_back(range_of(node.kv_tree));
        }
        if (def->flags & kOpReadsSplitScratch) reads.push_back(slice_range(split_scratch()));
        if (def->flags & kOpWritesSplitScratch) writes.push_back(slice_range(split_scratch()));
        if (def->flags & kOpReadsStateIo) {
            reads.push_back(range_of(node.seq_ids));
            reads.push_back(range_of(node.state_io));
        }
        if (def->flags & kOpWritesKv) {
            const KvLayerBinding* kv = graph_.tensor(d.in[0]).kv;
            writes.push_back(slice_range(kv->k));
            writes.push_back(slice_range(kv->v));
            if (node.out2 != kNoTensor) writes.push_back(range_of(node.out2));  // norm_rope_store's queries
        } else {
            for (TensorId o : node.results())
                if (o != kNoTensor) writes.push_back(range_of(o));
        }

        order_after_pending(reads, writes);
        const uint32_t dispatches_before = cb_->dispatch_count();
        TDM_TRY_CTX(record_node(ctx, node), fmt::format("recording {} '{}'", op_name(d.op), d.name));
        if (device_.profiling())
            cb_->note_dispatches(dispatches_before, cb_->dispatch_count(), dispatch_note(graph_, uint32_t(i), node));
        auto in_host_memory = [](const Range& r) { return r.host_memory; };
        if (std::any_of(reads.begin(), reads.end(), in_host_memory) ||
            std::any_of(writes.begin(), writes.end(), in_host_memory))
            host_memory_dispatches_ += cb_->dispatch_count() - dispatches_before;
        if (!probes_) continue;
        for (uint32_t slot : probes_->slots_of(i)) {
            order_after_pending({range_of(probes_->probe(slot).tensor)}, {slice_range(probes_->flag(slot))});
            TDM_TRY(probes_->record(ctx, slot));
        }
    }
    if (output_staging_) {  // the results the host reads, after every dispatch wrote them
        cb_->record_barrier();
        ++barriers_;
        if (out_always_bytes_)
            cb_->record_copy({outputs_.get(), 0, out_always_bytes_}, {output_staging_.get(), 0, out_always_bytes_},
                             out_always_bytes_);
    }
    cb_->record_host_barrier();
    TDM_TRY(cb_->end());
    if (output_staging_ && out_bytes_ > out_always_bytes_) {
        // submitted after cb_, whose last barrier orders every dispatch before these copies
        readback_cb_ = TDM_TRY(vk::CommandBuffer::create(device_));
        TDM_TRY(readback_cb_->begin());
        const uint64_t n = out_bytes_ - out_always_bytes_;
        readback_cb_->record_copy({outputs_.get(), out_always_bytes_, n},
                                  {output_staging_.get(), out_always_bytes_, n}, n);
        readback_cb_->record_host_barrier();
        TDM_TRY(readback_cb_->end());
    }
    return {};
}

Result<std::unique_ptr<CompiledGraph>> CompiledGraph::compile(vk::Device& device, vk::PipelineManager& pipelines,
                                                              Graph graph, const CompileOptions& options) {
    const double start_ms = steady_now_ms();
    // Fusion keeps every result bit for bit, but a NaN probe wants each op's own result.
    if (options.fuse && !options.probe_non_finite && fusion_enabled(device.caps())) {
        fuse_graph(graph);
        fuse_glu_epilogues(graph, device.caps());
    }
    // not optional: the split layout's results are its kernels' (probes watch them too)
    TDM_TRY(split_attention(graph, device.caps()));
    std::unique_ptr<CompiledGraph> cg(new CompiledGraph(device, pipelines, std::move(graph)));
    TDM_TRY(cg->plan(options.read_on_request));
    if (options.probe_non_finite) cg->probes_ = TDM_TRY(FiniteProbes::create(device, cg->graph_));
    if ((cg->split_grid_ = SplitAttentionGrid::of(cg->graph_))) {
        cg->split_scratch_owner_ = AttentionScratch::of(device);
        cg->split_scratch_ = TDM_TRY(cg->split_scratch_owner_->reserve(cg->split_grid_->min_scratch_bytes()));
    }
    TDM_TRY(cg->record());
    cg->split_scratch_.buffer.reset();  // idle: submit() takes it again
    TDM_LOG_DEBUG("graph",
                  "compiled {} nodes in {:.2f} ms: {} dispatches ({} binding host memory), {} barriers, {} activations",
                  cg->graph_.nodes().size(), steady_now_ms() - start_ms, cg->dispatch_count(), cg->host_memory_dispatches_,
                  cg->barriers_, vk::format_bytes(cg->activation_bytes_));
    return cg;
}

Status CompiledGraph::size_split_attention() {
    split_run_ = split_grid_->prepare(*this);
    TDM_ASSERT(!cb_ || !cb_->pending());  // the buffer it may replace is not in use by this graph
    // held until wait(): the buffer the run's commands name lives while they may run
    split_scratch_ = TDM_TRY(split_scratch_owner_->reserve(split_run_.scratch_bytes));
    if (split_scratch_.generation == recorded_generation_) return {};
    TDM_LOG_DEBUG("graph", "split attention partials at {}: recording again",
                  vk::format_bytes(split_scratch_.buffer->size()));
    // a failed record leaves recorded_generation_ 0: the next submit records again
    return record();
}

Status CompiledGraph::submit(bool read_requested) {
    Status st = split_grid_ ? size_split_attention() : Status{};
    if (st.ok()) {
        if (probes_) probes_->reset();
        read_requested_ = read_requested;
        st = cb_->submit(read_requested ? readback_cb_.get() : nullptr);
    }
    if (!st.ok()) split_scratch_.buffer.reset();  // nothing in flight holds it
    return st;
}

Status CompiledGraph::wait() {
    Status st = cb_->wait();
    split_scratch_.buffer.reset();  // idle: a replaced buffer is freed with its last holder
    return st;
}

std::optional<ProbedTensor> CompiledGraph::first_non_finite() const {
    if (!probes_) return std::nullopt;
    return probes_->first_non_finite();
}

CompiledGraph::~CompiledGraph() {
    if (cb_ && cb_->pending()) (void)cb_->wait();
    for (auto& [id, view] : views_) device_.fn().vkDestroyBufferView(device_.handle(), view, nullptr);
    for (const SpanView& v : span_views_) device_.fn().vkDestroyBufferView(device_.handle(), v.view, nullptr);
}

}  // namespace tdm
