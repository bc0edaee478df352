// SPDX-License-Identifier: Apache-2.0
// host/engine/warmup.cpp
#include "engine/warmup.h"

#include <algorithm>
#include <chrono>

#include "engine/generate.h"

namespace tdm {
namespace {

// One prompt id: its prefill is a one-row pass, the decode step's own graph, so the warm-up
// computes as little as it can (a pass of the 0.8B shape is 0.2-0.5 s on lavapipe, a prefill
// of 8 rows twice that). The prompt's own prefill compiles its matmul variant (4 or 8 tokens
// per pass) as it did before the warm-up: in the prefill's time, not the decode's.
constexpr uint32_t kWarmupPromptTokens = 1;
// Tokens generated: plain, the prefill's alone (the decode step's graph); with drafters, the
// prefill's and the first round's (a draft of 1, 2 rows), and a plain step if it missed.
constexpr int32_t kPlainTokens = 1;
constexpr int32_t kSpeculativeTokens = 3;

// The scratch sequence, given back on every path out of warm_up().
class ScratchSequence {
public:
    explicit ScratchSequence(KvPool& kv) : kv_(kv) {}
    ~ScratchSequence() {
        if (seq_ >= 0) kv_.free_sequence(seq_);
    }
    ScratchSequence(const ScratchSequence&) = delete;
    ScratchSequence& operator=(const ScratchSequence&) = delete;
    Result<int> take() {
        seq_ = TDM_TRY(kv_.add_sequence());
        return seq_;
    }

private:
    KvPool& kv_;
    int seq_ = -1;
};

// Ids spread over the vocabulary, none repeated (an n-gram-like head sees no pattern).
std::vector<int32_t> scratch_prompt(uint32_t n, uint32_t n_vocab) {
    std::vector<int32_t> p(n);
    for (uint32_t i = 0; i < n; ++i) p[i] = int32_t((1 + uint64_t(i) * 7919) % std::max<uint32_t>(n_vocab, 1));
    return p;
}

}  // namespace

std::vector<uint32_t> warmup_verify_widths(int draft_max) {
    std::vector<uint32_t> widths;
    if (draft_max < 1) return widths;
    for (uint32_t tokens_per_pass : {2u, 4u, 8u}) {
        const uint32_t w = std::min(tokens_per_pass, uint32_t(draft_max) + 1);
        if (widths.empty() || widths.back() != w) widths.push_back(w);
    }
    return widths;
}

Result<WarmupReport> warm_up(Runner& runner, std::span<Drafter* const> drafters, const SpecParams& spec,
                             const SamplerParams& sampling, uint32_t n_batch) {
    const auto t0 = std::chrono::steady_clock::now();
    WarmupReport report;
    KvPool& kv = runner.kv();
    std::vector<Drafter*> heads;
    bool ngram = false;
    for (Drafter* d : drafters) {
        if (d->kind() == DrafterKind::head) heads.push_back(d);
        ngram = ngram || d->kind() == DrafterKind::ngram;
    }
    // A head's rounds start at the speculative generation's width; an n-gram drafter's
    // widths are its matches' lengths, any of them in the first round.
    const std::vector<uint32_t> widths = ngram ? warmup_verify_widths(spec.draft_max) : std::vector<uint32_t>{};

    const int32_t gen_tokens = heads.empty() ? kPlainTokens : kSpeculativeTokens;
    const uint32_t n_prompt = kWarmupPromptTokens;
    const std::vector<int32_t> prompt = scratch_prompt(n_prompt, runner.model().info().n_vocab);
    report.prompt_tokens = n_prompt;
    report.drafters = uint32_t(heads.size());

    GenerateParams gp;
    gp.max_tokens = gen_tokens;
    gp.sampling = sampling;
    gp.sampling.logit_bias.clear();  // a run's bias names its own tokens: nothing to compile
    if (!gp.sampling.seed) gp.sampling.seed = 1;
    gp.n_batch = std::max<uint32_t>(n_batch, 1);
    gp.ignore_eog = true;  // the synthetic ids may hold an end-of-generation token

    ScratchSequence scratch(kv);
    const int seq = TDM_TRY_CTX(scratch.take(), "warm-up");
    uint32_t n_kv = 0;
    if (heads.empty()) {
        n_kv = TDM_TRY_CTX(generate(runner, nullptr, seq, prompt, gp, {}), "warm-up").n_kv;
    } else {
        SpecParams sp = spec;
        sp.history = nullptr;   // the solo engine's own, dropped with it
        sp.trace_path.clear();  // the run's trace holds the run's rounds
        const Result<SpecResult> r = generate_speculative(runner, nullptr, seq, prompt, gp, heads, sp, {});
        for (Drafter* d : heads) d->forget();
        if (!r.ok()) return r.error().context("warm-up");
        n_kv = r->gen.n_kv;
    }

    // Verify passes of the widths above, under the hidden state the drafters read (the
    // engine left it set: a chain of n-gram drafters and a head reads the head's), each from
    // the same position.
    for (uint32_t w : widths) {
        // as the engine, never a verify at the last position, nor wider than the rings hold
        if (n_kv + w >= kv.capacity_tokens()) break;
        if (kv.has_rings() && w > kv.config().rows_max) break;
        std::vector<int32_t> tokens(w, prompt[0]), positions(w), rows(w);
        for (uint32_t r = 0; r < w; ++r) {
            positions[r] = int32_t(n_kv + r);
            rows[r] = int32_t(r);
        }
        TDM_TRY_CTX(kv.truncate(seq, n_kv), "warm-up");
        ForwardInput in{tokens, positions, seq, rows};
        in.read_logits = false;
        TDM_TRY_CTX(runner.forward(in), "warm-up");
        report.verify_widths.push_back(w);
    }
    report.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace tdm
