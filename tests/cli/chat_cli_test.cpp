// SPDX-License-Identifier: Apache-2.0
// tests/cli/chat_cli_test.cpp: `tandem chat` end to end with scripted,
// non-terminal input: every turn equals a `tandem run` on the conversation
// rendered with the chat template (plain, with drafters, with the MTP head
// that is on by default), later turns resume from the KV (n_cached > 0),
// /clear resets, commands and their errors, end of input, multi-line
// messages, a full context, and Ctrl-C (SIGINT) stopping a reply but not the
// session.
//
// The rendering is rebuilt here, independently of the chat: ChatML turns,
// the assistant's turn holding the reply text the chat reports (plus the
// "<think>\n" that the thinking template's generation prompt opened).
#include "cli/cli_models.h"
#include "cli_run.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/fixtures.h"
#include "tokenizer/chat_template.h"

namespace tdm {
namespace {

const std::string& dir_chat_cli() {
    static const std::string d = test::make_temp_dir("chat-cli");
    return d;
}

const std::string& model(const std::string& name) { return cli_test_model(dir_chat_cli(), name); }

// Runs `tandem chat ARGS` with `input` on stdin (a file: not a terminal).
CliRun chat(const std::vector<std::string>& args, const std::string& input) {
    const std::string in = dir_chat_cli() + "/input.txt";
    std::ofstream(in, std::ios::binary) << input;
    std::vector<std::string> all = {"chat"};
    all.insert(all.end(), args.begin(), args.end());
    return tandem(all, "", in);
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
    std::vector<nlohmann::json> v;
    std::istringstream s(out);
    for (std::string line; std::getline(s, line);) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        EXPECT_FALSE(j.is_discarded()) << line;
        v.push_back(j);
    }
    return v;
}

struct Message {
    std::string role, content;
};

// `tandem run` on the rendered conversation, with the generation options of the chat.
nlohmann::json run_on(const std::string& model_path, const std::string& template_name,
                      const std::vector<Message>& conversation, const std::vector<std::string>& options) {
    auto t = ChatTemplate::builtin(template_name);
    EXPECT_TRUE(t.ok());
    std::vector<ChatMessage> msgs;
    for (const Message& m : conversation) msgs.push_back({m.role, m.content});
    auto text = t->apply(msgs, true);
    EXPECT_TRUE(text.ok());
    const std::string file = dir_chat_cli() + "/prompt.txt";
    std::ofstream(file, std::ios::binary) << *text;
    std::vector<std::string> args = {"run", "-m", model_path, "-f", file, "--output-format", "json"};
    args.insert(args.end(), options.begin(), options.end());
    CliRun r = tandem(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
}

// Checks each chat turn against `tandem run` on the conversation up to it.
void expect_turns_equal_runs(const std::string& model_path, const std::string& template_name,
                             const std::string& assistant_opening, const std::vector<Message>& start,
                             const std::vector<std::string>& user_messages, const std::vector<nlohmann::json>& turns,
                             const std::vector<std::string>& run_options) {
    ASSERT_EQ(turns.size(), user_messages.size());
    std::vector<Message> conversation = start;
    for (size_t i = 0; i < turns.size(); ++i) {
        conversation.push_back({"user", user_messages[i]});
        const nlohmann::json r = run_on(model_path, template_name, conversation, run_options);
        EXPECT_EQ(turns[i]["prompt_tokens"], r["prompt_tokens"]) << "turn " << i + 1;
        EXPECT_EQ(turns[i]["tokens"], r["tokens"]) << "turn " << i + 1;
        if (i == 0) {
            EXPECT_EQ(turns[i]["n_cached"], 0);
        } else {
            EXPECT_GT(turns[i]["n_cached"].get<int>(), 0) << "turn " << i + 1 << " did not resume from the KV";
        }
        conversation.push_back({"assistant", assistant_opening + turns[i]["text"].get<std::string>()});
    }
}

const std::vector<std::string> kGreedy8 = {"--temp", "0", "-n", "8"};

TEST(CliChat, three_scripted_turns_equal_three_runs_on_the_concatenated_template) {
    // the second message continues over two lines
    CliRun r = chat({"-m", model("tiny"), "--temp", "0", "-n", "8", "-sys", "You are terse.", "--json"},
                    "Hello there\nWhat is\\\ntwo plus two?\nThanks\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(r.has("speculative decoding")) << "a qwen3 file carries no draft head";
    const auto turns = json_lines(r.out);
    ASSERT_EQ(turns.size(), 3u) << r.out;
    for (const auto& t : turns) EXPECT_FALSE(t.contains("speculative"));
    expect_turns_equal_runs(model("tiny"), "chatml", "", {{"system", "You are terse."}},
                            {"Hello there", "What is\ntwo plus two?", "Thanks"}, turns, kGreedy8);
}

TEST(CliChat, turns_with_drafters_equal_the_plain_runs) {
    for (const std::vector<std::string>& drafter :
         std::vector<std::vector<std::string>>{{"--spec-type", "ngram-simple"}, {"-md", model("draft")}}) {
        std::vector<std::string> args = {"-m", model("tiny"), "--temp", "0", "-n", "12", "--json", "--draft-max", "4"};
        args.insert(args.end(), drafter.begin(), drafter.end());
        CliRun r = chat(args, "Hello there\nAnd then?\nGo on\n");
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_TRUE(r.has("speculative decoding: ")) << r.err;
        const auto turns = json_lines(r.out);
        ASSERT_EQ(turns.size(), 3u) << r.out;
        for (const auto& t : turns) EXPECT_TRUE(t.contains("speculative")) << t.dump();
        expect_turns_equal_runs(model("tiny"), "chatml", "", {}, {"Hello there", "And then?", "Go on"}, turns,
                                {"--temp", "0", "-n", "12"});
    }
}

TEST(CliChat, the_mtp_head_drafts_by_default_and_spec_type_none_turns_it_off) {
    const std::string input = "Hello there\nAnd then?\nGo on\n";
    CliRun with = chat({"-m", model("qwen35"), "--temp", "0", "-n", "10", "--json"}, input);
    ASSERT_EQ(with.status, 0) << with.err;
    EXPECT_TRUE(with.has("speculative decoding: mtp (the model's draft head; --spec-type none turns it off)"))
        << with.err;
    CliRun without = chat({"-m", model("qwen35"), "--temp", "0", "-n", "10", "--json", "--spec-type", "none"}, input);
    ASSERT_EQ(without.status, 0) << without.err;
    EXPECT_FALSE(without.has("speculative decoding")) << without.err;
    const auto a = json_lines(with.out), b = json_lines(without.out);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(a[i].contains("speculative"));
        EXPECT_FALSE(b[i].contains("speculative"));
        EXPECT_EQ(a[i]["tokens"], b[i]["tokens"]) << "turn " << i + 1;
    }
    // Qwen3.5's template opens a <think> block for the reply
    expect_turns_equal_runs(model("qwen35"), "chatml-thinking", "<think>\n", {}, {"Hello there", "And then?", "Go on"},
                            a, {"--temp", "0", "-n", "10"});
}

TEST(CliChat, clear_makes_the_next_turn_a_fresh_first_turn) {
    CliRun r = chat({"-m", model("tiny"), "--temp", "0", "-n", "6", "-sys", "Be kind.", "--json"},
                    "Hello there\nMore\n/clear\nHello there\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 4u) << r.out;
    EXPECT_EQ(lines[2]["command"], "/clear");
    EXPECT_FALSE(lines[2].contains("error"));
    EXPECT_EQ(lines[3]["n_cached"], 0);
    EXPECT_EQ(lines[3]["prompt_tokens"], lines[0]["prompt_tokens"]);
    EXPECT_EQ(lines[3]["tokens"], lines[0]["tokens"]);
}

TEST(CliChat, unknown_commands_and_stray_arguments_are_named_and_the_session_goes_on) {
    CliRun r = chat({"-m", model("tiny"), "--temp", "0", "-n", "4"}, "/frobnicate\n/clear all\nHi\n");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("unknown command /frobnicate (/help lists the commands)")) << r.err;
    EXPECT_TRUE(r.has("/clear takes no argument")) << r.err;
    EXPECT_FALSE(r.out.empty()) << "the message after the commands was answered";
    r = chat({"-m", model("tiny"), "--json"}, "/frobnicate\n/help\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 2u) << r.out;
    EXPECT_EQ(lines[0]["command"], "/frobnicate");
    EXPECT_TRUE(lines[0]["error"].get<std::string>().find("unknown command") != std::string::npos);
    for (const char* c : {"/help", "/clear", "/stats", "/exit, /quit"})
        EXPECT_NE(lines[1]["output"].get<std::string>().find(c), std::string::npos) << c;
}

TEST(CliChat, stats_report_the_session_and_its_speculative_statistics) {
    CliRun r = chat({"-m", model("tiny"), "--temp", "0", "-n", "8", "--spec-type", "ngram-simple", "--json"},
                    "Hello there\nAgain\n/stats\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 3u) << r.out;
    const nlohmann::json& s = lines[2];
    EXPECT_EQ(s["command"], "/stats");
    EXPECT_EQ(s["replies"], 2);
    EXPECT_EQ(s["generated_tokens"], 16);
    EXPECT_EQ(s["cached_tokens"], lines[1]["n_cached"]);
    ASSERT_TRUE(s.contains("speculative")) << s.dump();
    EXPECT_EQ(s["speculative"]["drafters"][0]["calls_begin"], 2) << "one begin (or resume) per turn";
    const std::string text = s["output"];
    EXPECT_NE(text.find("draft acceptance rate"), std::string::npos) << text;
    EXPECT_NE(text.find("replies: 2"), std::string::npos) << text;
}

TEST(CliChat, end_of_input_exits_zero_and_exit_stops_reading) {
    CliRun r = chat({"-m", model("tiny"), "-n", "4"}, "");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    // a last line without a newline is still a message
    r = chat({"-m", model("tiny"), "-n", "4", "--temp", "0", "--json"}, "Hi");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(json_lines(r.out).size(), 1u) << r.out;
    r = chat({"-m", model("tiny"), "-n", "4", "--json"}, "/exit\nHi\n");
    EXPECT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(json_lines(r.out).size(), 1u) << r.out;
    EXPECT_EQ(json_lines(r.out)[0]["command"], "/exit");
}

TEST(CliChat, a_full_context_is_reported_with_the_way_out_and_clear_recovers) {
    // 64 tokens: the first reply fits, the second fills the context, the third does not fit
    CliRun r = chat({"-m", model("tiny"), "-c", "64", "--temp", "0", "-n", "24", "--ignore-eos", "--json"},
                    "Hello there\nAnd then?\nGo on\n/clear\nHello there\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 5u) << r.out;
    EXPECT_EQ(lines[1]["stop_reason"], "context") << lines[1].dump();
    EXPECT_TRUE(r.has("[the context of 64 tokens is full: /clear starts over")) << r.err;
    ASSERT_TRUE(lines[2].contains("error")) << lines[2].dump();
    EXPECT_NE(lines[2]["error"].get<std::string>().find("/clear starts over"), std::string::npos);
    EXPECT_EQ(lines[4]["tokens"], lines[0]["tokens"]);
}

TEST(CliChat, help_teaches_the_commands_and_options) {
    CliRun r = tandem({"chat", "--help"});
    EXPECT_EQ(r.status, 0);
    for (const char* s : {"/clear", "/stats", "Ctrl-C", "--system-prompt", "--json", "--spec-type", "none",
                          "-md, --model-draft", "Most tokens per reply", "(default: -1)"})
        EXPECT_TRUE(r.has(s)) << s << "\n" << r.out;
    EXPECT_TRUE(tandem({"--help"}).has("chat"));
}

// ------------------------------------------------------------------ Ctrl-C

// A child `tandem chat` reading a pipe, writing to files.
struct Child {
    pid_t pid = -1;
    int input = -1;
    std::string out, err;
};

Child spawn_chat(const std::vector<std::string>& args) {
    Child c;
    c.out = dir_chat_cli() + "/sigint.out";
    c.err = dir_chat_cli() + "/sigint.err";
    // created before the child runs, so that the parent can read them at once
    std::ofstream(c.out).flush();
    std::ofstream(c.err).flush();
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    c.pid = fork();
    if (c.pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        const int o = open(c.out.c_str(), O_WRONLY | O_TRUNC);
        const int e = open(c.err.c_str(), O_WRONLY | O_TRUNC);
        dup2(o, 1);
        dup2(e, 2);
        std::vector<std::string> all = {TANDEM_BIN, "chat"};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& s : all) argv.push_back(s.data());
        argv.push_back(nullptr);
        execv(TANDEM_BIN, argv.data());
        _exit(127);
    }
    close(fds[0]);
    c.input = fds[1];
    return c;
}

// Waits (without a time limit of its own: ctest's applies) until pred holds.
template <class Pred>
void wait_until(Pred pred) {
    while (!pred()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TEST(CliChat, ctrl_c_stops_the_reply_keeps_it_and_the_session_goes_on) {
    // replies bounded only by the context: thousands of tokens, long enough to interrupt
    Child c = spawn_chat({"-m", model("tiny"), "-c", "4096", "--temp", "0", "--ignore-eos"});
    ASSERT_GT(c.pid, 0);
    const std::string lines = "Tell me everything\nAnd the rest\n";
    ASSERT_EQ(write(c.input, lines.data(), lines.size()), ssize_t(lines.size()));
    close(c.input);  // after the second reply, the end of the input ends the session
    auto count = [](const std::string& text, const std::string& what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
        return n;
    };
    const std::string note = "[reply interrupted after";
    // the first reply is streaming: interrupt it
    wait_until([&] { return !test::read_file(c.out).empty(); });
    kill(c.pid, SIGINT);
    wait_until([&] { return count(test::read_file(c.err), note) == 1; });
    // the second reply streams after the first one's newline: interrupt it too
    const size_t after_first = test::read_file(c.out).size();
    wait_until([&] { return test::read_file(c.out).size() > after_first; });
    kill(c.pid, SIGINT);
    int status = 0;
    ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
    const std::string err = test::read_file(c.err);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << "\n" << err;
    EXPECT_EQ(WEXITSTATUS(status), 0) << err;
    EXPECT_EQ(count(err, note), 2u) << err;
    EXPECT_NE(err.find("it stays in the conversation"), std::string::npos) << err;
}

}  // namespace
}  // namespace tdm
