// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_test.cpp: `tandem serve` over HTTP on tiny synthetic models: the same
// tokens as `tandem run`, whole and streamed, plain and speculative; OpenAI-shaped errors
// for bad requests with the server still serving; API keys; overload; a client that hangs
// up; SIGTERM draining.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "cli/cli_models.h"
#include "cli/cli_run.h"
#include "cli/serve_process.h"

namespace tdm {
namespace {

using nlohmann::json;
using test::ServeProcess;

const std::string& dir_serve() {
    static const std::string d = test::make_temp_dir("serve-cli");
    return d;
}

const std::string& model_serve(const std::string& name) { return cli_test_model(dir_serve(), name); }

std::string run_text(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "--temp", "0", "--ignore-eos", "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliRun r = tandem(args);
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? "" : j.value("text", "");
}

struct Reply {
    int status = 0;
    json body;
    std::string raw;
    std::string retry_after;
};

Reply post(int port, const std::string& path, const std::string& body, const std::string& key = "") {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(300);
    httplib::Headers h;
    if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
    auto res = cli.Post(path, h, body, "application/json");
    Reply r;
    if (!res) return r;
    r.status = res->status;
    r.raw = res->body;
    r.body = json::parse(res->body, nullptr, false);
    r.retry_after = res->get_header_value("Retry-After");
    return r;
}

// /metrics once every gauge named in `lines` reads as given, or after 30 s as it then is.
// A client has its last byte before the engine thread and the HTTP handler update their
// gauges (they do so after the step that finished it), so an idle server reads idle soon
// after, not at once.
std::string settled_metrics(int port, const std::vector<std::string>& lines) {
    httplib::Client cli("127.0.0.1", port);
    std::string body;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
        auto res = cli.Get("/metrics");
        body = res ? res->body : "";
        const bool all = res && std::all_of(lines.begin(), lines.end(),
                                            [&](const std::string& l) { return body.find(l + "\n") != std::string::npos; });
        if (all || std::chrono::steady_clock::now() > deadline) return body;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// A streamed request: the "data: " payloads in order.
std::vector<std::string> stream_events(int port, const std::string& path, const std::string& body) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(300);
    std::string all;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        all.append(data, n);
        return true;
    };
    auto res = cli.send(req);
    EXPECT_TRUE(res) << "no response";
    if (res) {
        EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
    }
    std::vector<std::string> events;
    size_t at = 0;
    while (true) {
        const size_t end = all.find("\n\n", at);
        if (end == std::string::npos) break;
        const std::string event = all.substr(at, end - at);
        EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
        events.push_back(event.substr(6));
        at = end + 2;
    }
    EXPECT_EQ(at, all.size()) << "bytes after the last event";
    return events;
}

// Joins a stream's texts; checks the framing (a final [DONE], finish_reason on the last choice).
std::string streamed_text(const std::vector<std::string>& events, bool chat, json* usage = nullptr) {
    EXPECT_FALSE(events.empty());
    if (events.empty()) return "";
    EXPECT_EQ(events.back(), "[DONE]");
    std::string text;
    std::string finish;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        const json e = json::parse(events[i]);
        if (e["choices"].empty()) {
            if (usage) *usage = e["usage"];
            continue;
        }
        const json& c = e["choices"][0];
        if (chat) text += c["delta"].value("content", "");
        else text += c.value("text", "");
        if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    }
    EXPECT_FALSE(finish.empty()) << "no finish_reason";
    return text;
}

