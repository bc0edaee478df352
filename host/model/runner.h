/* SPDX-License-Identifier: Apache-2.0 */
// host/model/runner.h: runs a model's forward passes against its KV pool.
//
// Every distinct batch shape (tokens, output rows) is built by the plugin once,
// compiled (graph/executor.h), extended with an in-graph argmax of the logits
// so greedy decoding reads back only token ids, and cached; later steps of the
// same shape only write inputs and replay. A server's batches take many shapes:
// past graph_cache_limit() graphs the least recently used one is dropped, so the
// memory they hold stays bounded. forward() reserves KV blocks for the
// batch's positions; rolling back is KvPool::truncate.
// Not here: sampling (sampling/sampler.h), generation loops (engine/), speculation
// (speculative/). It sits in model/, below both, because a draft model is a Runner too:
// the layers run engine -> speculative -> model, never back.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "graph/executor.h"
#include "graph/weight.h"
#include "kv/kv_pool.h"
#include "model/model.h"

namespace tdm {

struct ForwardInput {
    std::span<const int32_t> tokens;
    std::span<const int32_t> positions;    // one per token
    int seq = 0;                           // KV pool sequence of every row (unless `seqs` is given)
    std::span<const int32_t> output_rows;  // rows whose logits are wanted (ascending)
    // Per row: its KV pool sequence (batches over several sequences; each
    // sequence's rows consecutive and in position order). Empty: every row is `seq`'s.
    // Models with recurrent state take one sequence per batch.
    std::span<const int32_t> seqs = {};
    // Images (tdm.encoder): each row's rotary position (t, h, w, e), 4 per row; empty: the
    // text rule (p, p, p, 0) from `positions`, which stay the KV slots either way.
    std::span<const int32_t> positions4 = {};
    // Per row: the n_embd floats that replace its token's embedding (an image row), or
    // null. Empty: no image rows (a text batch, a graph of its own).
    std::span<const float* const> image_rows = {};
    // Per row: where a tree batch's row stores its K/V and which rows it attends to
    // (graph/graph.h, KvTreeRow; speculative/draft_tree.h builds them). Empty: an
    // ordinary batch (a graph of its own). Not with recurrent states.
    std::span<const KvTreeRow> tree = {};
    // Whether the host reads the logits of this pass (samplers at T > 0, logprobs, constraint
    // masks, logits dumps). false: they stay on the device and only the argmax ids (and the
    // logit at each, for the finite check) come back; ForwardOutput::logits is then null.
    bool read_logits = true;
};

// Passes of at most this many rows (verify batches) also leave their hidden rows
// in one device buffer (ForwardOutput::hidden_on_device) that a draft head reads
// directly: between verify and draft the rows never cross the host.
constexpr uint32_t kDeviceHiddenRows = 64;

// Valid until the next forward with the same shape (or, once the graph cache is
// full, until the next forward of a shape not cached).
struct ForwardOutput {
    uint32_t n_outputs = 0;
    const float* logits = nullptr;    // [n_outputs][n_vocab]; null unless ForwardInput::read_logits
    const int32_t* argmax = nullptr;  // [n_outputs]
    const float* argmax_logit = nullptr;  // [n_outputs]: row r's logit at argmax[r]
    const float* hidden = nullptr;    // [n_tokens][hidden_width] when requested (hidden_point)
    // n_embd, or for a head's taps (model/feature_taps.h) the width of their concatenation
    uint32_t hidden_width = 0;
    // The same hidden rows on the device: rows [0, n_tokens) of this f32 table,
    // until the next forward of any shape. Null for passes of more than
    // kDeviceHiddenRows rows, and when no hidden state was requested.
    const DeviceWeight* hidden_on_device = nullptr;
};

class Runner {
public:
    Runner(const Model& model, KvPool& kv, vk::Device& device, vk::PipelineManager& pipelines);

