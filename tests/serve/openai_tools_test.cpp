// SPDX-License-Identifier: Apache-2.0
// tests/serve/openai_tools_test.cpp: the tool-calling fields of chat requests: tools and
// their limits, tool_choice, parallel_tool_calls, assistant tool_calls and tool messages.
#include "serve/openai_request.h"

#include <gtest/gtest.h>

#include <string>

namespace tdm::server {
namespace {

const std::string kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": )"
    R"({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}}})";

ApiResult<GenerationRequest> tools_request(const std::string& fields, const RequestLimits& limits = {}) {
    return parse_generation_request(Endpoint::chat_completions,
                                    R"({"messages": [{"role": "user", "content": "hi"}], )" + fields + "}", limits);
}

ApiError tools_refused(const std::string& fields, const RequestLimits& limits = {}) {
    auto r = tools_request(fields, limits);
    EXPECT_FALSE(r.ok()) << fields << " was accepted";
    return r.ok() ? ApiError{} : r.error();
}

TEST(OpenAiTools, tools_keep_the_clients_key_order_and_choice_defaults_to_auto) {
    auto r = tools_request(R"("tools": [)" + kWeatherTool + "]");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->tools.size(), 1u);
    EXPECT_EQ(r->tools[0].name, "get_weather");
    EXPECT_EQ(r->tools[0].function_json,
              R"({"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":)"
              R"({"b":{"type":"string"},"a":{"type":"integer"}}}})");
    EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::automatic);
    EXPECT_TRUE(r->parallel_tool_calls);

    auto none = tools_request(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": "none", "parallel_tool_calls": false)");
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->tool_choice.mode, ToolChoiceMode::none);
    EXPECT_FALSE(none->parallel_tool_calls);
}

TEST(OpenAiTools, bad_tools_are_refused_naming_the_field) {
    EXPECT_EQ(tools_refused(R"("tools": {})").param, "tools");
    EXPECT_EQ(tools_refused(R"("tools": [{"type": "retrieval"}])").param, "tools[0].type");
    EXPECT_EQ(tools_refused(R"("tools": [{"type": "function", "function": {"name": "a b"}}])").param,
              "tools[0].function.name");
    EXPECT_EQ(tools_refused(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])").param,
              "tools[0].function.parameters");
    EXPECT_EQ(tools_refused(R"("tools": [)" + kWeatherTool + "," + kWeatherTool + "]").param, "tools[1].function.name");
    EXPECT_EQ(tools_refused(R"("tool_choice": "sometimes")").param, "tool_choice");
    EXPECT_EQ(tools_refused(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": {"type": "function", "function": )"
                            R"({"name": "other"}})")
                  .param,
              "tool_choice");
    EXPECT_EQ(tools_refused(R"("parallel_tool_calls": "yes")").param, "parallel_tool_calls");
    EXPECT_EQ(tools_refused(R"("function_call": "auto")").param, "function_call");  // without functions
}

TEST(OpenAiTools, required_and_named_choices_are_read_and_a_name_must_be_offered) {
    auto required = tools_request(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": "required")");
    ASSERT_TRUE(required.ok()) << required.error().message;
    EXPECT_EQ(required->tool_choice.mode, ToolChoiceMode::required);
    auto named = tools_request(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": {"type": "function", )"
                               R"("function": {"name": "get_weather"}})");
    ASSERT_TRUE(named.ok()) << named.error().message;
    EXPECT_EQ(named->tool_choice.mode, ToolChoiceMode::named);
    EXPECT_EQ(named->tool_choice.name, "get_weather");
    EXPECT_EQ(tools_refused(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": {"type": "function", )"
                            R"("function": {"name": "get_time"}})")
                  .param,
              "tool_choice");
    EXPECT_EQ(tools_refused(R"("tool_choice": "required")").param, "tool_choice");
}

TEST(OpenAiTools, limits_bound_the_number_and_size_of_tools) {
    RequestLimits few;
    few.max_tools = 1;
    EXPECT_NE(tools_refused(R"("tools": [)" + kWeatherTool + R"(, {"type": "function", "function": {"name": "g"}}])", few)
                  .message.find("at most 1"),
              std::string::npos);
    RequestLimits small;
    small.max_tools_bytes = 64;
    EXPECT_EQ(tools_refused(R"("tools": [)" + kWeatherTool + "]", small).param, "tools");
}

TEST(OpenAiTools, a_tool_round_trip_in_the_history_is_read) {
    auto r = parse_generation_request(Endpoint::chat_completions, R"({"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"b\": \"Oslo\", \"a\": 1}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sunny"}]}]})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->messages.size(), 3u);
    ASSERT_EQ(r->messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(r->messages[1].content, "");
    EXPECT_EQ(r->messages[1].tool_calls[0].id, "call_1");
    EXPECT_EQ(r->messages[1].tool_calls[0].arguments, R"({"b": "Oslo", "a": 1})");  // as sent
    EXPECT_EQ(r->messages[2].role, "tool");
    EXPECT_EQ(r->messages[2].tool_call_id, "call_1");
    EXPECT_EQ(r->messages[2].content, "sunny");

    auto bad = parse_generation_request(Endpoint::chat_completions, R"({"messages": [
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().param, "messages[0].tool_calls[0].function.arguments");
}

