// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/chat_template_test.cpp: built-in chat formats against strings rendered
// by the models' own Jinja templates (tokenizer_config.json chat_template, rendered with
// jinja2 3.1, trim_blocks/lstrip_blocks as transformers does, bos_token = "" because the
// tokenizer adds BOS). To add a case, render the reference template the same way.
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

TEST(ChatTemplate, unknown_roles_and_names_are_errors) {
    auto out = builtin("chatml").apply({{"tool", "42"}}, false);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().message().find("'tool'"), std::string::npos);
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
    EXPECT_FALSE(builtin_template_for_architecture("llama").ok());
    EXPECT_EQ(builtin_template_for_tokenizer(hf_tokenizer("qwen3")).value(), "chatml");
    EXPECT_EQ(builtin_template_for_tokenizer(hf_tokenizer("gemma3")).value(), "gemma");
    for (std::string_view name : ChatTemplate::builtin_names()) EXPECT_TRUE(ChatTemplate::builtin(name).ok());
}

}  // namespace
}  // namespace tdm::test
