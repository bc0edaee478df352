// SPDX-License-Identifier: Apache-2.0
// tests/serve/openai_request_test.cpp: request bodies of the OpenAI-compatible API and of
// llama-server's /tokenize and /detokenize, as clients send them and as hostile ones do.
#include "serve/openai_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace tdm::server;
using nlohmann::json;

namespace {

GenerationRequest chat_ok(const std::string& body) {
    auto r = parse_generation_request(Endpoint::chat_completions, body);
    EXPECT_TRUE(r.ok()) << body << "\n -> " << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : GenerationRequest{};
}

GenerationRequest completion_ok(const std::string& body) {
    auto r = parse_generation_request(Endpoint::completions, body);
    EXPECT_TRUE(r.ok()) << body << "\n -> " << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : GenerationRequest{};
}

ApiError refused(Endpoint endpoint, const std::string& body, const RequestLimits& limits = {}) {
    auto r = parse_generation_request(endpoint, body, limits);
    EXPECT_FALSE(r.ok()) << body << " was accepted";
    if (r.ok()) return {};
    EXPECT_EQ(r.error().status, 400);
    EXPECT_EQ(r.error().type, "invalid_request_error");
    EXPECT_FALSE(r.error().message.empty());
    return r.error();
}

ApiError chat_refused(const std::string& fields) {
    return refused(Endpoint::chat_completions,
                   R"({"messages": [{"role": "user", "content": "hi"}])" + (fields.empty() ? "" : ", " + fields) + "}");
}

}  // namespace

TEST(OpenAiRequest, a_minimal_chat_request_leaves_every_option_to_the_server) {
    const GenerationRequest r = chat_ok(R"({"model": "m", "messages": [{"role": "user", "content": "Hello"}]})");
    EXPECT_EQ(r.endpoint, Endpoint::chat_completions);
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_EQ(r.messages[0].role, "user");
    EXPECT_EQ(r.messages[0].content, "Hello");
    EXPECT_FALSE(r.max_tokens || r.temperature || r.top_p || r.min_p || r.top_k || r.seed || r.repetition_penalty);
    EXPECT_FALSE(r.stream || r.logprobs || r.ignore_eos.has_value() || r.speculative);
    EXPECT_TRUE(r.stop.empty());
}

TEST(OpenAiRequest, content_parts_are_joined_and_developer_is_a_system_message) {
    const GenerationRequest r = chat_ok(R"({"messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "one "}, {"type": "text", "text": "two"}]},
        {"role": "assistant", "content": "ok", "name": "bot"}]})");
    ASSERT_EQ(r.messages.size(), 3u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "one two");
    EXPECT_EQ(r.messages[2].role, "assistant");
}

TEST(OpenAiRequest, sampling_fields_are_read_with_their_off_values_mapped) {
    const GenerationRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "x"}],
        "max_tokens": 7, "max_completion_tokens": 9, "temperature": 0, "top_p": 0.5, "min_p": 0.1,
        "top_k": -1, "seed": 42, "repetition_penalty": 1.1, "stop": ["a", "", "bc"], "stream": true,
        "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 3, "ignore_eos": true,
        "presence_penalty": 0, "frequency_penalty": 0.0, "n": 1, "logit_bias": {}, "tools": [],
        "response_format": {"type": "text"}, "user": "u", "metadata": {"k": "v"}})");
    EXPECT_EQ(r.max_tokens, 9u);  // max_completion_tokens replaces the deprecated max_tokens
    EXPECT_EQ(r.temperature, 0.0);
    EXPECT_EQ(r.top_p, 0.5);
    EXPECT_EQ(r.min_p, 0.1);
    EXPECT_EQ(r.top_k, 0);  // vLLM's -1 is off, as 0 is
    EXPECT_EQ(r.seed, 42u);
    EXPECT_EQ(r.repetition_penalty, 1.1);
    EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
    EXPECT_TRUE(r.stream && r.include_usage && r.logprobs && r.ignore_eos == true);
    EXPECT_EQ(r.top_logprobs, 3u);
}

