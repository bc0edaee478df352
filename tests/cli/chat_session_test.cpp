// SPDX-License-Identifier: Apache-2.0
// tests/cli/chat_session_test.cpp: ChatSession (host/cli/chat_session.h) on a
// synthetic Qwen3 model: turns resume from the KV and give the tokens of a
// fresh generation on the rendered conversation; a cancel flag stops a reply
// (before the prefill or in the middle) and the next turn is still exact;
// /clear's reset; saved conversations /load refuses; the command table of the chat.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/chat_commands.h"
#include "cli/chat_session.h"
#include "cli/cli_models.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm::cli {
namespace {

class ChatSessionTest : public test::DeviceTest {
protected:
    void SetUp() override {
        test::DeviceTest::SetUp();
        auto m = Model::load(tiny_qwen3_model(), test::build_tree_plugins(), device());
        ASSERT_TRUE(m.ok()) << m.error().message();
        model_ = std::move(m).value();
        ASSERT_NE(model_->tokenizer(), nullptr);
        kv_ = make_kv();
        runner_ = std::make_unique<Runner>(*model_, *kv_, device(), pipelines());
    }
    std::unique_ptr<KvPool> make_kv() {
        KvPoolConfig kc;
        kc.n_ctx = 512;
        auto kv = KvPool::create(device(), model_->attention_layers(), kc, "chat test");
        EXPECT_TRUE(kv.ok());
        return std::move(kv).value();
    }
    ChatSession session(int n_per_reply = 6, const char* template_name = "chatml") {
        ChatSession::Setup s;
        s.runner = runner_.get();
        s.tokenizer = model_->tokenizer();
        s.generate.max_tokens = n_per_reply;
        s.generate.sampling.temperature = 0;
        s.generate.ignore_eog = true;
        s.system_prompt = "Be brief.";
        auto t = ChatTemplate::builtin(template_name);
        EXPECT_TRUE(t.ok());
        auto c = ChatSession::create(std::move(s), *t);
        EXPECT_TRUE(c.ok()) << c.error().message();
        return std::move(c).value();
    }
    // What a fresh sequence generates for this prompt (no cache, no session).
    std::vector<int32_t> fresh(const std::vector<int32_t>& prompt, int n) {
        auto kv = make_kv();
        Runner r(*model_, *kv, device(), pipelines());
        const int seq = kv->add_sequence().value();
        GenerateParams gp;
        gp.max_tokens = n;
        gp.sampling.temperature = 0;
        gp.ignore_eog = true;
        auto g = generate(r, model_->tokenizer(), seq, prompt, gp, {});
        EXPECT_TRUE(g.ok()) << g.error().message();
        return g.ok() ? g->tokens : std::vector<int32_t>{};
    }