TEST(OpenAiTools, tools_belong_to_chat_completions) {
    auto r = parse_generation_request(Endpoint::completions, R"({"prompt": "x", "tools": []})");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().param, "tools");
}

const std::string kWeatherFunction =
    R"({"name": "get_weather", "description": "Weather.", "parameters": )"
    R"({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}})";

TEST(OpenAiTools, deprecated_functions_are_tools_and_function_call_is_the_choice) {
    auto r = tools_request(R"("functions": [)" + kWeatherFunction + "]");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->tools.size(), 1u);
    EXPECT_EQ(r->tools[0].name, "get_weather");
    // the same definition as {"type": "function", "function": ...} in "tools" gives
    const auto modern = tools_request(R"("tools": [)" + kWeatherTool + "]");
    ASSERT_TRUE(modern.ok());
    EXPECT_EQ(r->tools[0].function_json, modern->tools[0].function_json);
    EXPECT_TRUE(r->legacy_functions);
    EXPECT_FALSE(r->parallel_tool_calls);  // the legacy reply holds one call
    EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::automatic);
    EXPECT_FALSE(modern->legacy_functions);

    const auto none = tools_request(R"("functions": [)" + kWeatherFunction + R"(], "function_call": "none")");
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->tool_choice.mode, ToolChoiceMode::none);
    const auto automatic = tools_request(R"("functions": [)" + kWeatherFunction + R"(], "function_call": "auto")");
    ASSERT_TRUE(automatic.ok());
    EXPECT_EQ(automatic->tool_choice.mode, ToolChoiceMode::automatic);
    const auto named =
        tools_request(R"("functions": [)" + kWeatherFunction + R"(], "function_call": {"name": "get_weather"})");
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(named->tool_choice.mode, ToolChoiceMode::named);
    EXPECT_EQ(named->tool_choice.name, "get_weather");
}

TEST(OpenAiTools, functions_beside_tools_and_bad_function_calls_are_refused) {
    const ApiError both = tools_refused(R"("tools": [)" + kWeatherTool + R"(], "functions": [)" + kWeatherFunction + "]");
    EXPECT_EQ(both.param, "functions");
    EXPECT_NE(both.message.find("'functions' and 'tools'"), std::string::npos);
    const ApiError choices = tools_refused(R"("functions": [)" + kWeatherFunction +
                                           R"(], "function_call": "auto", "tool_choice": "auto")");
    EXPECT_EQ(choices.param, "function_call");
    EXPECT_NE(choices.message.find("'tool_choice'"), std::string::npos);
    EXPECT_EQ(tools_refused(R"("functions": {})").param, "functions");
    EXPECT_EQ(tools_refused(R"("functions": [{"name": "a b"}])").param, "functions[0].name");
    EXPECT_EQ(tools_refused(R"("functions": [{"name": "f", "parameters": 3}])").param, "functions[0].parameters");
    EXPECT_EQ(tools_refused(R"("functions": [)" + kWeatherFunction + R"(], "function_call": "required")").param,
              "function_call");
    EXPECT_EQ(tools_refused(R"("functions": [)" + kWeatherFunction + R"(], "function_call": {"name": "other"})").param,
              "function_call");
}

TEST(OpenAiTools, function_messages_are_tool_results_and_an_assistant_function_call_is_a_call) {
    auto r = parse_generation_request(
        Endpoint::chat_completions,
        R"({"messages": [{"role": "user", "content": "weather?"},
            {"role": "assistant", "content": null, "function_call": {"name": "get_weather", "arguments": "{\"b\": \"x\"}"}},
            {"role": "function", "name": "get_weather", "content": "sunny"}]})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->messages.size(), 3u);
    ASSERT_EQ(r->messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(r->messages[1].tool_calls[0].name, "get_weather");
    EXPECT_EQ(r->messages[1].tool_calls[0].arguments, R"({"b": "x"})");
    EXPECT_EQ(r->messages[2].role, "tool");
    EXPECT_EQ(r->messages[2].name, "get_weather");
    EXPECT_EQ(r->messages[2].content, "sunny");

    auto nameless = parse_generation_request(Endpoint::chat_completions,
                                             R"({"messages": [{"role": "function", "content": "sunny"}]})");
    ASSERT_FALSE(nameless.ok());
    EXPECT_EQ(nameless.error().param, "messages[0].name");
    auto bad_call = parse_generation_request(
        Endpoint::chat_completions,
        R"({"messages": [{"role": "assistant", "function_call": {"name": "f", "arguments": "[1]"}}]})");
    ASSERT_FALSE(bad_call.ok());
    EXPECT_EQ(bad_call.error().param, "messages[0].function_call.arguments");
}

}  // namespace
}  // namespace tdm::server