TEST(OpenAiRequest, null_means_not_given_and_seed_minus_one_means_random) {
    const GenerationRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "x"}],
        "temperature": null, "max_tokens": null, "stop": null, "seed": -1, "max_tokens": 1e3})");
    EXPECT_FALSE(r.temperature);
    EXPECT_FALSE(r.seed);
    EXPECT_EQ(r.max_tokens, 1000u);  // a whole number written as a float counts
}

TEST(OpenAiRequest, completion_prompts_are_text_or_token_ids_one_at_a_time) {
    EXPECT_EQ(completion_ok(R"({"prompt": "Once"})").prompt, "Once");
    EXPECT_EQ(completion_ok(R"({"prompt": ["Once"]})").prompt, "Once");
    const GenerationRequest ids = completion_ok(R"({"prompt": [1, 2, 3], "logprobs": 2})");
    EXPECT_TRUE(ids.prompt_is_tokens);
    EXPECT_EQ(ids.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_TRUE(ids.logprobs);
    EXPECT_EQ(ids.top_logprobs, 2u);
    EXPECT_EQ(completion_ok(R"({"prompt": [[4, 5]]})").prompt_tokens, (std::vector<int32_t>{4, 5}));

    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": ["a", "b"]})").param, "prompt");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": []})").param, "prompt");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": [1, -2]})").param, "prompt[1]");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": [1, 2147483648]})").param, "prompt[1]");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": [1, "2"]})").param, "prompt[1]");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": 5})").param, "prompt");
    EXPECT_EQ(refused(Endpoint::completions, R"({"max_tokens": 5})").param, "prompt");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "suffix": "z"})").param, "suffix");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "logprobs": 21})").param, "logprobs");
}

TEST(OpenAiRequest, bodies_that_are_not_one_json_object_are_refused_with_the_reason) {
    EXPECT_NE(refused(Endpoint::chat_completions, "").message.find("empty"), std::string::npos);
    EXPECT_NE(refused(Endpoint::chat_completions, "  \n").message.find("empty"), std::string::npos);
    const ApiError bad = refused(Endpoint::chat_completions, R"({"messages": [)");
    EXPECT_NE(bad.message.find("not valid JSON"), std::string::npos) << bad.message;
    EXPECT_NE(bad.message.find("line 1"), std::string::npos) << bad.message;
    EXPECT_NE(refused(Endpoint::chat_completions, "[1]").message.find("not an array"), std::string::npos);
    EXPECT_NE(refused(Endpoint::chat_completions, R"({"a": 1} {"b": 2})").message.find("not valid JSON"),
              std::string::npos);
    // A number beyond a double (nlohmann throws out_of_range, not parse_error).
    const ApiError huge = refused(Endpoint::chat_completions,
                                  R"({"messages": [{"role": "user", "content": "x"}], "temperature": 1e999})");
    EXPECT_NE(huge.message.find("not valid JSON"), std::string::npos) << huge.message;
    EXPECT_NE(huge.message.find("1e999"), std::string::npos) << huge.message;
    EXPECT_EQ(parse_detokenize_request(R"({"tokens": [0, 12e666]})").error().status, 400);
    // Invalid UTF-8 inside a string.
    const ApiError utf8 = refused(Endpoint::chat_completions,
                                  "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}");
    EXPECT_NE(utf8.message.find("UTF-8"), std::string::npos) << utf8.message;
    // Deep nesting is refused before it costs anything.
    const std::string deep = R"({"messages": [{"role": "user", "content": "x"}], "metadata": )" +
                             std::string(100, '[') + std::string(100, ']') + "}";
    EXPECT_NE(refused(Endpoint::chat_completions, deep).message.find("deeper"), std::string::npos);
    const std::string very_deep(1 << 20, '[');
    EXPECT_FALSE(parse_generation_request(Endpoint::chat_completions, very_deep).ok());
}

