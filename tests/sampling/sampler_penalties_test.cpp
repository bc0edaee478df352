// SPDX-License-Identifier: Apache-2.0
// tests/sampling/sampler_penalties_test.cpp: OpenAI's presence and frequency penalties and
// logit_bias in the sampling chain: the distribution equals a plain computation of the
// formula on random rows, prompt tokens are not counted, greedy takes the penalised
// argmax, validate() holds the ranges, and the speculative verify step (which sees the
// accepted drafts in its history) emits pairs of tokens distributed exactly as two plain
// steps would. To add a case: set the fields on penalty_params() and compare with formula_distribution().
#include "sampling/sampler.h"
#include "speculative/round.h"

#include "support/sampling_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tdm::test {
namespace {

SamplerParams penalty_params(float temperature = 1.0f) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 99;
    return p;
}

// Logits drawn from N(0, 2^2)-ish noise: a sum of uniforms, enough for a smooth row.
std::vector<float> noisy_row(Rng& rng, int n) {
    std::vector<float> out;
    for (int i = 0; i < n; ++i) out.push_back(float((rng.uniform() + rng.uniform() + rng.uniform() - 1.5) * 4.0));
    return out;
}

Sampler penalised_sampler(const SamplerParams& p) {
    auto s = Sampler::create(p);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return std::move(s).value();
}

// The formula written out plainly over the whole row: bias, then the repetition penalty
// over the last repeat_last_n tokens of the history, then OpenAI's penalties with counts
// over history[prompt_length..], then the softmax at the temperature.
std::vector<double> formula_distribution(const std::vector<float>& logits, const SamplerParams& p,
                              const std::vector<int32_t>& history, size_t prompt_length) {
    const size_t n = logits.size();
    std::vector<float> l = logits;
    for (const TokenBias& b : p.logit_bias) l[size_t(b.token)] += b.bias;
    std::vector<bool> seen(n, false);
    const size_t window = p.repeat_last_n < 0 ? history.size() : std::min(history.size(), size_t(p.repeat_last_n));
    for (size_t i = history.size() - window; i < history.size(); ++i) seen[size_t(history[i])] = true;
    std::vector<uint32_t> count(n, 0);
    for (size_t i = prompt_length; i < history.size(); ++i) ++count[size_t(history[i])];
    for (size_t j = 0; j < n; ++j) {
        if (seen[j] && p.repeat_penalty != 1.0f) l[j] = l[j] <= 0.0f ? l[j] * p.repeat_penalty : l[j] / p.repeat_penalty;
        if (count[j] > 0) l[j] -= float(count[j]) * p.frequency_penalty + p.presence_penalty;
    }
    double mx = -INFINITY;
    for (float x : l) mx = std::max(mx, double(x));
    std::vector<double> out(n);
    double z = 0;
    for (size_t j = 0; j < n; ++j) z += out[j] = std::exp((double(l[j]) - mx) / p.temperature);
    for (double& x : out) x /= z;
    return out;
}

TEST(SamplerPenalties, the_distribution_follows_the_formula_on_random_rows) {
    Rng rng(5);
    for (int trial = 0; trial < 20; ++trial) {
        const int n = 40;
        const std::vector<float> logits = noisy_row(rng, n);
        std::vector<int32_t> history;
        for (int i = 0; i < 30; ++i) history.push_back(int32_t(rng.next() % 12));  // repeats are likely
        const size_t prompt_length = 10;
        SamplerParams p = penalty_params(0.7f + 0.05f * float(trial % 5));
        p.presence_penalty = float(trial % 7) * 0.6f - 1.8f;
        p.frequency_penalty = float(trial % 5) * 0.9f - 1.8f;
        p.repeat_penalty = trial % 3 == 0 ? 1.3f : 1.0f;
        p.repeat_last_n = trial % 2 ? 8 : -1;
        p.logit_bias = {{int32_t(trial % n), 3.5f}, {int32_t((trial * 7) % n), -20.0f}, {2, 0.5f}};
        Sampler s = penalised_sampler(p);
        s.set_prompt_length(prompt_length);
        TokenDistribution d;
        s.distribution(logits.data(), n, history, &d);
        const std::vector<double> want = formula_distribution(logits, p, history, prompt_length);
        ASSERT_EQ(d.size(), size_t(n));
        for (size_t j = 0; j < size_t(n); ++j) EXPECT_NEAR(d.probs[j], want[j], 1e-5) << "trial " << trial << " token " << j;
    }
}

