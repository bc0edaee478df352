// SPDX-License-Identifier: Apache-2.0
// tests/serve/openai_response_test.cpp: response bodies in the shapes OpenAI's clients read.
#include "serve/openai_response.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace tdm::server;
using nlohmann::json;

namespace {

const ResponseMeta kMeta{"chatcmpl-1", 1700000000, "tiny"};

}  // namespace

TEST(OpenAiResponse, a_chat_completion_has_the_message_finish_reason_and_usage) {
    const json j = json::parse(completion_body(Endpoint::chat_completions, kMeta, {"Hi there", "stop"}, {12, 3, 8}));
    EXPECT_EQ(j["id"], "chatcmpl-1");
    EXPECT_EQ(j["object"], "chat.completion");
    EXPECT_EQ(j["created"], 1700000000);
    EXPECT_EQ(j["model"], "tiny");
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["index"], 0);
    EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi there");
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
    EXPECT_EQ(j["usage"]["prompt_tokens"], 12);
    EXPECT_EQ(j["usage"]["completion_tokens"], 3);
    EXPECT_EQ(j["usage"]["total_tokens"], 15);
    EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(OpenAiResponse, a_text_completion_has_text_instead_of_a_message) {
    const json j = json::parse(completion_body(Endpoint::completions, {"cmpl-2", 5, "m"}, {"abc", "length"}, {1, 2, 0}));
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["choices"][0]["text"], "abc");
    EXPECT_FALSE(j["choices"][0].contains("message"));
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiResponse, n_choices_are_listed_by_index_and_chunks_say_whose_they_are) {
    std::vector<ChoiceText> choices = {{"one", "stop"}, {"two", "length"}, {"three", "stop"}};
    for (uint32_t i = 0; i < choices.size(); ++i) choices[i].index = i;
    const json j = json::parse(completion_body(Endpoint::chat_completions, kMeta, choices, {5, 9, 0}));
    ASSERT_EQ(j["choices"].size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][1]["message"]["content"], "two");
    EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["total_tokens"], 14);
    ChoiceText piece{"x", ""};
    piece.index = 2;
    const json chunk = json::parse(chunk_body(Endpoint::completions, kMeta, piece, false));
    EXPECT_EQ(chunk["choices"][0]["index"], 2);
    EXPECT_EQ(chunk["choices"][0]["text"], "x");
}

TEST(OpenAiResponse, chat_chunks_carry_the_role_first_and_the_finish_reason_last) {
    const json first = json::parse(chunk_body(Endpoint::chat_completions, kMeta, {"He", ""}, true));
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_EQ(first["choices"][0]["delta"]["content"], "He");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    const json middle = json::parse(chunk_body(Endpoint::chat_completions, kMeta, {"llo", ""}, false));
    EXPECT_FALSE(middle["choices"][0]["delta"].contains("role"));
    const json last = json::parse(chunk_body(Endpoint::chat_completions, kMeta, {"", "stop"}, false));
    EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(last["choices"][0]["delta"].is_object());
    EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
    const json usage = json::parse(usage_chunk_body(Endpoint::chat_completions, kMeta, {4, 2, 0}));
    EXPECT_TRUE(usage["choices"].is_array() && usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["total_tokens"], 6);
}

TEST(OpenAiResponse, chat_logprobs_give_exact_bytes_for_partial_characters) {
    // "é" is 0xC3 0xA9; a byte-fallback token may hold only its first byte.
    const std::vector<TokenLogprob> lps = {
        {"\xC3", -0.5, {{"\xC3", -0.5}, {"x", -std::numeric_limits<double>::infinity()}}},
        {"ok", -0.25, {}},
    };
    const json j = json::parse(chunk_body(Endpoint::chat_completions, kMeta, {"", "", &lps}, false));
    const json& content = j["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 2u);
    EXPECT_EQ(content[0]["token"], "\xEF\xBF\xBD");  // U+FFFD in the string...
    EXPECT_EQ(content[0]["bytes"], json::array({0xC3}));  // ...the exact byte beside it
    EXPECT_EQ(content[0]["logprob"], -0.5);
    ASSERT_EQ(content[0]["top_logprobs"].size(), 2u);
    EXPECT_EQ(content[0]["top_logprobs"][1]["logprob"], -9999.0);  // -inf has no JSON form
    EXPECT_EQ(content[1]["bytes"], json::array({'o', 'k'}));
    EXPECT_TRUE(content[1]["top_logprobs"].empty());
}

TEST(OpenAiResponse, completion_logprobs_use_the_legacy_parallel_arrays) {
    const std::vector<TokenLogprob> lps = {{"Hel", -1.0, {{"Hel", -1.0}, {"He", -2.0}}}, {"lo", -0.1, {{"lo", -0.1}}}};
    ChoiceText choice{"Hello", "stop", &lps};
    choice.text_offset = 10;
    const json j = json::parse(completion_body(Endpoint::completions, kMeta, choice, {}));
    const json& l = j["choices"][0]["logprobs"];
    EXPECT_EQ(l["tokens"], json::array({"Hel", "lo"}));
    EXPECT_EQ(l["token_logprobs"], json::array({-1.0, -0.1}));
    EXPECT_EQ(l["top_logprobs"][0]["He"], -2.0);
    EXPECT_EQ(l["text_offset"], json::array({10, 13}));
}

TEST(OpenAiResponse, an_echoed_prompts_first_token_has_null_logprobs) {
    TokenLogprob first{"Once", 0, {}};
    first.unpredicted = true;  // nothing predicts a prompt's first token
    const std::vector<TokenLogprob> lps = {first, {" upon", -3.5, {{" a", -0.5}}}};
    const ChoiceText choice{"Once upon", "length", &lps};
    const json j = json::parse(completion_body(Endpoint::completions, kMeta, choice, {}));
    const json& l = j["choices"][0]["logprobs"];
    EXPECT_EQ(l["tokens"], json::array({"Once", " upon"}));
    EXPECT_EQ(l["token_logprobs"], json::array({nullptr, -3.5}));
    EXPECT_EQ(l["top_logprobs"], json::array({nullptr, {{" a", -0.5}}}));
    EXPECT_EQ(l["text_offset"], json::array({0, 4}));
}

TEST(OpenAiResponse, sse_frames_one_event_per_body_and_ends_with_done) {
    const std::string body = chunk_body(Endpoint::completions, kMeta, {"a\nb", ""}, true);
    EXPECT_EQ(body.find('\n'), std::string::npos);  // a newline in the text is escaped
    const std::string event = sse_event(body);
    EXPECT_EQ(event.rfind("data: ", 0), 0u);
    EXPECT_TRUE(event.ends_with("\n\n"));
    EXPECT_EQ(event.find("\n"), event.size() - 2);
    EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}
