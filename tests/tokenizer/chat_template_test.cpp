// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/chat_template_test.cpp: built-in chat formats against strings rendered
// by the models' own Jinja templates (tokenizer_config.json chat_template, rendered with
// jinja2 3.1, trim_blocks/lstrip_blocks as transformers does, bos_token = "" because the
// tokenizer adds BOS). To add a case, render the reference template the same way.
// Gemma 4 (docs/models/gemma4.md §4): no fixture vocabulary; expectations follow the released
// template's rendering of plain text messages (system turn of its own, "| trim" on content).
#include "tokenizer_fixtures.h"

#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant."},
    {"user", "Hi there"},
    {"assistant", "Hello! How can I help?"},
    {"user", "Tell me a joke."},
};

ChatTemplate builtin(std::string_view name) {
    auto t = ChatTemplate::builtin(name);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
    return std::move(t).value();
}

TEST(ChatTemplate, chatml_renders_qwen3s_template_for_a_conversation) {
    auto out = builtin("chatml").apply(kConversation, /*add_generation_prompt=*/true);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out,
              "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
              "<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n"
              "<|im_start|>assistant\n");
}

TEST(ChatTemplate, chatml_prompt_encodes_to_the_expected_qwen_ids) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    auto text = builtin("chatml").apply({{"user", "hi"}}, true);
    ASSERT_TRUE(text.ok());
    // <|im_start|> user \n hi <|im_end|> \n <|im_start|> assistant \n (vocab ids of
    // "user" 872, "Ċ" 198, "hi" 6023, "assistant" 77091; golden line for the first five).
    EXPECT_EQ(tok.encode(*text, /*add_special=*/true),
              (std::vector<int32_t>{151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198}));
}

TEST(ChatTemplate, chatml_thinking_variants_end_with_the_qwen35_generation_prompts) {
    auto off = builtin("chatml-no-thinking").apply({{"user", "Hi there"}}, true);
    ASSERT_TRUE(off.ok());
    EXPECT_EQ(*off, "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    auto on = builtin("chatml-thinking").apply({{"user", "Hi there"}}, true);
    ASSERT_TRUE(on.ok());
    EXPECT_EQ(*on, "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n<think>\n");
}

TEST(ChatTemplate, chatml_keeps_content_whitespace_and_omits_the_prompt_when_not_asked) {
    auto out = builtin("chatml").apply({{"user", "  padded  "}}, false);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, "<|im_start|>user\n  padded  <|im_end|>\n");
}

TEST(ChatTemplate, gemma_folds_the_system_message_into_the_first_user_turn) {
    auto out = builtin("gemma").apply(kConversation, true);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out,
              "<start_of_turn>user\nYou are a helpful assistant.\n\nHi there<end_of_turn>\n"
              "<start_of_turn>model\nHello! How can I help?<end_of_turn>\n"
              "<start_of_turn>user\nTell me a joke.<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplate, gemma_trims_message_content) {
    auto out = builtin("gemma").apply({{"user", "  padded  "}}, false);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, "<start_of_turn>user\npadded<end_of_turn>\n");
    auto nbsp = builtin("gemma").apply({{"user", "\xC2\xA0x\xE3\x80\x80\n"}}, false);  // NBSP, ideographic space
    ASSERT_TRUE(nbsp.ok());
    EXPECT_EQ(*nbsp, "<start_of_turn>user\nx<end_of_turn>\n");
}

TEST(ChatTemplate, gemma_prompt_encodes_with_bos_and_turn_tokens) {
    const Tokenizer& tok = hf_tokenizer("gemma3");
    auto text = builtin("gemma").apply({{"user", "hi"}}, false);
    ASSERT_TRUE(text.ok());
    // <bos> + the golden line "<start_of_turn>user\nhi<end_of_turn>" + "\n".
    EXPECT_EQ(tok.encode(*text, /*add_special=*/true), (std::vector<int32_t>{2, 105, 2364, 107, 2202, 106, 107}));
}

TEST(ChatTemplate, gemma_refuses_a_lone_system_message) {
    auto out = builtin("gemma").apply({{"system", "rules"}}, true);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().message().find("system"), std::string::npos);
}

TEST(ChatTemplate, glm4_renders_gmask_sop_and_role_tags) {
    auto out = builtin("glm4").apply({{"system", "Be brief."}, {"user", "Text Recognition:"}}, true);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, "[gMASK]<sop><|system|>\nBe brief.<|user|>\nText Recognition:<|assistant|>\n");
}