TEST(Serve, completions_give_the_tokens_of_tandem_run_whole_and_streamed) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0"});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string expected = run_text({"-m", model_serve("qwen3"), "-p", "Hello there", "-n", "12"});
    ASSERT_FALSE(expected.empty());

    const std::string body = R"({"prompt": "Hello there", "max_tokens": 12, "ignore_eos": true)";
    Reply whole = post(server.port(), "/v1/completions", body + "}");
    ASSERT_EQ(whole.status, 200) << whole.raw;
    EXPECT_EQ(whole.body["object"], "text_completion");
    EXPECT_EQ(whole.body["choices"][0]["text"], expected);
    EXPECT_EQ(whole.body["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(whole.body["usage"]["completion_tokens"], 12);

    json usage;
    const auto events = stream_events(server.port(), "/v1/completions",
                                      body + R"(, "stream": true, "stream_options": {"include_usage": true}})");
    EXPECT_EQ(streamed_text(events, false, &usage), expected);
    EXPECT_EQ(usage["completion_tokens"], 12);
    // The same prompt again resumes from the KV: all but its last token are cached.
    EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens"].get<int>() - 1);
    EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST(Serve, chat_completions_use_the_template_and_resume_the_conversation) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0"});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string expected = run_text({"-m", model_serve("qwen3"), "--chat", "-p", "Hi", "-n", "8"});
    Reply first = post(server.port(), "/v1/chat/completions",
                       R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "ignore_eos": true})");
    ASSERT_EQ(first.status, 200) << first.raw;
    EXPECT_EQ(first.body["object"], "chat.completion");
    EXPECT_EQ(first.body["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(first.body["choices"][0]["message"]["content"], expected);

    json next = {{"messages", {{{"role", "user"}, {"content", "Hi"}},
                               {{"role", "assistant"}, {"content", expected}},
                               {{"role", "user"}, {"content", "More"}}}},
                 {"max_tokens", 4},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
    json usage;
    const std::string text = streamed_text(stream_events(server.port(), "/v1/chat/completions", next.dump()), true, &usage);
    EXPECT_GT(usage["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << usage.dump();
    (void)text;
}

TEST(Serve, speculative_and_plain_requests_give_the_same_tokens) {
    ServeProcess server({"-m", model_serve("qwen35"), "--temp", "0"});  // its MTP head drafts by default
    ASSERT_TRUE(server.started()) << server.log();
    EXPECT_NE(server.log().find("speculative decoding: mtp"), std::string::npos) << server.log();
    const std::string base = R"({"prompt": "The cat sat on the", "max_tokens": 16, "ignore_eos": true)";
    Reply spec = post(server.port(), "/v1/completions", base + "}");
    Reply plain = post(server.port(), "/v1/completions", base + R"(, "speculative": {"draft_max": 0}})");
    Reply named = post(server.port(), "/v1/completions", base + R"(, "speculative": {"type": "mtp", "draft_max": 2}})");
    ASSERT_EQ(spec.status, 200) << spec.raw;
    ASSERT_EQ(plain.status, 200) << plain.raw;
    ASSERT_EQ(named.status, 200) << named.raw;
    EXPECT_EQ(spec.body["choices"][0]["text"], plain.body["choices"][0]["text"]);
    EXPECT_EQ(named.body["choices"][0]["text"], plain.body["choices"][0]["text"]);
    Reply unknown = post(server.port(), "/v1/completions", base + R"(, "speculative": {"type": "eagle"}})");
    EXPECT_EQ(unknown.status, 400);
    EXPECT_EQ(unknown.body["error"]["param"], "speculative.type");

    httplib::Client cli("127.0.0.1", server.port());
    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("tandem_spec_draft_tokens_total"), std::string::npos);
    for (const char* m : {"tandem_spec_controller_rounds_total", "tandem_spec_controller_plain_steps_total",
                          "tandem_spec_controller_draft_length_total", "tandem_spec_controller_estimated_speedup_total",
                          "tandem_spec_controller_measured_speedup_total"})
        EXPECT_NE(metrics->body.find(m), std::string::npos) << m;
    EXPECT_NE(metrics->body.find("tandem_generation_tokens_total 48"), std::string::npos) << metrics->body;
}

TEST(Serve, bad_requests_get_openai_errors_and_the_server_keeps_serving) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0", "-c", "64", "--max-body", "4096"});
    ASSERT_TRUE(server.started()) << server.log();
    const int port = server.port();
    struct Case {
        std::string path, body;
        int status;
        std::string param, code;
    };
    const std::vector<Case> cases = {
        {"/v1/chat/completions", "{\"messages\": [", 400, "", ""},
        {"/v1/chat/completions", R"({"messages": []})", 400, "messages", ""},
        {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": 5}]})", 400, "messages[0].content", ""},
        {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xC3\x28\"}]}", 400, "", ""},
        {"/v1/completions", R"({"prompt": "x", "model": "gpt-4"})", 404, "", "model_not_found"},
        {"/v1/completions", R"({"prompt": "x", "max_tokens": 100000})", 400, "max_tokens", "context_length_exceeded"},
        {"/v1/completions", R"({"prompt": [1, 99999]})", 400, "prompt[1]", ""},
        {"/v1/completions", R"({"prompt": "x", "temperature": "hot"})", 400, "temperature", ""},
        {"/v1/completions", "{\"prompt\": \"" + std::string(8000, 'a') + "\"}", 413, "", ""},
        {"/v1/nothing", "{}", 404, "", ""},
        {"/detokenize", R"({"tokens": [-1]})", 400, "tokens[0]", ""},
        {"/v1/completions", R"({"prompt": "x", "logprobs": 21})", 400, "logprobs", ""},
        {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", 400,
         "top_logprobs", ""},
    };
    for (const Case& c : cases) {
        Reply r = post(port, c.path, c.body);
        EXPECT_EQ(r.status, c.status) << c.path << " " << c.body.substr(0, 80) << " -> " << r.raw;
        ASSERT_FALSE(r.body.is_discarded()) << r.raw;
        ASSERT_TRUE(r.body.contains("error")) << r.raw;
        EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty());
        if (!c.param.empty()) {
            EXPECT_EQ(r.body["error"]["param"], c.param) << r.raw;
        }
        if (!c.code.empty()) {
            EXPECT_EQ(r.body["error"]["code"], c.code) << r.raw;
        }
    }
    Reply ok = post(port, "/v1/completions", R"({"prompt": "Hello", "max_tokens": 2})");
    EXPECT_EQ(ok.status, 200) << ok.raw;

    Reply tok = post(port, "/tokenize", R"({"content": "Hello there", "with_pieces": true})");
    ASSERT_EQ(tok.status, 200) << tok.raw;
    std::vector<int> ids;
    std::string pieces;
    for (const json& t : tok.body["tokens"]) {
        ids.push_back(t["id"]);
        pieces += t["piece"].get<std::string>();
    }
    EXPECT_EQ(pieces, "Hello there");
    Reply detok = post(port, "/detokenize", json{{"tokens", ids}}.dump());
    EXPECT_EQ(detok.body["content"], "Hello there") << detok.raw;

    // Metrics count requests by known endpoint only: made-up paths cannot grow the labels.
    httplib::Client cli("127.0.0.1", port);
    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("tandem_requests_total{endpoint=\"/v1/completions\",status=\"400\"}"),
              std::string::npos)
        << metrics->body;
    EXPECT_EQ(metrics->body.find("/v1/nothing"), std::string::npos) << metrics->body;
}

TEST(Serve, an_api_key_guards_everything_but_health) {
    ServeProcess server({"-m", model_serve("qwen3"), "--api-key", "s3cret"});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string body = R"({"prompt": "Hi", "max_tokens": 1})";
    Reply none = post(server.port(), "/v1/completions", body);
    EXPECT_EQ(none.status, 401);
    EXPECT_EQ(none.body["error"]["type"], "authentication_error");
    EXPECT_EQ(post(server.port(), "/v1/completions", body, "s3cre").status, 401);
    EXPECT_EQ(post(server.port(), "/v1/completions", body, "s3cret").status, 200);
    httplib::Client cli("127.0.0.1", server.port());
    auto health = cli.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto models = cli.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 401);
}

