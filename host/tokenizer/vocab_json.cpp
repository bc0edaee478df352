// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/vocab_json.cpp: reading HF tokenizer.json / tokenizer_config.json.
// The pipeline description (normalizer, pre_tokenizer, decoder, post_processor) is
// matched against the shapes tandem implements; anything else is an error, because a
// silently different tokenization is worse than a refusal.
#include "tokenizer/vocab_json.h"

#include "common/file_read.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tdm {
namespace {

using json = nlohmann::json;

constexpr std::string_view kSpaceMarkVocabJson = "\xE2\x96\x81";  // "▁"

// Ids are dense in real files; the gaps a file may leave (filled with [PAD<id>] tokens) are
// bounded, so that a few bytes naming id 16,000,000 cannot make the loader allocate and index
// millions of tokens (found by tests/fuzz/tokenizer_json.cpp).
constexpr int64_t kMaxTokenId = (1 << 24) - 1;
constexpr int64_t kMaxIdGap = 65536;

// The largest id a file defining `entries` tokens may use.
int64_t max_token_id(size_t entries) { return std::min<int64_t>(kMaxTokenId, int64_t(entries) + kMaxIdGap); }

// The Split regexes HF tokenizers use for the pre-tokenizers we implement (§3.2).
struct KnownRegex {
    std::string_view regex;
    PreTokenizer pre;
};
constexpr KnownRegex kKnownRegexes[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizer::qwen2},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizer::qwen35},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizer::llama3},
    {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", PreTokenizer::gpt2},
};

// A member that is present and not null, else nullptr.
const json* member(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string type_of(const json* obj) {
    if (!obj) return "null";
    const json* t = member(*obj, "type");
    return t && t->is_string() ? t->get<std::string>() : std::string("(no type)");
}

bool bool_or(const json& obj, const char* key, bool dflt) {
    const json* v = member(obj, key);
    return v && v->is_boolean() ? v->get<bool>() : dflt;
}

// {"type": "Replace", "pattern": {"String": from}, "content": to}
bool is_replace(const json* n, std::string_view from, std::string_view to) {
    if (type_of(n) != "Replace") return false;
    const json* p = member(*n, "pattern");
    const json* s = p ? member(*p, "String") : nullptr;
    const json* c = member(*n, "content");
    return s && s->is_string() && c && c->is_string() && s->get<std::string>() == from &&
           c->get<std::string>() == to;
}

Result<json> parse_json(std::string_view text, const std::string& source) {
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        return Error::format("{}: not valid JSON: {}", source, e.what());
    }
}

