// SPDX-License-Identifier: Apache-2.0
// tests/serve/openai_response_tools_test.cpp: tool calls in response bodies, whole and
// streamed, in the shapes OpenAI's clients read.
#include "serve/openai_response.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tdm::server {
namespace {

const ResponseMeta kToolsMeta{"chatcmpl-7", 1700000000, "tiny"};

TEST(OpenAiResponseTools, a_reply_with_calls_has_tool_calls_and_null_content) {
    const std::vector<ToolCallOut> calls = {{"call_1", "get_weather", R"({"location":"Paris"})"},
                                            {"call_2", "get_time", "{}"}};
    ChoiceText choice{"", "tool_calls"};
    choice.tool_calls = &calls;
    const auto j = nlohmann::json::parse(completion_body(Endpoint::chat_completions, kToolsMeta, choice, {5, 9, 0}));
    const auto& message = j["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_null());
    ASSERT_EQ(message["tool_calls"].size(), 2u);
    EXPECT_EQ(message["tool_calls"][0]["id"], "call_1");
    EXPECT_EQ(message["tool_calls"][0]["type"], "function");
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"location":"Paris"})");
    EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");

    ChoiceText with_text{"Checking.", "tool_calls"};
    with_text.tool_calls = &calls;
    const auto k = nlohmann::json::parse(completion_body(Endpoint::chat_completions, kToolsMeta, with_text, {5, 9, 0}));
    EXPECT_EQ(k["choices"][0]["message"]["content"], "Checking.");

    const std::vector<ToolCallOut> none;
    ChoiceText plain{"", "stop"};
    plain.tool_calls = &none;
    const auto p = nlohmann::json::parse(completion_body(Endpoint::chat_completions, kToolsMeta, plain, {5, 9, 0}));
    EXPECT_EQ(p["choices"][0]["message"]["content"], "");
    EXPECT_FALSE(p["choices"][0]["message"].contains("tool_calls"));
}

TEST(OpenAiResponseTools, a_streamed_call_is_a_header_chunk_then_argument_chunks) {
    const ToolCallOut call{"call_1", "get_time", R"({"tz":"CET"})"};
    const auto head = nlohmann::json::parse(tool_call_chunk_body(kToolsMeta, 0, 1, &call, "", /*first=*/true));
    EXPECT_EQ(head["object"], "chat.completion.chunk");
    const auto& delta = head["choices"][0]["delta"];
    EXPECT_EQ(delta["role"], "assistant");
    EXPECT_FALSE(delta.contains("content"));
    ASSERT_EQ(delta["tool_calls"].size(), 1u);
    EXPECT_EQ(delta["tool_calls"][0]["index"], 1);
    EXPECT_EQ(delta["tool_calls"][0]["id"], "call_1");
    EXPECT_EQ(delta["tool_calls"][0]["type"], "function");
    EXPECT_EQ(delta["tool_calls"][0]["function"]["name"], "get_time");
    EXPECT_EQ(delta["tool_calls"][0]["function"]["arguments"], "");
    EXPECT_TRUE(head["choices"][0]["finish_reason"].is_null());

    const auto args = nlohmann::json::parse(tool_call_chunk_body(kToolsMeta, 0, 1, nullptr, call.arguments, false));
    const auto& d = args["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("role"));
    EXPECT_EQ(d["tool_calls"][0]["index"], 1);
    EXPECT_FALSE(d["tool_calls"][0].contains("id"));
    EXPECT_EQ(d["tool_calls"][0]["function"]["arguments"], R"({"tz":"CET"})");
}

TEST(OpenAiResponseTools, deprecated_functions_get_the_legacy_function_call_shape) {
    const std::vector<ToolCallOut> calls = {{"call_1", "get_weather", R"({"location":"Paris"})"}};
    ChoiceText choice{"", "function_call"};
    choice.tool_calls = &calls;
    choice.function_call = true;
    const auto j = nlohmann::json::parse(completion_body(Endpoint::chat_completions, kToolsMeta, choice, {5, 9, 0}));
    const auto& message = j["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_null());
    EXPECT_FALSE(message.contains("tool_calls"));
    EXPECT_EQ(message["function_call"]["name"], "get_weather");
    EXPECT_EQ(message["function_call"]["arguments"], R"({"location":"Paris"})");
    EXPECT_EQ(j["choices"][0]["finish_reason"], "function_call");

    const std::string name = "get_weather";
    const auto head = nlohmann::json::parse(function_call_chunk_body(kToolsMeta, 2, &name, "", /*first=*/true));
    const auto& delta = head["choices"][0]["delta"];
    EXPECT_EQ(head["choices"][0]["index"], 2);
    EXPECT_EQ(delta["role"], "assistant");
    EXPECT_TRUE(delta["content"].is_null());
    EXPECT_EQ(delta["function_call"]["name"], "get_weather");
    EXPECT_EQ(delta["function_call"]["arguments"], "");
    EXPECT_FALSE(delta.contains("tool_calls"));
    const auto args = nlohmann::json::parse(function_call_chunk_body(kToolsMeta, 2, nullptr, R"({"loc)", false));
    const auto& d = args["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("role"));
    EXPECT_FALSE(d.contains("content"));
    EXPECT_FALSE(d["function_call"].contains("name"));
    EXPECT_EQ(d["function_call"]["arguments"], R"({"loc)");
}

}  // namespace
}  // namespace tdm::server
