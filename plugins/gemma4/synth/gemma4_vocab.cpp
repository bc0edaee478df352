// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_vocab.cpp: BPE training over characters (not bytes) on the built-in
// corpus, and the GGUF and HF views of the resulting Gemma-style vocabulary (layout in
// gemma4_vocab.h).
//
// Training follows SentencePiece's BPE on whitespace-separated pieces: the corpus is cut at
// newlines and tabs (never part of a merge, see the header), spaces become U+2581 and start a new
// word ("▁the"), and the most frequent adjacent pair is merged until none is left. Ties go to the
// smaller (left id, right id), so the result is fully deterministic. Pair counts are updated only
// for the words that contain the merged pair; the corpus is a few KB, so this is milliseconds.
#include "gemma4/synth/gemma4_vocab.h"

#include "synth/synth_vocab.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace tdm::synth {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space
constexpr int32_t kUnusedCount = 100;                   // <unused0> .. <unused99> at ids 5 .. 104

constexpr std::string_view kChatTemplate =
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}"
    "{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{- '<|turn>' + role + '\\n' + (message['content'] | trim) + '<turn|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}{%- endif -%}";

// The tokens below kGemma4FirstText, in id order, with their types.
std::vector<std::pair<std::string, TokenType>> fixed_tokens() {
    std::vector<std::pair<std::string, TokenType>> t;
    for (const char* s : {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"}) t.emplace_back(s, TokenType::control);
    for (int i = 0; i < kUnusedCount; ++i) t.emplace_back(fmt::format("<unused{}>", i), TokenType::control);
    t.emplace_back("<|turn>", TokenType::control);
    t.emplace_back("<turn|>", TokenType::control);
    for (int n = 1; n <= kGemma4NewlineRuns; ++n) t.emplace_back(std::string(size_t(n), '\n'), TokenType::normal);
    for (int b = 0; b < 256; ++b) t.emplace_back(fmt::format("<0x{:02X}>", b), TokenType::byte);
    return t;
}

// ===== training ===================================================================================

struct Training {
    std::vector<std::string> tokens;                  // characters, then new merge products
    int32_t n_chars = 0;
    std::vector<std::pair<int32_t, int32_t>> merges;  // rank order, indices into tokens
    std::vector<int32_t> tokens_after;                // tokens.size() right after merge r
};

size_t utf8_length(unsigned char lead) {
    if (lead >= 0xF0) return 4;
    if (lead >= 0xE0) return 3;
    if (lead >= 0xC0) return 2;
    return 1;
}

std::vector<std::string> split_chars(std::string_view word) {
    std::vector<std::string> out;
    for (size_t i = 0; i < word.size();) {
        const size_t n = std::min(utf8_length(static_cast<unsigned char>(word[i])), word.size() - i);
        out.emplace_back(word.substr(i, n));
        i += n;
    }
    return out;
}

// Word -> count: the corpus cut at \n, \t, \r; spaces as U+2581, each run of them opening a word.
std::map<std::string, int64_t> corpus_words() {
    std::map<std::string, int64_t> words;
    std::string word;
    bool in_space_run = false;
    auto flush = [&] {
        if (!word.empty()) ++words[word];
        word.clear();
        in_space_run = false;
    };
    for (char c : synth_corpus()) {
        if (c == '\n' || c == '\t' || c == '\r') {
            flush();
        } else if (c == ' ') {
            if (!in_space_run) flush();
            word += kSpaceMark;
            in_space_run = true;
        } else {
            word += c;
            in_space_run = false;
        }
    }
    flush();
    return words;
}

Training train() {
    Training t;
    const std::map<std::string, int64_t> counted = corpus_words();
    std::set<std::string> chars;
    for (const auto& [w, count] : counted)
        for (std::string& ch : split_chars(w)) chars.insert(std::move(ch));
    std::unordered_map<std::string, int32_t> ids;
    for (const std::string& ch : chars) {  // byte order of UTF-8 = code point order
        ids.emplace(ch, int32_t(t.tokens.size()));
        t.tokens.push_back(ch);
    }
    t.n_chars = int32_t(t.tokens.size());

    struct Word {
        std::vector<int32_t> syms;
        int64_t count;
    };
    std::vector<Word> words;
    for (const auto& [w, count] : counted) {
        Word word{{}, count};
        for (const std::string& ch : split_chars(w)) word.syms.push_back(ids.at(ch));
        words.push_back(std::move(word));
    }
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;  // ordered: ties go to the smaller key
    auto count_pairs = [&](const Word& w, int64_t sign) {
        for (size_t i = 0; i + 1 < w.syms.size(); ++i) {
            auto it = pairs.emplace(std::make_pair(w.syms[i], w.syms[i + 1]), 0).first;
            it->second += sign * w.count;
            if (it->second == 0) pairs.erase(it);
        }
    };
    for (const Word& w : words) count_pairs(w, +1);

    while (!pairs.empty()) {
        auto best = pairs.begin();
        for (auto it = pairs.begin(); it != pairs.end(); ++it)
            if (it->second > best->second) best = it;
        const auto [a, b] = best->first;
        const std::string text = t.tokens[size_t(a)] + t.tokens[size_t(b)];
        auto [it, fresh] = ids.emplace(text, int32_t(t.tokens.size()));
        if (fresh) t.tokens.push_back(text);  // else: a second way to build an existing token
        const int32_t merged = it->second;
        t.merges.emplace_back(a, b);
        t.tokens_after.push_back(int32_t(t.tokens.size()));
        for (Word& w : words) {
            bool has = false;
            for (size_t i = 0; i + 1 < w.syms.size() && !has; ++i) has = w.syms[i] == a && w.syms[i + 1] == b;
            if (!has) continue;
            count_pairs(w, -1);
            std::vector<int32_t> out;
            for (size_t i = 0; i < w.syms.size(); ++i) {
                if (i + 1 < w.syms.size() && w.syms[i] == a && w.syms[i + 1] == b) {
                    out.push_back(merged);  // leftmost first, non-overlapping, as BPE applies it
                    ++i;
                } else {
                    out.push_back(w.syms[i]);
                }
            }
            w.syms = std::move(out);
            count_pairs(w, +1);
        }
    }
    return t;
}

const Training& training() {
    static const Training t = train();  // thread-safe one-time initialisation
    return t;
}

}  // namespace

Result<Gemma4VocabLayout> gemma4_vocab_layout(int32_t n_vocab) {
    const Training& t = training();
    // At least one merge: a merge-based vocabulary without merges is not one (validate_vocab).
    const int32_t min_vocab = kGemma4FirstText + t.n_chars + 1;
    if (n_vocab < min_vocab)
        return Error::format("synthetic gemma4 vocabulary: n_vocab {} is too small: it needs at least {} ids "
                             "({} fixed ids, {} characters and one merge)",
                             n_vocab, min_vocab, kGemma4FirstText, t.n_chars);
    Gemma4VocabLayout l;
    l.n_vocab = n_vocab;
    l.n_chars = t.n_chars;
    const int32_t n_text = std::min(n_vocab - kGemma4FirstText, int32_t(t.tokens.size()));
    l.text_end = kGemma4FirstText + n_text;
    // The shortest merge prefix that creates the last text token kept (tokens_after grows by 0
    // or 1 per merge).
    auto it = std::lower_bound(t.tokens_after.begin(), t.tokens_after.end(), n_text);
    l.n_merges = int32_t(it - t.tokens_after.begin()) + 1;
    return l;
}

Result<Vocab> gemma4_vocab(int32_t n_vocab) {
    const Gemma4VocabLayout l = TDM_TRY(gemma4_vocab_layout(n_vocab));
    const Training& t = training();
    Vocab v;
    v.model = VocabModel::spm_bpe;
    v.pre = PreTokenizer::gemma4;
    v.add_bos = true;
    v.add_eos = false;
    v.add_space_prefix = false;
    for (auto& [text, type] : fixed_tokens()) {
        v.tokens.push_back(std::move(text));
        v.types.push_back(type);
    }
    for (int32_t i = 0; i < l.text_end - kGemma4FirstText; ++i) {
        v.tokens.push_back(t.tokens[size_t(i)]);
        v.types.push_back(TokenType::normal);
    }
    for (int32_t id = l.text_end; id < n_vocab; ++id) {
        v.tokens.push_back("[PAD" + std::to_string(id) + "]");
        v.types.push_back(TokenType::unused);
    }
    v.merges.reserve(size_t(l.n_merges));
    for (int32_t r = 0; r < l.n_merges; ++r) {
        const auto [a, b] = t.merges[size_t(r)];
        v.merges.emplace_back(t.tokens[size_t(a)], t.tokens[size_t(b)]);
    }
    v.special.bos = kGemma4Bos;
    v.special.eos = kGemma4Eos;
    v.special.pad = kGemma4Pad;
    v.special.unk = kGemma4Unk;
    v.source = fmt::format("synthetic gemma4 vocabulary ({} ids)", n_vocab);
    TDM_TRY(validate_vocab(v));
    return v;
}

// ===== HF files ===================================================================================

namespace {

using ojson = nlohmann::ordered_json;

ojson added_token(int32_t id, const std::string& text, bool special) {
    return ojson{{"id", id},        {"content", text},     {"single_word", false}, {"lstrip", false},
                 {"rstrip", false}, {"normalized", false}, {"special", special}};
}

ojson replace(std::string_view from, std::string_view to) {
    return ojson{{"type", "Replace"}, {"pattern", ojson{{"String", std::string(from)}}}, {"content", std::string(to)}};
}

// Gemma lists its control tokens and its newline runs as added tokens (the latter not special).
bool is_added(const Vocab& v, int32_t id) {
    return v.types[size_t(id)] == TokenType::control ||
           (id >= kGemma4FirstNewline && id < kGemma4FirstNewline + kGemma4NewlineRuns);
}

ojson special_entry(const Vocab& v, int32_t id) {
    return ojson{{"id", v.tokens[size_t(id)]}, {"ids", ojson::array({id})}, {"tokens", ojson::array({v.tokens[size_t(id)]})}};
}

}  // namespace

std::string gemma4_tokenizer_json(const Vocab& v) {
    ojson added = ojson::array();
    ojson vocab = ojson::object();
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
        const TokenType type = v.types[size_t(id)];
        if (type == TokenType::unused) continue;  // config.json's vocab_size covers them
        vocab[v.tokens[size_t(id)]] = id;
        if (is_added(v, id)) added.push_back(added_token(id, v.tokens[size_t(id)], type == TokenType::control));
    }
    ojson merges = ojson::array();
    for (const auto& [a, b] : v.merges) merges.push_back(ojson::array({a, b}));

    const std::string bos = v.tokens[size_t(v.special.bos)];
    ojson j;
    j["version"] = "1.0";
    j["truncation"] = nullptr;
    j["padding"] = nullptr;
    j["added_tokens"] = std::move(added);
    j["normalizer"] = replace(" ", kSpaceMark);
    j["pre_tokenizer"] = ojson{{"type", "Split"},
                               {"pattern", ojson{{"String", " "}}},
                               {"behavior", "MergedWithPrevious"},
                               {"invert", false}};
    j["post_processor"] = ojson{
        {"type", "TemplateProcessing"},
        {"single", ojson::array({ojson{{"SpecialToken", ojson{{"id", bos}, {"type_id", 0}}}},
                                 ojson{{"Sequence", ojson{{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", ojson::array({ojson{{"SpecialToken", ojson{{"id", bos}, {"type_id", 0}}}},
                               ojson{{"Sequence", ojson{{"id", "A"}, {"type_id", 0}}}},
                               ojson{{"SpecialToken", ojson{{"id", bos}, {"type_id", 1}}}},
                               ojson{{"Sequence", ojson{{"id", "B"}, {"type_id", 1}}}}})},
        {"special_tokens", ojson{{bos, special_entry(v, v.special.bos)}}}};
    j["decoder"] = ojson{{"type", "Sequence"},
                         {"decoders", ojson::array({replace(kSpaceMark, " "), ojson{{"type", "ByteFallback"}},
                                                    ojson{{"type", "Fuse"}}})}};
    j["model"] = ojson{{"type", "BPE"},
                       {"dropout", nullptr},
                       {"unk_token", v.tokens[size_t(v.special.unk)]},
                       {"continuing_subword_prefix", nullptr},
                       {"end_of_word_suffix", nullptr},
                       {"fuse_unk", true},
                       {"byte_fallback", true},
                       {"ignore_merges", false},
                       {"vocab", std::move(vocab)},
                       {"merges", std::move(merges)}};
    return j.dump(2) + "\n";
}

std::string gemma4_tokenizer_config_json(const Vocab& v, int64_t model_max_length) {
    ojson decoder = ojson::object();
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
        if (!is_added(v, id)) continue;
        ojson entry = added_token(id, v.tokens[size_t(id)], v.types[size_t(id)] == TokenType::control);
        entry.erase("id");
        decoder[std::to_string(id)] = std::move(entry);
    }
    ojson j;
    j["add_bos_token"] = true;
    j["add_eos_token"] = false;
    j["added_tokens_decoder"] = std::move(decoder);
    j["bos_token"] = v.tokens[size_t(v.special.bos)];
    j["chat_template"] = std::string(kChatTemplate);
    j["clean_up_tokenization_spaces"] = false;
    j["eos_token"] = v.tokens[size_t(v.special.eos)];
    j["model_max_length"] = model_max_length;
    j["pad_token"] = v.tokens[size_t(v.special.pad)];
    j["padding_side"] = "left";
    j["spaces_between_special_tokens"] = false;
    j["tokenizer_class"] = "GemmaTokenizer";
    j["unk_token"] = v.tokens[size_t(v.special.unk)];
    j["use_default_system_prompt"] = false;
    return j.dump(2) + "\n";
}

std::string_view gemma4_chat_template() { return kChatTemplate; }

}  // namespace tdm::synth
