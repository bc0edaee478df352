// SPDX-License-Identifier: Apache-2.0
// tests/sampling/sampler_test.cpp: the sampling chain on hand-made logits (each filter alone,
// then chained), against a plain full-sort reference on random rows, plus determinism and
// a statistical check of the draw. To add a case: build logits from the probabilities you
// want (logits_for), set only the filters under test (params_with), compare distributions.
#include "sampling/sampler.h"

#include "support/sampling_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tdm::test {
namespace {

// Every filter off, temperature 1, fixed seed: tests switch on what they test.
SamplerParams params_with(float temperature = 1.0f) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    return p;
}

Sampler make(const SamplerParams& p) {
    auto s = Sampler::create(p);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return std::move(s).value();
}

TokenDistribution dist_of(const SamplerParams& p, const std::vector<float>& logits,
                          std::vector<int32_t> history = {}) {
    Sampler s = make(p);
    TokenDistribution d;
    s.distribution(logits.data(), static_cast<int>(logits.size()), history, &d);
    return d;
}

// Logits whose softmax is `probs` (log p; p = 0 gives -inf).
std::vector<float> logits_for(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

// Checks `d` against {id: probability}.
void expect_dist(const TokenDistribution& d, const std::map<int32_t, double>& want, double tol = 1e-5) {
    ASSERT_EQ(d.ids.size(), want.size());
    size_t i = 0;
    for (auto [id, p] : want) {
        EXPECT_EQ(d.ids[i], id) << "entry " << i;
        EXPECT_NEAR(d.probs[i], p, tol) << "token " << id;
        ++i;
    }
}

// Normalises {id: weight} into {id: probability}.
std::map<int32_t, double> normalised(std::map<int32_t, double> w) {
    double s = 0.0;
    for (auto& [id, v] : w) s += v;
    for (auto& [id, v] : w) v /= s;
    return w;
}

// ---------------------------------------------------------------------------------------
// Greedy
// ---------------------------------------------------------------------------------------

TEST(Sampler, greedy_picks_the_lowest_id_among_equal_maxima) {
    Sampler s = make(params_with(0.0f));
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f};
    EXPECT_EQ(s.sample(logits.data(), 5, {}), 1);
    TokenDistribution d;
    s.distribution(logits.data(), 5, {}, &d);
    expect_dist(d, {{1, 1.0}});
}

TEST(Sampler, greedy_ignores_nan_and_handles_rows_without_a_finite_logit) {
    Sampler s = make(params_with(0.0f));
    const std::vector<float> with_nan = {0.5f, NAN, -1.0f};
    EXPECT_EQ(s.sample(with_nan.data(), 3, {}), 0);
    const std::vector<float> all_neg_inf = {-INFINITY, -INFINITY, -INFINITY};
    EXPECT_EQ(s.sample(all_neg_inf.data(), 3, {}), 0);
    const std::vector<float> with_inf = {0.5f, INFINITY, INFINITY};
    EXPECT_EQ(s.sample(with_inf.data(), 3, {}), 1);
}

TEST(Sampler, greedy_ignores_the_filters_and_the_temperature_scale) {
    SamplerParams p = params_with(-1.0f);  // any temperature <= 0 is greedy
    p.top_k = 1;
    p.top_p = 0.1f;
    p.min_p = 0.9f;
    const std::vector<float> logits = {0.1f, 0.2f, 5.0f, 0.3f};
    EXPECT_EQ(make(p).sample(logits.data(), 4, {}), 2);
}

// ---------------------------------------------------------------------------------------
// Each filter alone
// ---------------------------------------------------------------------------------------

// Probabilities shuffled over ids so that "sorted by id" and "sorted by logit" differ.
const std::vector<double> kProbs = {0.3, 0.5, 0.05, 0.1, 0.05};  // ids 0..4

TEST(Sampler, no_filters_at_temperature_1_is_the_softmax) {
    expect_dist(dist_of(params_with(), logits_for(kProbs)),
                {{0, 0.3}, {1, 0.5}, {2, 0.05}, {3, 0.1}, {4, 0.05}});
}

