// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/stream_test.cpp: StreamDecoder against full decoding. To add a case,
// build an id sequence (real tokenizers from tokenizer_fixtures.h) and compare the
// concatenated stream with Tokenizer::decode, checking every chunk is whole UTF-8.
#include "tokenizer_fixtures.h"

#include "tokenizer/stream.h"
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

// Streams ids one by one; checks that no chunk is invalid or ends mid-character.
std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special = false) {
    StreamDecoder sd(tok, skip_special);
    std::string all;
    for (int32_t id : ids) {
        std::string chunk = sd.push(id);
        EXPECT_TRUE(unicode::is_valid(chunk)) << "chunk '" << escaped(chunk) << "' is not whole UTF-8";
        all += chunk;
    }
    std::string tail = sd.flush();
    EXPECT_TRUE(unicode::is_valid(tail));
    EXPECT_EQ(sd.pending_bytes(), 0u);
    return all + tail;
}

// Ids that spell `text` one byte per token (byte-level: the mapped byte characters).
std::vector<int32_t> byte_level_ids(const Tokenizer& tok, std::string_view text) {
    std::vector<int32_t> ids;
    for (char c : text) {
        std::string ch;
        unicode::append(ch, unicode::byte_to_cp(static_cast<uint8_t>(c)));
        ids.push_back(tok.token_id(ch));
    }
    return ids;
}

// Ids that spell `text` with <0xXX> byte-fallback tokens.
std::vector<int32_t> byte_fallback_ids(const Tokenizer& tok, std::string_view text) {
    std::vector<int32_t> ids;
    for (char c : text) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<uint8_t>(c));
        ids.push_back(tok.token_id(name));
    }
    return ids;
}

TEST(TokenizerStream, streaming_every_golden_equals_the_full_decode) {
    for (const char* name : {"qwen3", "gemma3"}) {
        const Tokenizer& tok = hf_tokenizer(name);
        for (const GoldenLine& g : golden_lines(name))
            EXPECT_EQ(stream_all(tok, g.ids), tok.decode(g.ids)) << name << ": '" << escaped(g.text) << "'";
    }
}

TEST(TokenizerStream, emoji_split_across_byte_level_tokens_is_held_until_complete) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    const std::string text = "a\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD z";  // a😀👍🏽 z
    std::vector<int32_t> ids = byte_level_ids(tok, text);
    ASSERT_EQ(ids.size(), text.size());
    for (int32_t id : ids) ASSERT_GE(id, 0);
    StreamDecoder sd(tok);
    std::vector<std::string> chunks;
    for (int32_t id : ids) chunks.push_back(sd.push(id));
    EXPECT_EQ(chunks[0], "a");
    EXPECT_EQ(chunks[1], "");
    EXPECT_EQ(chunks[2], "");
    EXPECT_EQ(chunks[3], "");
    EXPECT_EQ(chunks[4], "\xF0\x9F\x98\x80");
    EXPECT_EQ(sd.flush(), "");
    EXPECT_EQ(stream_all(tok, ids), text);
    EXPECT_EQ(tok.decode(ids), text);
}

TEST(TokenizerStream, emoji_split_across_byte_fallback_tokens_is_held_until_complete) {
    const Tokenizer& tok = hf_tokenizer("gemma3");
    const std::string emoji = "\xF0\x9F\x98\x80\xE2\x82\xAC";  // 😀€
    std::vector<int32_t> ids = byte_fallback_ids(tok, emoji);
    for (int32_t id : ids) ASSERT_GE(id, 0);
    std::vector<int32_t> with_text = tok.encode("Hi ", false);
    with_text.insert(with_text.end(), ids.begin(), ids.end());
    EXPECT_EQ(stream_all(tok, with_text), "Hi " + emoji);
    EXPECT_EQ(tok.decode(with_text), "Hi " + emoji);
    StreamDecoder sd(tok);
    EXPECT_EQ(sd.push(ids[0]), "");
    EXPECT_EQ(sd.pending_bytes(), 1u);
    EXPECT_EQ(sd.push(ids[1]), "");
    EXPECT_EQ(sd.push(ids[2]), "");
    EXPECT_EQ(sd.push(ids[3]), "\xF0\x9F\x98\x80");
}

TEST(TokenizerStream, real_multibyte_tokens_stream_like_full_decode) {
    for (const char* name : {"qwen3", "gemma3"}) {
        const Tokenizer& tok = hf_tokenizer(name);
        const std::string text = "emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x83 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 "
                                 "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x87\xA9\xF0\x9F\x87\xAA";
        std::vector<int32_t> ids = tok.encode(text, true);
        EXPECT_EQ(stream_all(tok, ids, /*skip_special=*/true), text) << name;
    }
}

TEST(TokenizerStream, an_unfinished_character_becomes_a_replacement_at_flush) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    std::vector<int32_t> ids = byte_level_ids(tok, "ok\xF0\x9F");
    StreamDecoder sd(tok);
    std::string out;
    for (int32_t id : ids) out += sd.push(id);
    EXPECT_EQ(out, "ok");
    EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");  // one U+FFFD for the truncated sequence
    EXPECT_EQ(tok.decode(ids), "ok\xEF\xBF\xBD");
}

TEST(TokenizerStream, a_broken_sequence_is_replaced_without_waiting_for_the_end) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    std::vector<int32_t> ids = byte_level_ids(tok, "\xE2\x82" "a\x80" "b");
    EXPECT_EQ(stream_all(tok, ids), tok.decode(ids));
    StreamDecoder sd(tok);
    EXPECT_EQ(sd.push(ids[0]), "");
    EXPECT_EQ(sd.push(ids[1]), "");
    EXPECT_EQ(sd.push(ids[2]), "\xEF\xBF\xBD" "a");  // E2 82 can no longer complete
    EXPECT_EQ(sd.push(ids[3]), "\xEF\xBF\xBD");      // a lone continuation byte
}

TEST(TokenizerStream, skip_special_hides_control_tokens_in_the_stream) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    std::vector<int32_t> ids = tok.encode("<|im_start|>assistant\nhi<|im_end|>", false);
    EXPECT_EQ(stream_all(tok, ids, /*skip_special=*/true), "assistant\nhi");
    EXPECT_EQ(stream_all(tok, ids, /*skip_special=*/false), "<|im_start|>assistant\nhi<|im_end|>");
}

}  // namespace
}  // namespace tdm::test
