/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/spm.h: llama.cpp's SentencePiece algorithm for tokenizer.ggml.model =
// "llama" (docs/tokenizers.md §4.3 step 4-5): score-driven merges of UTF-8 characters,
// then resegmentation with <0xXX> byte fallback. Not here: special-token partition,
// the space prefix and " " -> U+2581 escaping (tokenizer.cpp).
#pragma once

#include "tokenizer/token_index.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tdm {

struct SpmVocabView {
    const TokenIndex& index;
    const std::vector<float>& scores;
    const std::array<int32_t, 256>& byte_ids;  // <0xXX> (or the one-byte token), -1 if none
    int32_t unk;                               // used when a byte has no token; -1 drops it
};

// Tokenizes one escaped fragment (spaces already U+2581) and appends the ids to out.
void spm_tokenize(const SpmVocabView& v, std::string_view text, std::vector<int32_t>& out);

}  // namespace tdm