// Normalizer, pre-tokenizer and decoder of a byte-level BPE tokenizer (§3).
Status read_byte_level_pipeline(const json& j, Vocab& v) {
    const json* norm = member(j, "normalizer");
    std::string nt = type_of(norm);
    if (nt == "NFC") {
        v.normalize_nfc = true;
    } else if (nt == "Sequence" && member(*norm, "normalizers") &&
               (*norm)["normalizers"].size() == 1 && type_of(&(*norm)["normalizers"][0]) == "NFC") {
        v.normalize_nfc = true;
    } else if (norm) {
        return Error::format("{}: byte-level BPE with normalizer '{}' is not supported (null or NFC)",
                             v.source, nt);
    }

    const json* pre = member(j, "pre_tokenizer");
    std::string pt = type_of(pre);
    const json* byte_level = nullptr;
    const json* split = nullptr;
    if (pt == "ByteLevel") {
        byte_level = pre;
    } else if (pt == "Sequence" && member(*pre, "pretokenizers") && (*pre)["pretokenizers"].size() == 2) {
        split = &(*pre)["pretokenizers"][0];
        byte_level = &(*pre)["pretokenizers"][1];
        if (type_of(split) != "Split" || type_of(byte_level) != "ByteLevel")
            return Error::format("{}: pre_tokenizer Sequence[{}, {}] is not supported (expected "
                                 "Sequence[Split, ByteLevel])", v.source, type_of(split), type_of(byte_level));
    } else {
        return Error::format("{}: byte-level BPE with pre_tokenizer '{}' is not supported", v.source, pt);
    }
    if (bool_or(*byte_level, "add_prefix_space", false))
        return Error::format("{}: ByteLevel add_prefix_space=true is not supported", v.source);
    if (!split) {
        if (!bool_or(*byte_level, "use_regex", true))
            return Error::format("{}: ByteLevel without a regex and without a Split is not supported", v.source);
        v.pre = PreTokenizer::gpt2;
    } else {
        if (bool_or(*byte_level, "use_regex", true))
            return Error::format("{}: Split followed by ByteLevel use_regex=true is not supported", v.source);
        const json* pattern = member(*split, "pattern");
        const json* regex = pattern ? member(*pattern, "Regex") : nullptr;
        const json* behavior = member(*split, "behavior");
        if (!regex || !regex->is_string())
            return Error::format("{}: the Split pre-tokenizer has no Regex pattern", v.source);
        if (!behavior || *behavior != "Isolated" || bool_or(*split, "invert", false))
            return Error::format("{}: Split behavior '{}' (invert {}) is not supported (Isolated)", v.source,
                                 behavior ? behavior->dump() : "null", bool_or(*split, "invert", false));
        std::string re = regex->get<std::string>();
        bool found = false;
        for (const auto& k : kKnownRegexes) {
            if (k.regex == re) {
                v.pre = k.pre;
                found = true;
            }
        }
        if (!found)
            return Error::format("{}: unknown pre-tokenizer regex '{}' (known: qwen2, qwen35, llama3, gpt-2)",
                                 v.source, re);
    }
    const json* dec = member(j, "decoder");
    if (type_of(dec) != "ByteLevel")
        return Error::format("{}: byte-level BPE with decoder '{}' is not supported (ByteLevel)", v.source,
                             type_of(dec));
    return {};
}

// Normalizer, pre-tokenizer and decoder of a byte-fallback BPE tokenizer (§4.2).
Status read_spm_pipeline(const json& j, Vocab& v) {
    const json* norm = member(j, "normalizer");
    if (is_replace(norm, " ", kSpaceMarkVocabJson)) {
        v.add_space_prefix = false;
    } else if (type_of(norm) == "Sequence" && member(*norm, "normalizers") &&
               (*norm)["normalizers"].size() == 2 && type_of(&(*norm)["normalizers"][0]) == "Prepend" &&
               (*norm)["normalizers"][0].value("prepend", "") == kSpaceMarkVocabJson &&
               is_replace(&(*norm)["normalizers"][1], " ", kSpaceMarkVocabJson)) {
        v.add_space_prefix = true;  // Llama 2 style dummy prefix
    } else {
        return Error::format("{}: byte-fallback BPE with normalizer '{}' is not supported (Replace ' ' -> "
                             "U+2581, optionally after Prepend U+2581)", v.source, type_of(norm));
    }

    // After the normalizer there are no spaces left, so Split(" ") cuts nothing.
    const json* pre = member(j, "pre_tokenizer");
    if (pre) {
        const json* pattern = member(*pre, "pattern");
        const json* str = pattern ? member(*pattern, "String") : nullptr;
        if (type_of(pre) != "Split" || !str || *str != " ")
            return Error::format("{}: byte-fallback BPE with pre_tokenizer '{}' is not supported (none, or "
                                 "Split on ' ')", v.source, type_of(pre));
    }

    const json* dec = member(j, "decoder");
    const json* list = type_of(dec) == "Sequence" ? member(*dec, "decoders") : nullptr;
    bool ok = list && list->is_array() && list->size() >= 3 && is_replace(&(*list)[0], kSpaceMarkVocabJson, " ") &&
              type_of(&(*list)[1]) == "ByteFallback" && type_of(&(*list)[2]) == "Fuse";
    bool strip = ok && list->size() == 4 && type_of(&(*list)[3]) == "Strip" &&
                 (*list)[3].value("content", "") == " " && (*list)[3].value("start", 0) == 1 &&
                 (*list)[3].value("stop", 0) == 0;
    if (!ok || list->size() != (strip ? 4u : 3u) || strip != v.add_space_prefix)
        return Error::format("{}: decoder '{}' does not match the normalizer (expected Sequence[Replace "
                             "U+2581 -> ' ', ByteFallback, Fuse{}])", v.source, dec ? dec->dump() : "null",
                             v.add_space_prefix ? ", Strip ' ' 1 0" : "");
    return {};
}

