// SPDX-License-Identifier: Apache-2.0
// host/engine/generate.cpp
#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "engine/solo.h"

namespace tdm {
namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string StopRule::check(int32_t token) const {
    if (std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end()) return "stop_token";
    if (!ignore_eog && tokenizer && tokenizer->is_eog(token)) return "eog";
    return {};
}

Result<PrefillResult> prefill(Runner& runner, int seq, std::span<const int32_t> prompt, const GenerateParams& params,
                              bool logits_all, const LogitsSink& sink, const ChunkHook& on_chunk) {
    if (prompt.empty()) return Error("the prompt is empty: at least one token is needed");
    if (params.n_cached >= prompt.size())
        return Error::format("prefill: {} of the prompt's {} tokens are cached; at least the last one must be run",
                             params.n_cached, prompt.size());
    uint32_t n_batch = params.n_batch ? params.n_batch : 256;
    // sliding-window rings hold window + rows_max - 1 positions: chunks stay within rows_max
    if (runner.kv().has_rings()) n_batch = std::min(n_batch, runner.kv().config().rows_max);
    const uint32_t n_vocab = runner.model().info().n_vocab;
    const uint32_t total = uint32_t(prompt.size());
    const uint32_t pause = params.on_prefix && total - 1 > params.n_cached ? total - 1 : 0;
    const double t0 = now_ms();
    PrefillResult res;
    std::vector<int32_t> pos, rows;
    uint32_t c0 = params.n_cached;
    while (c0 < total) {
        if (params.cancel && params.cancel->load(std::memory_order_relaxed)) {
            res.cancelled = true;
            res.out = {};
            break;
        }
        // chunks never straddle the pause point, so the KV holds exactly it
        const uint32_t end = c0 < pause ? std::min(pause, c0 + n_batch) : std::min(total, c0 + n_batch);
        const uint32_t n = end - c0;
        pos.resize(n);
        std::iota(pos.begin(), pos.end(), int32_t(c0));
        const bool last = end == total;
        rows.clear();
        if (logits_all) {
            for (uint32_t i = 0; i < n; ++i) rows.push_back(int32_t(i));
        } else {
            rows.push_back(int32_t(n - 1));  // the output of a middle chunk is unused
        }
        ForwardInput in{prompt.subspan(c0, n), pos, seq, rows};
        res.out = TDM_TRY(runner.forward(in));
        if (on_chunk) TDM_TRY(on_chunk(in, res.out));
        if (sink && (logits_all || last))
            for (uint32_t r = 0; r < res.out.n_outputs; ++r) sink(res.out.logits + size_t(r) * n_vocab, n_vocab);
        c0 = end;
        if (params.on_progress) params.on_progress(c0 - params.n_cached, total - params.n_cached, now_ms() - t0);
        if (c0 == pause) TDM_TRY(params.on_prefix(pause));
    }
    res.n_done = c0;
    return res;
}

Result<ForwardOutput> prefill(Runner& runner, int seq, std::span<const int32_t> prompt, uint32_t n_batch,
                              bool logits_all, const LogitsSink& sink, const ChunkHook& on_chunk) {
    GenerateParams p;
    p.n_batch = n_batch;
    PrefillResult r = TDM_TRY(prefill(runner, seq, prompt, p, logits_all, sink, on_chunk));
    return r.out;
}

Result<GenerateResult> generate(Runner& runner, const Tokenizer* tokenizer, int seq, std::span<const int32_t> prompt,
                                const GenerateParams& params, const std::function<void(const std::string&)>& on_text,
                                const LogitsSink& sink, bool logits_all) {
    SpecResult r = TDM_TRY(run_solo(runner, tokenizer, seq, prompt, params, {}, SpecParams{}, on_text, sink, logits_all));
    return std::move(r.gen);
}

}  // namespace tdm
