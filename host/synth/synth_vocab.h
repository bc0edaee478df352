/* SPDX-License-Identifier: Apache-2.0 */
// host/synth/synth_vocab.h: the synthetic Qwen-style tokenizer that synthesizers of byte-level
// BPE models share (in-tree: plugins/qwen-nextn/synth): a byte-level BPE vocabulary whose merges
// are learned, deterministically, from a small built-in text (synth_corpus.cpp) with the Qwen2
// pre-tokenizer, laid out like Qwen's:
//
//   ids [0, 256)             the 256 byte symbols (GPT-2 byte map), ordered by mapped code point
//                            as in Qwen's vocab.json ("!" is id 0, "Ġ" id 220)
//   ids [256, n_text)        merge products, in the order they were learned
//   n_text, +1, +2           <|endoftext|>, <|im_start|>, <|im_end|> (CONTROL)
//   ids [n_text + 3, n_vocab) "[PAD<id>]" UNUSED, as llama.cpp's converter pads a vocabulary up
//                            to config.json's vocab_size (only when the corpus runs out of merges)
//
// Special ids as Qwen3's files have them: bos = pad = <|endoftext|>, eos = <|im_end|>, no BOS
// added. The GGUF view (synth_vocab) and the HF files (synth_tokenizer_json/_config_json)
// describe the same tokenizer: both loaders must encode any NFC text to the same ids.
// Not here: tokenizing (host/tokenizer), model weights (synth_weights.h).
#pragma once

#include "common/error.h"
#include "tokenizer/vocab.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tdm::synth {

// The training text (synth_corpus.cpp).
std::string_view synth_corpus();

struct SynthVocabLayout {
    int32_t n_vocab = 0;  // all ids, [PAD] tokens included
    int32_t n_text = 0;   // byte symbols + merge products: ids [0, n_text)
    int32_t n_merges = 0;
    int32_t endoftext = 0;  // = n_text
    int32_t im_start = 0;   // = n_text + 1
    int32_t im_end = 0;     // = n_text + 2
};

// How many text tokens the corpus yields at most (bytes + every distinct merge product).
int32_t synth_max_text_tokens();

// Layout of a vocabulary of n_vocab ids. Error if n_vocab < 259 (bytes + special tokens).
Result<SynthVocabLayout> synth_vocab_layout(int32_t n_vocab);

// The vocabulary as a GGUF file holds it (all n_vocab ids; tokenizer.ggml.pre "qwen2").
// The merges are trained once per process and cached, so repeated calls are cheap.
Result<Vocab> synth_vocab(int32_t n_vocab);

// tokenizer.json for `v` (a vocabulary from synth_vocab): NFC normalizer, the Qwen2 Split
// regex + ByteLevel pre-tokenizer, BPE model with the NORMAL tokens as vocab and the merges
// as pairs, CONTROL tokens as special added tokens, UNUSED tokens left out (HF tokenizers do
// not know them; config.json's vocab_size covers them), ByteLevel decoder - the shape of
// Qwen3's own tokenizer.json.
std::string synth_tokenizer_json(const Vocab& v);

// tokenizer_config.json as Qwen3 ships it: add_bos_token false, bos_token null, eos/pad tokens,
// added_tokens_decoder, Qwen2Tokenizer, and the ChatML template.
std::string synth_tokenizer_config_json(const Vocab& v, int64_t model_max_length);

// The Jinja chat template stored in tokenizer.chat_template / tokenizer_config.json: plain
// ChatML (<|im_start|>role\ncontent<|im_end|>\n, generation prompt <|im_start|>assistant\n).
std::string_view synth_chat_template();

}  // namespace tdm::synth
