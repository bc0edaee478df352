// SPDX-License-Identifier: Apache-2.0
// tests/speculative/prompt_cache_mtp_test.cpp: sequence-state files with the
// Qwen3.5 MTP head drafting (DraftHeadDrafter::save_state / load_state). The
// head's KV pairs and held target hidden rows travel in the file, so a restored
// run drafts exactly what an uninterrupted one does (same drafted and accepted
// counts) and emits the tokens of plain decoding; a file saved without the
// head's state is refused while the head is in use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/continuation.h"
#include "engine/generate.h"
#include "engine/state_file.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

constexpr uint32_t kDraftMax = 3;

const std::string& model_path() {
    static const std::string path = [] {
        auto shape = synth::qwen35_preset("tiny");
        EXPECT_TRUE(shape.ok());
        synth::Qwen35SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 11;
        const std::string p = test::make_temp_dir("pcache-mtp") + "/m.gguf";
        EXPECT_TRUE(synth::synth_qwen35_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

// A target with its pool, runner, sequence and MTP head.
struct Session {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
    std::unique_ptr<DraftHeadDrafter> mtp;
    int seq = -1;
    std::vector<Drafter*> drafters() { return {mtp.get()}; }
};

Session session() {
    Session s;
    s.model = std::move(Model::load(model_path(), test::build_tree_plugins(), test::test_device())).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_checkpoints = kDraftMax + 2;
    s.kv = std::move(KvPool::create(test::test_device(), s.model->attention_layers(), kc, "test",
                                    s.model->recurrent_states()))
               .value();
    s.runner = std::make_unique<Runner>(*s.model, *s.kv, test::test_device(), test::test_pipelines());
    s.seq = *s.kv->add_sequence();
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", s.model->arch().desc->name);
    EXPECT_TRUE(e);
    DraftHeadOptions o;
    o.kv.n_ctx = 256;
    auto d = DraftHeadDrafter::create(*e, "mtp", s.model->shared_source(), *s.model, *s.kv, test::test_device(),
                                      test::test_pipelines(), o);
    EXPECT_TRUE(d.ok()) << d.error().message();
    if (d.ok()) s.mtp = std::move(d).value();
    return s;
}

std::vector<int32_t> prompt_of(uint32_t seed, size_t n) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = int32_t((seed * 131u + i * 977u + (i * i) % 31) % 500);
    return t;
}

GenerateParams greedy_prompt_cache_mtp(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = 8;
    return gp;
}

struct SpecOutcome {
    std::vector<int32_t> tokens;
    uint32_t n_kv = 0;
    std::vector<std::vector<int32_t>> drafts;  // the head's proposal of each round (the trace)
    std::string extra;                         // restored(): the file's extra string
};

SpecOutcome speculative(Session& s, std::span<const int32_t> prompt, GenerateParams gp) {
    static const std::string trace = test::make_temp_dir("pcache-mtp-trace") + "/trace.ndjson";
    SpecParams sp;
    sp.draft_max = int(kDraftMax);
    sp.trace_path = trace;
    const auto d = s.drafters();
    auto r = generate_speculative(*s.runner, nullptr, s.seq, prompt, gp, d, sp, {});
    EXPECT_TRUE(r.ok()) << r.error().message();
    SpecOutcome out;
    if (!r.ok()) return out;
    out.tokens = r->gen.tokens;
    out.n_kv = r->gen.n_kv;
    std::istringstream lines(test::read_file(trace));
    for (std::string line; std::getline(lines, line);)
        out.drafts.push_back(nlohmann::json::parse(line)["drafted"].get<std::vector<int32_t>>());
    return out;
}

std::vector<int32_t> plain(std::span<const int32_t> prompt, int n) {
    Session s = session();
    auto r = generate(*s.runner, nullptr, s.seq, prompt, greedy_prompt_cache_mtp(n), {});
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? r->tokens : std::vector<int32_t>{};
}

// Restores `file` into a fresh setup and continues `prompt` speculatively.
SpecOutcome restored(const std::string& file, std::span<const int32_t> prompt, int n, uint32_t want_reused) {
    Session s = session();
    const auto d = s.drafters();
    auto st = load_sequence_state(file, *s.model, *s.kv, s.seq, d);
    EXPECT_TRUE(st.ok()) << st.error().message();
    if (!st.ok()) return {};
    const uint32_t reused = resumable_prefix(*s.kv, s.seq, st->tokens, prompt, d);
    EXPECT_EQ(reused, want_reused);
    EXPECT_TRUE(s.kv->truncate(s.seq, reused).ok());
    GenerateParams gp = greedy_prompt_cache_mtp(n);
    gp.n_cached = reused;
    SpecOutcome out = speculative(s, prompt, gp);
    out.extra = st->extra;
    return out;
}

class PromptCacheMtp : public test::DeviceTest {};

TEST_F(PromptCacheMtp, restored_head_state_drafts_as_an_uninterrupted_run_and_output_equals_plain) {
    const std::string dir = test::make_temp_dir("pcache-mtp-files");
    const auto p = prompt_of(1, 29);
    auto q = p;
    for (int32_t t : prompt_of(2, 14)) q.push_back(t);
    {
        Session s = session();
        GenerateParams gp = greedy_prompt_cache_mtp(6);
        bool saved = false;
        gp.on_prefix = [&](uint32_t n_kv) -> Status {
            const auto d = s.drafters();
            TDM_TRY(save_sequence_state(dir + "/p.state", *s.model, *s.kv, s.seq, std::span(p).first(n_kv), d));
            saved = true;
            return {};
        };
        (void)speculative(s, p, gp);
        ASSERT_TRUE(saved);
    }
    Session whole = session();
    const SpecOutcome want = speculative(whole, q, greedy_prompt_cache_mtp(24));
    EXPECT_EQ(want.tokens, plain(q, 24));
    ASSERT_GT(want.drafts.size(), 2u);

    const SpecOutcome got = restored(dir + "/p.state", q, 24, uint32_t(p.size() - 1));
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_EQ(got.drafts, want.drafts) << "the restored head drafts differently";

    // after a generation the head holds pairs of its own: save there (a chat's
    // /save), then continue the conversation in-process and from the file alike
    std::vector<int32_t> history = q;
    history.insert(history.end(), want.tokens.begin(), want.tokens.end());
    const uint32_t n_kv = want.n_kv;
    ASSERT_GT(n_kv, q.size());
    const auto wd = whole.drafters();
    auto saved = save_sequence_state(dir + "/turn.state", *whole.model, *whole.kv, whole.seq,
                                     std::span(history).first(n_kv), wd, "{\"turns\":1}");
    ASSERT_TRUE(saved.ok()) << saved.error().message();
    auto next = history;
    for (int32_t t : prompt_of(3, 9)) next.push_back(t);
    const uint32_t reuse = resumable_prefix(*whole.kv, whole.seq, std::span(history).first(n_kv), next, wd);
    ASSERT_EQ(reuse, n_kv);
    ASSERT_TRUE(whole.kv->truncate(whole.seq, reuse).ok());
    GenerateParams gp = greedy_prompt_cache_mtp(16);
    gp.n_cached = reuse;
    const SpecOutcome in_process = speculative(whole, next, gp);
    EXPECT_EQ(in_process.tokens, plain(next, 16));
    const SpecOutcome from_file = restored(dir + "/turn.state", next, 16, n_kv);
    EXPECT_EQ(from_file.tokens, in_process.tokens);
    EXPECT_EQ(from_file.drafts, in_process.drafts) << "the restored head drafts differently";
    EXPECT_EQ(from_file.extra, "{\"turns\":1}");
}

TEST_F(PromptCacheMtp, a_file_saved_without_the_heads_state_is_refused_while_the_head_drafts) {
    const std::string file = test::make_temp_dir("pcache-mtp-files") + "/plain.state";
    const auto p = prompt_of(4, 12);
    {
        Session s = session();
        GenerateParams gp = greedy_prompt_cache_mtp(2);
        gp.on_prefix = [&](uint32_t n_kv) -> Status {
            return save_sequence_state(file, *s.model, *s.kv, s.seq, std::span(p).first(n_kv)).ok()
                       ? Status{}
                       : Status(Error("save failed"));
        };
        ASSERT_TRUE(generate(*s.runner, nullptr, s.seq, p, gp, {}).ok());
    }
    Session s = session();
    const auto d = s.drafters();
    auto r = load_sequence_state(file, *s.model, *s.kv, s.seq, d);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("saved without the mtp drafter's state"), std::string::npos)
        << r.error().message();
    // plain decoding (no head) takes the same file
    auto plain_load = load_sequence_state(file, *s.model, *s.kv, s.seq);
    EXPECT_TRUE(plain_load.ok()) << plain_load.error().message();
}

}  // namespace
}  // namespace tdm
