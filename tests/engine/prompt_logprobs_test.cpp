// SPDX-License-Identifier: Apache-2.0
// tests/engine/prompt_logprobs_test.cpp: the prompt's logprobs (SessionRequest::
// prompt_logprobs, completions' "echo" with "logprobs"). A prompt token's logprob is the
// log-softmax of the row before it, as a plain C++ computation over that row's full logits
// gives it, and the logprob the same token got when it was generated there; a prompt whose
// tokens a slot's KV already holds is computed whole all the same (no row comes from the
// prefix cache) and scores the same twice, and its KV is left for plain requests to resume;
// a prefill preempted half way reports each position once, with the same values; while the
// scorer is held, another session decodes to its end (counted in steps) and the scored one
// waits, then gets the same logprobs and tokens as alone.
// A few short prompts on the tiny synthetic Qwen3: the test is about the mechanism's exactness.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/batch_engine.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

std::string scoring_model() {
    static const std::string path = [] {
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 11;
        const std::string p = test::make_temp_dir("prompt-logprobs") + "/q3.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

// One session run to its end on `e`, with what it reported.
struct Scored {
    SessionResult result;
    std::vector<TokenLogprobs> generated;                 // per generated token
    std::vector<std::pair<uint32_t, int32_t>> positions;  // per prompt logprob: position, token
    std::vector<TokenLogprobs> prompt;                    // per prompt logprob
    std::vector<std::vector<float>> rows;                 // logits_all: every prompt row
};

constexpr uint32_t kTop = 4;

Scored run_session(BatchEngine& e, std::vector<int32_t> prompt, int max_tokens, bool score_prompt, bool keep_rows) {
    Scored out;
    bool done = false;
    SessionRequest r;
    r.prompt = std::move(prompt);
    r.params.max_tokens = max_tokens;
    r.params.sampling.temperature = 0;
    r.params.ignore_eog = true;
    r.logprobs = int32_t(kTop);
    if (score_prompt) {
        r.prompt_logprobs = int32_t(kTop);
        r.on_prompt_logprob = [&](uint32_t pos, int32_t token, const TokenLogprobs& lp) {
            out.positions.emplace_back(pos, token);
            out.prompt.push_back(lp);
        };
    }
    if (keep_rows) {
        r.logits_all = true;
        r.logits_sink = [&](const float* row, uint32_t n_vocab) { out.rows.emplace_back(row, row + n_vocab); };
    }
    r.on_token = [&](int32_t tok, std::string_view, const TokenLogprobs* lp) {
        if (tok >= 0 && lp) out.generated.push_back(*lp);
        return true;
    };
    r.on_done = [&](const SessionResult& res) {
        out.result = res;
        done = true;
    };
    e.add(std::move(r));
    for (int guard = 0; guard < 10000 && e.step(); ++guard) {
    }
    EXPECT_TRUE(done);
    return out;
}

// log p(token | row) and the kTop most likely ids, in plain double arithmetic.
std::pair<double, std::vector<int32_t>> plain_logprob(const std::vector<float>& row, int32_t token) {
    const double mx = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float x : row) sum += std::exp(double(x) - mx);
    std::vector<int32_t> ids(row.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
    ids.resize(kTop);
    return {double(row[size_t(token)]) - mx - std::log(sum), ids};
}

std::vector<int32_t> top_ids(const TokenLogprobs& lp) {
    std::vector<int32_t> ids;
    for (const auto& [id, v] : lp.top) ids.push_back(id);
    return ids;
}

std::unique_ptr<KvPool> scoring_pool(const Model& m, uint64_t budget = 0) {
    KvPoolConfig kc;
    kc.n_ctx = 128;
    kc.n_seq_max = 2;
    kc.memory_budget = budget;
    auto kv = KvPool::create(test::test_device(), m.attention_layers(), kc, "test", m.recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    return kv.ok() ? std::move(kv).value() : nullptr;
}

std::vector<int32_t> some_prompt(uint64_t seed, size_t n) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> prompt(n);
    for (int32_t& t : prompt) t = int32_t(rng() % 500);
    return prompt;
}

class PromptLogprobsTest : public test::DeviceTest {};

TEST_F(PromptLogprobsTest, match_a_plain_log_softmax_and_the_generated_tokens_and_skip_the_prefix_cache) {
    auto m = Model::load(scoring_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto kv = scoring_pool(**m);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = 8;  // the prompts below take several chunks
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();

    const std::vector<int32_t> prompt = some_prompt(3, 13);
    // 8 tokens generated greedily, with their logprobs
    const Scored gen = run_session(**e, prompt, 8, false, false);
    ASSERT_EQ(gen.result.tokens.size(), 8u);
    ASSERT_EQ(gen.generated.size(), 8u);

    // the prompt and those tokens scored: max_tokens 0, the classic "score this text"
    std::vector<int32_t> text = prompt;
    text.insert(text.end(), gen.result.tokens.begin(), gen.result.tokens.end());
    const Scored scored = run_session(**e, text, 0, true, true);
    EXPECT_TRUE(scored.result.tokens.empty());
    EXPECT_EQ(scored.result.stop_reason, StopReason::length);
    // the slot of the first request holds 20 of these 21 tokens; none was taken from it
    EXPECT_EQ(scored.result.n_cached, 0u);
    ASSERT_EQ(scored.prompt.size(), text.size() - 1);
    ASSERT_EQ(scored.rows.size(), text.size());
    for (size_t i = 0; i < scored.prompt.size(); ++i) {
        const uint32_t pos = uint32_t(i + 1);  // nothing predicts the first token
        EXPECT_EQ(scored.positions[i], std::make_pair(pos, text[pos]));
        const TokenLogprobs& lp = scored.prompt[i];
        const auto [want, want_top] = plain_logprob(scored.rows[pos - 1], text[pos]);
        EXPECT_NEAR(lp.logprob, want, 1e-5) << "position " << pos;
        EXPECT_EQ(top_ids(lp), want_top) << "position " << pos;
        EXPECT_LE(lp.logprob, 0.0f);
    }
    // the generated tokens' positions: the logprobs they were generated with
    for (size_t j = 0; j < gen.generated.size(); ++j) {
        const TokenLogprobs& lp = scored.prompt[prompt.size() - 1 + j];
        EXPECT_NEAR(lp.logprob, gen.generated[j].logprob, 1e-5) << "generated token " << j;
        EXPECT_EQ(top_ids(lp), top_ids(gen.generated[j])) << "generated token " << j;
        ASSERT_EQ(lp.top.size(), size_t(kTop));
        for (uint32_t k = 0; k < kTop; ++k) EXPECT_NEAR(lp.top[k].second, gen.generated[j].top[k].second, 1e-5);
    }

    // again, with the text in a slot now: computed whole again, the same logprobs
    const uint64_t hits = (*e)->stats().prefix_hits;
    const Scored again = run_session(**e, text, 0, true, false);
    EXPECT_EQ(again.result.n_cached, 0u);
    EXPECT_EQ((*e)->stats().prefix_hits, hits);
    ASSERT_EQ(again.prompt.size(), scored.prompt.size());
    for (size_t i = 0; i < again.prompt.size(); ++i) {
        EXPECT_EQ(again.prompt[i].logprob, scored.prompt[i].logprob) << "position " << i + 1;
        EXPECT_EQ(top_ids(again.prompt[i]), top_ids(scored.prompt[i])) << "position " << i + 1;
    }
    // what it computed stays for a plain request to resume
    const Scored plain = run_session(**e, text, 1, false, false);
    EXPECT_EQ(plain.result.n_cached, text.size() - 1);
}

TEST_F(PromptLogprobsTest, a_session_preempted_in_its_prefill_reports_each_position_once_and_the_same) {
    auto m = Model::load(scoring_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    const std::vector<int32_t> prompt = some_prompt(9, 60);
    BatchEngineOptions o;
    o.n_batch = 2;  // a long prefill, in which the pool runs out
    Scored alone;
    {
        auto kv = scoring_pool(**m);
        ASSERT_TRUE(kv);
        Runner runner(**m, *kv, device(), pipelines());
        auto e = BatchEngine::create(runner, nullptr, o);
        ASSERT_TRUE(e.ok()) << e.error().message();
        alone = run_session(**e, prompt, 0, true, false);
    }
    ASSERT_EQ(alone.prompt.size(), prompt.size() - 1);

    // 6 blocks of 16 tokens: the scored prompt holds 4 from its admission, and a decoding
    // session admitted before it grows into the rest and then needs a third of its own,
    // while the prompt is still in its prefill: the prompt (the newest) gives its blocks back
    auto probe = scoring_pool(**m);
    ASSERT_TRUE(probe);
    const uint64_t block_bytes = probe->device_bytes() / probe->n_blocks();
    probe.reset();
    auto kv = scoring_pool(**m, block_bytes * 6 + block_bytes / 2);
    ASSERT_TRUE(kv);
    ASSERT_EQ(kv->n_blocks(), 6u);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    bool decoded = false;
    SessionRequest first;
    first.prompt = some_prompt(10, 10);
    first.params.max_tokens = 30;
    first.params.ignore_eog = true;
    first.on_done = [&](const SessionResult& r) { decoded = r.tokens.size() == 30; };
    (*e)->add(std::move(first));
    (*e)->step();  // admitted before the scored prompt
    const Scored preempted = run_session(**e, prompt, 0, true, false);
    EXPECT_TRUE(decoded);
    EXPECT_GT((*e)->stats().preemptions, 0u);
    ASSERT_EQ(preempted.prompt.size(), alone.prompt.size());
    for (size_t i = 0; i < alone.prompt.size(); ++i) {
        EXPECT_EQ(preempted.positions[i], alone.positions[i]);
        EXPECT_EQ(preempted.prompt[i].logprob, alone.prompt[i].logprob) << "position " << i + 1;
        EXPECT_EQ(top_ids(preempted.prompt[i]), top_ids(alone.prompt[i])) << "position " << i + 1;
    }
}

TEST_F(PromptLogprobsTest, another_session_decodes_while_a_long_prompt_waits_for_its_scores) {
    auto m = Model::load(scoring_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto kv = scoring_pool(**m);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = 8;  // the scored prompt takes several chunks
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    const std::vector<int32_t> prompt = some_prompt(21, 60);
    const Scored alone = run_session(**e, prompt, 3, true, false);
    ASSERT_EQ(alone.prompt.size(), prompt.size() - 1);

    // the scorer does nothing while held: the scored session runs ahead of its scores by a
    // bounded backlog and then waits, and the other one decodes each step all the same
    (*e)->hold_prompt_scoring(true);
    constexpr int kDecoded = 20;
    int decoded = 0;
    bool decoder_done = false;
    SessionRequest other;
    other.prompt = some_prompt(22, 6);
    other.params.max_tokens = kDecoded;
    other.params.ignore_eog = true;
    other.on_token = [&](int32_t tok, std::string_view, const TokenLogprobs*) {
        decoded += tok >= 0;
        return true;
    };
    other.on_done = [&](const SessionResult&) { decoder_done = true; };
    (*e)->add(std::move(other));

    Scored held;
    bool scored_done = false;
    SessionRequest r;
    r.prompt = prompt;
    r.params.max_tokens = 3;
    r.params.sampling.temperature = 0;
    r.params.ignore_eog = true;
    r.logprobs = int32_t(kTop);
    r.prompt_logprobs = int32_t(kTop);
    r.on_prompt_logprob = [&](uint32_t pos, int32_t token, const TokenLogprobs& lp) {
        held.positions.emplace_back(pos, token);
        held.prompt.push_back(lp);
    };
    r.on_token = [&](int32_t tok, std::string_view, const TokenLogprobs* lp) {
        // every prompt logprob comes before the first generated token
        EXPECT_EQ(held.prompt.size(), prompt.size() - 1);
        if (tok >= 0 && lp) held.generated.push_back(*lp);
        return true;
    };
    r.on_done = [&](const SessionResult& res) {
        held.result = res;
        scored_done = true;
    };
    (*e)->add(std::move(r));
    int steps = 0;
    while (!decoder_done && steps < 1000) {
        ASSERT_TRUE((*e)->step());
        ++steps;
    }
    EXPECT_TRUE(decoder_done);
    EXPECT_EQ(decoded, kDecoded);
    EXPECT_GE(steps, kDecoded);
    EXPECT_TRUE(held.prompt.empty()) << "scores came while the scorer was held";
    EXPECT_FALSE(scored_done);
    EXPECT_TRUE(held.generated.empty());

    (*e)->hold_prompt_scoring(false);
    for (int guard = 0; guard < 10000 && (*e)->step(); ++guard) {
    }
    ASSERT_TRUE(scored_done);
    EXPECT_EQ(held.result.tokens, alone.result.tokens);
    ASSERT_EQ(held.prompt.size(), alone.prompt.size());
    for (size_t i = 0; i < alone.prompt.size(); ++i) {
        EXPECT_EQ(held.positions[i], alone.positions[i]);
        // the chunks shared passes with the other session's rows this time
        EXPECT_NEAR(held.prompt[i].logprob, alone.prompt[i].logprob, 1e-5) << "position " << i + 1;
        EXPECT_EQ(top_ids(held.prompt[i]), top_ids(alone.prompt[i])) << "position " << i + 1;
    }
}

}  // namespace
}  // namespace tdm
