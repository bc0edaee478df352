/* SPDX-License-Identifier: Apache-2.0 */
// host/sampling/sampler.h: turning one row of logits into a token, with llama.cpp's default
// chain (logit bias -> penalties -> top-k -> top-p -> min-p -> temperature -> draw), and the
// acceptance rule of speculative sampling that must use exactly the same distributions.
// Not here: the speculative round (speculative/round.h: drafts, verifies, rolls back), the
// rule over a draft tree's siblings (sampling/multi_candidate.h), DRY, XTC, mirostat,
// grammars (sampling/token_constraint.h). A leaf of its own (common/ only)
// because both the round's verify and the engine's plain steps sample.
//
// Penalties and bias (OpenAI's definitions, in llama.cpp's order): logit_bias is added to
// the raw logit first; then the repetition penalty (llama.cpp's, over the last
// repeat_last_n tokens of prompt and output); then logit[j] -= c[j] * frequency_penalty +
// (c[j] > 0) * presence_penalty, where c[j] counts token j in this completion's output
// only (as vLLM does: a prompt that quotes a document must not push the answer away from
// the document's words; the prompt length is set_prompt_length()).
//
// Why the distribution is a value of its own: invariant 2 of DESIGN.md (speculative
// sampling preserves the target distribution) holds only if the rejection rule compares
// the very distributions the sampler would draw from, after every filter. So the chain
// produces a TokenDistribution, sample() draws from it, and speculative_accept() takes two.
//
// Reproducibility: the same seed and the same inputs give the same tokens on every
// platform. The engine is std::mt19937_64 (its output sequence is fixed by the standard)
// and the conversion to [0, 1) is ours, since std::uniform_real_distribution's is not.
#pragma once

#include "common/error.h"

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

namespace tdm {

// One entry of OpenAI's logit_bias: `bias` is added to the token's logit.
struct TokenBias {
    int32_t token = 0;
    float bias = 0.0f;

    bool operator==(const TokenBias&) const = default;
};

// The ranges OpenAI's API accepts, which validate() enforces.
inline constexpr float kMaxPresenceFrequencyPenalty = 2.0f;  // both in [-2, 2]
inline constexpr float kMaxLogitBias = 100.0f;               // each bias in [-100, 100]
inline constexpr size_t kMaxLogitBiasEntries = 1024;

// Defaults and "off" values follow llama.cpp's common_params_sampling.
struct SamplerParams {
    float temperature = 0.8f;      // <= 0: greedy (argmax, lowest id on ties)
    int top_k = 40;                // <= 0: off
    float top_p = 0.95f;           // >= 1: off; 0 keeps only the most likely token
    float min_p = 0.05f;           // <= 0: off; at most 1
    float repeat_penalty = 1.0f;   // 1: off; must be > 0
    int repeat_last_n = 64;        // tokens of history penalised; 0: none, -1: all
    float presence_penalty = 0.0f;   // 0: off
    float frequency_penalty = 0.0f;  // 0: off
    // Ids past the vocabulary are ignored here; the front ends refuse them, knowing it.
    // Entries naming one token twice add up (as llama.cpp's repeated --logit-bias do).
    std::vector<TokenBias> logit_bias;
    std::optional<uint64_t> seed;  // unset: a random seed (see Sampler::seed())

    bool operator==(const SamplerParams&) const = default;
};

// Fails naming the first field that is not finite or out of its range.
Status validate(const SamplerParams& params);

// Greedy with nothing that changes a logit before the argmax: the target's own argmax (the
// device computes it) is the token. Otherwise a greedy token needs the host's
// Sampler::distribution, which applies bias and penalties.
bool argmax_of_raw_logits(const SamplerParams& params);

// 64-bit Mersenne Twister with a fixed conversion to doubles.
class Rng {
public:
    explicit Rng(uint64_t seed) : engine_(seed) {}
    uint64_t next() { return engine_(); }
    // Uniform in [0, 1): the top 53 bits of one engine output, scaled by 2^-53.
    double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

private:
    std::mt19937_64 engine_;
};

// A distribution over a set of token ids. Invariants: ids strictly ascending, probs the
// same length, each >= 0, summing to 1 up to rounding. Tokens outside ids have probability 0.
struct TokenDistribution {
    std::vector<int32_t> ids;
    std::vector<float> probs;

