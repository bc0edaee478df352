// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/vocab_gguf.cpp: tokenizer.ggml.* -> Vocab, following llama.cpp's
// llama_vocab::impl::load (defaults, pre-tokenizer names). Writing: writers/vocab_gguf_writer.cpp.
#include "tokenizer/vocab_gguf.h"

#include "tokenizer/vocab_gguf_keys.h"

#include "common/log.h"

#include <limits>
#include <string>
#include <unordered_map>

namespace tdm {

using namespace gguf_vocab_keys;

namespace {

// tokenizer.ggml.pre values of gpt2-type vocabularies that tandem implements, from
// llama.cpp's table (docs/tokenizers.md §3.2).
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
        // llama.cpp's CHATGLM4 (GLM-4, GLM-OCR): llama3's split, but merges applied and no BOS
        {"glm4", PreTokenizer::llama3},        {"chatglm-bpe", PreTokenizer::llama3},
    };
    return m;
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
    bool chatglm = false;
    if (v.model == VocabModel::byte_bpe) {
        if (!f.find(kPre))
            TDM_LOG_WARN("tokenizer", "{}: no {}; using 'default' as llama.cpp does - the tokenization "
                         "may be wrong for this model", f.path(), kPre);
        std::string pre = TDM_TRY(f.get_string_or(kPre, "default"));
        auto it = pre_names().find(pre);
        if (it == pre_names().end())
            return Error::format("{}: {} '{}' is not supported for {} 'gpt2' (qwen2, qwen35, gpt-2, llama-bpe, "
                                 "glm4, default and their aliases)", f.path(), kPre, pre, kModel);
        v.pre = it->second;
        chatglm = pre == "glm4" || pre == "chatglm-bpe";
        if (v.pre == PreTokenizer::llama3 && !chatglm) {
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
        v.special.bos = chatglm ? -1 : 11;  // llama.cpp clears the BOS of CHATGLM4
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

}  // namespace tdm
