// SPDX-License-Identifier: Apache-2.0
// host/config/config_load.cpp: TOML -> Config. The schema is the list of read_* calls
// below: a section reader records each key it asks for, so the keys it was not asked for
// are the unknown ones, and the schema cannot drift from the list used for suggestions.
// Every problem in a file is reported at once (sorted by line), so a user fixes a config
// in one round. Not here: range rules (config_rules.cpp), the file search (config_search.cpp).
#include "config/config.h"

#include "common/file_read.h"
#include "config/config_rules.h"
#include "config/memory_size.h"
#include "config/suggest.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

namespace tdm {
namespace {

struct Problem {
    uint32_t line;
    std::string text;
};

const char* type_name(toml::node_type t) {
    switch (t) {
        case toml::node_type::string: return "string";
        case toml::node_type::integer: return "integer";
        case toml::node_type::floating_point: return "floating-point";
        case toml::node_type::boolean: return "boolean";
        case toml::node_type::array: return "array";
        case toml::node_type::table: return "table";
        case toml::node_type::date: return "date";
        case toml::node_type::time: return "time";
        case toml::node_type::date_time: return "date-time";
        case toml::node_type::none: break;
    }
    return "nothing";
}

// Reads one section. Each typed read looks the key up (recording it as known), checks the
// type and stores the value; absent keys leave the default in place.
class SectionReader {
public:
    SectionReader(std::string section, const toml::table* table, std::vector<Problem>& problems,
                  std::map<std::string, uint32_t>& key_lines)
        : section_(std::move(section)), table_(table), problems_(problems), key_lines_(key_lines) {}

    void string(const char* key, std::string* out) {
        if (const toml::node* n = find(key, "string"))
            if (auto v = expect<std::string>(key, *n, "string")) *out = **v;
    }

    void optional_string(const char* key, std::optional<std::string>* out) {
        if (const toml::node* n = find(key, "string"))
            if (auto v = expect<std::string>(key, *n, "string")) *out = **v;
    }

    void boolean(const char* key, bool* out) {
        if (const toml::node* n = find(key, "boolean"))
            if (auto v = expect<bool>(key, *n, "boolean")) *out = **v;
    }

    template <class Int>
    void integer(const char* key, Int* out) {
        const toml::node* n = find(key, "integer");
        if (!n) return;
        auto v = expect<int64_t>(key, *n, "integer");
        if (!v) return;
        const int64_t x = **v;
        if constexpr (sizeof(Int) < sizeof(int64_t)) {
            // Never wrapped to the narrower type; the rules check the setting's own range after.
            if (x > std::numeric_limits<Int>::max())
                return fail(key, *n, fmt::format("{} is out of range (the largest value this setting holds is {})", x,
                                                 std::numeric_limits<Int>::max()));
            if (x < std::numeric_limits<Int>::min())
                return fail(key, *n, fmt::format("{} is out of range (the smallest value this setting holds is {})",
                                                 x, std::numeric_limits<Int>::min()));
        }
        *out = static_cast<Int>(x);
    }

    // Floating-point keys take integers too: "temperature = 1" is a number to everyone.
    void number(const char* key, float* out) {
        const toml::node* n = find(key, "number");
        if (!n) return;
        double x;
        if (auto i = n->as_integer())
            x = static_cast<double>(i->get());
        else if (auto f = n->as_floating_point())
            x = f->get();
        else
            return wrong_type(key, *n, "number");
        if (!std::isfinite(x)) return fail(key, *n, fmt::format("{} is not a finite number", x));
        if (std::fabs(x) > FLT_MAX) return fail(key, *n, fmt::format("{} is out of range", x));
        *out = static_cast<float>(x);
    }

    // "8GiB" or a byte count.
    void memory(const char* key, uint64_t* out) {
        const toml::node* n = find(key, "memory size");
        if (!n) return;
        if (auto i = n->as_integer()) {
            if (i->get() < 0) return fail(key, *n, fmt::format("{} is negative", i->get()));
            *out = static_cast<uint64_t>(i->get());
        } else if (auto s = n->as_string()) {
            auto bytes = parse_memory_size(s->get());
            if (!bytes) return fail(key, *n, bytes.error().message());
            *out = *bytes;
        } else {
            wrong_type(key, *n, "string or integer");
        }
    }

