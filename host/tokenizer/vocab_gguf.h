// host/tokenizer/vocab_gguf.h: the vocabulary in GGUF metadata (tokenizer.ggml.*,
// spec gguf.md §A.11.3): reading it with llama.cpp's rules (llama_vocab::impl::load) and
// writing it the way llama.cpp's converter does. Not here: tokenizer.json (vocab_json.h).
//
// What the GGUF path does differently from tokenizer.json, on purpose (llama.cpp
// fidelity, spec tokenizers.md §3.5 and §4.3):
//   * no NFC: llama.cpp never normalises byte-level input, so a GGUF Qwen tokenizer
//     encodes decomposed text ("e\u0301") differently from HF;
//   * user-defined tokens are stored with " " where HF has U+2581, so runs of spaces are
//     split out as those tokens before merging (Gemma 3's "▁▁" ... tokens).
#pragma once

#include "common/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace tdm {

// Reads tokenizer.ggml.model (gpt2, llama, gemma4), .pre, .tokens, .token_type, .scores,
// .merges, the special ids and add_bos/add_eos/add_space_prefix, with llama.cpp's
// defaults for absent keys. Unknown model or pre values, a missing token list and
// missing merges are errors naming what was found.
Result<Vocab> load_vocab_gguf(const GgufFile& f);
Result<Tokenizer> load_tokenizer_gguf(const GgufFile& f);

struct GgufVocabExport {
    // How a merge-based SentencePiece-style vocabulary (HF Gemma 3) is written:
    enum class SpmStyle {
        // tokenizer.ggml.model "gemma4": the merges with their ranks, exactly what the HF
        // tokenizer uses (rank order is the tokenization), pre "gemma4". The default.
        // User-defined tokens containing U+2581 that merges build (Gemma 3's "▁▁" ...)
        // are written as normal tokens with their text kept; see vocab_gguf.cpp.
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
