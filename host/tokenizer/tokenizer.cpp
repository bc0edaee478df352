// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/tokenizer.cpp: indexing a Vocab, the encode pipeline (special tokens ->
// normalise -> pre-tokenize -> merge) and decoding, per docs/tokenizers.md §2-§5.
// Not here: the merge loops themselves (bpe.cpp, spm.cpp) and the splitters (pretokenize.cpp).
#include "tokenizer/tokenizer.h"

#include "common/log.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"

#include <fmt/format.h>

namespace tdm {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK "▁"

// llama.cpp marks these texts as end-of-generation whatever their id (llama-vocab.cpp,
// "maintain a list of tokens that cause end-of-generation"), plus <eos> and Gemma 4's
// <turn|>. The first ones double as the eot candidates when no eot id is given.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<turn|>",
                                          "<|endoftext|>", "<EOT>", "_<EOT>", "<end_of_utterance>"};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",  "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
    "<eos>", "<turn|>"};

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size() + s.size() / 2);
    size_t pos = 0;
    while (true) {
        size_t hit = s.find(from, pos);
        if (hit == std::string_view::npos) break;
        out.append(s.substr(pos, hit - pos)).append(to);
        pos = hit + from.size();
    }
    out.append(s.substr(pos));
    return out;
}

// "<0xAB>" -> 0xAB, or -1 (uppercase hex, as SentencePiece writes it).
int parse_byte_token(std::string_view t) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    auto hex = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Byte-level token text -> bytes through the inverse GPT-2 map. As HF's ByteLevel
// decoder: if some character is not in the map, the text is taken as it is.
std::string unmap_byte_level(std::string_view text) {
    std::string out;
    size_t pos = 0;
    uint32_t cp;
    while (pos < text.size()) {
        if (!unicode::decode(text, pos, cp)) return std::string(text);
        int b = unicode::cp_to_byte(cp);
        if (b < 0) return std::string(text);
        out += static_cast<char>(b);
    }
    return out;
}

}  // namespace

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
    TDM_TRY(validate_vocab(vocab));
    Tokenizer t;
    t.vocab_ = std::move(vocab);
    const Vocab& v = t.vocab_;
    const std::string& src = v.source;
    t.index_.build(v.tokens);

    // Byte tokens.
    t.byte_ids_.fill(-1);
    for (int b = 0; b < 256; ++b) {
        if (v.model == VocabModel::byte_bpe) {
            std::string ch;
            unicode::append(ch, unicode::byte_to_cp(static_cast<uint8_t>(b)));
            t.byte_ids_[b] = t.index_.find(ch);
            if (t.byte_ids_[b] < 0)
                return Error::format("{}: byte-level vocabulary has no token for byte 0x{:02X} ('{}')",
                                     src, b, ch);
        } else {
            t.byte_ids_[b] = t.index_.find(fmt::format("<0x{:02X}>", b));
            // llama.cpp's byte_to_token falls back to the one-character token.
            if (t.byte_ids_[b] < 0 && v.model == VocabModel::spm && b < 0x80)
                t.byte_ids_[b] = t.index_.find(std::string(1, static_cast<char>(b)));
        }
    }

    // Merges: both sides and the result must be tokens (HF refuses such files too).
    t.merges_.reserve(v.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < v.merges.size(); ++rank) {
        const auto& [a, b] = v.merges[rank];
        int32_t ia = t.index_.find(a), ib = t.index_.find(b);
        if (ia < 0 || ib < 0)
            return Error::format("{}: merge #{} '{} {}' refers to unknown token '{}'", src, rank, a,
                                 b, ia < 0 ? a : b);
        joined.assign(a).append(b);
        int32_t ir = t.index_.find(joined);
        if (ir < 0)
            return Error::format("{}: merge #{} '{} {}' produces '{}', which is not a token", src,
                                 rank, a, b, joined);
        t.merges_.insert(ia, ib, {static_cast<int32_t>(rank), ir});  // duplicates: first rank wins
    }

    t.specials_ = SpecialTokenMatcher(v);

    t.eot_ = v.special.eot;
    for (std::string_view text : kEotTexts) {
        if (t.eot_ >= 0) break;
        t.eot_ = t.index_.find(text);
    }
    t.eog_.assign(v.tokens.size(), false);
    for (std::string_view text : kEogTexts)
        if (int32_t id = t.index_.find(text); id >= 0) t.eog_[id] = true;
    for (int32_t id : {v.special.eos, t.eot_, v.special.eom})
        if (id >= 0) t.eog_[id] = true;

    // What each token stands for, as bytes (§5.1 llama.cpp column, §5.2).
    t.pieces_.resize(v.tokens.size());
    bool byte_level = v.model == VocabModel::byte_bpe;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const std::string& text = v.tokens[id];
        switch (v.types[id]) {
            case TokenType::unused: break;
            case TokenType::control:
            case TokenType::unknown: t.pieces_[id] = text; break;
            case TokenType::byte:
                if (int b = parse_byte_token(text); b >= 0)
                    t.pieces_[id] = std::string(1, static_cast<char>(b));
                else
                    t.pieces_[id] = text;
                break;
            case TokenType::user_defined:
                // Raw text. For the SPM families also "▁" -> " ", which is what HF's
                // Replace decoder does to added tokens; GGUF files from llama.cpp's
                // converter already store user-defined spaces as " " (§4.3).
                t.pieces_[id] = byte_level ? text : replace_all(text, kSpaceMark, " ");
                break;
            case TokenType::undefined:
            case TokenType::normal:
                t.pieces_[id] = byte_level ? unmap_byte_level(text) : replace_all(text, kSpaceMark, " ");
                break;
        }
    }
    TDM_LOG_DEBUG("tokenizer", "{}: {} tokens, {} merges, {} special/added tokens, {}", src,
                  v.tokens.size(), t.merges_.size(), t.specials_.size(), to_string(v.model));
    return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
    std::string repaired;
    if (!unicode::is_valid(text)) {
        repaired = unicode::replace_invalid_per_byte(text);
        text = repaired;
    }
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    if (add_special && vocab_.add_bos) out.push_back(vocab_.special.bos);

    std::vector<SpecialTokenMatcher::Fragment> fragments;
    specials_.split(text, parse_special, fragments);
    bool after_token = true;  // the start of the text counts as "after a token" (§4.3 step 3)
    for (const auto& f : fragments) {
        if (f.id >= 0) {
            out.push_back(f.id);
            after_token = true;
        } else {
            encode_text(f.text, after_token, out);
            after_token = false;
        }
    }
    if (add_special && vocab_.add_eos) out.push_back(vocab_.special.eos);
    return out;
}