TEST(SamplerPenalties, prompt_tokens_are_not_counted) {
    SamplerParams p = penalty_params();
    p.frequency_penalty = 1.0f;
    p.presence_penalty = 0.5f;
    const std::vector<float> logits = {0.0f, 0.0f, 0.0f};
    const std::vector<int32_t> history = {0, 0, 1, 2, 2};  // prompt {0, 0, 1}, output {2, 2}
    Sampler s = penalised_sampler(p);
    s.set_prompt_length(3);
    TokenDistribution d;
    s.distribution(logits.data(), 3, history, &d);
    const double e = std::exp(-2.5);  // token 2: 2 * 1.0 + 0.5
    EXPECT_NEAR(d.probs[0], 1.0 / (2.0 + e), 1e-6);
    EXPECT_NEAR(d.probs[1], 1.0 / (2.0 + e), 1e-6);
    EXPECT_NEAR(d.probs[2], e / (2.0 + e), 1e-6);
}

TEST(SamplerPenalties, biases_of_one_token_add_up_and_ids_past_the_row_are_ignored) {
    SamplerParams p = penalty_params();
    p.logit_bias = {{1, 1.0f}, {1, 0.5f}, {9, 100.0f}};
    const std::vector<float> logits = {0.0f, 0.0f};
    Sampler s = penalised_sampler(p);
    TokenDistribution d;
    s.distribution(logits.data(), 2, {}, &d);
    EXPECT_NEAR(d.probs[1], std::exp(1.5) / (1.0 + std::exp(1.5)), 1e-6);
}

TEST(SamplerPenalties, greedy_takes_the_argmax_of_the_biased_and_penalised_logits) {
    const std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.5f};
    SamplerParams p = penalty_params(0.0f);
    EXPECT_TRUE(argmax_of_raw_logits(p));
    p.logit_bias = {{3, 10.0f}};  // forces token 3
    EXPECT_FALSE(argmax_of_raw_logits(p));
    EXPECT_EQ(penalised_sampler(p).sample(logits.data(), 4, {}), 3);
    p.logit_bias.clear();
    p.frequency_penalty = 0.6f;  // token 0 generated twice: 3 - 1.2 = 1.8 < 2
    EXPECT_FALSE(argmax_of_raw_logits(p));
    const std::vector<int32_t> history = {0, 0};
    EXPECT_EQ(penalised_sampler(p).sample(logits.data(), 4, history), 1);
    TokenDistribution d;
    penalised_sampler(p).distribution(logits.data(), 4, history, &d);
    EXPECT_EQ(d.ids, std::vector<int32_t>{1});
    p.frequency_penalty = 0.0f;
    p.presence_penalty = -2.0f;  // a negative penalty favours what was said: token 2 at 3
    const std::vector<int32_t> said = {2};
    EXPECT_EQ(penalised_sampler(p).sample(logits.data(), 4, said), 0);  // 3 vs 3: the lower id wins ties
    p.frequency_penalty = -2.0f;  // twice: 1 + 2 * 2 + 2 = 7
    EXPECT_EQ(penalised_sampler(p).sample(logits.data(), 4, std::vector<int32_t>{2, 2}), 2);
    p.frequency_penalty = 0.0f;
    p.presence_penalty = 2.0f;  // token 0 at 1, token 1 at 2
    EXPECT_EQ(penalised_sampler(p).sample(logits.data(), 4, std::vector<int32_t>{0}), 1);
}

