/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/vocab_gguf.h: the vocabulary in GGUF metadata (tokenizer.ggml.*,
// docs/formats/gguf.md §A.11.3), read with llama.cpp's rules (llama_vocab::impl::load).
// Not here: tokenizer.json (vocab_json.h); writing it as llama.cpp's converter does
// (writers/vocab_gguf_writer.h, outside the runtime library).
//
// What the GGUF path does differently from tokenizer.json, on purpose (llama.cpp
// fidelity, docs/tokenizers.md §3.5 and §4.3):
//   * no NFC: llama.cpp never normalises byte-level input, so a GGUF Qwen tokenizer
//     encodes decomposed text ("e\u0301") differently from HF;
//   * user-defined tokens are stored with " " where HF has U+2581, so runs of spaces are
//     split out as those tokens before merging (Gemma 3's "▁▁" ... tokens).
#pragma once

#include "common/error.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace tdm {

// Reads tokenizer.ggml.model (gpt2, llama, gemma4), .pre, .tokens, .token_type, .scores,
// .merges, the special ids and add_bos/add_eos/add_space_prefix, with llama.cpp's
// defaults for absent keys. Unknown model or pre values, a missing token list and
// missing merges are errors naming what was found.
Result<Vocab> load_vocab_gguf(const GgufFile& f);
Result<Tokenizer> load_tokenizer_gguf(const GgufFile& f);

}  // namespace tdm