// A long stream holds the one place; with no queue, a second request is refused at once. The
// client then hangs up, which must stop the generation and free the model for the next.
TEST(Serve, overload_is_503_and_a_client_hanging_up_frees_the_model) {
    ServeProcess server({"-m", model_serve("qwen3"), "--parallel", "1", "--queue", "0", "-c", "4096"});
    ASSERT_TRUE(server.started()) << server.log();
    const int port = server.port();
    std::promise<void> first_chunk;
    std::atomic<bool> hang_up{false};
    std::atomic<int> chunks{0};
    std::thread streamer([&] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_read_timeout(300);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body = R"({"prompt": "Once", "max_tokens": 4000, "ignore_eos": true, "stream": true})";
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            if (chunks++ == 0) first_chunk.set_value();
            return !hang_up;
        };
        (void)cli.send(req);
    });
    first_chunk.get_future().wait();
    Reply busy = post(port, "/v1/completions", R"({"prompt": "x", "max_tokens": 1})");
    EXPECT_EQ(busy.status, 503) << busy.raw;
    EXPECT_EQ(busy.retry_after, "1");
    EXPECT_EQ(busy.body["error"]["code"], "overloaded");
    hang_up = true;
    streamer.join();
    // The abandoned generation stops at its next token; this one then gets the model.
    Reply after;
    for (int attempt = 0; attempt < 200; ++attempt) {
        after = post(port, "/v1/completions", R"({"prompt": "x", "max_tokens": 1})");
        if (after.status != 503) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(after.status, 200) << after.raw;
    httplib::Client cli("127.0.0.1", port);
    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    // Far fewer than the 4000 tokens asked for were generated.
    const std::string line = "\ntandem_generation_tokens_total ";
    const size_t at = metrics->body.find(line);
    ASSERT_NE(at, std::string::npos);
    EXPECT_LT(std::stoll(metrics->body.substr(at + line.size())), 4000) << metrics->body;
}