    // device.select: "1" and 1 both mean the second device.
    void string_or_index(const char* key, std::string* out) {
        const toml::node* n = find(key, "string");
        if (!n) return;
        if (auto i = n->as_integer()) {
            if (i->get() < 0) return fail(key, *n, fmt::format("device index {} is negative", i->get()));
            *out = std::to_string(i->get());
        } else if (auto s = n->as_string()) {
            *out = s->get();
        } else {
            wrong_type(key, *n, "string or integer");
        }
    }

    // speculative.draft_vocab: "auto" or 32768; the rules check which.
    void string_or_integer(const char* key, std::string* out) {
        const toml::node* n = find(key, "string or integer");
        if (!n) return;
        if (auto i = n->as_integer())
            *out = std::to_string(i->get());
        else if (auto s = n->as_string())
            *out = s->get();
        else
            wrong_type(key, *n, "string or integer");
    }

    // An array of strings; with `comma_string`, also "a, b" (split and trimmed), as the
    // command line spells lists.
    void string_list(const char* key, std::vector<std::string>* out, bool comma_string) {
        const toml::node* n = find(key, "array");
        if (!n) return;
        if (comma_string && n->is_string()) {
            out->clear();
            std::stringstream ss(n->as_string()->get());
            for (std::string item; std::getline(ss, item, ',');) {
                const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
                out->push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
            }
            return;
        }
        const toml::array* a = n->as_array();
        if (!a) return wrong_type(key, *n, comma_string ? "array of strings or string" : "array of strings");
        std::vector<std::string> items;
        for (size_t i = 0; i < a->size(); ++i) {
            const toml::node& e = *a->get(i);
            if (!e.is_string()) {
                problems_.push_back({line_of(e), fmt::format("key '{}[{}]' at line {}: expected string, found {}",
                                                             full(key), i, line_of(e), type_name(e.type()))});
                return;
            }
            items.push_back(e.as_string()->get());
        }
        *out = std::move(items);
    }

    // Reports the keys no read asked for, with the nearest known key as a suggestion.
    void finish() {
        if (!table_) return;
        for (auto it = table_->begin(); it != table_->end(); ++it) {
            const std::string k(it->first.str());
            if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
            const uint32_t line = it->first.source().begin.line;
            problems_.push_back({line, fmt::format("unknown key '{}' at line {}{}", full(k), line,
                                                   did_you_mean(k, known_))});
        }
    }

    const std::vector<std::string>& known() const { return known_; }
    const std::string& section() const { return section_; }

private:
    std::string full(std::string_view key) const { return section_ + "." + std::string(key); }

    static uint32_t line_of(const toml::node& n) { return n.source().begin.line; }

    const toml::node* find(const char* key, const char* /*expected, for readability at call sites*/) {
        known_.push_back(key);
        if (!table_) return nullptr;
        auto it = table_->find(key);
        if (it == table_->end()) return nullptr;
        key_lines_[full(key)] = it->first.source().begin.line;
        return &it->second;
    }

    template <class T>
    std::optional<const T*> expect(const char* key, const toml::node& n, const char* expected) {
        if (auto v = n.as<T>()) return &v->get();
        wrong_type(key, n, expected);
        return std::nullopt;
    }

    void wrong_type(const char* key, const toml::node& n, const char* expected) {
        fail(key, n, fmt::format("expected {}, found {}", expected, type_name(n.type())));
    }

    void fail(const char* key, const toml::node& n, std::string message) {
        const uint32_t line = key_lines_.count(full(key)) ? key_lines_[full(key)] : line_of(n);
        problems_.push_back({line, fmt::format("key '{}' at line {}: {}", full(key), line, message)});
    }