TEST(OpenAiRequest, wrong_types_and_ranges_name_the_field) {
    ApiError e = chat_refused(R"("temperature": "hot")");
    EXPECT_EQ(e.param, "temperature");
    EXPECT_NE(e.message.find("must be a number, not a string"), std::string::npos) << e.message;
    EXPECT_EQ(chat_refused(R"("temperature": -0.1)").param, "temperature");
    EXPECT_EQ(chat_refused(R"("top_p": 1.5)").param, "top_p");
    EXPECT_EQ(chat_refused(R"("min_p": -1)").param, "min_p");
    EXPECT_EQ(chat_refused(R"("top_k": -2)").param, "top_k");
    EXPECT_EQ(chat_refused(R"("top_k": 1.5)").param, "top_k");
    EXPECT_EQ(chat_refused(R"("repetition_penalty": 0)").param, "repetition_penalty");
    EXPECT_EQ(chat_refused(R"("seed": -5)").param, "seed");
    EXPECT_EQ(chat_refused(R"("seed": "7")").param, "seed");
    EXPECT_EQ(chat_refused(R"("max_tokens": 0)").param, "max_tokens");
    EXPECT_EQ(chat_refused(R"("max_tokens": -5)").param, "max_tokens");
    e = chat_refused(R"("max_tokens": 18446744073709551615)");
    EXPECT_EQ(e.param, "max_tokens");
    EXPECT_NE(e.message.find("18446744073709551615"), std::string::npos) << e.message;
    EXPECT_EQ(chat_refused(R"("max_tokens": 1e300)").param, "max_tokens");
    EXPECT_EQ(chat_refused(R"("max_completion_tokens": true)").param, "max_completion_tokens");
    EXPECT_EQ(chat_refused(R"("stream": "yes")").param, "stream");
    EXPECT_EQ(chat_refused(R"("stream_options": {"include_usage": true})").param, "stream_options");
    EXPECT_EQ(chat_refused(R"("stream": true, "stream_options": {"include_usage": 1})").param,
              "stream_options.include_usage");
    EXPECT_EQ(chat_refused(R"("stop": 3)").param, "stop");
    EXPECT_EQ(chat_refused(R"("stop": ["a", 3])").param, "stop[1]");
    EXPECT_EQ(chat_refused(R"("top_logprobs": 2)").param, "top_logprobs");
    EXPECT_EQ(chat_refused(R"("logprobs": true, "top_logprobs": 21)").param, "top_logprobs");
    EXPECT_EQ(chat_refused(R"("model": 3)").param, "model");
}

TEST(OpenAiRequest, messages_that_cannot_be_a_conversation_are_refused) {
    const auto chat = [](const std::string& messages) {
        return refused(Endpoint::chat_completions, R"({"messages": )" + messages + "}");
    };
    EXPECT_EQ(refused(Endpoint::chat_completions, R"({"model": "m"})").param, "messages");
    EXPECT_NE(chat("[]").message.find("empty"), std::string::npos);
    EXPECT_EQ(chat(R"("hello")").param, "messages");
    EXPECT_EQ(chat(R"([{"role": "user", "content": "a"}, "b"])").param, "messages[1]");
    EXPECT_EQ(chat(R"([{"content": "a"}])").param, "messages[0].role");
    EXPECT_EQ(chat(R"([{"role": "king", "content": "a"}])").param, "messages[0].role");
    EXPECT_EQ(chat(R"([{"role": "tool", "content": "a"}])").param, "messages[0].tool_call_id");
    EXPECT_EQ(chat(R"([{"role": "function", "content": "a"}])").param, "messages[0].name");
    EXPECT_EQ(chat(R"([{"role": "user"}])").param, "messages[0].content");
    EXPECT_EQ(chat(R"([{"role": "assistant", "content": null}])").param, "messages[0].content");
    EXPECT_EQ(chat(R"([{"role": "user", "content": 5}])").param, "messages[0].content");
    const ApiError audio =
        chat(R"([{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x"}}]}])");
    EXPECT_EQ(audio.param, "messages[0].content[0].type");
    EXPECT_NE(audio.message.find("image_url"), std::string::npos);
    EXPECT_EQ(chat(R"([{"role": "user", "content": [{"type": "text"}]}])").param, "messages[0].content[0].text");
    EXPECT_EQ(chat(R"([{"role": "user", "content": [7]}])").param, "messages[0].content[0]");
}

TEST(OpenAiRequest, options_it_does_not_implement_are_refused_by_name_not_ignored) {
    EXPECT_NE(chat_refused(R"("best_of": 3)").message.find("must equal 'n'"), std::string::npos);
    EXPECT_EQ(chat_refused(R"("tools": [{"type": "function"}])").param, "tools[0].function");
    EXPECT_EQ(chat_refused(R"("tool_choice": "required")").param, "tool_choice");
}