    std::unique_ptr<Model> model_;
    std::unique_ptr<KvPool> kv_;
    std::unique_ptr<Runner> runner_;
};

TEST_F(ChatSessionTest, later_turns_resume_from_the_kv_and_equal_a_fresh_generation) {
    ChatSession s = session();
    std::atomic<bool> cancel{false};
    for (const char* msg : {"Hello there", "And then?", "Thanks"}) {
        auto t = s.turn(msg, &cancel, {});
        ASSERT_TRUE(t.ok()) << t.error().message();
        EXPECT_EQ(t->gen.tokens, fresh(t->prompt, 6)) << msg;
        if (std::string(msg) != "Hello there") {
            EXPECT_GT(t->gen.stats.n_cached, 0u) << msg;
        }
        // the KV holds the prompt and all but the last reply token
        EXPECT_EQ(s.conversation().kv_tokens.size(), t->prompt.size() + t->gen.tokens.size() - 1);
    }
    EXPECT_EQ(s.conversation().messages.size(), 7u);  // system + 3 x (user, assistant)
    EXPECT_EQ(s.totals().turns, 3u);
}

TEST_F(ChatSessionTest, a_cancel_before_the_reply_drops_the_turn_and_the_next_turn_works) {
    ChatSession s = session();
    std::atomic<bool> cancel{true};
    auto t = s.turn("Hello there", &cancel, {});
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(to_string(t->gen.stop_reason), "cancelled");
    EXPECT_TRUE(t->gen.tokens.empty());
    EXPECT_EQ(s.conversation().messages.size(), 1u);  // the system prompt only
    cancel = false;
    auto u = s.turn("Hello there", &cancel, {});
    ASSERT_TRUE(u.ok()) << u.error().message();
    EXPECT_EQ(u->prompt, t->prompt);
    EXPECT_EQ(u->gen.tokens, fresh(u->prompt, 6));
}

TEST_F(ChatSessionTest, a_cancel_mid_reply_keeps_the_partial_reply_and_the_next_turn_is_exact) {
    ChatSession s = session(40);
    std::atomic<bool> cancel{false};
    int pieces = 0;
    auto t = s.turn("Tell me a long story", &cancel, [&](const std::string&) {
        if (++pieces == 3) cancel = true;
    });
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(to_string(t->gen.stop_reason), "cancelled");
    EXPECT_GE(t->gen.tokens.size(), 3u);
    EXPECT_LT(t->gen.tokens.size(), 40u);
    ASSERT_EQ(s.conversation().messages.size(), 3u);
    EXPECT_EQ(s.conversation().messages.back().role, "assistant");
    EXPECT_EQ(s.conversation().messages.back().content, t->reply);
    cancel = false;
    auto u = s.turn("Go on", &cancel, {});
    ASSERT_TRUE(u.ok()) << u.error().message();
    EXPECT_EQ(to_string(u->gen.stop_reason), "length");
    EXPECT_GT(u->gen.stats.n_cached, 0u);
    EXPECT_EQ(u->gen.tokens, fresh(u->prompt, 40));
}

TEST_F(ChatSessionTest, clear_forgets_the_conversation_but_keeps_the_system_prompt) {
    ChatSession s = session();
    std::atomic<bool> cancel{false};
    auto first = s.turn("Hello there", &cancel, {});
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(s.turn("More", &cancel, {}).ok());
    ASSERT_TRUE(s.clear().ok());
    EXPECT_EQ(s.conversation().messages.size(), 1u);
    EXPECT_TRUE(s.conversation().kv_tokens.empty());
    auto again = s.turn("Hello there", &cancel, {});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->gen.stats.n_cached, 0u);
    EXPECT_EQ(again->prompt, first->prompt);
    EXPECT_EQ(again->gen.tokens, first->gen.tokens);
}

TEST_F(ChatSessionTest, a_conversation_beyond_the_context_is_an_error_that_suggests_clear) {
    ChatSession s = session();
    std::atomic<bool> cancel{false};
    auto t = s.turn(std::string(3000, 'x'), &cancel, {});
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message().find("/clear starts over"), std::string::npos) << t.error().message();
    EXPECT_EQ(s.conversation().messages.size(), 1u);
    EXPECT_TRUE(s.turn("Hi", &cancel, {}).ok());
}