    std::string section_;
    const toml::table* table_;
    std::vector<Problem>& problems_;
    std::map<std::string, uint32_t>& key_lines_;
    std::vector<std::string> known_;
};

// ---- the schema ---------------------------------------------------------------------------

void read_device(SectionReader& r, Config& c) {
    r.string_or_index("select", &c.device.select);
    r.boolean("validate", &c.device.validate);
    r.boolean("profile", &c.device.profile);
    r.memory("memory_limit", &c.device.memory_limit);
    r.boolean("tune", &c.device.tune);
}

void read_model(SectionReader& r, Config& c) {
    r.string("path", &c.model.path);
    r.string("draft_path", &c.model.draft_path);
    r.string("mtp_head_path", &c.model.mtp_head_path);
    r.string("mmproj_path", &c.model.mmproj_path);
    r.integer("n_ctx", &c.model.n_ctx);
    r.string("kv_type", &c.model.kv_type);
    r.memory("kv_memory", &c.model.kv_memory);
    r.integer("n_batch", &c.model.n_batch);
    r.boolean("chat", &c.model.chat);
    r.string("chat_template", &c.model.chat_template);
    r.boolean("check_weights", &c.model.check_weights);
    r.boolean("warmup", &c.model.warmup);
    r.string("host_rows", &c.model.host_rows);
    r.number("host_rows_share", &c.model.host_rows_share);
    r.string("int8_matmul", &c.model.int8_matmul);
}

void read_chat_template(SectionReader& r, Config& c) {
    ChatTemplateConfig& t = c.chat_template;
    r.optional_string("system_prefix", &t.system_prefix);
    r.optional_string("system_suffix", &t.system_suffix);
    r.optional_string("user_prefix", &t.user_prefix);
    r.optional_string("user_suffix", &t.user_suffix);
    r.optional_string("assistant_prefix", &t.assistant_prefix);
    r.optional_string("assistant_suffix", &t.assistant_suffix);
    r.optional_string("generation_prompt", &t.generation_prompt);
}

void read_sampling(SectionReader& r, Config& c) {
    SamplingConfig& s = c.sampling;
    r.number("temperature", &s.temperature);
    r.integer("top_k", &s.top_k);
    r.number("top_p", &s.top_p);
    r.number("min_p", &s.min_p);
    r.number("repeat_penalty", &s.repeat_penalty);
    r.integer("repeat_last_n", &s.repeat_last_n);
    r.number("presence_penalty", &s.presence_penalty);
    r.number("frequency_penalty", &s.frequency_penalty);
    r.string_list("logit_bias", &s.logit_bias, /*comma_string=*/false);
    r.integer("seed", &s.seed);
}

void read_speculative(SectionReader& r, Config& c) {
    SpeculativeConfig& s = c.speculative;
    r.string_list("type", &s.type, /*comma_string=*/true);
    r.integer("draft_max", &s.draft_max);
    r.integer("draft_min", &s.draft_min);
    r.integer("skip_streak", &s.skip_streak);
    r.boolean("auto", &s.auto_select);
    r.boolean("fixed", &s.fixed);
    r.integer("ngram_size_n", &s.ngram_size_n);
    r.integer("ngram_size_m", &s.ngram_size_m);
    r.integer("ngram_min_hits", &s.ngram_min_hits);
    r.string("ngram_cache", &s.ngram_cache);
    r.string("trace", &s.trace);
    r.string("mtp_hidden", &s.mtp_hidden);
    r.string_or_integer("draft_vocab", &s.draft_vocab);
    r.string("draft_tree", &s.draft_tree);
}

void read_plugins(SectionReader& r, Config& c) {
    r.string_list("paths", &c.plugins.paths, /*comma_string=*/false);
    r.string_list("disable", &c.plugins.disable, /*comma_string=*/false);
}

void read_log(SectionReader& r, Config& c) { r.string("level", &c.log.level); }

void read_server(SectionReader& r, Config& c) {
    ServerConfig& s = c.server;
    r.string("host", &s.host);
    r.integer("port", &s.port);
    r.string("api_key", &s.api_key);
    r.string("alias", &s.alias);
    r.integer("parallel", &s.parallel);
    r.integer("queue", &s.queue);
    r.integer("timeout", &s.timeout);
    r.integer("request_timeout", &s.request_timeout);
    r.integer("max_body", &s.max_body);
    r.integer("shutdown_timeout", &s.shutdown_timeout);
    r.integer("max_connections", &s.max_connections);
    r.integer("max_connections_per_client", &s.max_connections_per_client);
    r.integer("max_images", &s.max_images);
    r.integer("max_image_bytes", &s.max_image_bytes);
}

void read_ocr(SectionReader& r, Config& c) {
    r.string("task", &c.ocr.task);
    r.string("schema", &c.ocr.schema);
    r.string("output_format", &c.ocr.output_format);
    r.number("pdf_dpi", &c.ocr.pdf_dpi);
    r.integer("n_ctx", &c.ocr.n_ctx);
}

struct Section {
    const char* name;
    void (*read)(SectionReader&, Config&);
};

constexpr Section kSections[] = {
    {"device", read_device},     {"model", read_model},           {"chat_template", read_chat_template},
    {"sampling", read_sampling}, {"speculative", read_speculative}, {"plugins", read_plugins},
    {"log", read_log},           {"server", read_server},           {"ocr", read_ocr},
};

// A key at the top level is usually a key whose [section] line is missing; the suggestion
// then names the section it belongs to.
std::string top_level_suggestion(const std::string& name, const std::vector<std::string>& sections,
                                 const std::map<std::string, std::vector<std::string>>& keys) {
    for (const auto& [section, list] : keys)
        if (std::find(list.begin(), list.end(), name) != list.end())
            return fmt::format(" (did you mean '{}.{}' under [{}]?)", section, name, section);
    return did_you_mean(name, sections);
}

}  // namespace

Result<Config> load_config_text(std::string_view text, std::string_view name) {
    toml::table root;
    try {
        root = toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        return Error::format("{}: TOML syntax error at line {}, column {}: {}", name, e.source().begin.line,
                             e.source().begin.column, e.description());
    }

    Config config;
    std::vector<Problem> problems;
    std::map<std::string, uint32_t> key_lines;
    std::vector<std::string> section_names;
    std::map<std::string, std::vector<std::string>> section_keys;
    for (const Section& s : kSections) {
        section_names.push_back(s.name);
        const toml::table* table = nullptr;
        if (auto it = root.find(s.name); it != root.end()) {
            table = it->second.as_table();
            if (!table) {
                const uint32_t line = it->first.source().begin.line;
                problems.push_back({line, fmt::format("'{}' at line {} must be a section ([{}]), found {}", s.name,
                                                      line, s.name, type_name(it->second.type()))});
            }
        }
        SectionReader r(s.name, table, problems, key_lines);
        s.read(r, config);
        r.finish();
        section_keys[s.name] = r.known();
    }
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string k(it->first.str());
        if (section_keys.count(k)) continue;
        const uint32_t line = it->first.source().begin.line;
        problems.push_back({line, fmt::format("unknown {} '{}' at line {}{}", it->second.is_table() ? "section" : "key",
                                              k, line, top_level_suggestion(k, section_names, section_keys))});
    }

