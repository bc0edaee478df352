/* SPDX-License-Identifier: Apache-2.0 */
// tests/tokenizer/tokenizer_fixtures.h: the real Qwen3 / Gemma 3 tokenizers and their
// golden lines, loaded once per test process (Gemma 3's tokenizer.json is 33 MB).
#pragma once

#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tdm::test {

struct GoldenLine {
    std::string text;
    std::vector<int32_t> ids;
    std::string decoded;
};

// name: "qwen3" or "gemma3". Aborts the test (ADD_FAILURE + empty) on a missing fixture.
const std::vector<GoldenLine>& golden_lines(const std::string& name);
std::string tokenizer_json(const std::string& name);
std::string tokenizer_config_json(const std::string& name);

// The tokenizer loaded from tokenizer.json + tokenizer_config.json; cached.
const Tokenizer& hf_tokenizer(const std::string& name);

// Short printable form of a string for failure messages ("a\n\x00").
std::string escaped(const std::string& s);

}  // namespace tdm::test