TEST(SamplerPenalties, validate_holds_openai_ranges) {
    const auto ok = [](auto edit) {
        SamplerParams p;
        edit(p);
        return validate(p).ok();
    };
    EXPECT_TRUE(ok([](SamplerParams& p) { p.presence_penalty = -2.0f; }));
    EXPECT_TRUE(ok([](SamplerParams& p) { p.frequency_penalty = 2.0f; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.presence_penalty = 2.01f; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.frequency_penalty = -2.5f; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.frequency_penalty = NAN; }));
    EXPECT_TRUE(ok([](SamplerParams& p) { p.logit_bias = {{0, -100.0f}, {5, 100.0f}}; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.logit_bias = {{0, 100.5f}}; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.logit_bias = {{-1, 1.0f}}; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.logit_bias = {{3, INFINITY}}; }));
    EXPECT_FALSE(ok([](SamplerParams& p) { p.logit_bias.assign(kMaxLogitBiasEntries + 1, {1, 1.0f}); }));
    SamplerParams p;
    p.presence_penalty = 3.0f;
    EXPECT_NE(validate(p).error().message().find("presence_penalty"), std::string::npos);
}

// Two positions verified in one round, against two plain steps: the second position's
// distribution depends on the first token through the penalties, so this holds only if
// verify() hands the sampler the accepted draft as output. A small vocabulary keeps every
// pair's expected count large; the draws are seeded, so the test is deterministic.
TEST(SamplerPenalties, speculative_verify_emits_what_plain_steps_would) {
    const int n = 4;
    const std::vector<float> rows = {1.0f, 0.8f, 0.2f, 0.5f,   // position 1
                                     1.0f, 0.9f, 0.1f, 0.6f,   // position 2
                                     0.0f, 0.0f, 0.0f, 0.0f};  // the token after two accepted drafts
    const std::vector<int32_t> argmax = {0, 0, 0};
    SamplerParams p = penalty_params(1.0f);
    p.frequency_penalty = 0.7f;
    p.presence_penalty = 0.4f;
    p.logit_bias = {{2, 0.9f}};
    const std::vector<int32_t> prompt = {0, 1, 0};  // counted by neither penalty

    // Plain steps: the pair (t1, t2) drawn from the chain's own distributions.
    std::vector<double> want(n * n, 0.0);
    Sampler plain = penalised_sampler(p);
    plain.set_prompt_length(prompt.size());
    TokenDistribution d1, d2;
    plain.distribution(rows.data(), n, prompt, &d1);
    for (int32_t a = 0; a < n; ++a) {
        std::vector<int32_t> h = prompt;
        h.push_back(a);
        plain.distribution(rows.data() + n, n, h, &d2);
        for (int32_t b = 0; b < n; ++b) want[size_t(a * n + b)] = d1.prob(a) * d2.prob(b);
    }

    // Rounds drafting [0, 3] greedily: the emitted first two tokens, whatever was accepted.
    Sampler s = penalised_sampler(p);
    s.set_prompt_length(prompt.size());
    std::vector<int64_t> counts(n * n, 0);
    const VerifyRows verify_rows{rows.data(), argmax.data(), uint32_t(n)};
    Proposal proposal;
    proposal.drafts = {0, 3};
    proposal.winner = 0;
    for (int i = 0; i < 100000; ++i) {
        const RoundResult r = verify(proposal, verify_rows, s, /*greedy=*/false, prompt);
        int32_t t1 = r.accepted >= 1 ? proposal.drafts[0] : r.next;
        int32_t t2;
        if (r.accepted >= 2) {
            t2 = proposal.drafts[1];
        } else if (r.accepted == 1) {
            t2 = r.next;
        } else {  // rejected at the first position: the second token is a plain step after t1
            std::vector<int32_t> h = prompt;
            h.push_back(t1);
            t2 = s.sample(rows.data() + n, n, h);
        }
        ++counts[size_t(t1 * n + t2)];
    }
    EXPECT_TRUE(fits(counts, want));
}

}  // namespace
}  // namespace tdm::test
