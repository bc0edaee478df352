// SPDX-License-Identifier: Apache-2.0
// host/model/runner.cpp
#include "model/runner.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>

#include "model/feature_taps.h"
#include "model/logits_check.h"
#include "graph/weight.h"
#include "ops/op_def.h"

#include "common/log.h"

namespace tdm {

Runner::Runner(const Model& model, KvPool& kv, vk::Device& device, vk::PipelineManager& pipelines)
    : model_(model), kv_(kv), device_(device), pipelines_(pipelines), nan_debug_(full_logits_check()) {}

void Runner::set_nan_debug(bool on) {
    TDM_ASSERT(pending_ == nullptr);
    if (on != nan_debug_) cache_.clear();  // graphs are compiled with or without probes
    nan_debug_ = on;
}

uint64_t Runner::graph_memory() const {
    uint64_t n = 0;
    for (const auto& [k, c] : cache_) n += c.cg->activation_bytes();
    return n;
}

uint64_t Runner::matmul_weight_bytes() const {
    if (cache_.empty()) return 0;
    const Graph& g = cache_.begin()->second.cg->graph();
    std::set<const DeviceWeight*> seen;
    uint64_t n = 0;
    for (const Node& node : g.nodes()) {
        // a fused matmul_group or matmul_glu (graph/fusion.h) reads the weights after its input x
        const bool group = node.desc.op == kOpInternalMatmulGroup || node.desc.op == kOpInternalMatmulGlu;
        const bool plain = node.desc.op == TDM_OP_MATMUL || node.desc.op == kOpInternalMatmulQ8 ||
                           node.desc.op == kOpInternalMatmulActMul;
        if (!plain && !group) continue;
        for (int k = group ? 1 : 0; k < (group ? node.desc.n_in : 1); ++k) {
            const DeviceWeight* w = g.tensor(node.desc.in[k]).weight;
            if (seen.insert(w).second) n += w->device_bytes();
        }
    }
    return n;
}

Result<GraphCounts> Runner::graph_counts(uint32_t n_tokens, uint32_t n_outputs) {
    TDM_ASSERT(pending_ == nullptr);  // get() may drop the least recently used graph
    const Compiled* c = TDM_TRY(get(n_tokens, n_outputs, false, false));
    return c->cg->counts();
}

Result<Runner::Compiled*> Runner::get(uint32_t n_tokens, uint32_t n_outputs, bool image_rows, bool tree) {
    const auto key = std::make_tuple(n_tokens, n_outputs, int(hidden_point_), image_rows, tree);
    if (auto it = cache_.find(key); it != cache_.end()) {
        it->second.last_used = ++uses_;
        return &it->second;
    }
    if (cache_.size() >= cache_limit_) {
        auto lru = cache_.begin();
        for (auto it = cache_.begin(); it != cache_.end(); ++it)
            if (it->second.last_used < lru->second.last_used) lru = it;
        cache_.erase(lru);
    }

    const auto t0 = std::chrono::steady_clock::now();
    tdm_batch_desc batch{sizeof(tdm_batch_desc), n_tokens, n_outputs, 0};
    std::vector<const KvLayerBinding*> layers;
    for (uint32_t i = 0; i < kv_.n_layers(); ++i) layers.push_back(kv_.layer(i));
    std::vector<const StateBinding*> states;
    for (uint32_t i = 0; i < kv_.n_states(); ++i) states.push_back(kv_.state(i));
    auto g = TDM_TRY(model_.build_graph(batch, layers, states, image_rows, taps_of(hidden_point_)));
    if (image_rows && !g->inject_rows)
        return Error::format("the {} model ({}) takes no image rows: its graph never asks for them (tdm.encoder "
                             "inject_rows)",
                             model_.arch().desc->name, model_.arch().plugin->name);
    if (image_rows && g->graph.tensor(g->inject_rows).cols() != int64_t(model_.info().n_embd))
        return Error::format("the {} model injects image rows {} wide, its embeddings are {}", model_.arch().desc->name,
                             g->graph.tensor(g->inject_rows).cols(), model_.info().n_embd);

    Compiled c;
    c.n_outputs = n_outputs;
    c.tokens = g->tokens;
    c.positions = g->positions;
    c.seq_ids = g->seq_ids;
    c.output_rows = g->output_rows;
    c.positions4 = g->positions4;
    c.state_io = g->state_io;
    c.host_rows = g->host_rows;
    c.image_rows = g->inject_rows;
    c.image_keep = g->inject_keep;
    c.logits = g->outputs[TDM_OUTPUT_LOGITS];
    if (tree) {
        c.kv_tree = g->graph.input(DType::I32, {kKvTreeInts, int64_t(n_tokens)}, "kv_tree");
        g->graph.attach_kv_tree(g->positions, c.kv_tree);
    }
    OpDesc am;
    am.op = TDM_OP_ARGMAX;
    am.in[0] = c.logits;
    am.n_in = 1;
    am.name = "argmax";
    c.argmax = TDM_TRY(g->graph.op(am));
    c.argmax_logit = g->graph.second_output(c.argmax);
    TDM_TRY(g->graph.mark_output(c.logits));
    TDM_TRY(g->graph.mark_output(c.argmax));
    TDM_TRY(g->graph.mark_output(c.argmax_logit));
    if (hidden_point_ != TDM_HIDDEN_NONE) {
        // a head's taps (tdm.target_features): their concatenation is the hidden
        const TensorId h = !taps_of(hidden_point_).empty()
                               ? TDM_TRY(concat_feature_taps(*g, model_.arch().desc->name))
                               : g->outputs[hidden_point_ == TDM_HIDDEN_PRE_NORM ? TDM_OUTPUT_HIDDEN_PRE_NORM
                                                                                 : TDM_OUTPUT_HIDDEN_POST_NORM];
        if (!h)
            return Error::format("{} does not provide the {} hidden state a drafter needs", model_.arch().desc->name,
                                 hidden_point_ == TDM_HIDDEN_PRE_NORM ? "pre-norm" : "post-norm");
        // A view cannot be an output: copy it (cheap, [n_embd, n_tokens]).
        TensorId out = h;
        if (g->graph.tensor(h).kind != TensorKind::activation || !g->graph.tensor(h).contiguous()) {
            OpDesc cp;
            cp.op = TDM_OP_COPY;
            cp.in[0] = h;
            cp.n_in = 1;
            cp.name = "hidden_copy";
            out = TDM_TRY(g->graph.op(cp));
        }
        TDM_TRY(g->graph.mark_output(out));
        c.hidden = out;
        c.hidden_on_device = TDM_TRY(keep_hidden_on_device(g->graph, h, n_tokens));
    }
    CompileOptions co;
    co.probe_non_finite = nan_debug_;
    co.read_on_request = {c.logits};
    c.cg = TDM_TRY(CompiledGraph::compile(device_, pipelines_, std::move(g->graph), co));
    TDM_LOG_DEBUG("engine",
                  "graph for {} tokens / {} outputs: {} dispatches ({} binding host memory), {} barriers, {} "
                  "activations, built in {:.1f} ms",
                  n_tokens, n_outputs, c.cg->dispatch_count(), c.cg->host_memory_dispatch_count(), c.cg->barrier_count(),
                  vk::format_bytes(c.cg->activation_bytes()),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    c.last_used = ++uses_;
    auto [it, ok] = cache_.emplace(key, std::move(c));
    return &it->second;
}

Result<bool> Runner::keep_hidden_on_device(Graph& g, TensorId h, uint32_t n_tokens) {
    const int64_t n_embd = g.tensor(h).cols();
    // get_rows reads whole 16-byte texels of a row
    if (n_tokens > kDeviceHiddenRows || n_embd % 4 || g.tensor(h).rows() != int64_t(n_tokens)) return false;
    if (hidden_rows_ && hidden_rows_->cols() != n_embd) return false;
    const uint64_t bytes = uint64_t(kDeviceHiddenRows) * uint64_t(n_embd) * 4;
    if (!hidden_rows_) {
        // an optimisation: without the buffer, drafters read the rows from the host
        auto buf = vk::Buffer::create(device_, bytes, vk::MemoryKind::device, "target hidden rows");
        if (!buf.ok()) {
            TDM_LOG_WARN("engine", "no device copy of the hidden rows: {}", buf.error().message());
            return false;
        }
        hidden_rows_buf_ = std::move(buf).value();
        hidden_rows_ = TDM_TRY(DeviceWeight::f32_rows_over("target hidden rows", {hidden_rows_buf_.get(), 0, bytes},
                                                           n_embd, kDeviceHiddenRows));
    }
    OpDesc cp;
    cp.op = TDM_OP_COPY;
    cp.in[0] = h;
    cp.n_in = 1;
    cp.name = "hidden_rows";
    const TensorId rows = TDM_TRY(g.op(cp));
    TDM_TRY(g.bind_storage(rows, {hidden_rows_buf_.get(), 0, bytes}));
    return true;
}

Status Runner::submit(const ForwardInput& in) {
    TDM_ASSERT(pending_ == nullptr);
    const uint32_t n = uint32_t(in.tokens.size());
    if (n == 0) return Error("forward: empty batch");
    if (in.positions.size() != n) return Error("forward: one position per token is needed");
    if (in.output_rows.empty() || in.output_rows.size() > n) return Error("forward: 1..n output rows are needed");
    for (int32_t p : in.positions)
        if (p < 0) return Error("forward: negative position");
    for (size_t i = 0; i < in.output_rows.size(); ++i)
        if (in.output_rows[i] < 0 || uint32_t(in.output_rows[i]) >= n || (i && in.output_rows[i] <= in.output_rows[i - 1]))
            return Error("forward: output rows must be ascending rows of the batch");
    const int32_t n_vocab = int32_t(model_.info().n_vocab);
    for (int32_t t : in.tokens)
        if (t < 0 || t >= n_vocab) return Error::format("token id {} is outside the vocabulary of {}", t, n_vocab);
    if (!in.positions4.empty() && in.positions4.size() != size_t(n) * 4)
        return Error("forward: four rotary positions per token are needed");
    if (!in.image_rows.empty() && in.image_rows.size() != n) return Error("forward: one image row entry per token is needed");
    std::vector<int32_t> slots;  // where each row stores its K/V
    if (!in.tree.empty()) slots = TDM_TRY(tree_slots(in));
    const std::span<const int32_t> stored = slots.empty() ? in.positions : std::span<const int32_t>(slots);
    if (!slots.empty() && kv_.n_states() > 0)
        return Error::format("forward: the {} model has recurrent states, which a tree batch cannot branch",
                             model_.arch().desc->name);
    // before the pool moves: a batch refused here leaves the sequence as it was
    Compiled* c = TDM_TRY(get(n, uint32_t(in.output_rows.size()), !in.image_rows.empty(), !in.tree.empty()));
    if (!in.positions4.empty() && !c->positions4)
        return Error::format("the {} model has no multi-axis rotary positions: it cannot place image rows",
                             model_.arch().desc->name);
    for (const auto& [id, table] : c->host_rows)
        for (int32_t t : in.tokens)
            if (t >= table->rows())
                return Error::format("token id {} is outside the {} rows of {}", t, table->rows(), table->name());
    // The batch's segments: runs of rows of one sequence, each with the positions it stores.
    struct Span {
        int seq;
        uint32_t row0, rows;
        int32_t first, last;
    };
    std::vector<Span> spans;
    if (in.seqs.empty()) {
        const auto [lo, hi] = std::minmax_element(stored.begin(), stored.end());
        spans.push_back({in.seq, 0, n, *lo, *hi});
    } else {
        if (in.seqs.size() != n) return Error("forward: one sequence per token is needed");
        for (uint32_t i = 0; i < n; ++i) {
            const int32_t p = stored[i];
            if (i > 0 && in.seqs[i] == in.seqs[i - 1]) {
                spans.back().first = std::min(spans.back().first, p);
                spans.back().last = std::max(spans.back().last, p);
                ++spans.back().rows;
                continue;
            }
            for (const Span& s : spans)
                if (s.seq == in.seqs[i]) return Error("forward: the rows of a sequence must be consecutive");
            spans.push_back({in.seqs[i], i, 1, p, p});
        }
    }
    // Recurrent states advance token by token: each segment continues its sequence.
    std::vector<StatePlan> plans;
    if (spans.size() > 1 && !model_.batches_sequences())
        return Error::format("forward: the {} model's plugin does not declare TDM_MODEL_BATCHED_STATES: its recurrent "
                             "states take one sequence per batch",
                             model_.arch().desc->name);
    if (kv_.n_states() > 0) {
        // A sequence returns to the state after a row whose logits were read (a verify's
        // accepted drafts end at one) or after its segment, never to one inside a prompt
        // chunk: those rows write no checkpoint. A speculative pool has room for a verify's
        // checkpoints, and without this a prompt chunk would fill them all, each a copy of
        // every recurrent state (some 19 MiB a row for Qwen3.5-0.8B; 15% of a 16-row prefill on
        // lavapipe).
        for (const Span& s : spans) {
            for (uint32_t i = 1; i < s.rows; ++i)
                if (in.positions[s.row0 + i] != in.positions[s.row0] + int32_t(i))
                    return Error("forward: a model with recurrent state needs consecutive positions");
            const auto has_logits = [&](uint32_t i) {  // output_rows are ascending (ForwardInput)
                return std::binary_search(in.output_rows.begin(), in.output_rows.end(), int32_t(s.row0 + i));
            };
            plans.push_back(TDM_TRY(kv_.plan_states(s.seq, uint32_t(in.positions[s.row0]), s.rows, has_logits)));
        }
    }
    // A refusal here may leave blocks reserved for the sequences before it; they are
    // past those sequences' lengths and a truncate() returns them.
    for (const Span& s : spans) TDM_TRY(kv_.begin_batch(s.seq, uint32_t(s.first), uint32_t(s.last)));

    CompiledGraph& cg = *c->cg;
    std::memcpy(cg.input_data(c->tokens), in.tokens.data(), n * 4);
    std::memcpy(cg.input_data(c->positions), in.positions.data(), n * 4);
    int32_t* seq = cg.input_as<int32_t>(c->seq_ids);
    for (uint32_t i = 0; i < n; ++i) seq[i] = in.seqs.empty() ? in.seq : in.seqs[i];
    std::memcpy(cg.input_data(c->output_rows), in.output_rows.data(), in.output_rows.size() * 4);
    for (const auto& [id, table] : c->host_rows) {  // rows of host tables: read and converted here
        float* dst = cg.input_as<float>(id);
        for (uint32_t i = 0; i < n; ++i)
            table->host_row_f32(in.tokens[i], dst + uint64_t(i) * uint64_t(table->cols()));
    }
    if (c->positions4 && !in.positions4.empty()) {
        std::memcpy(cg.input_data(c->positions4), in.positions4.data(), in.positions4.size_bytes());
    } else if (c->positions4) {  // text tokens: t = h = w = position, e = 0
        int32_t* p4 = cg.input_as<int32_t>(c->positions4);
        for (uint32_t i = 0; i < n; ++i) {
            p4[4 * i] = p4[4 * i + 1] = p4[4 * i + 2] = in.positions[i];
            p4[4 * i + 3] = 0;
        }
    }
    if (c->image_rows) {  // rows = image row or 0, keep = 0 or 1 (tdm.encoder inject_rows)
        const uint64_t width = uint64_t(c->cg->graph().tensor(c->image_rows).cols());
        float* rows = cg.input_as<float>(c->image_rows);
        float* keep = cg.input_as<float>(c->image_keep);
        for (uint32_t i = 0; i < n; ++i) {
            const float* r = in.image_rows[i];
            keep[i] = r ? 0.0f : 1.0f;
            if (r)
                std::memcpy(rows + i * width, r, width * 4);
            else
                std::memset(rows + i * width, 0, width * 4);
        }
    }
    if (c->kv_tree) {  // graph/graph.h, kKvTreeInts: the layout of kv_tree
        int32_t* t = cg.input_as<int32_t>(c->kv_tree);
        for (uint32_t i = 0; i < n; ++i) {
            t[3 * i] = in.tree[i].base;
            t[3 * i + 1] = int32_t(uint32_t(in.tree[i].ancestors));
            t[3 * i + 2] = int32_t(uint32_t(in.tree[i].ancestors >> 32));
        }
    }
    if (!plans.empty()) {  // graph/graph.h, StateBinding: the layout of state_io
        int32_t* io = cg.input_as<int32_t>(c->state_io);
        io[0] = int32_t(spans.size());
        for (size_t j = 0; j < spans.size(); ++j) {
            for (uint32_t i = 0; i < spans[j].rows; ++i) io[1 + spans[j].row0 + i] = plans[j].write[i];
            io[1 + n + 2 * j] = int32_t(spans[j].row0);
            io[2 + n + 2 * j] = plans[j].read;
        }
    }
    TDM_TRY(cg.submit(in.read_logits || nan_debug_));  // the debugging mode scans every logit
    pending_positions_ = output_positions(in);
    pending_states_.clear();
    for (size_t j = 0; j < plans.size(); ++j) {
        kv_.commit_states(spans[j].seq, plans[j]);
        pending_states_.emplace_back(spans[j].seq, std::move(plans[j]));
    }
    pending_ = c;
    return {};
}

Result<std::vector<int32_t>> Runner::tree_slots(const ForwardInput& in) {
    if (in.tree.size() != in.tokens.size()) return Error("forward: one tree entry per token is needed");
    std::vector<int32_t> slots(in.tree.size());
    for (size_t i = 0; i < in.tree.size(); ++i) {
        const KvTreeRow& r = in.tree[i];
        if (r.ancestors == 0) {
            slots[i] = in.positions[i];
            continue;
        }
        // the row's position is its depth past the root: one less than the nodes on its path
        if (r.base < 0 || in.positions[i] != r.base + std::popcount(r.ancestors) - 1)
            return Error::format("forward: tree row {} at position {} has {} ancestors from position {}", i,
                                 in.positions[i], std::popcount(r.ancestors), r.base);
        slots[i] = r.base + (63 - std::countl_zero(r.ancestors));
    }
    return slots;
}

Result<ForwardOutput> Runner::wait() {
    TDM_ASSERT(pending_ != nullptr);
    Compiled* c = pending_;
    pending_ = nullptr;
    // a failed pass leaves every sequence's states where they were, so that its rows
    // can run again (the engine retries each session alone)
    auto abandon = [&] {
        for (const auto& [seq, plan] : pending_states_) kv_.abandon_states(seq, plan);
        pending_states_.clear();
    };
    if (Status done = c->cg->wait(); !done.ok()) {
        abandon();
        return done.error();
    }
    ForwardOutput out;
    out.n_outputs = c->n_outputs;
    out.logits = c->cg->output_as<float>(c->logits);
    out.argmax = c->cg->output_as<int32_t>(c->argmax);
    out.argmax_logit = c->cg->output_as<float>(c->argmax_logit);
    if (c->hidden) {
        out.hidden = c->cg->output_as<float>(c->hidden);
        out.hidden_width = uint32_t(c->cg->graph().tensor(c->hidden).cols());
    }
    if (c->hidden_on_device) out.hidden_on_device = hidden_rows_.get();
    Status finite = check_logits_finite(out, model_.info().n_vocab, pending_positions_, nan_debug_);
    if (!finite.ok()) {
        abandon();
        return with_non_finite_origin(finite.error(), *c->cg);
    }
    pending_states_.clear();
    return out;
}

Result<ForwardOutput> Runner::forward(const ForwardInput& in) {
    TDM_TRY(submit(in));
    return wait();
}

}  // namespace tdm
