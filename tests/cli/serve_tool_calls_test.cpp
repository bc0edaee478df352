// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_tool_calls_test.cpp: tool calls through the HTTP server, with a scripted
// backend standing in for the model (serve/backend.h) so that the reply is a known call:
// the whole answer has tool_calls and finish_reason "tool_calls", the stream carries the
// text before the call as content and the call as header and argument chunks, and both
// agree. A random synthetic model never writes a call; the parsing itself is proven in
// tests/serve/tool_call_parser_test.cpp.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "serve/http_server.h"

#include <sstream>
#include <thread>

namespace tdm::server {
namespace {

using nlohmann::json;

// Writes `script` in small pieces, as tokens would come; offers Hermes calls when asked
// for tools, as ServeBackend does for a Qwen3 model.
class ScriptedBackend final : public Backend {
public:
    explicit ScriptedBackend(std::string script) : script_(std::move(script)) {}
    const std::string& model_id() const override { return id_; }
    ApiResult<Job> prepare(GenerationRequest request) const override {
        Job job;
        job.prompt = {1, 2, 3};
        if (!request.tools.empty() && request.tool_choice.mode != ToolChoiceMode::none)
            job.tool_format = ToolCallFormat::hermes;
        job.request = std::move(request);
        return job;
    }
    ApiResult<std::vector<int32_t>> tokenize(const TokenizeRequest&) const override { return std::vector<int32_t>{}; }
    std::string token_piece(int32_t) const override { return ""; }
    ApiResult<std::string> detokenize(const DetokenizeRequest&) const override { return std::string(); }
    ApiResult<std::vector<Outcome>> run(const Job& job, const ChoiceSink& on_text) override {
        for (size_t at = 0; at < script_.size(); at += 3)
            if (!on_text(0, std::string_view(script_).substr(at, 3), nullptr)) break;
        Outcome out;
        out.finish_reason = "stop";
        out.usage.prompt_tokens = job.prompt.size();
        out.usage.completion_tokens = (script_.size() + 2) / 3;
        return std::vector<Outcome>{out};
    }

private:
    std::string id_ = "scripted";
    std::string script_;
};

const std::string kCallScript =
    "Let me check. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

struct ServerThread {
    ScriptedBackend backend;
    HttpServer server;
    std::thread thread;
    explicit ServerThread(std::string script)
        : backend(std::move(script)), server(backend, [] {
              ServerOptions o;
              o.port = 0;
              return o;
          }()) {
        EXPECT_TRUE(server.bind().ok());
        thread = std::thread([this] { (void)server.serve(); });
    }
    ~ServerThread() {
        server.drain();
        thread.join();
    }
};

std::string tool_body(bool stream, const std::string& extra = "") {
    return std::string(R"({"messages": [{"role": "user", "content": "Weather?"}], "tools": [)"
                       R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},)"
                       R"({"type": "function", "function": {"name": "get_time"}}], "stream": )") +
           (stream ? "true" : "false") + extra + "}";
}

TEST(ServeToolCalls, a_whole_reply_with_calls_has_tool_calls_and_finish_reason_tool_calls) {
    ServerThread s(kCallScript);
    httplib::Client cli("127.0.0.1", s.server.port());
    auto res = cli.Post("/v1/chat/completions", tool_body(false), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = json::parse(res->body);
    const json& message = j["choices"][0]["message"];
    EXPECT_EQ(message["content"], "Let me check.");
    ASSERT_EQ(message["tool_calls"].size(), 2u);
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"location":"Paris"})");
    EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "get_time");
    EXPECT_EQ(message["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_NE(message["tool_calls"][0]["id"], message["tool_calls"][1]["id"]);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");

    // parallel_tool_calls false: the first call only. tool_choice none: the text as it came.
    auto one = cli.Post("/v1/chat/completions", tool_body(false, R"(, "parallel_tool_calls": false)"), "application/json");
    ASSERT_TRUE(one);
    EXPECT_EQ(json::parse(one->body)["choices"][0]["message"]["tool_calls"].size(), 1u);
    auto none = cli.Post("/v1/chat/completions", tool_body(false, R"(, "tool_choice": "none")"), "application/json");
    ASSERT_TRUE(none);
    const json n = json::parse(none->body);
    EXPECT_EQ(n["choices"][0]["message"]["content"], kCallScript);
    EXPECT_FALSE(n["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(n["choices"][0]["finish_reason"], "stop");
}

TEST(ServeToolCalls, a_streamed_reply_gives_content_then_each_call_as_openai_streams_it) {
    ServerThread s(kCallScript);
    httplib::Client cli("127.0.0.1", s.server.port());
    auto res = cli.Post("/v1/chat/completions", tool_body(true), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    std::string content, finish;
    json calls = json::array();
    bool role_first = false, first_chunk = true;
    std::istringstream events(res->body);
    for (std::string line; std::getline(events, line);) {
        if (line.rfind("data: {", 0) != 0) continue;
        const json chunk = json::parse(line.substr(6));
        const json& delta = chunk["choices"][0]["delta"];
        if (first_chunk) role_first = delta.value("role", "") == "assistant";
        first_chunk = false;
        if (delta.contains("content")) content += delta["content"].get<std::string>();
        for (const json& tc : delta.value("tool_calls", json::array())) {
            const size_t index = tc["index"];
            if (tc.contains("id")) {
                EXPECT_EQ(index, calls.size());
                EXPECT_EQ(tc["function"]["arguments"], "");
                calls.push_back({{"name", tc["function"]["name"]}, {"arguments", ""}});
            }
            calls[index]["arguments"] = calls[index]["arguments"].get<std::string>() +
                                        tc["function"]["arguments"].get<std::string>();
        }
        if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
    }
    EXPECT_TRUE(role_first);
    EXPECT_EQ(content, "Let me check.");
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0]["name"], "get_weather");
    EXPECT_EQ(calls[0]["arguments"], R"({"location":"Paris"})");
    EXPECT_EQ(calls[1]["arguments"], "{}");
    EXPECT_EQ(finish, "tool_calls");
}

}  // namespace
}  // namespace tdm::server
