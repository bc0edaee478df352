/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/vocab.h: the neutral description of a tokenizer vocabulary.
// Both loaders (HF tokenizer.json: vocab_json.cpp, GGUF tokenizer.ggml.*: vocab_gguf.cpp)
// produce a Vocab; Tokenizer::create() indexes it. Nothing here tokenizes.
// Semantics follow docs/tokenizers.md (section numbers below refer to it).
#pragma once

#include "common/error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm {

// llama.cpp's llama_token_type values, as stored in tokenizer.ggml.token_type.
enum class TokenType : int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,       // special: matched in text only with parse_special, rendered only if asked
    user_defined = 4,  // always matched in text, rendered as its raw text
    unused = 5,        // never produced, rendered as nothing
    byte = 6,          // <0xXX> byte-fallback piece
};

// The merge algorithm.
enum class VocabModel {
    byte_bpe,  // GGUF "gpt2": byte-level BPE with merge ranks (§3)
    spm,       // GGUF "llama": SentencePiece score-driven merges, <0xXX> fallback (§4.3)
    spm_bpe,   // HF BPE with byte_fallback (Gemma 3) and GGUF "gemma4": rank merges over
               // raw UTF-8 with U+2581 for spaces and <0xXX> fallback (§4.2, §4.4)
};

// How text is cut into pieces before merging.
enum class PreTokenizer {
    none,           // spm / HF spm_bpe: the whole fragment is one word
    qwen2,          // §3.2 qwen2 (Qwen1.5 .. Qwen3)
    qwen35,         // §3.2 qwen35 (letter runs absorb \p{M})
    gpt2,           // §3.2 gpt-2 (GGUF pre value "gpt-2")
    llama3,         // §3.2 llama3 / llama-bpe (qwen2 with \p{N}{1,3})
    llama_default,  // §3.2 "default": the four-regex sequence
    gemma4,         // §4.4: runs of '\n' split from the rest
};

std::string_view to_string(TokenType t);
std::string_view to_string(VocabModel m);
std::string_view to_string(PreTokenizer p);

struct SpecialIds {
    int32_t bos = -1;
    int32_t eos = -1;
    int32_t eot = -1;  // end of turn
    int32_t eom = -1;  // end of message
    int32_t unk = -1;
    int32_t pad = -1;
};

struct Vocab {
    VocabModel model = VocabModel::byte_bpe;
    PreTokenizer pre = PreTokenizer::none;
    bool normalize_nfc = false;     // HF Qwen normalizer; llama.cpp never applies it (§3.5)
    bool ignore_merges = false;     // a whole piece that is a token is emitted directly (§3.3.6)
    bool add_bos = false;           // encode(add_special=true) prepends bos
    bool add_eos = false;           // encode(add_special=true) appends eos
    bool add_space_prefix = false;  // SPM families: " " before the first fragment and after
                                    // each token fragment; decode strips it again

    // Indexed by token id. Texts are stored as the source stores them: byte-mapped
    // ("Ġworld") for byte_bpe, with U+2581 for spaces for the SPM families.
    std::vector<std::string> tokens;
    std::vector<TokenType> types;
    std::vector<float> scores;  // spm only (empty otherwise)

    // BPE merges, index = rank (0 merges first). Unused by spm.
    std::vector<std::pair<std::string, std::string>> merges;

    SpecialIds special;

    std::string source;  // where it came from, for messages ("qwen3/tokenizer.json")

    int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
};

// The llama.cpp converter's rule for HF added tokens that are not flagged special but
// must behave as control tokens (<|...|>, <｜...｜>, <unused...>, <pad>, <mask>, ...).
bool token_looks_special(std::string_view text);

// Consistency checks shared by all loaders: array lengths, special ids in range,
// scores present for spm. Merge references are checked when the tokenizer indexes them.
Status validate_vocab(const Vocab& v);

}  // namespace tdm