TEST(Serve, sigterm_finishes_the_running_request_then_exits) {
    // the drain's time limit is not what is tested: under a sanitizer on a loaded machine the
    // 2000 tokens can take longer than the default 30 s, and the request would rightly be cut
    ServeProcess server({"-m", model_serve("qwen3"), "--shutdown-timeout", "600"});
    ASSERT_TRUE(server.started()) << server.log();
    const int port = server.port();
    std::promise<void> first_chunk;
    std::string all;
    std::thread streamer([&] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_read_timeout(300);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body = R"({"prompt": "Once", "max_tokens": 2000, "ignore_eos": true, "stream": true})";
        req.set_header("Content-Type", "application/json");
        bool first = true;
        req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
            all.append(data, n);
            if (first) first_chunk.set_value();
            first = false;
            return true;
        };
        (void)cli.send(req);
    });
    first_chunk.get_future().wait();
    EXPECT_EQ(server.terminate(), 0);
    streamer.join();
    EXPECT_TRUE(all.ends_with("data: [DONE]\n\n")) << all.substr(all.size() > 300 ? all.size() - 300 : 0);
    EXPECT_NE(all.find("\"finish_reason\":\"length\""), std::string::npos);
}

TEST(Serve, a_port_in_use_is_refused_with_the_address) {
    ServeProcess first({"-m", model_serve("qwen3")});
    ASSERT_TRUE(first.started()) << first.log();
    CliRun r = tandem({"serve", "-m", model_serve("qwen3"), "--port", std::to_string(first.port())});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("cannot listen on 127.0.0.1:" + std::to_string(first.port()))) << r.err;
}

// Eight streams at once, each equal to the same request run alone by `tandem run`: plainly,
// and with an n-gram drafter of its own per request (drafts accepted and rejected).
TEST(Serve, eight_parallel_streams_each_give_the_tokens_of_the_request_alone) {
    std::vector<std::string> prompts, expected;
    for (int i = 0; i < 8; ++i) {
        prompts.push_back(fmt::format("Request {} says {}", i, std::string(size_t(i + 1), 'a' + char(i))));
        expected.push_back(run_text({"-m", model_serve("qwen3"), "-p", prompts.back(), "-n", "24"}));
        ASSERT_FALSE(expected.back().empty());
    }
    for (bool speculative : {false, true}) {
        std::vector<std::string> args = {"-m", model_serve("qwen3"), "--temp", "0", "--parallel", "8", "-c", "256"};
        if (speculative) args.insert(args.end(), {"--spec-type", "ngram-simple", "--spec-ngram-size-n", "2", "--draft-max", "4"});
        ServeProcess server(args);
        ASSERT_TRUE(server.started()) << server.log();
        std::vector<std::string> got(prompts.size());
        std::vector<std::thread> clients;
        for (size_t i = 0; i < prompts.size(); ++i)
            clients.emplace_back([&, i] {
                json body = {{"prompt", prompts[i]}, {"max_tokens", 24}, {"ignore_eos", true}, {"stream", true}};
                got[i] = streamed_text(stream_events(server.port(), "/v1/completions", body.dump()), false);
            });
        for (auto& t : clients) t.join();
        for (size_t i = 0; i < prompts.size(); ++i)
            EXPECT_EQ(got[i], expected[i]) << "request " << i << (speculative ? " (speculative)" : " (plain)");
        const std::vector<std::string> idle = {"tandem_sequences_running 0", "tandem_sequences_waiting 0",
                                               "tandem_requests_running 0", "tandem_requests_waiting 0"};
        const std::string metrics = settled_metrics(server.port(), idle);
        for (const std::string& line : idle) EXPECT_NE(metrics.find(line + "\n"), std::string::npos) << metrics;
        if (speculative) {
            EXPECT_NE(metrics.find("tandem_spec_drafted_at_position_total{position=\"0\"}"), std::string::npos)
                << metrics;
        }
        EXPECT_EQ(server.terminate(), 0) << server.log();
    }
}