void Tokenizer::encode_text(std::string_view text, bool after_token, std::vector<int32_t>& out) const {
    if (vocab_.model == VocabModel::byte_bpe) {
        encode_byte_bpe(text, out);
        return;
    }
    // SPM families: optional space prefix, then every " " becomes "▁" (§4.2 step 2, §4.3 step 3).
    std::string escaped = replace_all(vocab_.add_space_prefix && after_token ? " " + std::string(text)
                                                                              : std::string(text),
                                      " ", kSpaceMark);
    if (vocab_.model == VocabModel::spm) {
        spm_tokenize(SpmVocabView{index_, vocab_.scores, byte_ids_, vocab_.special.unk}, escaped, out);
    } else {
        encode_spm_bpe(escaped, out);
    }
}

void Tokenizer::encode_byte_bpe(std::string_view text, std::vector<int32_t>& out) const {
    std::string normalized;
    if (vocab_.normalize_nfc) {
        normalized = unicode::nfc(text);
        text = normalized;
    }
    std::vector<std::string_view> pieces;
    pretokenize(vocab_.pre, text, pieces);
    BpeScratch scratch;
    std::vector<int32_t> symbols;
    std::string mapped;
    for (std::string_view piece : pieces) {
        if (vocab_.ignore_merges) {
            mapped.clear();
            for (char c : piece) unicode::append(mapped, unicode::byte_to_cp(static_cast<uint8_t>(c)));
            if (int32_t id = index_.find(mapped); id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        symbols.clear();
        for (char c : piece) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
        bpe_merge(merges_, symbols, scratch);
        out.insert(out.end(), symbols.begin(), symbols.end());
    }
}

// HF BPE with byte_fallback (models/bpe/model.rs merge_word) and llama.cpp "gemma4".
void Tokenizer::encode_spm_bpe(std::string_view escaped, std::vector<int32_t>& out) const {
    std::vector<std::string_view> pieces;
    pretokenize(vocab_.pre, escaped, pieces);
    BpeScratch scratch;
    std::vector<int32_t> symbols;
    for (std::string_view piece : pieces) {
        // gemma4: a run of newlines that is itself a token is emitted whole (§4.4 step 4).
        if (vocab_.ignore_merges || (vocab_.pre == PreTokenizer::gemma4 && piece[0] == '\n')) {
            if (int32_t id = index_.find(piece); id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        // One symbol per character; a character that is no token becomes its <0xXX>
        // byte tokens, or unk (consecutive unks fused, as fuse_unk) if a byte is missing.
        symbols.clear();
        bool last_unk = false;
        size_t pos = 0;
        uint32_t cp;
        while (pos < piece.size()) {
            size_t start = pos;
            unicode::decode(piece, pos, cp);
            std::string_view ch = piece.substr(start, pos - start);
            if (int32_t id = index_.find(ch); id >= 0) {
                symbols.push_back(id);
                last_unk = false;
                continue;
            }
            bool all_bytes = true;
            for (char c : ch) all_bytes &= byte_ids_[static_cast<uint8_t>(c)] >= 0;
            if (all_bytes) {
                for (char c : ch) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
                last_unk = false;
            } else if (vocab_.special.unk >= 0 && !last_unk) {
                symbols.push_back(vocab_.special.unk);
                last_unk = true;
            }
        }
        bpe_merge(merges_, symbols, scratch);
        out.insert(out.end(), symbols.begin(), symbols.end());
    }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
    std::string out;
    // SPM families (HF ByteFallback decoder): consecutive byte tokens are collected and
    // checked as a group; an invalid group becomes one U+FFFD per byte (§5.2).
    std::string byte_run;
    auto flush_bytes = [&] {
        if (byte_run.empty()) return;
        if (unicode::is_valid(byte_run)) {
            out += byte_run;
        } else {
            for (size_t i = 0; i < byte_run.size(); ++i) unicode::append(out, unicode::kReplacement);
        }
        byte_run.clear();
    };
    bool byte_level = vocab_.model == VocabModel::byte_bpe;
    for (int32_t id : ids) {
        if (!in_range(id)) {
            TDM_LOG_DEBUG("tokenizer", "decode: skipping id {} outside the vocabulary", id);
            continue;
        }
        TokenType type = vocab_.types[id];
        if (skip_special && (type == TokenType::control || type == TokenType::unknown)) continue;
        if (type == TokenType::byte && !byte_level) {
            byte_run += pieces_[id];
            continue;
        }
        flush_bytes();
        out += pieces_[id];
    }
    flush_bytes();
    // Byte-level: String::from_utf8_lossy over everything (§5.1 step 3). Elsewhere only
    // GGUF texts that are themselves invalid can get here.
    if (!unicode::is_valid(out)) out = unicode::replace_invalid_lossy(out);
    // The prefix space added by encode is not part of the text (HF Strip decoder).
    if (vocab_.add_space_prefix && !byte_level && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
    if (!in_range(id)) return {};
    TokenType type = vocab_.types[id];
    if (!special && (type == TokenType::control || type == TokenType::unknown)) return {};
    return pieces_[id];
}

bool Tokenizer::is_eog(int32_t id) const { return in_range(id) && eog_[id]; }

void Tokenizer::add_eog(int32_t id) {
    if (in_range(id)) eog_[id] = true;
}

const std::string& Tokenizer::token_text(int32_t id) const {
    static const std::string empty;
    return in_range(id) ? vocab_.tokens[id] : empty;
}

TokenType Tokenizer::token_type(int32_t id) const {
    return in_range(id) ? vocab_.types[id] : TokenType::undefined;
}

}  // namespace tdm