TEST(Sampler, top_k_alone_keeps_the_k_likeliest_renormalised) {
    SamplerParams p = params_with();
    p.top_k = 3;
    expect_dist(dist_of(p, logits_for(kProbs)), normalised({{0, 0.3}, {1, 0.5}, {3, 0.1}}));
    p.top_k = 1;
    expect_dist(dist_of(p, logits_for(kProbs)), {{1, 1.0}});
}

TEST(Sampler, top_k_breaks_ties_at_the_cut_by_the_lower_id) {
    SamplerParams p = params_with();
    p.top_k = 2;
    // Tokens 1, 2 and 4 tie for second place.
    expect_dist(dist_of(p, {0.0f, 1.0f, 1.0f, 2.0f, 1.0f}),
                normalised({{1, std::exp(1.0)}, {3, std::exp(2.0)}}));
}

TEST(Sampler, top_k_at_least_the_vocabulary_size_keeps_everything) {
    SamplerParams p = params_with();
    p.top_k = 5;
    EXPECT_EQ(dist_of(p, logits_for(kProbs)).size(), 5u);
    p.top_k = 1000;
    EXPECT_EQ(dist_of(p, logits_for(kProbs)).size(), 5u);
}

TEST(Sampler, top_p_alone_keeps_the_shortest_prefix_reaching_p) {
    SamplerParams p = params_with();
    p.top_p = 0.75f;  // 0.5, then 0.8 >= 0.75
    expect_dist(dist_of(p, logits_for(kProbs)), normalised({{0, 0.3}, {1, 0.5}}));
    p.top_p = 0.85f;  // 0.5, 0.8, 0.9
    expect_dist(dist_of(p, logits_for(kProbs)), normalised({{0, 0.3}, {1, 0.5}, {3, 0.1}}));
    p.top_p = 0.0f;  // keeps the likeliest token only
    expect_dist(dist_of(p, logits_for(kProbs)), {{1, 1.0}});
}

TEST(Sampler, min_p_alone_drops_tokens_below_a_fraction_of_the_likeliest) {
    SamplerParams p = params_with();
    p.min_p = 0.25f;  // keeps p >= 0.125
    expect_dist(dist_of(p, logits_for(kProbs)), normalised({{0, 0.3}, {1, 0.5}}));
    p.min_p = 0.15f;  // keeps p >= 0.075
    expect_dist(dist_of(p, logits_for(kProbs)), normalised({{0, 0.3}, {1, 0.5}, {3, 0.1}}));
    p.min_p = 1.0f;
    expect_dist(dist_of(p, logits_for(kProbs)), {{1, 1.0}});
}

TEST(Sampler, temperature_sharpens_below_1_and_flattens_above) {
    // softmax(log p / T) is proportional to p^(1/T).
    std::map<int32_t, double> sharp, flat;
    for (int32_t i = 0; i < 5; ++i) {
        sharp[i] = std::pow(kProbs[static_cast<size_t>(i)], 2.0);
        flat[i] = std::sqrt(kProbs[static_cast<size_t>(i)]);
    }
    expect_dist(dist_of(params_with(0.5f), logits_for(kProbs)), normalised(sharp));
    expect_dist(dist_of(params_with(2.0f), logits_for(kProbs)), normalised(flat));
}

// ---------------------------------------------------------------------------------------
// The chain
// ---------------------------------------------------------------------------------------

TEST(Sampler, chain_runs_top_k_top_p_min_p_and_then_the_temperature) {
    // ids:              0     1     2     3     4     5
    const std::vector<double> probs = {0.06, 0.25, 0.4, 0.04, 0.1, 0.15};
    SamplerParams p = params_with(0.5f);
    p.top_k = 4;     // {2: .4, 1: .25, 5: .15, 4: .1} -> .444 .278 .167 .111
    p.top_p = 0.8f;  // cumulative .444 .722 .889: keeps 2, 1, 5
    p.min_p = 0.4f;  // keeps p >= .4 * .444: 2 and 1 (5 has .167 < .178)
    // Temperature 0.5 last: .4^2 : .25^2. Had it come first, top-p would have kept 2 and 1,
    // and min-p then only 2 (.245 < .4 * .627), so this also pins the order.
    expect_dist(dist_of(p, logits_for(probs)), normalised({{1, 0.25 * 0.25}, {2, 0.4 * 0.4}}));
}

