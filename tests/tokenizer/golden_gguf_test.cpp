// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/golden_gguf_test.cpp: the golden lines again, after writing each real
// vocabulary into GGUF metadata with GgufWriter and reading it back through the GGUF path
// (llama.cpp semantics). To add a case, add a golden line (golden_hf_test.cpp) - every
// line runs here too.
#include "tokenizer_fixtures.h"

#include "formats/gguf.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_gguf.h"
#include "writers/gguf_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

namespace tdm::test {
namespace {

using SpmStyle = GgufVocabExport::SpmStyle;

// The GGUF file written from the HF vocabulary, parsed back. Cached per (name, style).
const GgufFile& exported_gguf(const std::string& name, SpmStyle style) {
    static std::map<std::pair<std::string, SpmStyle>, std::unique_ptr<GgufFile>> cache;
    auto key = std::make_pair(name, style);
    if (auto it = cache.find(key); it != cache.end()) return *it->second;
    GgufWriter w;
    w.add_string("general.architecture", name);
    GgufVocabExport opts;
    opts.spm_style = style;
    Status st = write_vocab_gguf(hf_tokenizer(name).vocab(), w, opts);
    if (!st.ok()) {
        ADD_FAILURE() << st.error().message();
        std::abort();
    }
    auto bytes = w.to_bytes();
    if (!bytes.ok()) {
        ADD_FAILURE() << bytes.error().message();
        std::abort();
    }
    auto file = GgufFile::from_memory(name + ".gguf", std::move(bytes).value());
    if (!file.ok()) {
        ADD_FAILURE() << file.error().message();
        std::abort();
    }
    return *cache.emplace(key, std::move(file).value()).first->second;
}

const Tokenizer& gguf_tokenizer(const std::string& name, SpmStyle style) {
    static std::map<std::pair<std::string, SpmStyle>, std::unique_ptr<Tokenizer>> cache;
    auto key = std::make_pair(name, style);
    if (auto it = cache.find(key); it != cache.end()) return *it->second;
    auto tok = load_tokenizer_gguf(exported_gguf(name, style));
    if (!tok.ok()) {
        ADD_FAILURE() << tok.error().message();
        std::abort();
    }
    return *cache.emplace(key, std::make_unique<Tokenizer>(std::move(tok).value())).first->second;
}

// The one Qwen3 golden line whose text is not NFC ("combining e\u0301 a\u0308").
bool is_nfc_line(const GoldenLine& g) { return g.text != g.decoded; }

int count_matching_goldens(const std::string& name, SpmStyle style, bool skip_nfc_line) {
    const Tokenizer& tok = gguf_tokenizer(name, style);
    int n_ok = 0;
    for (const GoldenLine& g : golden_lines(name)) {
        if (skip_nfc_line && is_nfc_line(g)) continue;
        std::vector<int32_t> ids = tok.encode(g.text, /*add_special=*/false, /*parse_special=*/true);
        std::string decoded = tok.decode(g.ids);
        EXPECT_EQ(ids, g.ids) << name << " (GGUF) encode of '" << escaped(g.text) << "'";
        EXPECT_EQ(decoded, g.decoded) << name << " (GGUF) decode of '" << escaped(g.text) << "'";
        n_ok += ids == g.ids && decoded == g.decoded;
    }
    return n_ok;
}

TEST(TokenizerGoldenGguf, qwen3_is_written_as_gpt2_with_qwen2_pre_tokenizer) {
    const GgufFile& f = exported_gguf("qwen3", SpmStyle::merges);
    EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "gpt2");
    EXPECT_EQ(f.get_string("tokenizer.ggml.pre").value(), "qwen2");
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").value().size(), 151669u);
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges").value().size(), 151387u);
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges").value()[0], "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
    EXPECT_EQ(f.find("tokenizer.ggml.scores"), nullptr);  // the converter writes none for gpt2
    EXPECT_EQ(f.get_uint("tokenizer.ggml.eos_token_id").value(), 151645u);
    EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_bos_token").value());
    EXPECT_EQ(f.find("tokenizer.ggml.add_space_prefix"), nullptr);
}

TEST(TokenizerGoldenGguf, qwen3_gguf_reproduces_every_golden_line_except_the_nfc_one) {
    // 67 lines: the 68th is the non-NFC input, tested below.
    EXPECT_EQ(count_matching_goldens("qwen3", SpmStyle::merges, /*skip_nfc_line=*/true), 67);
}

// llama.cpp applies no normaliser to byte-level BPE input (docs/tokenizers.md §3.5), and
// the GGUF path follows it: decomposed text keeps its combining marks. HF (NFC) and GGUF
// agree once the caller composes the text, and both decode the golden ids identically.
TEST(TokenizerGoldenGguf, qwen3_gguf_does_not_apply_nfc_like_llama_cpp) {
    const Tokenizer& gguf = gguf_tokenizer("qwen3", SpmStyle::merges);
    const Tokenizer& hf = hf_tokenizer("qwen3");
    EXPECT_FALSE(gguf.vocab().normalize_nfc);
    int n_nfc_lines = 0;
    for (const GoldenLine& g : golden_lines("qwen3")) {
        if (!is_nfc_line(g)) continue;
        ++n_nfc_lines;
        std::vector<int32_t> raw = gguf.encode(g.text, false);
        EXPECT_NE(raw, g.ids);
        EXPECT_EQ(gguf.decode(raw), g.text);  // the decomposed text survives unchanged
        EXPECT_EQ(hf.encode(g.text, false), g.ids);
        EXPECT_EQ(gguf.encode(unicode::nfc(g.text), false), g.ids);
        EXPECT_EQ(gguf.decode(g.ids), g.decoded);
    }
    EXPECT_EQ(n_nfc_lines, 1);
}

TEST(TokenizerGoldenGguf, gemma3_is_written_as_gemma4_merges_by_default) {
    const GgufFile& f = exported_gguf("gemma3", SpmStyle::merges);
    EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "gemma4");
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges").value().size(), 514906u);
    EXPECT_EQ(f.find("tokenizer.ggml.scores"), nullptr);
    EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_space_prefix").value());
    EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token").value());
    auto tokens = f.get_string_array("tokenizer.ggml.tokens").value();
    auto types = f.get_int_array("tokenizer.ggml.token_type").value();
    // "▁▁" is an added token and a merge product: kept as a normal token (vocab_gguf.h).
    EXPECT_EQ(tokens[138], "\xE2\x96\x81\xE2\x96\x81");
    EXPECT_EQ(types[138], static_cast<int64_t>(TokenType::normal));
    EXPECT_EQ(tokens[107], "\n");  // other added tokens stay user-defined
    EXPECT_EQ(types[107], static_cast<int64_t>(TokenType::user_defined));
    EXPECT_EQ(tokens[1902], "\xE2\x96\x81world");  // normal tokens keep U+2581
}