    size_t size() const { return ids.size(); }
    float prob(int32_t id) const;  // binary search; 0 for a token outside the support
};

// Draws one token: the first id whose cumulative probability exceeds u * total for one
// u = rng.uniform(). Never returns a token of probability 0. `d` must not be empty.
int32_t draw(const TokenDistribution& d, Rng& rng);

class Sampler {
public:
    // Fails when validate(params) does.
    static Result<Sampler> create(const SamplerParams& params);

    const SamplerParams& params() const { return params_; }
    // The seed in use: params.seed, or the one drawn from std::random_device. Logging it
    // lets a run with a random seed be reproduced.
    uint64_t seed() const { return seed_; }
    bool greedy() const { return params_.temperature <= 0.0f; }
    Rng& rng() { return rng_; }

    // The history handed to distribution() and sample() starts with `n` prompt tokens;
    // presence and frequency penalties count only the tokens after them. Default 0: the
    // whole history is output.
    void set_prompt_length(size_t n) { prompt_length_ = n; }

    // The distribution the chain leaves for one row of n_vocab logits, given the tokens so
    // far (for the penalties; ids outside [0, n_vocab) are ignored). Greedy gives a point
    // mass on the argmax of the biased and penalised logits. NaN logits count as -inf, +inf as the largest float; a row
    // that is entirely -inf gives a uniform distribution (greedy: token 0).
    // Cost: one O(n_vocab) pass plus sorting the survivors. Top-k reads the row into a
    // k-entry heap; without top-k, top-p sorts a widening prefix (the whole vocabulary
    // only when top-p needs most of it).
    void distribution(const float* logits, int n_vocab, std::span<const int32_t> history,
                      TokenDistribution* out);

    // distribution() followed by draw() with rng(); greedy skips both (an O(n_vocab) scan).
    int32_t sample(const float* logits, int n_vocab, std::span<const int32_t> history);

private:
    struct Candidate {
        int32_t id;
        float logit;
    };

    explicit Sampler(const SamplerParams& params, uint64_t seed)
        : params_(params), seed_(seed), rng_(seed) {}

    // What bias and penalties do to one token (entries merged by id).
    struct Adjustment {
        int32_t id;
        float bias;
        bool repeated;   // in the repetition penalty's window
        uint32_t count;  // occurrences in the output
    };

    void collect_penalties(const float* logits, int n_vocab, std::span<const int32_t> history);
    int32_t penalised_argmax(const float* logits, int n_vocab) const;
    void select_top_k(const float* logits, int n_vocab);
    void apply_top_p();
    void apply_min_p();
    void finish(TokenDistribution* out);

    SamplerParams params_;
    uint64_t seed_;
    Rng rng_;
    size_t prompt_length_ = 0;
    // Scratch reused between calls (250k candidates are 2 MB). cand_ is in id order until
    // a step sorts it by (logit descending, id ascending), which sorted_ records.
    std::vector<Candidate> cand_;
    bool sorted_ = false;
    std::vector<Candidate> penalised_;  // the tokens bias or penalties touch, by id, adjusted logit
    std::vector<Adjustment> adjust_;    // scratch of collect_penalties
    TokenDistribution scratch_;
};

// Outcome of checking one draft token against the target.
struct SpecDecision {
    bool accepted;  // the draft token stands
    int32_t token;  // the draft token if accepted, else the replacement drawn from the residual
};

// The residual of the rejection rule: max(0, p - q) over p's support, not renormalised
// (draw() does not need it to be). Returns its total; 0 when p <= q everywhere (p == q up to
// rounding).
double residual(const TokenDistribution& p, const TokenDistribution& q, TokenDistribution* out);

// The rejection rule of speculative sampling (Leviathan et al. 2023, "Fast Inference from
// Transformers via Speculative Decoding", algorithm 1; Chen et al. 2023): accept the draft
// token x with probability min(1, p(x) / q(x)); otherwise draw the replacement from
// max(0, p - q) renormalised. The emitted token is then distributed exactly as p.
// p_target and q_draft are the distributions the target and the drafter sampled from
// (Sampler::distribution); x must have q(x) > 0, as any token drawn from q_draft does.
// Uses one rng.uniform() to decide, and one more to draw a replacement.
SpecDecision speculative_accept(const TokenDistribution& p_target, const TokenDistribution& q_draft,
                                int32_t draft_token, Rng& rng);

// A drafter that proposes greedily is a point mass, q = one-hot(x): accept with
// probability p(x), otherwise draw from p with x removed.
SpecDecision speculative_accept(const TokenDistribution& p_target, int32_t draft_token, Rng& rng);

}  // namespace tdm