// The chain written the obvious way (full stable sort, as llama.cpp does), to compare the
// sampler's partial sorts and min-p pre-cut against.
TokenDistribution reference_chain(const std::vector<float>& logits, const SamplerParams& p,
                                  const std::vector<int32_t>& history) {
    std::vector<std::pair<int32_t, float>> c;
    for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<int32_t>(i), logits[i]});
    std::set<int32_t> seen;
    const size_t n = p.repeat_last_n < 0 ? history.size()
                                         : std::min(history.size(), static_cast<size_t>(p.repeat_last_n));
    for (size_t i = history.size() - n; i < history.size(); ++i) seen.insert(history[i]);
    for (int32_t t : seen) {
        float& l = c[static_cast<size_t>(t)].second;
        l = l <= 0.0f ? l * p.repeat_penalty : l / p.repeat_penalty;
    }
    std::stable_sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.second > b.second; });
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < c.size()) c.resize(static_cast<size_t>(p.top_k));
    if (p.top_p < 1.0f) {
        const float max = c.front().second;
        double z = 0.0, cum = 0.0;
        for (auto& e : c) z += std::exp(e.second - max);
        for (size_t i = 0; i < c.size(); ++i) {
            cum += std::exp(c[i].second - max) / z;
            if (cum >= p.top_p) {
                c.resize(i + 1);
                break;
            }
        }
    }
    if (p.min_p > 0.0f) {
        const float threshold = c.front().second + std::log(p.min_p);
        size_t keep = 1;
        while (keep < c.size() && c[keep].second >= threshold) ++keep;
        c.resize(keep);
    }
    std::sort(c.begin(), c.end());
    TokenDistribution d;
    double z = 0.0;
    float max = -INFINITY;
    for (auto& e : c) max = std::max(max, e.second);
    for (auto& e : c) z += std::exp((e.second - max) / p.temperature);
    for (auto& e : c) {
        d.ids.push_back(e.first);
        d.probs.push_back(static_cast<float>(std::exp((e.second - max) / p.temperature) / z));
    }
    return d;
}

std::vector<float> random_logits(Rng& rng, int n, double scale) {
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) {  // Box-Muller, so the rows depend on nothing but the seed
        const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
        x = static_cast<float>(scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
    return l;
}

TEST(Sampler, filters_match_a_full_sort_reference_on_random_rows) {
    Rng rng(99);
    struct Case {
        int top_k;
        float top_p, min_p, temperature, repeat_penalty;
    };
    const Case cases[] = {
        {0, 0.9f, 0.0f, 1.0f, 1.0f},    // top-p alone: the prefix widens past 64 entries
        {0, 0.9f, 0.05f, 0.7f, 1.0f},   // top-p with min-p's pre-cut
        {0, 0.99f, 0.0f, 1.3f, 1.1f},   // nearly everything: the prefix becomes the whole row
        {0, 1.0f, 0.02f, 1.0f, 1.0f},   // min-p alone, unsorted
        {40, 0.95f, 0.05f, 0.8f, 1.1f},  // llama.cpp's defaults with a penalty
        {200, 0.5f, 0.0f, 1.0f, 1.3f},
    };
    for (double scale : {0.05, 1.0, 3.0}) {  // flat to peaked rows
        const std::vector<float> logits = random_logits(rng, 5000, scale);
        std::vector<int32_t> history;
        for (int i = 0; i < 100; ++i) history.push_back(static_cast<int32_t>(rng.next() % 5000));
        for (const Case& c : cases) {
            SamplerParams p = params_with(c.temperature);
            p.top_k = c.top_k;
            p.top_p = c.top_p;
            p.min_p = c.min_p;
            p.repeat_penalty = c.repeat_penalty;
            SCOPED_TRACE(testing::Message() << "scale " << scale << " top_k " << c.top_k << " top_p " << c.top_p
                                            << " min_p " << c.min_p);
            const TokenDistribution want = reference_chain(logits, p, history);
            const TokenDistribution got = dist_of(p, logits, history);
            ASSERT_EQ(got.ids, want.ids);
            for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got.probs[i], want.probs[i], 1e-6);
        }
    }
}