TEST(OpenAiRequest, echo_puts_the_prompt_and_its_logprobs_before_a_completion) {
    EXPECT_TRUE(completion_ok(R"({"prompt": "a", "echo": true})").echo);
    EXPECT_FALSE(completion_ok(R"({"prompt": "a", "echo": false})").echo);
    EXPECT_FALSE(completion_ok(R"({"prompt": "a"})").echo);
    EXPECT_TRUE(completion_ok(R"({"prompt": [1, 2], "echo": true, "stream": true})").echo);
    // the prompt's own logprobs with them
    const GenerationRequest with_logprobs = completion_ok(R"({"prompt": "a", "echo": true, "logprobs": 1})");
    EXPECT_TRUE(with_logprobs.echo);
    EXPECT_TRUE(with_logprobs.logprobs);
    EXPECT_EQ(with_logprobs.top_logprobs, 1u);
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "echo": true, "logprobs": 21})").param, "logprobs");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "echo": "yes"})").param, "echo");
    // max_tokens 0 scores the prompt: only with echo, and only in completions
    EXPECT_EQ(completion_ok(R"({"prompt": "a", "echo": true, "logprobs": 0, "max_tokens": 0})").max_tokens,
              std::optional<uint64_t>(0));
    const ApiError nothing = refused(Endpoint::completions, R"({"prompt": "a", "max_tokens": 0})");
    EXPECT_EQ(nothing.param, "max_tokens");
    EXPECT_NE(nothing.message.find("echo"), std::string::npos) << nothing.message;
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "echo": true, "max_tokens": -1})").param,
              "max_tokens");
}

TEST(OpenAiRequest, best_of_ranks_completions_and_is_never_streamed) {
    const GenerationRequest r = completion_ok(R"({"prompt": "a", "n": 2, "best_of": 5})");
    EXPECT_EQ(r.n, 2u);
    EXPECT_EQ(r.best_of, 5u);
    EXPECT_EQ(generated_sequences(r), 5u);
    EXPECT_EQ(generated_sequences(completion_ok(R"({"prompt": "a", "best_of": 3})")), 3u);
    EXPECT_EQ(generated_sequences(completion_ok(R"({"prompt": "a", "n": 3})")), 3u);
    // best_of = n ranks nothing, so it may stream
    EXPECT_EQ(generated_sequences(completion_ok(R"({"prompt": "a", "n": 2, "best_of": 2, "stream": true})")), 2u);

    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "n": 3, "best_of": 2})").param, "best_of");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "a", "best_of": 17})").param, "best_of");
    const ApiError streamed = refused(Endpoint::completions, R"({"prompt": "a", "best_of": 2, "stream": true})");
    EXPECT_EQ(streamed.param, "best_of");
    EXPECT_NE(streamed.message.find("stream"), std::string::npos);
}

TEST(OpenAiRequest, penalties_bias_and_choices_are_read_within_openai_ranges) {
    const GenerationRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "x"}],
        "presence_penalty": -2, "frequency_penalty": 1.5, "logit_bias": {"15043": 100, "2": -100, "7": 0.5},
        "n": 3, "best_of": 3})");
    EXPECT_EQ(r.presence_penalty, -2.0);
    EXPECT_EQ(r.frequency_penalty, 1.5);
    EXPECT_EQ(r.logit_bias, (std::vector<std::pair<int32_t, double>>{{15043, 100.0}, {2, -100.0}, {7, 0.5}}));
    EXPECT_EQ(r.n, 3u);
    EXPECT_EQ(completion_ok(R"({"prompt": "x", "n": 16})").n, 16u);
    EXPECT_EQ(chat_ok(R"({"messages": [{"role": "user", "content": "x"}]})").n, 1u);

    EXPECT_EQ(chat_refused(R"("presence_penalty": 2.5)").param, "presence_penalty");
    EXPECT_EQ(chat_refused(R"("frequency_penalty": -2.01)").param, "frequency_penalty");
    EXPECT_EQ(chat_refused(R"("frequency_penalty": "1")").param, "frequency_penalty");
    EXPECT_EQ(chat_refused(R"("logit_bias": {"5": 101})").param, "logit_bias.5");
    EXPECT_EQ(chat_refused(R"("logit_bias": {"5": "x"})").param, "logit_bias.5");
    EXPECT_NE(chat_refused(R"("logit_bias": {"abc": 1})").message.find("'abc'"), std::string::npos);
    EXPECT_EQ(chat_refused(R"("logit_bias": {"-3": 1})").param, "logit_bias");
    EXPECT_EQ(chat_refused(R"("logit_bias": {"3 ": 1})").param, "logit_bias");
    EXPECT_EQ(chat_refused(R"("logit_bias": [1, 2])").param, "logit_bias");
    EXPECT_EQ(chat_refused(R"("n": 0)").param, "n");
    EXPECT_EQ(chat_refused(R"("n": 17)").param, "n");
    EXPECT_EQ(chat_refused(R"("n": 2.5)").param, "n");
    EXPECT_EQ(chat_refused(R"("n": 2, "best_of": 4)").param, "best_of");
    RequestLimits limits;
    limits.max_logit_bias = 2;
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "x", "logit_bias": {"1": 1, "2": 2, "3": 3}})", limits)
                  .param,
              "logit_bias");
}