TEST_F(ChatSessionTest, a_saved_conversation_it_cannot_continue_is_refused_and_the_current_one_is_kept) {
    // crafted saves: a real KV state of a few tokens beside the conversation a test gives
    auto kv = make_kv();
    Runner r(*model_, *kv, device(), pipelines());
    const int seq = kv->add_sequence().value();
    GenerateParams gp;
    gp.max_tokens = 1;
    gp.sampling.temperature = 0;
    const std::vector<int32_t> prompt = {1, 2, 3, 4};
    auto g = generate(r, model_->tokenizer(), seq, prompt, gp, {});
    ASSERT_TRUE(g.ok()) << g.error().message();
    const std::vector<int32_t> held(prompt.begin(), prompt.begin() + g->n_kv);
    const std::string dir = test::make_temp_dir("chat-crafted");
    int files = 0;
    auto crafted = [&](const nlohmann::json& messages) {
        const std::string path = dir + "/crafted-" + std::to_string(++files) + ".tdmstate";
        const nlohmann::json extra = {{"format", "tandem-chat"}, {"version", 1}, {"template", "chatml"}, {"messages", messages}};
        auto saved = save_sequence_state(path, *model_, *kv, seq, held, {}, extra.dump());
        EXPECT_TRUE(saved.ok()) << saved.error().message();
        return path;
    };
    nlohmann::json many = nlohmann::json::array();
    for (int i = 0; i < 40'000; ++i) many.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "x"}});
    const std::vector<std::pair<std::string, std::string>> refused = {
        {crafted({{{"role", "root"}, {"content", "obey"}}}), "has the role 'root', which the chatml template does not"},
        {crafted(many), "holds 40000 messages, more than a context of 512 tokens holds"},
        {crafted({{{"role", "user"}, {"content", std::string(3000, 'x')}}}), "and the context holds 512"},
    };

    ChatSession s = session();
    std::atomic<bool> cancel{false};
    ASSERT_TRUE(s.turn("Hello there", &cancel, {}).ok());
    const std::vector<ChatMessage> before = s.conversation().messages;
    for (const auto& [file, why] : refused) {
        const Status st = s.load(file);
        ASSERT_FALSE(st.ok()) << file;
        EXPECT_NE(st.error().message().find(why), std::string::npos) << st.error().message();
        EXPECT_NE(st.error().message().find("the conversation is kept"), std::string::npos) << st.error().message();
        ASSERT_EQ(s.conversation().messages.size(), before.size());
        for (size_t i = 0; i < before.size(); ++i) {
            EXPECT_EQ(s.conversation().messages[i].role, before[i].role);
            EXPECT_EQ(s.conversation().messages[i].content, before[i].content);
        }
    }
    // the next turn goes on from the kept conversation, as a fresh generation would
    auto next = s.turn("And then?", &cancel, {});
    ASSERT_TRUE(next.ok()) << next.error().message();
    EXPECT_EQ(next->gen.tokens, fresh(next->prompt, 6));
    EXPECT_EQ(s.conversation().messages.size(), before.size() + 2);
}

// Gemma's template has no system turn: the session folds its system prompt into the first
// user turn, and a save of such a session loads back.
TEST_F(ChatSessionTest, a_session_whose_template_folds_the_system_prompt_loads_its_own_save) {
    ChatSession s = session(6, "gemma");
    std::atomic<bool> cancel{false};
    ASSERT_TRUE(s.turn("Hello there", &cancel, {}).ok());
    ASSERT_EQ(s.conversation().messages.front().role, "system");
    const std::string path = test::make_temp_dir("chat-gemma") + "/saved.tdmstate";
    auto saved = s.save(path);
    ASSERT_TRUE(saved.ok()) << saved.error().message();
    const size_t messages = s.conversation().messages.size();
    ASSERT_TRUE(s.clear().ok());
    const Status st = s.load(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(s.conversation().messages.size(), messages);
}

TEST(ChatSpecStats, accumulate_sums_counters_per_drafter_and_position) {
    SpecStats a, b;
    b.drafters.push_back({"ngram"});
    b.drafters[0].gen_tokens = 4;
    b.add_round(4, 2);
    b.emitted = 3;
    accumulate(a, b);
    accumulate(a, b);
    ASSERT_EQ(a.drafters.size(), 1u);
    EXPECT_EQ(a.drafters[0].name, "ngram");
    EXPECT_EQ(a.drafters[0].gen_tokens, 8u);
    EXPECT_EQ(a.rounds, 2u);
    EXPECT_EQ(a.drafted, 8u);
    EXPECT_EQ(a.accepted, 4u);
    EXPECT_EQ(a.emitted, 6u);
    ASSERT_EQ(a.drafted_at.size(), 4u);
    EXPECT_EQ(a.accepted_at[1], 2u);
    EXPECT_EQ(a.accepted_at[2], 0u);
}

TEST(ChatCommandTable, runs_by_name_or_alias_and_names_unknown_commands_and_stray_arguments) {
    ChatCommands c;
    int cleared = 0;
    std::string saved;
    c.add({{"/clear"}, "", "forget", [&](std::string_view) -> Result<CommandOutcome> {
               ++cleared;
               return CommandOutcome::keep_going;
           }});
    c.add({{"/exit", "/quit"}, "", "end", [](std::string_view) -> Result<CommandOutcome> { return CommandOutcome::exit; }});
    c.add({{"/keep"}, "FILE", "an argument", [&](std::string_view a) -> Result<CommandOutcome> {
               saved = std::string(a);
               return CommandOutcome::keep_going;
           }});
    EXPECT_TRUE(ChatCommands::is_command("  /clear"));
    EXPECT_FALSE(ChatCommands::is_command("a /clear"));
    EXPECT_EQ(ChatCommands::name_of("/keep  my file.bin "), "/keep");
    ASSERT_TRUE(c.run("/clear").ok());
    EXPECT_EQ(cleared, 1);
    EXPECT_EQ(*c.run("/quit"), CommandOutcome::exit);
    ASSERT_TRUE(c.run("/keep  my file.bin ").ok());
    EXPECT_EQ(saved, "my file.bin");
    auto unknown = c.run("/frobnicate now");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().message(), "unknown command /frobnicate (/help lists the commands)");
    auto stray = c.run("/clear everything");
    ASSERT_FALSE(stray.ok());
    EXPECT_NE(stray.error().message().find("/clear takes no argument"), std::string::npos);
    EXPECT_EQ(cleared, 1);
    auto missing = c.run("/keep");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("/keep needs FILE"), std::string::npos);
    const std::string help = c.help();
    EXPECT_NE(help.find("/exit, /quit"), std::string::npos) << help;
    EXPECT_NE(help.find("/keep FILE"), std::string::npos) << help;
}

}  // namespace
}  // namespace tdm::cli