    // Range rules, placed at the line of the key they concern. Only values that were read
    // can break them: the defaults satisfy every rule (tested), and so does a key whose
    // value had the wrong type, since it kept its default.
    for (const config_detail::Issue& i : config_detail::check_rules(config)) {
        auto at = key_lines.find(i.key);
        if (at == key_lines.end() && !i.other_key.empty()) at = key_lines.find(i.other_key);
        const uint32_t line = at == key_lines.end() ? 0 : at->second;
        problems.push_back({line, fmt::format("key '{}' at line {}: {}", i.key, line, i.message)});
    }
    // Two ways of sizing the context in one file: which one wins would be a guess.
    if (key_lines.count("model.n_ctx") && key_lines.count("model.kv_memory") && config.model.kv_memory > 0) {
        const uint32_t line = std::max(key_lines["model.n_ctx"], key_lines["model.kv_memory"]);
        problems.push_back({line, fmt::format("keys 'model.n_ctx' (line {}) and 'model.kv_memory' (line {}) both "
                                              "size the context; set one of them",
                                              key_lines["model.n_ctx"], key_lines["model.kv_memory"])});
    }

    if (problems.empty()) return config;
    std::stable_sort(problems.begin(), problems.end(),
                     [](const Problem& a, const Problem& b) { return a.line < b.line; });
    std::string message;
    for (const Problem& p : problems) message += (message.empty() ? "" : "\n") + std::string(name) + ": " + p.text;
    return Error(std::move(message));
}

Result<Config> load_config_file(const std::string& path) {
    // A tandem.toml is a few KiB; the limit only stops a wrong path from being read whole.
    constexpr uint64_t kMaxConfigBytes = 4ull << 20;
    return load_config_text(TDM_TRY(read_regular_file(path, kMaxConfigBytes, "config file")), path);
}

std::vector<std::string> config_keys() {
    std::vector<std::string> keys;
    std::vector<Problem> problems;
    std::map<std::string, uint32_t> key_lines;
    Config scratch;
    for (const Section& s : kSections) {
        SectionReader r(s.name, nullptr, problems, key_lines);
        s.read(r, scratch);
        for (const std::string& k : r.known()) keys.push_back(std::string(s.name) + "." + k);
    }
    return keys;
}

}  // namespace tdm
