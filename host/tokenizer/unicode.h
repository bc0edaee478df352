/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/unicode.h: the Unicode pieces the tokenizers need: strict UTF-8
// decoding, the two ways of replacing invalid bytes, NFC (libutf8proc), the character
// classes of the pre-tokenizer regexes, and GPT-2's byte <-> code point map.
// Not here: any splitting or merging (pretokenize.cpp, bpe.cpp, spm.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tdm::unicode {

constexpr uint32_t kReplacement = 0xFFFD;

// Decodes one code point at s[pos] and advances pos past it. Strict: overlong forms,
// surrogates and values above U+10FFFF are invalid. On an invalid sequence returns
// false and sets pos to the end of its maximal subpart (Unicode §3.9 "substitution of
// maximal subparts"; at least one byte), which is what one U+FFFD stands for.
bool decode(std::string_view s, size_t& pos, uint32_t& cp);

void append(std::string& out, uint32_t cp);

bool is_valid(std::string_view s);

// llama.cpp's input rule (unicode_cpts_from_utf8): every byte that does not start a
// valid sequence becomes one U+FFFD.
std::string replace_invalid_per_byte(std::string_view s);

// Rust String::from_utf8_lossy (what HF decode does): each maximal invalid subpart
// becomes one U+FFFD.
std::string replace_invalid_lossy(std::string_view s);

// Length of the longest prefix of s that does not end inside a truncated-but-so-far-
// valid UTF-8 sequence. Bytes after it may complete a character later (streaming).
size_t complete_prefix_length(std::string_view s);

// Canonical composition (NFC). Input must be valid UTF-8; embedded NULs are kept.
std::string nfc(std::string_view s);

// Character classes as llama.cpp's unicode.cpp defines them (§3.2): \p{L}, \p{N},
// \p{M}, \p{P}, and \s as the 25 White_Space code points.
struct CpClass {
    bool letter = false;
    bool number = false;
    bool mark = false;
    bool punct = false;
    bool space = false;
};
CpClass classify(uint32_t cp);
bool is_white_space(uint32_t cp);

// GPT-2 bytes_to_unicode (§3.1): byte -> its printable code point, and back (-1 if the
// code point is not in the image of the map).
uint32_t byte_to_cp(uint8_t b);
int cp_to_byte(uint32_t cp);

}  // namespace tdm::unicode
