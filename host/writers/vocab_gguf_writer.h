/* SPDX-License-Identifier: Apache-2.0 */
// host/writers/vocab_gguf_writer.h: a vocabulary as tokenizer.ggml.* GGUF metadata (spec
// docs/formats/gguf.md §A.11.3), written the way llama.cpp's converter writes it (conversion/base.py: token
// types, user-defined spaces; gguf-py's key types). The runtime's reader is
// tokenizer/vocab_gguf.h; both use the key names of tokenizer/vocab_gguf_keys.h.
#pragma once

#include "common/error.h"
#include "tokenizer/vocab.h"
#include "writers/gguf_writer.h"

namespace tdm {

struct GgufVocabExport {
    // How a merge-based SentencePiece-style vocabulary (HF Gemma 3) is written:
    enum class SpmStyle {
        // tokenizer.ggml.model "gemma4": the merges with their ranks, exactly what the HF
        // tokenizer uses (rank order is the tokenization), pre "gemma4". The default.
        // User-defined tokens containing U+2581 that merges build (Gemma 3's "▁▁" ...)
        // are written as normal tokens with their text kept; see vocab_gguf_writer.cpp.
        merges,
        // tokenizer.ggml.model "llama", what llama.cpp's converter writes for Gemma 3
        // from tokenizer.model: scores instead of merges. tokenizer.json has no scores,
        // so each token gets -(rank of the first merge that produces it); HF orders the
        // merges by SentencePiece score, so this restores the score order.
        scores,
    };
    SpmStyle spm_style = SpmStyle::merges;
};

// Adds the tokenizer.ggml.* keys for `v` to `w`. Fails (writing nothing) if `v` cannot be
// expressed: a merge whose left part contains a space (GGUF splits "a b" at the first
// space), or a gemma4-style export of a vocabulary without add_bos (llama.cpp forces it).
Status write_vocab_gguf(const Vocab& v, GgufWriter& w, const GgufVocabExport& opts = {});

}  // namespace tdm