TEST(OpenAiRequest, limits_bound_what_one_request_may_ask_for) {
    RequestLimits limits;
    limits.max_prompt_bytes = 8;
    limits.max_messages = 2;
    limits.max_stop = 2;
    limits.max_stop_bytes = 3;
    limits.max_prompt_tokens = 3;
    const auto chat = [&](const std::string& body) { return refused(Endpoint::chat_completions, body, limits); };
    EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "12345"}, {"role": "user", "content": "6789"}]})")
                  .param,
              "messages");
    EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "1"}, {"role": "user", "content": "2"},
                                    {"role": "user", "content": "3"}]})")
                  .param,
              "messages");
    EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "1"}], "stop": ["a", "b", "c"]})").param, "stop");
    EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "1"}], "stop": "abcd"})").param, "stop");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": "123456789"})", limits).param, "prompt");
    EXPECT_EQ(refused(Endpoint::completions, R"({"prompt": [1, 2, 3, 4]})", limits).param, "prompt");
    EXPECT_TRUE(parse_generation_request(Endpoint::completions, R"({"prompt": "12345678"})", limits).ok());
}

TEST(OpenAiRequest, the_speculative_extension_chooses_a_drafter_per_request) {
    const GenerationRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "x"}],
        "speculative": {"type": "ngram-simple", "draft_max": 6}})");
    ASSERT_TRUE(r.speculative);
    EXPECT_EQ(r.speculative->type, "ngram-simple");
    EXPECT_EQ(r.speculative->draft_max, 6u);
    const GenerationRequest off = chat_ok(R"({"messages": [{"role": "user", "content": "x"}],
        "speculative": {"draft_max": 0}})");
    ASSERT_TRUE(off.speculative);
    EXPECT_EQ(off.speculative->type, "");
    EXPECT_EQ(off.speculative->draft_max, 0u);
    EXPECT_FALSE(off.speculative->fixed);
    const GenerationRequest fixed = chat_ok(R"({"messages": [{"role": "user", "content": "hi"}],
        "speculative": {"draft_max": 4, "fixed": true}})");
    ASSERT_TRUE(fixed.speculative);
    EXPECT_EQ(fixed.speculative->fixed, true);
    EXPECT_EQ(chat_refused(R"("speculative": {"fixed": 1})").param, "speculative.fixed");
    EXPECT_EQ(chat_refused(R"("speculative": "mtp")").param, "speculative");
    EXPECT_EQ(chat_refused(R"("speculative": {"draft_max": 1000})").param, "speculative.draft_max");
    EXPECT_EQ(chat_refused(R"("speculative": {"type": 1})").param, "speculative.type");
    const ApiError empty = chat_refused(R"("speculative": {"type": ""})");
    EXPECT_EQ(empty.param, "speculative.type");
    EXPECT_NE(empty.message.find("is empty"), std::string::npos) << empty.message;
}