    // Which hidden state forward() should return (drafters that read it).
    void set_hidden_point(tdm_hidden_point p) { hidden_point_ = p; }
    // The NaN debugging mode (TANDEM_CHECK_NAN=1 turns it on; see logits_check.h):
    // every logit is scanned, every op's result is probed as the graph runs, and an
    // error about non-finite logits names the first op and layer that produced one.
    // Slow; off by default. Call before the first forward.
    void set_nan_debug(bool on);
    bool nan_debug() const { return nan_debug_; }

    // Synchronous forward pass.
    Result<ForwardOutput> forward(const ForwardInput& in);
    // Split form, so host work can overlap device work: submit() then wait().
    Status submit(const ForwardInput& in);
    Result<ForwardOutput> wait();

    const Model& model() const { return model_; }
    const vk::Device& device() const { return device_; }
    KvPool& kv() { return kv_; }
    size_t cached_graphs() const { return cache_.size(); }
    // Most graphs kept compiled (at least 2).
    void set_graph_cache_limit(size_t n) { cache_limit_ = std::max<size_t>(n, 2); }
    size_t graph_cache_limit() const { return cache_limit_; }
    uint64_t graph_memory() const;  // activation bytes of all cached graphs
    // Bytes of weights a forward pass streams (every weight used by a matmul,
    // once); 0 before the first forward. The memory-bound cost of a decode step.
    uint64_t matmul_weight_bytes() const;
    // Dispatches, barriers and host-memory bindings of one pass of n_tokens rows with
    // n_outputs logit rows (compiled now if not cached; nothing runs). A decode step
    // is (1, 1); a verify of k drafts is (k + 1, k + 1).
    Result<GraphCounts> graph_counts(uint32_t n_tokens, uint32_t n_outputs);

private:
    struct Compiled {
        std::unique_ptr<CompiledGraph> cg;
        TensorId tokens = 0, positions = 0, seq_ids = 0, output_rows = 0, positions4 = 0, state_io = 0;
        TensorId logits = 0, argmax = 0, argmax_logit = 0, hidden = 0;
        TensorId image_rows = 0, image_keep = 0;  // tdm.encoder inject_rows inputs
        TensorId kv_tree = 0;                     // tree batches only
        bool hidden_on_device = false;  // also writes hidden_rows_
        uint32_t n_outputs = 0;
        std::vector<std::pair<TensorId, const DeviceWeight*>> host_rows;  // tdm.host_rows inputs
        uint64_t last_used = 0;
    };
    Result<Compiled*> get(uint32_t n_tokens, uint32_t n_outputs, bool image_rows, bool tree);
    // Where each row of a tree batch stores its K/V; an error for rows that do not fit.
    static Result<std::vector<int32_t>> tree_slots(const ForwardInput& in);
    // Adds the device copy of the hidden rows `h` of an n_tokens pass, when it fits.
    Result<bool> keep_hidden_on_device(Graph& g, TensorId h, uint32_t n_tokens);

    const Model& model_;
    KvPool& kv_;
    vk::Device& device_;
    vk::PipelineManager& pipelines_;
    tdm_hidden_point hidden_point_ = TDM_HIDDEN_NONE;
    bool nan_debug_ = false;
    // kDeviceHiddenRows x n_embd f32, written by every verify-sized pass; declared
    // before cache_, whose graphs write it, so that they go first
    std::unique_ptr<vk::Buffer> hidden_rows_buf_;
    std::unique_ptr<DeviceWeight> hidden_rows_;
    std::map<std::tuple<uint32_t, uint32_t, int, bool, bool>, Compiled> cache_;
    size_t cache_limit_ = 48;
    uint64_t uses_ = 0;
    Compiled* pending_ = nullptr;
    std::vector<int32_t> pending_positions_;  // of the pending pass's output rows, for error messages
    // the checkpoints the pending pass writes, committed at submit and undone if it fails
    std::vector<std::pair<int, StatePlan>> pending_states_;
};

}  // namespace tdm