// {"content": "<s>"} or "<s>" or null -> the text.
std::string token_name(const json* t) {
    if (!t) return {};
    if (t->is_string()) return t->get<std::string>();
    const json* c = member(*t, "content");
    return c && c->is_string() ? c->get<std::string>() : std::string();
}

Result<int32_t> id_of(const Vocab& v, const std::string& text, const char* what) {
    for (int32_t id = v.n_tokens() - 1; id >= 0; --id)
        if (v.tokens[id] == text) return id;
    return Error::format("{}: {} '{}' is not a token of the vocabulary", v.source, what, text);
}

// post_processor TemplateProcessing "single": [bos?, A, eos?] (§4.2 step 5).
Status read_post_processor(const json& j, Vocab& v) {
    const json* post = member(j, "post_processor");
    std::string pt = type_of(post);
    if (!post || pt == "ByteLevel") return {};
    if (pt != "TemplateProcessing")
        return Error::format("{}: post_processor '{}' is not supported (ByteLevel, TemplateProcessing)",
                             v.source, pt);
    const json* single = member(*post, "single");
    if (!single || !single->is_array())
        return Error::format("{}: TemplateProcessing without a 'single' template", v.source);
    bool seen_sequence = false;
    for (const json& item : *single) {
        if (member(item, "Sequence")) {
            if (seen_sequence) return Error::format("{}: TemplateProcessing with two sequences", v.source);
            seen_sequence = true;
            continue;
        }
        const json* st = member(item, "SpecialToken");
        const json* name = st ? member(*st, "id") : nullptr;
        if (!name || !name->is_string())
            return Error::format("{}: unsupported TemplateProcessing item {}", v.source, item.dump());
        int32_t id = TDM_TRY(id_of(v, name->get<std::string>(), "post_processor token"));
        if (!seen_sequence) {
            if (v.add_bos) return Error::format("{}: TemplateProcessing adds two tokens before the text", v.source);
            v.add_bos = true;
            v.special.bos = id;
        } else {
            if (v.add_eos) return Error::format("{}: TemplateProcessing adds two tokens after the text", v.source);
            v.add_eos = true;
            v.special.eos = id;
        }
    }
    return {};
}

Status read_config(std::string_view config_json, const std::string& config_source, Vocab& v) {
    json cfg = TDM_TRY(parse_json(config_json, config_source));
    if (!cfg.is_object()) return Error::format("{}: expected a JSON object", config_source);
    if (bool_or(cfg, "split_special_tokens", false))
        return Error::format("{}: split_special_tokens=true is not supported", config_source);
    if (const json* b = member(cfg, "add_bos_token"); b && b->is_boolean()) v.add_bos = b->get<bool>();
    if (const json* b = member(cfg, "add_eos_token"); b && b->is_boolean()) v.add_eos = b->get<bool>();
    const std::pair<const char*, int32_t*> names[] = {{"bos_token", &v.special.bos},
                                                      {"eos_token", &v.special.eos},
                                                      {"unk_token", &v.special.unk},
                                                      {"pad_token", &v.special.pad}};
    for (const auto& [key, slot] : names) {
        if (!cfg.contains(key)) continue;
        std::string text = token_name(member(cfg, key));
        if (text.empty()) {
            *slot = -1;  // explicitly null ("bos_token": null for Qwen)
            continue;
        }
        *slot = TDM_TRY_CTX(id_of(v, text, key), config_source);
    }
    return {};
}

