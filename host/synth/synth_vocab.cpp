// SPDX-License-Identifier: Apache-2.0
// host/synth/synth_vocab.cpp: byte-level BPE training on the built-in corpus, and the GGUF and
// HF views of the resulting vocabulary (see synth_vocab.h for the layout).
//
// Training is the textbook algorithm (Sennrich et al. 2016, as HF tokenizers' BpeTrainer does
// it for byte-level models): pre-tokenize the corpus with the Qwen2 splitter, map every byte to
// its GPT-2 symbol, then repeatedly merge the most frequent adjacent pair. Ties go to the pair
// with the smaller (left id, right id), so the result is fully deterministic. Pair counts are
// updated incrementally (only the words that contain the merged pair are recounted), which keeps
// training all ~5,000 merges well under a second.
//
// The corpus alone yields too few distinct words to fill the "small" preset's 4,096 ids, so
// every ASCII word is also trained in lower, UPPER and Capitalized form, with and without a
// leading space (count 1 each unless the text has it). That is what a richer corpus would do
// to the vocabulary anyway: give common words their case and spacing variants.
#include "synth/synth_vocab.h"

#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <unordered_map>

namespace tdm::synth {
namespace {

constexpr int32_t kSpecialCount = 3;
constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";

constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::string_view kChatMl =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

// ===== training ===================================================================================

struct Training {
    std::vector<std::string> tokens;                // byte symbols, then new merge products
    std::vector<std::pair<int32_t, int32_t>> merges;  // rank order
    std::vector<int32_t> tokens_after;              // tokens.size() right after merge r
};

bool is_ascii_alpha(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
    return true;
}

std::string ascii_transform(std::string_view s, int mode) {  // 0 lower, 1 UPPER, 2 Capitalized
    std::string out(s);
    for (size_t i = 0; i < out.size(); ++i) {
        char& c = out[i];
        const bool upper = mode == 1 || (mode == 2 && i == 0);
        if (upper && c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
        if (!upper && c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    }
    return out;
}

// Word -> count: the corpus pieces plus their case/space variants (see the file comment).
std::map<std::string, int64_t> corpus_words() {
    std::vector<std::string_view> pieces;
    pretokenize(PreTokenizer::qwen2, synth_corpus(), pieces);
    std::map<std::string, int64_t> words;
    for (std::string_view p : pieces) ++words[std::string(p)];
    std::vector<std::string> originals;
    for (const auto& [w, c] : words) originals.push_back(w);
    for (const std::string& w : originals) {
        std::string_view base = w;
        if (base.size() > 1 && base[0] == ' ') base.remove_prefix(1);
        if (!is_ascii_alpha(base)) continue;
        for (int mode = 0; mode < 3; ++mode) {
            const std::string form = ascii_transform(base, mode);
            words.emplace(form, 1);        // no-op when the text has it
            words.emplace(" " + form, 1);
        }
    }
    return words;
}

class Trainer {
public:
    Training run() {
        Training t;
        // Byte symbols ordered by mapped code point: this is the order of Qwen's vocab.json.
        std::array<int, 256> bytes;
        for (int b = 0; b < 256; ++b) bytes[size_t(b)] = b;
        std::sort(bytes.begin(), bytes.end(),
                  [](int a, int b) { return unicode::byte_to_cp(uint8_t(a)) < unicode::byte_to_cp(uint8_t(b)); });
        std::array<int32_t, 256> byte_id{};
        for (int i = 0; i < 256; ++i) {
            std::string s;
            unicode::append(s, unicode::byte_to_cp(uint8_t(bytes[size_t(i)])));
            byte_id[size_t(bytes[size_t(i)])] = i;
            ids_.emplace(s, i);
            t.tokens.push_back(std::move(s));
        }
        for (const auto& [w, count] : corpus_words()) {
            Word word{{}, count};
            for (unsigned char ch : w) word.syms.push_back(byte_id[ch]);
            words_.push_back(std::move(word));
        }
        stamp_.assign(words_.size(), 0);
        for (size_t wi = 0; wi < words_.size(); ++wi) add_pairs(int32_t(wi), +1);

        while (!order_.empty()) {
            const uint64_t key = order_.begin()->second;
            const int32_t a = int32_t(key >> 32), b = int32_t(key & 0xffffffffu);
            const std::string text = t.tokens[size_t(a)] + t.tokens[size_t(b)];
            auto [it, fresh] = ids_.emplace(text, int32_t(t.tokens.size()));
            if (fresh) t.tokens.push_back(text);  // else: a second way to build an existing token
            t.merges.emplace_back(a, b);
            t.tokens_after.push_back(int32_t(t.tokens.size()));
            apply_merge(key, a, b, it->second, int32_t(t.merges.size()));
        }
        return t;
    }

private:
    struct Word {
        std::vector<int32_t> syms;
        int64_t count;
    };
    struct ByCountThenKey {  // most frequent first; ties: smaller (left, right) ids first
        bool operator()(const std::pair<int64_t, uint64_t>& x, const std::pair<int64_t, uint64_t>& y) const {
            return x.first != y.first ? x.first > y.first : x.second < y.second;
        }
    };

    static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

    void bump(uint64_t key, int64_t delta, int32_t word) {
        int64_t& c = counts_[key];
        if (c > 0) order_.erase({c, key});
        c += delta;
        if (c > 0) order_.insert({c, key});
        if (delta > 0) where_[key].push_back(word);
    }

    void add_pairs(int32_t wi, int sign) {
        const Word& w = words_[size_t(wi)];
        for (size_t i = 0; i + 1 < w.syms.size(); ++i)
            bump(pair_key(w.syms[i], w.syms[i + 1]), sign * w.count, wi);
    }

    void apply_merge(uint64_t key, int32_t a, int32_t b, int32_t merged, int32_t stamp) {
        std::vector<int32_t> list = std::move(where_[key]);
        where_.erase(key);
        for (int32_t wi : list) {
            if (stamp_[size_t(wi)] == stamp) continue;  // listed twice
            stamp_[size_t(wi)] = stamp;
            Word& w = words_[size_t(wi)];
            bool has = false;
            for (size_t i = 0; i + 1 < w.syms.size() && !has; ++i) has = w.syms[i] == a && w.syms[i + 1] == b;
            if (!has) continue;  // stale entry: an earlier merge already consumed the pair here
            add_pairs(wi, -1);
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
            add_pairs(wi, +1);
        }
    }

    std::unordered_map<std::string, int32_t> ids_;
    std::vector<Word> words_;
    std::vector<int32_t> stamp_;
    std::unordered_map<uint64_t, int64_t> counts_;
    std::unordered_map<uint64_t, std::vector<int32_t>> where_;
    std::set<std::pair<int64_t, uint64_t>, ByCountThenKey> order_;
};

const Training& training() {
    static const Training t = Trainer().run();  // thread-safe one-time initialisation
    return t;
}

}  // namespace

int32_t synth_max_text_tokens() { return int32_t(training().tokens.size()); }

Result<SynthVocabLayout> synth_vocab_layout(int32_t n_vocab) {
    if (n_vocab < 256 + kSpecialCount)
        return Error::format("synthetic vocabulary: n_vocab {} is too small: it needs at least {} ids (256 byte "
                             "symbols and 3 special tokens)",
                             n_vocab, 256 + kSpecialCount);
    const Training& t = training();
    SynthVocabLayout l;
    l.n_vocab = n_vocab;
    l.n_text = std::min(n_vocab - kSpecialCount, int32_t(t.tokens.size()));
    // The shortest merge prefix that creates the last text token we keep. tokens_after grows
    // by 0 or 1 per merge, so the first merge reaching n_text exists.
    if (l.n_text > 256) {
        auto it = std::lower_bound(t.tokens_after.begin(), t.tokens_after.end(), l.n_text);
        l.n_merges = int32_t(it - t.tokens_after.begin()) + 1;
    }
    l.endoftext = l.n_text;
    l.im_start = l.n_text + 1;
    l.im_end = l.n_text + 2;
    return l;
}

Result<Vocab> synth_vocab(int32_t n_vocab) {
    const SynthVocabLayout l = TDM_TRY(synth_vocab_layout(n_vocab));
    const Training& t = training();
    Vocab v;
    v.model = VocabModel::byte_bpe;
    v.pre = PreTokenizer::qwen2;
    v.add_bos = false;
    v.add_eos = false;
    v.tokens.assign(t.tokens.begin(), t.tokens.begin() + l.n_text);
    v.types.assign(size_t(l.n_text), TokenType::normal);  // the converter marks bytes NORMAL too
    for (std::string_view s : {kEndOfText, kImStart, kImEnd}) {
        v.tokens.emplace_back(s);
        v.types.push_back(TokenType::control);
    }
    for (int32_t id = l.n_text + kSpecialCount; id < n_vocab; ++id) {
        v.tokens.push_back("[PAD" + std::to_string(id) + "]");
        v.types.push_back(TokenType::unused);
    }
    v.merges.reserve(size_t(l.n_merges));
    for (int32_t r = 0; r < l.n_merges; ++r) {
        const auto [a, b] = t.merges[size_t(r)];
        v.merges.emplace_back(t.tokens[size_t(a)], t.tokens[size_t(b)]);
    }
    v.special.bos = l.endoftext;
    v.special.eos = l.im_end;
    v.special.pad = l.endoftext;
    v.source = fmt::format("synthetic qwen3 vocabulary ({} ids)", n_vocab);
    TDM_TRY(validate_vocab(v));
    return v;
}

// ===== HF files ===================================================================================

namespace {

using ojson = nlohmann::ordered_json;

ojson byte_level() {
    return ojson{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
}

ojson added_token(int32_t id, const std::string& text, bool special) {
    return ojson{{"id", id},          {"content", text},   {"single_word", false}, {"lstrip", false},
                 {"rstrip", false},   {"normalized", false}, {"special", special}};
}

// The token's text, or null for an absent special (-1), as tokenizer_config.json writes it.
ojson token_or_null(const Vocab& v, int32_t id) { return id >= 0 ? ojson(v.tokens[size_t(id)]) : ojson(nullptr); }

}  // namespace

std::string synth_tokenizer_json(const Vocab& v) {
    ojson added = ojson::array();
    ojson vocab = ojson::object();
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
        const TokenType type = v.types[size_t(id)];
        if (type == TokenType::control || type == TokenType::user_defined)
            added.push_back(added_token(id, v.tokens[size_t(id)], type == TokenType::control));
        else if (type != TokenType::unused)
            vocab[v.tokens[size_t(id)]] = id;
    }
    ojson merges = ojson::array();
    for (const auto& [a, b] : v.merges) merges.push_back(ojson::array({a, b}));

    ojson j;
    j["version"] = "1.0";
    j["truncation"] = nullptr;
    j["padding"] = nullptr;
    j["added_tokens"] = std::move(added);
    j["normalizer"] = ojson{{"type", "NFC"}};
    j["pre_tokenizer"] = ojson{
        {"type", "Sequence"},
        {"pretokenizers",
         ojson::array({ojson{{"type", "Split"},
                             {"pattern", ojson{{"Regex", std::string(kQwen2Regex)}}},
                             {"behavior", "Isolated"},
                             {"invert", false}},
                       byte_level()})}};
    j["post_processor"] = byte_level();
    j["decoder"] = byte_level();
    j["model"] = ojson{{"type", "BPE"},
                       {"dropout", nullptr},
                       {"unk_token", nullptr},
                       {"continuing_subword_prefix", ""},
                       {"end_of_word_suffix", ""},
                       {"fuse_unk", false},
                       {"byte_fallback", false},
                       {"ignore_merges", false},
                       {"vocab", std::move(vocab)},
                       {"merges", std::move(merges)}};
    return j.dump(2) + "\n";
}

std::string synth_tokenizer_config_json(const Vocab& v, int64_t model_max_length) {
    ojson decoder = ojson::object();
    ojson additional = ojson::array();
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
        const TokenType type = v.types[size_t(id)];
        if (type != TokenType::control && type != TokenType::user_defined) continue;
        ojson entry = added_token(id, v.tokens[size_t(id)], type == TokenType::control);
        entry.erase("id");
        decoder[std::to_string(id)] = std::move(entry);
        // Qwen lists every special token except <|endoftext|> (which is bos/pad) here.
        if (type == TokenType::control && id != v.special.pad) additional.push_back(v.tokens[size_t(id)]);
    }
    ojson j;
    j["add_bos_token"] = false;
    j["add_prefix_space"] = false;
    j["added_tokens_decoder"] = std::move(decoder);
    j["additional_special_tokens"] = std::move(additional);
    j["bos_token"] = nullptr;  // Qwen3: no BOS in text; config.json's bos_token_id is informational
    j["chat_template"] = std::string(kChatMl);
    j["clean_up_tokenization_spaces"] = false;
    j["eos_token"] = token_or_null(v, v.special.eos);
    j["errors"] = "replace";
    j["model_max_length"] = model_max_length;
    j["pad_token"] = token_or_null(v, v.special.pad);
    j["split_special_tokens"] = false;
    j["tokenizer_class"] = "Qwen2Tokenizer";
    j["unk_token"] = nullptr;
    return j.dump(2) + "\n";
}

std::string_view synth_chat_template() { return kChatMl; }

}  // namespace tdm::synth
