// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/vocab.cpp: names, the "looks special" rule and consistency checks for Vocab.
#include "tokenizer/vocab.h"

namespace tdm {

std::string_view to_string(TokenType t) {
    switch (t) {
        case TokenType::undefined: return "undefined";
        case TokenType::normal: return "normal";
        case TokenType::unknown: return "unknown";
        case TokenType::control: return "control";
        case TokenType::user_defined: return "user_defined";
        case TokenType::unused: return "unused";
        case TokenType::byte: return "byte";
    }
    return "?";
}

std::string_view to_string(VocabModel m) {
    switch (m) {
        case VocabModel::byte_bpe: return "byte-level BPE (gpt2)";
        case VocabModel::spm: return "SentencePiece (llama)";
        case VocabModel::spm_bpe: return "SentencePiece-style BPE (gemma4)";
    }
    return "?";
}

std::string_view to_string(PreTokenizer p) {
    switch (p) {
        case PreTokenizer::none: return "none";
        case PreTokenizer::qwen2: return "qwen2";
        case PreTokenizer::qwen35: return "qwen35";
        case PreTokenizer::gpt2: return "gpt-2";
        case PreTokenizer::llama3: return "llama-bpe";
        case PreTokenizer::llama_default: return "default";
        case PreTokenizer::gemma4: return "gemma4";
    }
    return "?";
}

static bool starts_ends(std::string_view s, std::string_view a, std::string_view b) {
    return s.size() >= a.size() + b.size() && s.substr(0, a.size()) == a &&
           s.substr(s.size() - b.size()) == b;
}

// Mirrors conversion/base.py does_token_look_special (docs/tokenizers.md §2.2).
bool token_looks_special(std::string_view t) {
    if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
    if (starts_ends(t, "<|", "|>")) return true;
    if (starts_ends(t, "<\xEF\xBD\x9C", "\xEF\xBD\x9C>")) return true;  // <｜ ... ｜> (deepseek)
    if (starts_ends(t, "<unused", ">")) return true;
    return false;
}

Status validate_vocab(const Vocab& v) {
    const std::string& src = v.source.empty() ? std::string("vocabulary") : v.source;
    if (v.tokens.empty()) return Error::format("{}: the vocabulary has no tokens", src);
    if (v.types.size() != v.tokens.size())
        return Error::format("{}: {} token types for {} tokens", src, v.types.size(), v.tokens.size());
    if (v.model == VocabModel::spm && v.scores.size() != v.tokens.size())
        return Error::format("{}: SentencePiece model needs one score per token, found {} for {} tokens",
                             src, v.scores.size(), v.tokens.size());
    if (v.model != VocabModel::spm && v.merges.empty())
        return Error::format("{}: {} vocabulary without merges", src, to_string(v.model));
    bool byte_level = v.model == VocabModel::byte_bpe;
    bool pre_ok = byte_level ? (v.pre != PreTokenizer::none && v.pre != PreTokenizer::gemma4)
                             : (v.pre == PreTokenizer::none || v.pre == PreTokenizer::gemma4);
    if (!pre_ok)
        return Error::format("{}: pre-tokenizer '{}' does not apply to a {} vocabulary", src,
                             to_string(v.pre), to_string(v.model));
    const std::pair<const char*, int32_t> ids[] = {
        {"bos", v.special.bos}, {"eos", v.special.eos}, {"eot", v.special.eot},
        {"eom", v.special.eom}, {"unk", v.special.unk}, {"pad", v.special.pad}};
    for (const auto& [name, id] : ids) {
        if (id < -1 || id >= v.n_tokens())
            return Error::format("{}: {} token id {} is outside the vocabulary (0..{})", src, name, id,
                                 v.n_tokens() - 1);
    }
    if (v.add_bos && v.special.bos < 0)
        return Error::format("{}: add_bos is set but there is no bos token", src);
    if (v.add_eos && v.special.eos < 0)
        return Error::format("{}: add_eos is set but there is no eos token", src);
    return {};
}

}  // namespace tdm