TEST(Sampler, top_k_on_a_250k_vocabulary_keeps_the_k_largest) {
    Rng rng(5);
    const std::vector<float> logits = random_logits(rng, 250000, 2.0);
    SamplerParams p = params_with(0.8f);
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    const TokenDistribution got = dist_of(p, logits);
    const TokenDistribution want = reference_chain(logits, p, {});
    ASSERT_EQ(got.ids, want.ids);
    ASSERT_LE(got.size(), 40u);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.probs[i], want.probs[i], 1e-6);
}

// ---------------------------------------------------------------------------------------
// Repetition penalty
// ---------------------------------------------------------------------------------------

TEST(Sampler, repetition_penalty_divides_positive_logits_and_multiplies_the_others) {
    SamplerParams p = params_with();
    p.repeat_penalty = 2.0f;
    // Token 1 appears twice but is penalised once; token 3's logit 0 stays 0.
    const TokenDistribution d = dist_of(p, {2.0f, -2.0f, 1.0f, 0.0f, 3.0f}, {0, 1, 1, 3});
    expect_dist(d, normalised({{0, std::exp(1.0)}, {1, std::exp(-4.0)}, {2, std::exp(1.0)}, {3, 1.0},
                               {4, std::exp(3.0)}}));
}

TEST(Sampler, greedy_picks_from_the_penalised_logits) {
    SamplerParams p = params_with(0.0f);
    p.repeat_penalty = 2.0f;
    const std::vector<float> positive = {2.0f, 1.5f};  // 2 / 2 = 1 < 1.5
    const std::vector<int32_t> history = {0};
    EXPECT_EQ(make(p).sample(positive.data(), 2, history), 1);
    const std::vector<float> negative = {-1.0f, -1.5f};  // -1 * 2 = -2 < -1.5
    EXPECT_EQ(make(p).sample(negative.data(), 2, history), 1);
}

TEST(Sampler, repetition_penalty_looks_only_at_the_last_n_tokens) {
    SamplerParams p = params_with();
    p.repeat_penalty = 2.0f;
    const std::vector<float> logits = {2.0f, 2.0f, 2.0f};
    const std::vector<int32_t> history = {0, 1, 1};
    p.repeat_last_n = 2;  // only token 1
    expect_dist(dist_of(p, logits, history), normalised({{0, std::exp(2.0)}, {1, std::exp(1.0)}, {2, std::exp(2.0)}}));
    p.repeat_last_n = -1;  // the whole history
    expect_dist(dist_of(p, logits, history), normalised({{0, std::exp(1.0)}, {1, std::exp(1.0)}, {2, std::exp(2.0)}}));
    p.repeat_last_n = 0;  // off
    expect_dist(dist_of(p, logits, history), {{0, 1.0 / 3}, {1, 1.0 / 3}, {2, 1.0 / 3}});
}

TEST(Sampler, repetition_penalty_skips_history_ids_outside_the_vocabulary) {
    SamplerParams p = params_with();
    p.repeat_penalty = 2.0f;
    expect_dist(dist_of(p, {1.0f, 1.0f}, {-1, 7, 1}), normalised({{0, std::exp(1.0)}, {1, std::exp(0.5)}}));
}

// ---------------------------------------------------------------------------------------
// Determinism, the draw, parameters
// ---------------------------------------------------------------------------------------

