/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/synth/gemma4_vocab.h: the synthetic Gemma 4 tokenizer: a SentencePiece-style BPE
// vocabulary with byte fallback (docs/tokenizers.md §4), its merges learned deterministically from
// the built-in text (host/synth synth_corpus()), laid out like Gemma's own:
//
//   0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4 <mask>       CONTROL
//   5 .. 104    <unused0> .. <unused99>              CONTROL
//   105 <|turn>, 106 <turn|>                         CONTROL (the chat turn markers)
//   107 .. 137  "\n" x 1 .. 31                       newline runs (GGUF NORMAL, HF added tokens)
//   138 .. 393  <0x00> .. <0xFF>                     BYTE (fallback for characters not in the vocab)
//   394 ..      the corpus's characters (spaces as U+2581), ordered by code point, then the merge
//               products in the order they were learned
//   .. n_vocab  "[PAD<id>]" UNUSED, only when the corpus runs out of merges (as llama.cpp's
//               converter pads up to config.json's vocab_size)
//
// add_bos true, no space prefix, eos <eos>. The GGUF view (gemma4_vocab: tokenizer.ggml.model
// "gemma4") and the HF files (gemma4_tokenizer_json / _config_json: Replace " " -> U+2581, BPE
// with byte_fallback, <bos> post-processor, as Gemma 3/4 ship) encode any text to the same ids,
// except runs of more than 31 newlines (HF splits them into added tokens, llama.cpp's gemma4
// splitter falls back to single newlines: the same difference the real files have).
// Merges never involve a newline, so llama.cpp's newline splitting and HF's agree otherwise.
#pragma once

#include "common/error.h"
#include "tokenizer/vocab.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tdm::synth {

inline constexpr int32_t kGemma4Pad = 0;
inline constexpr int32_t kGemma4Eos = 1;
inline constexpr int32_t kGemma4Bos = 2;
inline constexpr int32_t kGemma4Unk = 3;
inline constexpr int32_t kGemma4TurnStart = 105;  // "<|turn>"
inline constexpr int32_t kGemma4TurnEnd = 106;    // "<turn|>", a stop token (eos_token_id [1, 106])
inline constexpr int32_t kGemma4FirstNewline = 107;
inline constexpr int32_t kGemma4NewlineRuns = 31;
inline constexpr int32_t kGemma4FirstByte = 138;
inline constexpr int32_t kGemma4FirstText = 394;

struct Gemma4VocabLayout {
    int32_t n_vocab = 0;
    int32_t n_chars = 0;    // single-character tokens from kGemma4FirstText on
    int32_t text_end = 0;   // characters + merge products: ids [kGemma4FirstText, text_end)
    int32_t n_merges = 0;
};

// Layout of a vocabulary of n_vocab ids. Error if n_vocab cannot hold the fixed ids and the
// corpus's characters (the message gives the minimum).
Result<Gemma4VocabLayout> gemma4_vocab_layout(int32_t n_vocab);

// The vocabulary as the GGUF holds it (spm_bpe, pre gemma4, add_bos, newline runs NORMAL).
// Training runs once per process and is cached.
Result<Vocab> gemma4_vocab(int32_t n_vocab);

// tokenizer.json for `v` (from gemma4_vocab): model.vocab holds every id but the UNUSED ones,
// added_tokens the CONTROL tokens (special) and the newline runs (not special), as Gemma's has.
std::string gemma4_tokenizer_json(const Vocab& v);

// tokenizer_config.json: GemmaTokenizer, add_bos_token true, <bos>/<eos>/<pad>/<unk>,
// added_tokens_decoder, the chat template.
std::string gemma4_tokenizer_config_json(const Vocab& v, int64_t model_max_length);

// The Jinja chat template (tokenizer.chat_template / tokenizer_config.json):
//   {{bos}}<|turn>system\n...<turn|>\n<|turn>user\n...<turn|>\n<|turn>model\n...<turn|>\n
// with "assistant" written as "model", contents trimmed, generation prompt "<|turn>model\n".
std::string_view gemma4_chat_template();

}  // namespace tdm::synth