TEST(TokenizerGoldenGguf, gemma3_gguf_with_merges_reproduces_every_golden_line) {
    EXPECT_EQ(count_matching_goldens("gemma3", SpmStyle::merges, false), 68);
}

TEST(TokenizerGoldenGguf, gemma3_gguf_with_scores_reproduces_every_golden_line) {
    const GgufFile& f = exported_gguf("gemma3", SpmStyle::scores);
    EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "llama");
    EXPECT_EQ(f.find("tokenizer.ggml.merges"), nullptr);
    auto tokens = f.get_string_array("tokenizer.ggml.tokens").value();
    auto scores = f.get_float_array("tokenizer.ggml.scores").value();
    EXPECT_EQ(tokens[138], "  ");  // user-defined "▁▁" with spaces, as llama.cpp's converter writes it
    EXPECT_EQ(scores[138], -1000.0);
    EXPECT_LT(scores[1902], 0.0);  // "▁world": minus the rank of its first merge
    EXPECT_EQ(count_matching_goldens("gemma3", SpmStyle::scores, false), 68);
}

TEST(TokenizerGoldenGguf, special_ids_and_flags_survive_the_round_trip) {
    for (SpmStyle style : {SpmStyle::merges, SpmStyle::scores}) {
        const Tokenizer& hf = hf_tokenizer("gemma3");
        const Tokenizer& gg = gguf_tokenizer("gemma3", style);
        EXPECT_EQ(gg.n_vocab(), hf.n_vocab());
        EXPECT_EQ(gg.bos(), hf.bos());
        EXPECT_EQ(gg.eos(), hf.eos());
        EXPECT_EQ(gg.unk(), hf.unk());
        EXPECT_EQ(gg.pad(), hf.pad());
        EXPECT_EQ(gg.vocab().add_bos, hf.vocab().add_bos);
        EXPECT_EQ(gg.vocab().add_space_prefix, false);
        // Types agree except for the "▁"-run tokens that the merges style writes as normal.
        int n_differ = 0;
        for (int32_t id = 0; id < hf.n_vocab(); ++id) n_differ += gg.token_type(id) != hf.token_type(id);
        EXPECT_EQ(n_differ, style == SpmStyle::merges ? 30 : 0);
        EXPECT_EQ(gg.encode("hi", true), hf.encode("hi", true));
        EXPECT_EQ(gg.decode(std::vector<int32_t>{138, 139}), "     ");
    }
    const Tokenizer& q = gguf_tokenizer("qwen3", SpmStyle::merges);
    EXPECT_EQ(q.eos(), 151645);
    EXPECT_EQ(q.pad(), 151643);
    EXPECT_EQ(q.bos(), 11);  // llama.cpp's gpt2 default when the file names no bos
    EXPECT_FALSE(q.vocab().add_bos);
    EXPECT_EQ(q.vocab().types, hf_tokenizer("qwen3").vocab().types);
    EXPECT_TRUE(q.is_eog(151645));
}

}  // namespace
}  // namespace tdm::test
