// SPDX-License-Identifier: Apache-2.0
// host/engine/generate.cpp
#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "tokenizer/stream.h"

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
    const uint32_t n_vocab = runner.model().info().n_vocab;
    const uint32_t capacity = runner.kv().capacity_tokens();
    if (prompt.size() >= capacity)
        return Error::format("the prompt has {} tokens but the context holds {} (raise -c/--ctx-size)", prompt.size(),
                             capacity);
    auto sampler = TDM_TRY(Sampler::create(params.sampling));
    StopRule stop{tokenizer, params.ignore_eog, params.stop_tokens};
    std::optional<StreamDecoder> stream;
    if (tokenizer) stream.emplace(*tokenizer);
    auto emit_text = [&](int32_t tok, GenerateResult& r) {
        if (!stream) return;
        const std::string piece = stream->push(tok);
        r.text += piece;
        if (on_text && !piece.empty()) on_text(piece);
    };

    GenerateResult r;
    r.stats.n_prompt = uint32_t(prompt.size());
    r.stats.n_cached = params.n_cached;
    std::vector<int32_t> history(prompt.begin(), prompt.end());
    const double t0 = now_ms();
    PrefillResult pre = TDM_TRY(prefill(runner, seq, prompt, params, logits_all, sink, {}));
    const double t1 = now_ms();
    r.stats.prefill_ms = t1 - t0;
    if (pre.cancelled) {
        r.stop_reason = "cancelled";
        r.n_kv = pre.n_done;
        return r;
    }
    ForwardOutput out = pre.out;

    const float* last_logits = out.logits + size_t(out.n_outputs - 1) * n_vocab;
    int32_t token = sampler.greedy() && params.sampling.repeat_penalty == 1.0f
                        ? out.argmax[out.n_outputs - 1]
                        : sampler.sample(last_logits, int(n_vocab), history);
    uint32_t pos = uint32_t(prompt.size());
    r.stop_reason = "length";
    while (true) {
        if (params.max_tokens >= 0 && r.tokens.size() >= size_t(params.max_tokens)) break;
        r.tokens.push_back(token);
        history.push_back(token);
        emit_text(token, r);
        if (std::string why = stop.check(token); !why.empty()) {
            r.stop_reason = why;
            break;
        }
        if (params.max_tokens >= 0 && r.tokens.size() >= size_t(params.max_tokens)) break;
        if (pos + 1 >= capacity) {
            r.stop_reason = "context";
            break;
        }
        if (params.cancel && params.cancel->load(std::memory_order_relaxed)) {
            r.stop_reason = "cancelled";
            break;
        }
        const int32_t row = 0, p = int32_t(pos);
        ForwardInput in{std::span<const int32_t>(&token, 1), std::span<const int32_t>(&p, 1), seq,
                        std::span<const int32_t>(&row, 1)};
        out = TDM_TRY(runner.forward(in));
        ++pos;
        if (sink) sink(out.logits, n_vocab);
        token = sampler.greedy() && params.sampling.repeat_penalty == 1.0f
                    ? out.argmax[0]
                    : sampler.sample(out.logits, int(n_vocab), history);
    }
    if (stream) {
        const std::string tail = stream->flush();
        r.text += tail;
        if (on_text && !tail.empty()) on_text(tail);
    }
    r.stats.n_generated = uint32_t(r.tokens.size());
    r.stats.decode_ms = now_ms() - t1;
    r.n_kv = pos;  // every token before the last emitted one
    return r;
}

}  // namespace tdm
