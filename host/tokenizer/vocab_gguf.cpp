// host/tokenizer/vocab_gguf.cpp: tokenizer.ggml.* <-> Vocab. Reading follows
// llama.cpp's llama_vocab::impl::load (defaults, pre-tokenizer names); writing follows
// conversion/base.py (token types, user-defined spaces) and gguf-py's key types.
#include "tokenizer/vocab_gguf.h"

#include "common/log.h"

#include <limits>
#include <string>
#include <unordered_map>

namespace tdm {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";

struct IdKey {
    const char* key;
    int32_t SpecialIds::*slot;
};
constexpr IdKey kIdKeys[] = {
    {"tokenizer.ggml.bos_token_id", &SpecialIds::bos},
    {"tokenizer.ggml.eos_token_id", &SpecialIds::eos},
    {"tokenizer.ggml.eot_token_id", &SpecialIds::eot},
    {"tokenizer.ggml.eom_token_id", &SpecialIds::eom},
    {"tokenizer.ggml.unknown_token_id", &SpecialIds::unk},
    {"tokenizer.ggml.padding_token_id", &SpecialIds::pad},
};

// tokenizer.ggml.pre values of gpt2-type vocabularies that tandem implements, from
// llama.cpp's table (spec tokenizers.md §3.2).
const std::unordered_map<std::string_view, PreTokenizer>& pre_names() {
    static const std::unordered_map<std::string_view, PreTokenizer> m = {
        {"qwen2", PreTokenizer::qwen2},        {"deepseek-r1-qwen", PreTokenizer::qwen2},
        {"kormo", PreTokenizer::qwen2},        {"f2llmv2", PreTokenizer::qwen2},
        {"megrez", PreTokenizer::qwen2},       {"qwen35", PreTokenizer::qwen35},
        {"gpt-2", PreTokenizer::gpt2},         {"phi-2", PreTokenizer::gpt2},
        {"jina-es", PreTokenizer::gpt2},       {"mpt", PreTokenizer::gpt2},
        {"olmo", PreTokenizer::gpt2},          {"jais", PreTokenizer::gpt2},
        {"llama3", PreTokenizer::llama3},      {"llama-v3", PreTokenizer::llama3},
        {"llama-bpe", PreTokenizer::llama3},   {"default", PreTokenizer::llama_default},
    };
    return m;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    return s;
}

Result<std::vector<float>> read_scores(const GgufFile& f, size_t n_tokens) {
    const GgufValue* v = f.find(kScores);
    std::vector<float> scores(n_tokens, 0.0f);  // absent: 0.0 (llama.cpp)
    if (!v) return scores;
    std::vector<double> values;
    if (v->type == GgufType::ARRAY && v->elem_type == GgufType::INT32) {  // llama.cpp accepts both
        for (int64_t x : TDM_TRY(f.get_int_array(kScores))) values.push_back(static_cast<double>(x));
    } else {
        values = TDM_TRY(f.get_float_array(kScores));
    }
    if (values.size() < n_tokens)
        return Error::format("{}: {} has {} entries for {} tokens", f.path(), kScores, values.size(), n_tokens);
    for (size_t i = 0; i < n_tokens; ++i) scores[i] = static_cast<float>(values[i]);
    return scores;
}

}  // namespace