TEST(OpenAiRequest, speculative_draft_tree_takes_the_cli_string_or_an_object_and_names_a_bad_field) {
    const auto tree = [](const std::string& value) {
        const GenerationRequest r =
            chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "speculative": {"draft_tree": )" + value + "}}");
        EXPECT_TRUE(r.speculative && r.speculative->draft_tree) << value;
        return r.speculative && r.speculative->draft_tree ? *r.speculative->draft_tree : DraftTreeSetting{};
    };
    const DraftTreeSetting s = tree(R"("4,3,12")");
    EXPECT_EQ(s.steps, 4u);
    EXPECT_EQ(s.topk, 3u);
    EXPECT_EQ(s.nodes, 12u);
    const DraftTreeSetting o = tree(R"({"steps": 2, "topk": 4, "nodes": 9})");
    EXPECT_EQ(o.steps, 2u);
    EXPECT_EQ(o.topk, 4u);
    EXPECT_EQ(o.nodes, 9u);
    EXPECT_EQ(tree(R"("none")").nodes, 0u) << "chains for this request";
    EXPECT_FALSE(chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "speculative": {}})")
                     .speculative->draft_tree)
        << "absent: the server's --draft-tree";
    for (const char* bad : {R"("4,3")", R"("4,3,65")", R"("0,3,12")", R"("a,b,c")", R"("4,3,1")"}) {
        const ApiError e = chat_refused(std::string(R"("speculative": {"draft_tree": )") + bad + "}");
        EXPECT_EQ(e.param, "speculative.draft_tree") << bad;
        EXPECT_NE(e.message.find("STEPS,TOPK,NODES"), std::string::npos) << e.message;
    }
    EXPECT_EQ(chat_refused(R"("speculative": {"draft_tree": 12})").param, "speculative.draft_tree");
    EXPECT_EQ(chat_refused(R"("speculative": {"draft_tree": {"steps": 4, "topk": 3, "nodes": 65}})").param,
              "speculative.draft_tree.nodes");
    EXPECT_EQ(chat_refused(R"("speculative": {"draft_tree": {"steps": 4, "nodes": 12}})").param,
              "speculative.draft_tree.topk");
    EXPECT_EQ(chat_refused(R"("speculative": {"draft_tree": {"steps": 0, "topk": 3, "nodes": 12}})").param,
              "speculative.draft_tree.steps");
}

TEST(OpenAiRequest, tokenize_and_detokenize_bodies_follow_llama_server) {
    auto t = parse_tokenize_request(R"({"content": "Hello", "with_pieces": true})");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->content, "Hello");
    EXPECT_FALSE(t->add_special);
    EXPECT_TRUE(t->parse_special);
    EXPECT_TRUE(t->with_pieces);
    EXPECT_EQ(parse_tokenize_request(R"({})").error().param, "content");
    EXPECT_EQ(parse_tokenize_request(R"({"content": 5})").error().param, "content");
    EXPECT_EQ(parse_tokenize_request(R"({"content": "a", "add_special": "no"})").error().param, "add_special");

    auto d = parse_detokenize_request(R"({"tokens": [0, 7, 2147483647]})");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->tokens, (std::vector<int32_t>{0, 7, 2147483647}));
    EXPECT_EQ(parse_detokenize_request(R"({"tokens": "1 2"})").error().param, "tokens");
    EXPECT_EQ(parse_detokenize_request(R"({"tokens": [1, -1]})").error().param, "tokens[1]");
    EXPECT_EQ(parse_detokenize_request(R"({})").error().param, "tokens");
    EXPECT_EQ(parse_detokenize_request("tokens").error().param, "");
}

TEST(ApiErrorJson, has_openai_s_shape_with_nulls_for_what_is_not_known) {
    ApiError e = ApiError::invalid("max_tokens", "too many");
    json j = json::parse(e.to_json());
    EXPECT_EQ(j["error"]["message"], "too many");
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_EQ(j["error"]["param"], "max_tokens");
    EXPECT_TRUE(j["error"]["code"].is_null());

    ApiError auth;
    auth.status = 401;
    auth.type = "authentication_error";
    auth.code = "invalid_api_key";
    auth.message = "bad key \xff";  // bytes from a client need not be UTF-8
    j = json::parse(auth.to_json());
    EXPECT_TRUE(j["error"]["param"].is_null());
    EXPECT_EQ(j["error"]["code"], "invalid_api_key");
    EXPECT_EQ(j["error"]["message"], "bad key \xEF\xBF\xBD");
}
