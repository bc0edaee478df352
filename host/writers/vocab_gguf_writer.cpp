// SPDX-License-Identifier: Apache-2.0
// host/writers/vocab_gguf_writer.cpp: Vocab -> tokenizer.ggml.*, following conversion/base.py
// (token types, user-defined spaces) and gguf-py's key types.
#include "writers/vocab_gguf_writer.h"

#include "tokenizer/vocab_gguf_keys.h"

#include <string>
#include <unordered_map>

namespace tdm {

using namespace gguf_vocab_keys;

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    return s;
}

}  // namespace

Status write_vocab_gguf(const Vocab& v, GgufWriter& w, const GgufVocabExport& opts) {
    TDM_TRY(validate_vocab(v));
    const std::string& src = v.source.empty() ? std::string("vocabulary") : v.source;
    const bool spm_family = v.model != VocabModel::byte_bpe;
    const bool as_scores = v.model == VocabModel::spm ||
                           (v.model == VocabModel::spm_bpe && opts.spm_style == GgufVocabExport::SpmStyle::scores);

    std::string model, pre;
    switch (v.model) {
        case VocabModel::byte_bpe:
            model = "gpt2";
            switch (v.pre) {
                case PreTokenizer::qwen2: pre = "qwen2"; break;
                case PreTokenizer::qwen35: pre = "qwen35"; break;
                case PreTokenizer::gpt2: pre = "gpt-2"; break;
                case PreTokenizer::llama3: pre = v.ignore_merges ? "llama-bpe" : "glm4"; break;
                case PreTokenizer::llama_default: pre = "default"; break;
                case PreTokenizer::none:
                case PreTokenizer::gemma4: break;  // refused by validate_vocab
            }
            if (v.pre != PreTokenizer::llama3 && v.ignore_merges)
                return Error::format("{}: ignore_merges cannot be expressed in GGUF for pre-tokenizer '{}'", src,
                                     to_string(v.pre));
            break;
        case VocabModel::spm:
        case VocabModel::spm_bpe:
            model = as_scores ? "llama" : "gemma4";
            pre = as_scores ? "default" : "gemma4";
            if (!as_scores && !v.add_bos)
                return Error::format("{}: llama.cpp forces add_bos for a gemma4 GGUF tokenizer, but this "
                                     "vocabulary has add_bos=false; export it with SpmStyle::scores", src);
            if (v.ignore_merges)
                return Error::format("{}: ignore_merges cannot be expressed for a SentencePiece-style GGUF", src);
            break;
    }

    // Tokens: as stored, except user-defined ones get " " for U+2581 (conversion/base.py
    // "pre-normalize user-defined spaces"), which llama.cpp then matches in raw text.
    // With merges that rewrite would orphan the merges that build such a token (Gemma 3's
    // "▁▁".."▁"x31 are both added tokens and merge products), so there it keeps its text
    // and becomes NORMAL, as llama.cpp's gemma4 converter writes added tokens that are in
    // the base vocabulary: it is then reached through those merges from escaped spaces,
    // exactly as HF reaches it (HF matches the added "▁▁" only against a literal U+2581).
    std::unordered_map<std::string_view, bool> in_merges;
    if (!as_scores && spm_family) {
        for (const auto& [a, b] : v.merges) {
            in_merges[a] = true;
            in_merges[b] = true;
        }
        for (size_t i = 0; i < v.tokens.size(); ++i)  // merge products are tokens too
            if (v.types[i] == TokenType::user_defined) in_merges.emplace(v.tokens[i], false);
        for (const auto& [a, b] : v.merges) {
            auto it = in_merges.find(a + b);  // only user-defined products matter here
            if (it != in_merges.end()) it->second = true;
        }
    }
    std::vector<std::string> tokens = v.tokens;
    std::vector<int32_t> types(v.types.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        TokenType t = v.types[i];
        if (spm_family && t == TokenType::user_defined && tokens[i].find(kSpaceMark) != std::string::npos) {
            auto it = in_merges.find(tokens[i]);
            if (it != in_merges.end() && it->second)
                t = TokenType::normal;
            else
                tokens[i] = replace_all(tokens[i], kSpaceMark, " ");
        }
        types[i] = static_cast<int32_t>(t);
    }

    std::vector<float> scores;
    if (v.model == VocabModel::spm) {
        scores = v.scores;
    } else if (as_scores) {
        // -(first rank producing the token); user-defined/control get -1000 as in the
        // converter; everything else (characters, bytes) 0, which SPM never consults
        // because a bigram always joins two or more characters.
        std::unordered_map<std::string, int32_t> first_rank;
        first_rank.reserve(v.merges.size());
        for (size_t r = 0; r < v.merges.size(); ++r)
            first_rank.emplace(v.merges[r].first + v.merges[r].second, static_cast<int32_t>(r));
        scores.assign(tokens.size(), 0.0f);
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (v.types[i] == TokenType::user_defined || v.types[i] == TokenType::control) {
                scores[i] = -1000.0f;
            } else if (auto it = first_rank.find(v.tokens[i]); it != first_rank.end()) {
                scores[i] = -static_cast<float>(it->second);
            }
        }
    }

    std::vector<std::string> merges;
    if (!as_scores) {
        merges.reserve(v.merges.size());
        for (size_t r = 0; r < v.merges.size(); ++r) {
            const auto& [a, b] = v.merges[r];
            if (a.empty() || b.empty() || a.find(' ', 1) != std::string::npos)
                return Error::format("{}: merge #{} ('{}', '{}') cannot be written as one GGUF string", src, r, a, b);
            merges.push_back(a + " " + b);
        }
    }

    w.add_string(kModel, model);
    w.add_string(kPre, pre);
    w.add_array(kTokens, tokens);
    w.add_array(kTypes, types);
    if (!scores.empty()) w.add_array(kScores, scores);
    if (!merges.empty()) w.add_array(kMerges, merges);
    for (const IdKey& k : kIdKeys) {
        int32_t id = v.special.*k.slot;
        if (id >= 0) w.add_u32(k.key, static_cast<uint32_t>(id));
    }
    w.add_bool(kAddBos, v.add_bos);
    w.add_bool(kAddEos, v.add_eos);
    if (spm_family) w.add_bool(kAddSpacePrefix, v.add_space_prefix);
    return {};
}

}  // namespace tdm