Result<Vocab> load_vocab_gguf(const GgufFile& f) {
    Vocab v;
    v.source = f.path();
    if (!f.find(kModel)) return Error::format("{}: GGUF has no {}", f.path(), kModel);
    std::string model = TDM_TRY(f.get_string(kModel));
    if (model == "gpt2") {
        v.model = VocabModel::byte_bpe;
    } else if (model == "llama") {
        v.model = VocabModel::spm;
    } else if (model == "gemma4") {
        v.model = VocabModel::spm_bpe;
    } else {
        return Error::format("{}: {} '{}' is not supported (gpt2, llama, gemma4)", f.path(), kModel, model);
    }

    // Pre-tokenizer and the defaults that depend on it.
    bool add_bos_default = false;
    if (v.model == VocabModel::byte_bpe) {
        if (!f.find(kPre))
            TDM_LOG_WARN("tokenizer", "{}: no {}; using 'default' as llama.cpp does - the tokenization "
                         "may be wrong for this model", f.path(), kPre);
        std::string pre = TDM_TRY(f.get_string_or(kPre, "default"));
        auto it = pre_names().find(pre);
        if (it == pre_names().end())
            return Error::format("{}: {} '{}' is not supported for {} 'gpt2' (qwen2, qwen35, gpt-2, llama-bpe, "
                                 "default and their aliases)", f.path(), kPre, pre, kModel);
        v.pre = it->second;
        if (v.pre == PreTokenizer::llama3) {
            v.ignore_merges = true;  // llama.cpp sets both for LLAMA_VOCAB_PRE_TYPE_LLAMA3
            add_bos_default = true;
        }
    } else if (v.model == VocabModel::spm) {
        v.pre = PreTokenizer::none;  // SPM uses no pre-tokenizer, whatever .pre says
        add_bos_default = true;
    } else {
        v.pre = PreTokenizer::gemma4;  // llama.cpp forces it for model gemma4
        add_bos_default = true;
    }

    if (!f.find(kTokens)) return Error::format("{}: GGUF has no {} (no vocabulary)", f.path(), kTokens);
    v.tokens = TDM_TRY(f.get_string_array(kTokens));
    if (v.tokens.empty()) return Error::format("{}: {} is empty", f.path(), kTokens);
    if (v.tokens.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
        return Error::format("{}: {} tokens is too many", f.path(), v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i)
        if (v.tokens[i].empty()) v.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp

    const size_t n = v.tokens.size();
    v.types.assign(n, TokenType::normal);
    if (f.find(kTypes)) {
        std::vector<int64_t> types = TDM_TRY(f.get_int_array(kTypes));
        if (types.size() < n)
            return Error::format("{}: {} has {} entries for {} tokens", f.path(), kTypes, types.size(), n);
        for (size_t i = 0; i < n; ++i) {
            if (types[i] < 0 || types[i] > 6)
                return Error::format("{}: token {} ('{}') has type {}, not one of 0..6", f.path(), i, v.tokens[i],
                                     types[i]);
            v.types[i] = static_cast<TokenType>(types[i]);
        }
    }
    if (v.model == VocabModel::spm) v.scores = TDM_TRY(read_scores(f, n));

    if (v.model != VocabModel::spm) {
        if (!f.find(kMerges))
            return Error::format("{}: {} '{}' needs {}, which is missing", f.path(), kModel, model, kMerges);
        std::vector<std::string> merges = TDM_TRY(f.get_string_array(kMerges));
        v.merges.reserve(merges.size());
        for (size_t rank = 0; rank < merges.size(); ++rank) {
            const std::string& m = merges[rank];
            size_t sp = m.empty() ? std::string::npos : m.find(' ', 1);  // first space at pos >= 1
            if (sp == std::string::npos)
                return Error::format("{}: merge #{} '{}' is not two tokens separated by a space", f.path(), rank, m);
            v.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
        }
    }

    // Special ids: llama.cpp's per-model defaults, dropped if outside the vocabulary;
    // explicit ids outside it are ignored with a warning.
    if (v.model == VocabModel::spm) {
        v.special.bos = 1;
        v.special.eos = 2;
        v.special.unk = 0;
    } else if (v.model == VocabModel::byte_bpe) {
        v.special.bos = 11;
        v.special.eos = 11;
    }
    for (const IdKey& k : kIdKeys) {
        int32_t& slot = v.special.*k.slot;
        if (f.find(k.key)) {
            uint64_t id = TDM_TRY(f.get_uint(k.key));
            if (id >= n) {
                TDM_LOG_WARN("tokenizer", "{}: {} = {} is outside the vocabulary ({} tokens); ignored", f.path(),
                             k.key, id, n);
                continue;  // keeps the default, as llama.cpp does
            }
            slot = static_cast<int32_t>(id);
        }
        if (slot >= static_cast<int64_t>(n)) slot = -1;
    }

    v.add_bos = TDM_TRY(f.get_bool_or(kAddBos, add_bos_default));
    if (v.pre == PreTokenizer::gemma4) v.add_bos = true;  // forced by llama.cpp
    v.add_eos = TDM_TRY(f.get_bool_or(kAddEos, false));
    if (v.model == VocabModel::spm) v.add_space_prefix = TDM_TRY(f.get_bool_or(kAddSpacePrefix, true));
    if (v.add_bos && v.special.bos < 0 && !f.find(kAddBos)) v.add_bos = false;  // a default with no bos

    TDM_TRY(validate_vocab(v));
    return v;
}

Result<Tokenizer> load_tokenizer_gguf(const GgufFile& f) {
    Vocab v = TDM_TRY(load_vocab_gguf(f));
    return Tokenizer::create(std::move(v));
}

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
                case PreTokenizer::llama3: pre = "llama-bpe"; break;
                case PreTokenizer::llama_default: pre = "default"; break;
                case PreTokenizer::none:
                case PreTokenizer::gemma4: break;  // refused by validate_vocab
            }
            if (v.pre == PreTokenizer::llama3 && !v.ignore_merges)
                return Error::format("{}: llama-bpe in GGUF implies ignore_merges, which this vocabulary does "
                                     "not use", src);
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