TEST(ChatTemplate, llama3_renders_header_tokens_trimmed_content_and_eot) {
    auto out = builtin("llama3").apply({{"system", " Be brief. "}, {"user", "Hi"}, {"assistant", "Hello"},
                                        {"user", "Bye\n"}},
                                       true);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out,
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, unknown_roles_and_names_are_errors) {
    auto out = builtin("chatml").apply({{"king", "42"}}, false);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().message().find("'king'"), std::string::npos);
    // "tool" is a role of the templates that render tools (chat_template_tools_test.cpp), not Gemma 3's.
    auto tool = builtin("gemma").apply({{"tool", "42"}}, false);
    ASSERT_FALSE(tool.ok());
    EXPECT_NE(tool.error().message().find("tool"), std::string::npos);
    auto t = ChatTemplate::builtin("vicuna");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message().find("vicuna"), std::string::npos);
}

TEST(ChatTemplate, from_parts_builds_a_custom_template) {
    ChatTemplateParts p;
    p.prefix = "<s>";
    p.roles["user"] = "[INST] {content} [/INST]";
    p.roles["assistant"] = "{content}</s>";
    p.generation_prompt = "";
    auto t = ChatTemplate::from_parts(p, "mistral-ish");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->name(), "mistral-ish");
    auto out = t->apply({{"user", "a {content} b"}, {"assistant", "ok"}, {"user", "c"}}, true);
    ASSERT_TRUE(out.ok());
    // The placeholder inside a message is text, not a placeholder.
    EXPECT_EQ(*out, "<s>[INST] a {content} b [/INST]ok</s>[INST] c [/INST]");
}

TEST(ChatTemplate, from_parts_refuses_a_part_without_content_placeholder) {
    ChatTemplateParts p;
    p.roles["user"] = "<|user|>\n{content}";
    p.roles["assistant"] = "<|assistant|>\n{contents}";
    auto t = ChatTemplate::from_parts(p, "toml");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message().find("'assistant'"), std::string::npos) << t.error().message();
    EXPECT_NE(t.error().message().find("{content}"), std::string::npos);

    ChatTemplateParts twice;
    twice.roles["user"] = "{content}{content}";
    EXPECT_FALSE(ChatTemplate::from_parts(twice).ok());
    ChatTemplateParts no_user;
    no_user.roles["assistant"] = "{content}";
    EXPECT_FALSE(ChatTemplate::from_parts(no_user).ok());
}

TEST(ChatTemplate, templates_are_picked_by_architecture_and_by_vocabulary) {
    EXPECT_EQ(builtin_template_for_architecture("qwen3").value(), "chatml");
    EXPECT_EQ(builtin_template_for_architecture("qwen2").value(), "chatml");
    EXPECT_EQ(builtin_template_for_architecture("qwen35moe").value(), "chatml-thinking");
    EXPECT_EQ(builtin_template_for_architecture("gemma3").value(), "gemma");
    EXPECT_EQ(builtin_template_for_architecture("glm4").value(), "glm4");
    EXPECT_EQ(builtin_template_for_architecture("llama").value(), "llama3");
    EXPECT_FALSE(builtin_template_for_architecture("mistral").ok());
    EXPECT_EQ(builtin_template_for_tokenizer(hf_tokenizer("qwen3")).value(), "chatml");
    EXPECT_EQ(builtin_template_for_tokenizer(hf_tokenizer("gemma3")).value(), "gemma");
    for (std::string_view name : ChatTemplate::builtin_names()) EXPECT_TRUE(ChatTemplate::builtin(name).ok());
}

// A Gemma 4 style vocabulary (spm_bpe, gemma4 pre-tokenizer) with its special ids (<pad> 0,
// <eos> 1, <bos> 2), the turn markers, single-character pieces for the text the tests encode
// and one merge (h i -> hi).
Tokenizer gemma4_like_tokenizer() {
    Vocab v;
    v.model = VocabModel::spm_bpe;  // GGUF "gemma4" / HF BPE with byte fallback
    v.pre = PreTokenizer::gemma4;
    v.add_bos = true;
    v.tokens = {"<pad>", "<eos>", "<bos>", "<|turn>", "<turn|>", "u", "s", "e", "r", "h", "i", "\n", "hi"};
    v.merges = {{"h", "i"}};
    v.types.assign(v.tokens.size(), TokenType::normal);
    for (int i = 0; i < 5; ++i) v.types[size_t(i)] = TokenType::control;
    v.special.pad = 0;
    v.special.eos = 1;
    v.special.bos = 2;
    v.source = "gemma4-like";
    auto t = Tokenizer::create(std::move(v));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
    return std::move(t).value();
}