// Added tokens: the same id as in model.vocab (Gemma) or new ids past it (Qwen).
Status read_added_tokens(const json& j, Vocab& v, std::vector<bool>& has_token) {
    const json* added = member(j, "added_tokens");
    if (!added) return {};
    if (!added->is_array()) return Error::format("{}: added_tokens is not an array", v.source);
    for (const json& t : *added) {
        const json* id_j = member(t, "id");
        const json* content_j = member(t, "content");
        if (!id_j || !id_j->is_number_integer() || !content_j || !content_j->is_string())
            return Error::format("{}: malformed added token {}", v.source, t.dump());
        int64_t id = id_j->get<int64_t>();
        std::string content = content_j->get<std::string>();
        if (id < 0 || id > max_token_id(v.tokens.size() + added->size()))
            return Error::format("{}: added token '{}' has id {} out of range (at most {}: {} tokens are "
                                 "defined)", v.source, content, id, max_token_id(v.tokens.size() + added->size()),
                                 v.tokens.size() + added->size());
        for (const char* flag : {"lstrip", "rstrip", "single_word"})
            if (bool_or(t, flag, false))
                return Error::format("{}: added token '{}' sets {}, which is not supported", v.source, content, flag);
        if (bool_or(t, "normalized", false)) {
            // Matching after normalisation equals matching the raw text when the
            // normalizer leaves the token unchanged; the space prefix breaks that.
            bool same = v.model == VocabModel::byte_bpe
                            ? (!v.normalize_nfc || unicode::nfc(content) == content)
                            : (!v.add_space_prefix && content.find(' ') == std::string::npos);
            if (!same)
                return Error::format("{}: added token '{}' is normalized:true and the normalizer changes it; "
                                     "not supported", v.source, content);
        }
        size_t uid = static_cast<size_t>(id);
        if (uid >= v.tokens.size()) {
            v.tokens.resize(uid + 1);
            v.types.resize(uid + 1, TokenType::unused);
            has_token.resize(uid + 1, false);
        }
        if (has_token[uid] && v.tokens[uid] != content)
            return Error::format("{}: added token '{}' has id {}, which the vocabulary gives to '{}'", v.source,
                                 content, id, v.tokens[uid]);
        v.tokens[uid] = content;
        has_token[uid] = true;
        bool special = bool_or(t, "special", false);
        v.types[uid] = special || token_looks_special(content) ? TokenType::control : TokenType::user_defined;
    }
    return {};
}

Status read_model(const json& model, Vocab& v, std::vector<bool>& has_token) {
    const json* vocab = member(model, "vocab");
    if (!vocab || !vocab->is_object())
        return Error::format("{}: model.vocab is missing or not an object", v.source);
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
        if (!it.value().is_number_integer())
            return Error::format("{}: model.vocab['{}'] is not an integer", v.source, it.key());
        int64_t id = it.value().get<int64_t>();
        if (id < 0 || id > max_token_id(vocab->size()))
            return Error::format("{}: model.vocab['{}'] = {} is out of range (at most {}: the vocab has {} "
                                 "entries)", v.source, it.key(), id, max_token_id(vocab->size()), vocab->size());
        size_t uid = static_cast<size_t>(id);
        if (uid >= v.tokens.size()) {
            v.tokens.resize(uid + 1);
            v.types.resize(uid + 1, TokenType::unused);
            has_token.resize(uid + 1, false);
        }
        if (has_token[uid])
            return Error::format("{}: model.vocab gives id {} to both '{}' and '{}'", v.source, id,
                                 v.tokens[uid], it.key());
        v.tokens[uid] = it.key();
        has_token[uid] = true;
        bool byte_piece = v.model != VocabModel::byte_bpe && it.key().size() == 6 &&
                          it.key().compare(0, 3, "<0x") == 0 && it.key()[5] == '>';
        v.types[uid] = byte_piece ? TokenType::byte : TokenType::normal;
    }

    const json* merges = member(model, "merges");
    if (!merges || !merges->is_array())
        return Error::format("{}: model.merges is missing or not an array", v.source);
    v.merges.reserve(merges->size());
    for (size_t rank = 0; rank < merges->size(); ++rank) {
        const json& m = (*merges)[rank];
        if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            v.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        } else if (m.is_string()) {
            // Legacy "a b": exactly one space (HF convert_merges_to_hashmap).
            std::string s = m.get<std::string>();
            size_t sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                return Error::format("{}: merge #{} '{}' is not two tokens separated by one space", v.source,
                                     rank, s);
            v.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else {
            return Error::format("{}: merge #{} is malformed: {}", v.source, rank, m.dump());
        }
    }
    return {};
}

}  // namespace