// More requests than places and a KV pool too small for all of them at full length: they
// wait, or give their KV back and recompute, and every one completes with its own tokens.
TEST(Serve, more_work_than_the_kv_pool_holds_completes_correctly) {
    std::vector<std::string> prompts, expected;
    for (int i = 0; i < 6; ++i) {
        prompts.push_back(fmt::format("Long story number {} begins", i));
        expected.push_back(run_text({"-m", model_serve("qwen3"), "-p", prompts.back(), "-n", "80"}));
    }
    // the tiny model's KV is 4 KiB per 16-token block: room for 10 blocks, 6 x 6 wanted
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0", "--parallel", "4", "--kv-memory", "40KiB"});
    ASSERT_TRUE(server.started()) << server.log();
    std::vector<Reply> got(prompts.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < prompts.size(); ++i)
        clients.emplace_back([&, i] {
            json body = {{"prompt", prompts[i]}, {"max_tokens", 80}, {"ignore_eos", true}};
            got[i] = post(server.port(), "/v1/completions", body.dump());
        });
    for (auto& t : clients) t.join();
    for (size_t i = 0; i < prompts.size(); ++i) {
        ASSERT_EQ(got[i].status, 200) << got[i].raw;
        EXPECT_EQ(got[i].body["choices"][0]["text"], expected[i]) << "request " << i;
        EXPECT_EQ(got[i].body["usage"]["completion_tokens"], 80);
    }
    httplib::Client cli("127.0.0.1", server.port());
    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->body.find("tandem_preemptions_total 0\n"), std::string::npos) << "no session was preempted";
}

// A system prompt shared by two requests is prefilled once: the second resumes it from the
// first one's idle slot.
TEST(Serve, a_shared_system_prompt_is_resumed_from_an_idle_slot) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0", "--parallel", "2"});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string system = "You are a careful assistant who answers in one short sentence, always.";
    auto ask = [&](const std::string& q) {
        json body = {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", q}}}},
                     {"max_tokens", 4}};
        return post(server.port(), "/v1/chat/completions", body.dump());
    };
    Reply a = ask("What is a cat?");
    Reply b = ask("Why is the sky blue?");
    ASSERT_EQ(a.status, 200) << a.raw;
    ASSERT_EQ(b.status, 200) << b.raw;
    EXPECT_EQ(a.body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    EXPECT_GT(b.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 10) << b.raw;
    httplib::Client cli("127.0.0.1", server.port());
    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("tandem_prefix_cache_hits_total 1\n"), std::string::npos) << metrics->body;
}

// logprobs: each token's log-probability and the most likely alternatives, in the legacy
// completions form and the chat form; greedy picks the most likely token.
TEST(Serve, logprobs_come_with_each_token) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0"});
    ASSERT_TRUE(server.started()) << server.log();
    Reply c = post(server.port(), "/v1/completions",
                   R"({"prompt": "Hello", "max_tokens": 6, "ignore_eos": true, "logprobs": 3})");
    ASSERT_EQ(c.status, 200) << c.raw;
    const json& lp = c.body["choices"][0]["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), 6u) << c.raw;
    for (size_t i = 0; i < 6; ++i) {
        const double v = lp["token_logprobs"][i];
        EXPECT_LE(v, 0.0);
        // a dict keyed by token text (OpenAI's legacy form): tokens of one text share a key
        ASSERT_GE(lp["top_logprobs"][i].size(), 1u) << c.raw;
        ASSERT_LE(lp["top_logprobs"][i].size(), 3u) << c.raw;
        double best = -1e30;
        for (const auto& [tok, p] : lp["top_logprobs"][i].items()) best = std::max(best, p.get<double>());
        EXPECT_DOUBLE_EQ(v, best) << "greedy takes the most likely token";
    }
    Reply chat = post(server.port(), "/v1/chat/completions",
                      R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5, "ignore_eos": true,
                          "logprobs": true, "top_logprobs": 2})");
    ASSERT_EQ(chat.status, 200) << chat.raw;
    const json& content = chat.body["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 5u) << chat.raw;
    std::string joined;
    for (const json& t : content) {
        EXPECT_LE(t["logprob"].get<double>(), 0.0);
        EXPECT_EQ(t["top_logprobs"].size(), 2u);
        EXPECT_EQ(t["top_logprobs"][0]["logprob"], t["logprob"]);
        joined += t["token"].get<std::string>();
    }
    EXPECT_EQ(joined, chat.body["choices"][0]["message"]["content"]) << chat.raw;
}