TEST(ChatTemplate, gemma4_renders_system_as_a_turn_and_the_model_role) {
    auto out = builtin("gemma4").apply(kConversation, true);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out,
              "<|turn>system\nYou are a helpful assistant.<turn|>\n"
              "<|turn>user\nHi there<turn|>\n"
              "<|turn>model\nHello! How can I help?<turn|>\n"
              "<|turn>user\nTell me a joke.<turn|>\n<|turn>model\n");
    auto no_prompt = builtin("gemma4").apply({{"user", "hi"}}, false);
    ASSERT_TRUE(no_prompt.ok());
    EXPECT_EQ(*no_prompt, "<|turn>user\nhi<turn|>\n");
    // Unlike Gemma 2/3, a lone system message is a turn of its own, not an error.
    auto lone = builtin("gemma4").apply({{"system", "rules"}}, true);
    ASSERT_TRUE(lone.ok());
    EXPECT_EQ(*lone, "<|turn>system\nrules<turn|>\n<|turn>model\n");
}

TEST(ChatTemplate, gemma4_trims_message_content) {
    auto out = builtin("gemma4").apply({{"system", "\n sys \n"}, {"user", "  padded  "}, {"assistant", " a\n"}}, false);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, "<|turn>system\nsys<turn|>\n<|turn>user\npadded<turn|>\n<|turn>model\na<turn|>\n");
}

TEST(ChatTemplate, gemma4_drops_the_thinking_of_past_model_turns) {
    auto out = builtin("gemma4").apply({{"user", "2+2?"},
                                        {"assistant", "<|channel>thought\nadd them<channel|>4"},
                                        {"user", "and 3+3? <|channel>kept in a user turn<channel|>"},
                                        {"assistant", "a <|channel>x<channel|>b<|channel>y<channel|> c"},
                                        {"assistant", "answer <|channel>unclosed thought"}},
                                       false);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out,
              "<|turn>user\n2+2?<turn|>\n<|turn>model\n4<turn|>\n"
              "<|turn>user\nand 3+3? <|channel>kept in a user turn<channel|><turn|>\n"
              "<|turn>model\na b c<turn|>\n<|turn>model\nanswer<turn|>\n");
}

TEST(ChatTemplate, gemma4_prompt_encodes_with_bos_and_turn_tokens) {
    const Tokenizer tok = gemma4_like_tokenizer();
    auto text = builtin("gemma4").apply({{"user", "hi"}}, true);
    ASSERT_TRUE(text.ok());
    // <bos> <|turn> u s e r \n hi <turn|> \n (m, o, d, l are not in this vocabulary, so the
    // generation prompt is checked as text).
    auto user_turn = builtin("gemma4").apply({{"user", "hi"}}, false);
    ASSERT_TRUE(user_turn.ok());
    EXPECT_EQ(tok.encode(*user_turn, /*add_special=*/true),
              (std::vector<int32_t>{2, 3, 5, 6, 7, 8, 11, 12, 4, 11}));
    EXPECT_EQ(text->substr(user_turn->size()), "<|turn>model\n");
}

TEST(ChatTemplate, gemma4_turn_end_is_an_end_of_generation_token) {
    const Tokenizer tok = gemma4_like_tokenizer();
    EXPECT_TRUE(tok.is_eog(4));   // <turn|>
    EXPECT_EQ(tok.eot(), 4);      // the end-of-turn token when the vocabulary names none
    EXPECT_TRUE(tok.is_eog(1));   // <eos>
    EXPECT_FALSE(tok.is_eog(3));  // <|turn> opens a turn
}

TEST(ChatTemplate, gemma4_is_picked_by_architecture_jinja_and_vocabulary) {
    EXPECT_EQ(builtin_template_for_architecture("gemma4").value(), "gemma4");
    EXPECT_EQ(builtin_template_for_architecture("gemma4_text").value(), "gemma4");
    EXPECT_EQ(builtin_template_for_architecture("gemma3").value(), "gemma");
    EXPECT_EQ(builtin_template_for_tokenizer(gemma4_like_tokenizer()).value(), "gemma4");
    // Excerpts of the models' Jinja templates.
    EXPECT_EQ(builtin_template_for_jinja("{%- set role = 'model' if message['role'] == 'assistant' else "
                                         "message['role'] -%}{{- '<|turn>' + role + '\\n' }}")
                  .value(),
              "gemma4");
    EXPECT_EQ(builtin_template_for_jinja("{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim }}").value(),
              "gemma");
    EXPECT_EQ(builtin_template_for_jinja("{{'<|im_start|>' + message['role'] + '\\n'}}").value(), "chatml");
    EXPECT_EQ(builtin_template_for_jinja("[gMASK]<sop>{% for m in messages %}").value(), "glm4");
    EXPECT_EQ(builtin_template_for_jinja("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}")
                  .value(),
              "llama3");
    auto none = builtin_template_for_jinja("{{ message['content'] }}");
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message().find("<|turn>"), std::string::npos);
    auto unknown = ChatTemplate::builtin("gemma5");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message().find("gemma4"), std::string::npos);
}

}  // namespace
}  // namespace tdm::test
