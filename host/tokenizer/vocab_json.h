/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/vocab_json.h: Hugging Face tokenizer.json (+ tokenizer_config.json) ->
// Vocab. Accepts the BPE shapes of docs/tokenizers.md §0 - byte-level (Qwen, GPT-2,
// Llama 3, GLM) and byte-fallback SentencePiece-style (Gemma 3, Llama 2) - and refuses
// everything else with an error naming what it found. Not here: GGUF (vocab_gguf.h).
#pragma once

#include "common/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

#include <string>
#include <string_view>

namespace tdm {

// `config_json` may be empty (no tokenizer_config.json). From the config: add_bos_token,
// add_eos_token and bos/eos/unk/pad_token; without it they come from the post-processor
// (TemplateProcessing) and model.unk_token. `source` names the input in messages.
Result<Vocab> load_vocab_hf(std::string_view tokenizer_json, std::string_view config_json = {},
                            std::string source = "tokenizer.json");

// `path`: a tokenizer.json file, or a directory holding one. A tokenizer_config.json in
// the same directory is used when present.
Result<Vocab> load_vocab_hf_file(const std::string& path);

Result<Tokenizer> load_tokenizer_hf(std::string_view tokenizer_json, std::string_view config_json = {},
                                    std::string source = "tokenizer.json");
Result<Tokenizer> load_tokenizer_hf_file(const std::string& path);

}  // namespace tdm