// The [server] section of the config file sets the server; the command line overrides it.
TEST(Serve, the_server_section_of_the_config_file_applies_and_flags_override_it) {
    const std::string cfg = dir_serve() + "/serve.toml";
    {
        std::ofstream f(cfg);
        f << "[server]\nalias = \"from-config\"\napi_key = \"k1\"\nparallel = 2\n";
    }
    ServeProcess server({"-m", model_serve("qwen3"), "--config", cfg, "--api-key", "k2"});
    ASSERT_TRUE(server.started()) << server.log();
    EXPECT_NE(server.log().find("2 slots of"), std::string::npos) << server.log();
    httplib::Client cli("127.0.0.1", server.port());
    auto denied = cli.Get("/v1/models", {{"Authorization", "Bearer k1"}});
    ASSERT_TRUE(denied);
    EXPECT_EQ(denied->status, 401);
    auto models = cli.Get("/v1/models", {{"Authorization", "Bearer k2"}});
    ASSERT_TRUE(models);
    EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "from-config") << models->body;
}

// --request-timeout bounds the generation: past it the answer is what was made so far,
// with finish_reason "length", and the server counts it.
TEST(Serve, a_generation_past_the_request_timeout_ends_with_what_it_made) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0", "-c", "65536", "--request-timeout", "1"});
    ASSERT_TRUE(server.started()) << server.log();
    Reply r = post(server.port(), "/v1/completions",
                   R"({"prompt": "Once", "max_tokens": 60000, "ignore_eos": true})");
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["choices"][0]["finish_reason"], "length");
    const int made = r.body["usage"]["completion_tokens"];
    EXPECT_GT(made, 0);
    EXPECT_LT(made, 60000);
    httplib::Client cli("127.0.0.1", server.port());
    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("tandem_generations_timed_out_total 1\n"), std::string::npos) << metrics->body;
    // the server still serves
    Reply next = post(server.port(), "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})");
    EXPECT_EQ(next.status, 200) << next.raw;
}

// The raw SSE framing as curl sees it: the stream's headers, every event a "data: " line of
// one JSON chunk followed by a blank line, the text of the chunks that of the whole answer,
// and "data: [DONE]" last.
TEST(Serve, curl_sees_server_sent_events_framed_as_openai_streams_them) {
    ServeProcess server({"-m", model_serve("qwen3"), "--temp", "0"});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/completions";
    const std::string body = R"({"prompt": "Hello", "max_tokens": 6, "ignore_eos": true, "stream": true})";
    const std::string cmd = "curl -sS -i -N -H 'Content-Type: application/json' -d " + quote(body) + " " + quote(url);
    std::string raw;
    {
        FILE* p = popen(cmd.c_str(), "r");
        ASSERT_NE(p, nullptr);
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) raw.append(buf, n);
        ASSERT_EQ(pclose(p), 0) << "curl failed: " << raw;
    }
    const size_t head_end = raw.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << raw;
    const std::string head = raw.substr(0, head_end), events = raw.substr(head_end + 4);
    EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
    EXPECT_NE(head.find("Content-Type: text/event-stream"), std::string::npos) << head;
    EXPECT_NE(head.find("Cache-Control: no-cache"), std::string::npos) << head;
    ASSERT_TRUE(events.ends_with("data: [DONE]\n\n")) << events;
    std::string text;
    size_t at = 0, n_events = 0;
    while (at < events.size()) {
        const size_t end = events.find("\n\n", at);
        ASSERT_NE(end, std::string::npos) << "an event without its blank line at " << at << ": " << events;
        const std::string ev = events.substr(at, end - at);
        ASSERT_TRUE(ev.starts_with("data: ")) << ev;
        ASSERT_EQ(ev.find('\n'), std::string::npos) << "one line per event: " << ev;
        at = end + 2;
        ++n_events;
        if (ev == "data: [DONE]") {
            EXPECT_EQ(at, events.size()) << "[DONE] is the last event";
            break;
        }
        const json chunk = json::parse(ev.substr(6), nullptr, false);
        ASSERT_TRUE(chunk.is_object()) << ev;
        EXPECT_EQ(chunk["object"], "text_completion") << ev;
        text += chunk["choices"][0]["text"].get<std::string>();
    }
    EXPECT_GE(n_events, 3u);
    Reply whole = post(server.port(), "/v1/completions", R"({"prompt": "Hello", "max_tokens": 6, "ignore_eos": true})");
    ASSERT_EQ(whole.status, 200) << whole.raw;
    EXPECT_EQ(text, whole.body["choices"][0]["text"]);
}

}  // namespace
}  // namespace tdm