Result<Vocab> load_vocab_hf(std::string_view tokenizer_json, std::string_view config_json, std::string source) {
    Vocab v;
    v.source = std::move(source);
    json j = TDM_TRY(parse_json(tokenizer_json, v.source));
    if (!j.is_object()) return Error::format("{}: expected a JSON object", v.source);
    const json* model = member(j, "model");
    if (!model || !model->is_object()) return Error::format("{}: no 'model' object", v.source);
    std::string mt = type_of(model);
    if (mt != "BPE")
        return Error::format("{}: unsupported tokenizer model type '{}' (supported: BPE)", v.source, mt);
    if (const json* d = member(*model, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
        return Error::format("{}: BPE dropout {} is not supported", v.source, d->dump());
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const json* s = member(*model, key);
        if (s && !(s->is_string() && s->get<std::string>().empty()))
            return Error::format("{}: BPE {} {} is not supported", v.source, key, s->dump());
    }
    v.ignore_merges = bool_or(*model, "ignore_merges", false);

    // Which family: byte-level BPE (ByteLevel pre-tokenizer/decoder) or byte fallback.
    bool byte_fallback = bool_or(*model, "byte_fallback", false);
    std::string dec = type_of(member(j, "decoder"));
    if (dec == "ByteLevel") {
        if (byte_fallback)
            return Error::format("{}: byte-level BPE with byte_fallback=true is not supported", v.source);
        v.model = VocabModel::byte_bpe;
        TDM_TRY(read_byte_level_pipeline(j, v));
    } else if (byte_fallback) {
        v.model = VocabModel::spm_bpe;
        v.pre = PreTokenizer::none;
        TDM_TRY(read_spm_pipeline(j, v));
    } else {
        return Error::format("{}: BPE tokenizer with decoder '{}', normalizer '{}', pre_tokenizer '{}' and "
                             "no byte_fallback is neither byte-level nor SentencePiece-style; not supported",
                             v.source, dec, type_of(member(j, "normalizer")), type_of(member(j, "pre_tokenizer")));
    }

    std::vector<bool> has_token;
    TDM_TRY(read_model(*model, v, has_token));
    TDM_TRY(read_added_tokens(j, v, has_token));
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        if (!has_token[id]) v.tokens[id] = "[PAD" + std::to_string(id) + "]";  // as the GGUF converter
    }

    TDM_TRY(read_post_processor(j, v));
    if (const json* unk = member(*model, "unk_token"); unk && unk->is_string())
        v.special.unk = TDM_TRY(id_of(v, unk->get<std::string>(), "model.unk_token"));
    if (!config_json.empty()) TDM_TRY(read_config(config_json, v.source + " (tokenizer_config.json)", v));
    TDM_TRY(validate_vocab(v));
    return v;
}

namespace {

// The largest tokenizer.json files in use are about 35 MiB (262k-token vocabularies);
// tokenizer_config.json holds a chat template and a few flags.
constexpr uint64_t kMaxTokenizerJsonBytes = 512ull << 20;
constexpr uint64_t kMaxTokenizerConfigBytes = 64ull << 20;

}  // namespace

Result<Vocab> load_vocab_hf_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path json_path = fs::is_directory(path, ec) ? fs::path(path) / "tokenizer.json" : fs::path(path);
    std::string text = TDM_TRY(read_regular_file(json_path.string(), kMaxTokenizerJsonBytes, "tokenizer file"));
    std::string config;
    fs::path config_path = json_path.parent_path() / "tokenizer_config.json";
    if (fs::exists(config_path, ec))
        config = TDM_TRY(read_regular_file(config_path.string(), kMaxTokenizerConfigBytes, "tokenizer config"));
    return load_vocab_hf(text, config, json_path.string());
}

Result<Tokenizer> load_tokenizer_hf(std::string_view tokenizer_json, std::string_view config_json,
                                    std::string source) {
    Vocab v = TDM_TRY(load_vocab_hf(tokenizer_json, config_json, std::move(source)));
    return Tokenizer::create(std::move(v));
}

Result<Tokenizer> load_tokenizer_hf_file(const std::string& path) {
    Vocab v = TDM_TRY(load_vocab_hf_file(path));
    return Tokenizer::create(std::move(v));
}

}  // namespace tdm