std::vector<int32_t> run(Sampler& s, int steps) {
    Rng rows(3);
    std::vector<int32_t> out;
    for (int i = 0; i < steps; ++i) {
        const std::vector<float> logits = random_logits(rows, 1000, 1.5);
        out.push_back(s.sample(logits.data(), 1000, out));
    }
    return out;
}

TEST(Sampler, the_same_seed_gives_the_same_tokens) {
    SamplerParams p;  // llama.cpp's defaults
    p.seed = 42;
    p.repeat_penalty = 1.1f;
    Sampler a = make(p), b = make(p);
    const std::vector<int32_t> ta = run(a, 200);
    EXPECT_EQ(ta, run(b, 200));
    p.seed = 43;
    Sampler c = make(p);
    EXPECT_NE(ta, run(c, 200));
}

TEST(Sampler, an_unseeded_sampler_reports_a_seed_that_reproduces_it) {
    SamplerParams p;
    Sampler a = make(p);
    p.seed = a.seed();
    Sampler b = make(p);
    EXPECT_EQ(run(a, 50), run(b, 50));
}

TEST(Sampler, rng_is_the_standard_mt19937_64_with_a_fixed_conversion) {
    // The standard fixes the 10000th output of a default-constructed mt19937_64
    // (seed 5489); the conversion to [0, 1) is the top 53 bits times 2^-53.
    Rng r(5489);
    for (int i = 0; i < 9999; ++i) r.next();
    EXPECT_EQ(r.next(), 9981545732273789042ull);
    Rng a(7), b(7);
    EXPECT_EQ(b.uniform(), static_cast<double>(a.next() >> 11) * 0x1.0p-53);
}

TEST(Sampler, sample_draws_from_the_distribution_it_reports) {
    SamplerParams p;
    p.seed = 8;
    Sampler a = make(p), b = make(p);
    Rng rows(11);
    for (int i = 0; i < 100; ++i) {
        const std::vector<float> logits = random_logits(rows, 300, 1.0);
        TokenDistribution d;
        b.distribution(logits.data(), 300, {}, &d);
        ASSERT_EQ(a.sample(logits.data(), 300, {}), draw(d, b.rng())) << "step " << i;
    }
}

TEST(Sampler, sampling_at_temperature_1_without_filters_matches_the_softmax) {
    const std::vector<float> logits = {1.0f, 0.0f, 2.5f, -1.0f, 0.5f, 1.5f};
    std::vector<double> probs;
    double z = 0.0;
    for (float l : logits) z += std::exp(static_cast<double>(l));
    for (float l : logits) probs.push_back(std::exp(static_cast<double>(l)) / z);
    Sampler s = make(params_with());
    std::vector<int64_t> counts(logits.size());
    for (int i = 0; i < 200000; ++i) ++counts[static_cast<size_t>(s.sample(logits.data(), 6, {}))];
    EXPECT_TRUE(fits(counts, probs));
}

TEST(Sampler, draw_never_returns_a_token_of_probability_zero) {
    const TokenDistribution d{{2, 5, 9}, {0.0f, 1.0f, 0.0f}};
    Rng rng(1);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(draw(d, rng), 5);
}

TEST(Sampler, create_rejects_parameters_out_of_range) {
    auto rejects = [](auto edit, const char* needle) {
        SamplerParams p;
        edit(p);
        auto s = Sampler::create(p);
        ASSERT_FALSE(s.ok()) << needle;
        EXPECT_NE(s.error().message().find(needle), std::string::npos) << s.error().message();
    };
    rejects([](SamplerParams& p) { p.temperature = NAN; }, "temperature");
    rejects([](SamplerParams& p) { p.top_p = INFINITY; }, "top_p");
    rejects([](SamplerParams& p) { p.min_p = 1.5f; }, "min_p");
    rejects([](SamplerParams& p) { p.repeat_penalty = 0.0f; }, "repeat_penalty");
    rejects([](SamplerParams& p) { p.repeat_last_n = -2; }, "repeat_last_n");
    EXPECT_TRUE(Sampler::create(SamplerParams{}).ok());
}

}  // namespace
}  // namespace tdm::test
