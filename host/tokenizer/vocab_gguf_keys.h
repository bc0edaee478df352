/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/vocab_gguf_keys.h: the tokenizer.ggml.* metadata keys (docs/formats/gguf.md §A.11.3),
// shared by the reader (vocab_gguf.cpp) and the writer (writers/vocab_gguf_writer.cpp) so that
// the two cannot drift apart.
#pragma once

#include "tokenizer/vocab.h"

#include <cstdint>

namespace tdm::gguf_vocab_keys {

inline constexpr const char* kModel = "tokenizer.ggml.model";
inline constexpr const char* kPre = "tokenizer.ggml.pre";
inline constexpr const char* kTokens = "tokenizer.ggml.tokens";
inline constexpr const char* kTypes = "tokenizer.ggml.token_type";
inline constexpr const char* kScores = "tokenizer.ggml.scores";
inline constexpr const char* kMerges = "tokenizer.ggml.merges";
inline constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
inline constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
inline constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";

// The special-token id keys and the SpecialIds field each one fills.
struct IdKey {
    const char* key;
    int32_t SpecialIds::*slot;
};
inline constexpr IdKey kIdKeys[] = {
    {"tokenizer.ggml.bos_token_id", &SpecialIds::bos},
    {"tokenizer.ggml.eos_token_id", &SpecialIds::eos},
    {"tokenizer.ggml.eot_token_id", &SpecialIds::eot},
    {"tokenizer.ggml.eom_token_id", &SpecialIds::eom},
    {"tokenizer.ggml.unknown_token_id", &SpecialIds::unk},
    {"tokenizer.ggml.padding_token_id", &SpecialIds::pad},
};

}  // namespace tdm::gguf_vocab_keys
