/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/pretokenize.h: the pre-tokenizer splitters of docs/tokenizers.md §3.2
// and §4.4, written by hand (as llama.cpp's unicode_regex_split_custom_* are) instead of
// running the regexes. Not here: normalisation (NFC) and byte mapping.
#pragma once

#include "tokenizer/vocab.h"

#include <string_view>
#include <vector>

namespace tdm {

// Cuts valid UTF-8 `text` into consecutive pieces that together cover it exactly and
// appends them to `out` (views into `text`). PreTokenizer::none yields the whole text.
void pretokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out);

}  // namespace tdm
