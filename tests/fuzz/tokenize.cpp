// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/tokenize.cpp: the encode path (Tokenizer::encode, then decode and the stream
// decoder) of fixed, real vocabularies on arbitrary text. The first input byte picks the
// tokenizer and the flags; the rest is the text. The tokenizers: Qwen3 and Gemma 3 from their
// tokenizer.json fixtures (byte-level BPE with NFC; SentencePiece-style merges with byte
// fallback), both written to GGUF metadata and read back with llama.cpp's rules (Gemma 3 in
// both GGUF styles: merges and scores), and the synthetic Qwen-style vocabulary of
// `tandem synth`. Checked: ids inside the vocabulary, decode gives valid UTF-8, the stream
// decoder agrees with decode, and the byte-level GGUF tokenizers (no normaliser) give back
// exactly any valid UTF-8 text they were given without special-token parsing.
#include "formats/gguf.h"
#include "fuzz_support.h"
#include "synth/synth_vocab.h"
#include "tokenizer/stream.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"
#include "writers/gguf_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace tdm;

namespace {

struct Case {
    std::string name;
    Tokenizer tok;
    bool round_trips;  // byte-level, no normaliser: decode(encode(valid UTF-8)) is the text
};

[[noreturn]] void die(const std::string& what, const Error& e) {
    std::fprintf(stderr, "tokenize: %s: %s\n", what.c_str(), e.message().c_str());
    std::abort();
}

Tokenizer from_json(const std::string& name) {
    const std::string dir = "tokenizers/" + name;
    auto tok = load_tokenizer_hf(fuzz::read_fixture_or_die(dir + "/tokenizer.json.zst"),
                                 fuzz::read_fixture_or_die(dir + "/tokenizer_config.json.zst"), name);
    if (!tok.ok()) die(name, tok.error());
    return std::move(*tok);
}

Tokenizer through_gguf(const Vocab& v, const std::string& name, GgufVocabExport::SpmStyle style) {
    GgufWriter w;
    w.add_string("general.architecture", name);
    GgufVocabExport opts;
    opts.spm_style = style;
    if (Status st = write_vocab_gguf(v, w, opts); !st.ok()) die(name, st.error());
    auto bytes = w.to_bytes();
    if (!bytes.ok()) die(name, bytes.error());
    auto file = GgufFile::from_memory(name + ".gguf", std::move(*bytes));
    if (!file.ok()) die(name, file.error());
    auto tok = load_tokenizer_gguf(**file);
    if (!tok.ok()) die(name, tok.error());
    return std::move(*tok);
}

std::vector<Case>& cases() {
    static std::vector<Case> all = [] {
        std::vector<Case> out;
        using Style = GgufVocabExport::SpmStyle;
        Tokenizer qwen3 = from_json("qwen3");
        Tokenizer gemma3 = from_json("gemma3");
        out.push_back({"qwen3-gguf", through_gguf(qwen3.vocab(), "qwen3", Style::merges), true});
        out.push_back({"gemma3-gguf-merges", through_gguf(gemma3.vocab(), "gemma3", Style::merges), false});
        out.push_back({"gemma3-gguf-scores", through_gguf(gemma3.vocab(), "gemma3", Style::scores), false});
        out.push_back({"qwen3-json", std::move(qwen3), false});
        out.push_back({"gemma3-json", std::move(gemma3), false});
        auto synth_vocab = synth::synth_vocab(512);
        if (!synth_vocab.ok()) die("synthetic vocabulary", synth_vocab.error());
        auto synth_tok = Tokenizer::create(std::move(*synth_vocab));
        if (!synth_tok.ok()) die("synthetic vocabulary", synth_tok.error());
        out.push_back({"synth-gguf", std::move(*synth_tok), true});
        return out;
    }();
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)cases();  // loading the fixtures takes seconds: not inside the first input's time
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t selector = data[0];
    const Case& c = cases()[(selector & 0x0f) % cases().size()];
    const bool add_special = selector & 0x10;
    const bool parse_special = selector & 0x20;
    const std::string_view text = fuzz::as_text(data + 1, size - 1);

    const std::vector<int32_t> ids = c.tok.encode(text, add_special, parse_special);
    for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < c.tok.n_vocab());
    if (!text.empty()) FUZZ_CHECK(!ids.empty());
    const std::string decoded = c.tok.decode(ids);
    FUZZ_CHECK(fuzz::is_valid_utf8(decoded));

    StreamDecoder stream(c.tok);
    std::string streamed, pieces;
    for (int32_t id : ids) {
        streamed += stream.push(id);
        pieces += c.tok.token_to_piece(id, true);
    }
    streamed += stream.flush();
    FUZZ_CHECK(fuzz::is_valid_utf8(streamed));
    if (fuzz::is_valid_utf8(pieces)) FUZZ_CHECK(streamed == decoded);

    if (c.round_trips && !add_special && !parse_special && fuzz::is_valid_utf8(text))
        FUZZ_CHECK(decoded == text);
    return 0;
}
