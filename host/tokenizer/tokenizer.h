/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/tokenizer.h: text <-> token ids for one vocabulary (docs/tokenizers.md).
// Build a Vocab with a loader (vocab_json.h, vocab_gguf.h), then Tokenizer::create().
// Not here: streaming output (stream.h), chat formatting (chat_template.h).
//
//   Tokenizer tok = TDM_TRY(load_tokenizer_hf_file("models/qwen3"));
//   std::vector<int32_t> ids = tok.encode("Hello", /*add_special=*/true);
//   std::string text = tok.decode(ids);
//
// A Tokenizer is immutable after creation; all methods are const and thread-safe.
#pragma once

#include "common/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tdm {

class Tokenizer {
public:
    // Indexes the vocabulary. Fails on inconsistent input: merges naming unknown tokens,
    // a byte-level vocabulary missing one of its 256 byte tokens, bad special ids.
    static Result<Tokenizer> create(Vocab vocab);

    // Text -> ids. add_special: bos/eos as the vocabulary asks (HF add_special_tokens).
    // parse_special: control tokens written in the text ("<|im_end|>") become their ids;
    // user-defined tokens always do (llama.cpp's rule, §2.2). HF encode(text, X) equals
    // encode(text, X, true). Invalid UTF-8 is not an error: each invalid byte becomes
    // U+FFFD first, as in llama.cpp.
    std::vector<int32_t> encode(std::string_view text, bool add_special,
                                bool parse_special = true) const;

    // Ids -> text, as HF decode (§5.1, §5.2); always valid UTF-8 (invalid byte sequences
    // become U+FFFD). skip_special drops control and unknown tokens. Ids outside the
    // vocabulary are skipped.
    std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

    // The raw bytes one token stands for (llama.cpp token_to_piece): may be part of a
    // UTF-8 character. Control/unknown tokens give their text only if `special`; unused
    // tokens and ids outside the vocabulary give "".
    std::string token_to_piece(int32_t id, bool special = true) const;

    int32_t n_vocab() const { return vocab_.n_tokens(); }
    int32_t bos() const { return vocab_.special.bos; }
    int32_t eos() const { return vocab_.special.eos; }
    int32_t eot() const { return eot_; }  // explicit, or found by text (<|im_end|>, ...)
    int32_t eom() const { return vocab_.special.eom; }
    int32_t unk() const { return vocab_.special.unk; }
    int32_t pad() const { return vocab_.special.pad; }

    // End of generation: eos, eot, eom and every token whose text llama.cpp treats as a
    // stop token (<|im_end|>, <|endoftext|>, <end_of_turn>, <eos>, <|eot_id|>, ...).
    bool is_eog(int32_t id) const;
    // Also ends generation: a model's own stop ids (an HF config's eos_token_id list, e.g.
    // GLM-OCR's <|user|>). Ids outside the vocabulary are ignored.
    void add_eog(int32_t id);

    // Token text as stored in the vocabulary ("Ġworld", "▁world"); "" if out of range.
    const std::string& token_text(int32_t id) const;
    TokenType token_type(int32_t id) const;
    // Id of the token with exactly this stored text, or -1.
    int32_t token_id(std::string_view text) const { return index_.find(text); }

    const Vocab& vocab() const { return vocab_; }

private:
    Tokenizer() = default;
    bool in_range(int32_t id) const { return id >= 0 && id < vocab_.n_tokens(); }
    void encode_text(std::string_view text, bool after_token, std::vector<int32_t>& out) const;
    void encode_byte_bpe(std::string_view text, std::vector<int32_t>& out) const;
    void encode_spm_bpe(std::string_view escaped, std::vector<int32_t>& out) const;

    Vocab vocab_;
    TokenIndex index_;
    MergeTable merges_;
    SpecialTokenMatcher specials_;
    // byte_bpe: the token of each byte's mapped character; SPM families: <0xXX>.
    std::array<int32_t, 256> byte_ids_{};
    std::vector<std::string> pieces_;  // token_to_piece(id, true), precomputed
    std::vector<bool> eog_;
    int32_t eot_ = -1;
};

}  // namespace tdm
