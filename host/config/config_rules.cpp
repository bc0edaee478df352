// SPDX-License-Identifier: Apache-2.0
// host/config/config_rules.cpp: what values each setting accepts. The ranges follow what
// the consumers can do with a value, not taste: a negative context length or a
// repeat_penalty of 0 (it divides logits) has no meaning, while a huge draft_max is
// merely slow and is left to the user.
#include "config/config_rules.h"

#include "common/log.h"
#include "config/logit_bias_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace tdm {
namespace config_detail {
namespace {

class Checker {
public:
    void fail(std::string key, std::string message, std::string other = {}) {
        issues.push_back({std::move(key), std::move(message), std::move(other)});
    }
    void at_least(const char* key, int64_t v, int64_t min, std::string_view note = {}) {
        if (v < min) fail(key, fmt::format("{} is below the minimum {}{}", v, min, note));
    }
    void at_most(const char* key, int64_t v, int64_t max, std::string_view note = {}) {
        if (v > max) fail(key, fmt::format("{} is above the maximum {}{}", v, max, note));
    }
    void finite_in(const char* key, float v, float lo, float hi) {
        if (!std::isfinite(v))
            fail(key, fmt::format("{} is not a finite number", v));
        else if (v < lo || v > hi)
            fail(key, fmt::format("{} is outside [{}, {}]", v, lo, hi));
    }
    void one_of(const char* key, const std::string& v, std::initializer_list<const char*> allowed) {
        for (const char* a : allowed)
            if (v == a) return;
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(key, fmt::format("'{}' is not one of {}", v, list));
    }
    std::vector<Issue> issues;
};

// Drafter names become plugin lookups and command-line words: keep them plain.
bool plain_name(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
}

void check_model(Checker& c, const ModelConfig& m) {
    c.at_least("model.n_ctx", m.n_ctx, 0, " (0 means the model's trained length)");
    if (m.n_ctx > 0 && m.n_ctx < kMinContextTokens)
        c.fail("model.n_ctx", fmt::format("{} is below the minimum {} (one KV block; 0 means the model's trained "
                                          "length)",
                                          m.n_ctx, kMinContextTokens));
    c.at_least("model.n_batch", m.n_batch, 1);
    c.one_of("model.kv_type", m.kv_type, {"f16", "f32"});
    c.one_of("model.host_rows", m.host_rows, {"auto", "on", "off"});
    c.finite_in("model.host_rows_share", m.host_rows_share, 0.0f, 1.0f);
    c.one_of("model.int8_matmul", m.int8_matmul, {"on", "off"});
}

void check_chat_template(Checker& c, const ChatTemplateConfig& t) {
    const std::pair<const char*, const std::optional<std::string>*> parts[] = {
        {"chat_template.system_prefix", &t.system_prefix},
        {"chat_template.system_suffix", &t.system_suffix},
        {"chat_template.user_prefix", &t.user_prefix},
        {"chat_template.user_suffix", &t.user_suffix},
        {"chat_template.assistant_prefix", &t.assistant_prefix},
        {"chat_template.assistant_suffix", &t.assistant_suffix},
        {"chat_template.generation_prompt", &t.generation_prompt},
    };
    // The message goes between prefix and suffix; a placeholder inside a part would
    // render as literal text or duplicate the message.
    for (auto [key, part] : parts)
        if (*part && part->value().find("{content}") != std::string::npos)
            c.fail(key, "contains '{content}'; the message goes between the prefix and the suffix, "
                        "so parts hold only the text around it");
}

void check_sampling(Checker& c, const SamplingConfig& s) {
    if (!std::isfinite(s.temperature))
        c.fail("sampling.temperature", fmt::format("{} is not a finite number", s.temperature));
    else if (s.temperature < 0.0f)
        c.fail("sampling.temperature", fmt::format("{} is negative (0 means greedy)", s.temperature));
    c.at_least("sampling.top_k", s.top_k, 0, " (0 turns top-k off)");
    c.finite_in("sampling.top_p", s.top_p, 0.0f, 1.0f);
    c.finite_in("sampling.min_p", s.min_p, 0.0f, 1.0f);
    if (!std::isfinite(s.repeat_penalty) || s.repeat_penalty <= 0.0f)
        c.fail("sampling.repeat_penalty",
               fmt::format("{} must be a positive number (1 turns the penalty off)", s.repeat_penalty));
    c.at_least("sampling.repeat_last_n", s.repeat_last_n, -1, " (-1 means the whole context)");
    // OpenAI's ranges, which the sampler's validate() enforces too
    c.finite_in("sampling.presence_penalty", s.presence_penalty, -2.0f, 2.0f);
    c.finite_in("sampling.frequency_penalty", s.frequency_penalty, -2.0f, 2.0f);
    for (const std::string& text : s.logit_bias) {
        auto b = parse_logit_bias(text);
        if (!b.ok()) c.fail("sampling.logit_bias", b.error().message());
        else if (std::fabs(b->bias) > 100.0f)
            c.fail("sampling.logit_bias", fmt::format("'{}': a bias must be between -100 and 100", text));
    }
    c.at_least("sampling.seed", s.seed, -1, " (-1 means a random seed)");
}

void check_speculative(Checker& c, const SpeculativeConfig& s) {
    std::set<std::string> seen;
    for (const std::string& t : s.type) {
        // '-' and '_' spell one type (ngram-simple, ngram_simple: spec_type_key)
        std::string key = t;
        std::replace(key.begin(), key.end(), '_', '-');
        if (!plain_name(t))
            c.fail("speculative.type",
                   fmt::format("'{}' is not a drafter name (lowercase letters, digits, '-' and '_')", t));
        else if (!seen.insert(key).second)
            c.fail("speculative.type", fmt::format("'{}' is listed twice", key));
    }
    if (seen.count("none") && s.type.size() > 1)
        c.fail("speculative.type", "'none' cannot be combined with other drafters");
    c.at_least("speculative.draft_max", s.draft_max, 1);
    c.at_most("speculative.draft_max", s.draft_max, kMaxDraftMax);
    c.at_least("speculative.draft_min", s.draft_min, 0);
    if (s.draft_min > s.draft_max)
        c.fail("speculative.draft_min",
               fmt::format("draft_min ({}) is larger than draft_max ({})", s.draft_min, s.draft_max),
               "speculative.draft_max");
    c.at_least("speculative.skip_streak", s.skip_streak, 0, " (0 turns it off)");
    c.at_least("speculative.ngram_size_n", s.ngram_size_n, 1);
    c.at_least("speculative.ngram_size_m", s.ngram_size_m, 1);
    c.at_least("speculative.ngram_min_hits", s.ngram_min_hits, 1);
    c.one_of("speculative.mtp_hidden", s.mtp_hidden, {"post-norm", "pre-norm"});
    if (s.draft_vocab != "auto" && !draft_vocab_count(s.draft_vocab))
        c.fail("speculative.draft_vocab",
               fmt::format("'{}' is not auto, all or a token count (0 to {})", s.draft_vocab, INT32_MAX));
    if (!s.draft_tree.empty() && !draft_tree_shape(s.draft_tree))
        c.fail("speculative.draft_tree",
               fmt::format("'{}' is not STEPS,TOPK,NODES (positive integers, NODES from 2 to 64)", s.draft_tree));
}

void check_plugins(Checker& c, const PluginsConfig& p) {
    for (const std::string& d : p.paths)
        if (d.empty()) c.fail("plugins.paths", "an empty directory name");
    for (const std::string& n : p.disable)
        if (n.empty()) c.fail("plugins.disable", "an empty plugin name");
}

void check_log(Checker& c, const LogConfig& l) {
    LogLevel ignored;
    if (!parse_log_level(l.level, &ignored))
        c.one_of("log.level", l.level, {"trace", "debug", "info", "warn", "error", "off"});
}

void check_server(Checker& c, const ServerConfig& s) {
    if (s.host.empty()) c.fail("server.host", "an empty address (127.0.0.1: this machine only; 0.0.0.0: every interface)");
    c.at_least("server.port", s.port, 0, " (0 picks a free port)");
    c.at_most("server.port", s.port, 65535);
    c.at_least("server.parallel", s.parallel, 1);
    c.at_most("server.parallel", s.parallel, 256);
    c.at_least("server.queue", s.queue, 0);
    c.at_most("server.queue", s.queue, 4096);
    c.at_least("server.timeout", s.timeout, 1);
    c.at_most("server.timeout", s.timeout, 86400);
    c.at_least("server.request_timeout", s.request_timeout, 0, " (0: no limit)");
    c.at_most("server.request_timeout", s.request_timeout, 86400);
    c.at_least("server.max_body", s.max_body, 1024);
    c.at_most("server.max_body", s.max_body, int64_t(1) << 30);
    c.at_least("server.shutdown_timeout", s.shutdown_timeout, 0);
    c.at_most("server.shutdown_timeout", s.shutdown_timeout, 86400);
    c.at_least("server.max_connections", s.max_connections, 1);
    c.at_most("server.max_connections", s.max_connections, 65536);
    c.at_least("server.max_connections_per_client", s.max_connections_per_client, 1);
    c.at_most("server.max_connections_per_client", s.max_connections_per_client, 65536);
    c.at_least("server.max_images", s.max_images, 0, " (0: no images)");
    c.at_most("server.max_images", s.max_images, 1024);
    c.at_least("server.max_image_bytes", s.max_image_bytes, 0);
    c.at_most("server.max_image_bytes", s.max_image_bytes, int64_t(1) << 30);
}

void check_ocr(Checker& c, const OcrConfig& o) {
    c.one_of("ocr.task", o.task, {"text", "formula", "table", "json"});
    c.one_of("ocr.output_format", o.output_format, {"markdown", "json", "text"});
    if (!(o.pdf_dpi >= 36.0f && o.pdf_dpi <= 1200.0f)) c.fail("ocr.pdf_dpi", "must be 36 .. 1200 (GLM-OCR's SDK uses 200)");
    if (o.n_ctx != 0 && o.n_ctx < kMinContextTokens)
        c.fail("ocr.n_ctx", fmt::format("{} is below the minimum {} (0: the model's trained length)", o.n_ctx,
                                        kMinContextTokens));
}

}  // namespace

std::vector<Issue> check_rules(const Config& config) {
    Checker c;
    check_model(c, config.model);
    check_chat_template(c, config.chat_template);
    check_sampling(c, config.sampling);
    check_speculative(c, config.speculative);
    check_plugins(c, config.plugins);
    check_log(c, config.log);
    check_server(c, config.server);
    check_ocr(c, config.ocr);
    return std::move(c.issues);
}

}  // namespace config_detail

std::optional<DraftTreeSetting> draft_tree_shape(std::string_view value) {
    uint32_t v[3] = {};
    const char* at = value.data();
    const char* end = value.data() + value.size();
    for (int i = 0; i < 3; ++i) {
        if (i > 0 && (at == end || *at++ != ',')) return std::nullopt;
        const auto [next, ec] = std::from_chars(at, end, v[i]);
        if (ec != std::errc() || v[i] == 0) return std::nullopt;
        at = next;
    }
    if (at != end || v[2] < 2 || v[2] > 64) return std::nullopt;
    return DraftTreeSetting{v[0], v[1], v[2]};
}

std::optional<int64_t> draft_vocab_count(std::string_view value) {
    if (value == "all") return 0;
    int64_t n = 0;
    const char* end = value.data() + value.size();
    const auto [at, ec] = std::from_chars(value.data(), end, n);
    if (value.empty() || ec != std::errc() || at != end || n < 0 || n > INT32_MAX) return std::nullopt;
    return n;
}

Status validate_config(const Config& config) {
    std::string text;
    for (const config_detail::Issue& i : config_detail::check_rules(config))
        text += (text.empty() ? "" : "\n") + i.key + ": " + i.message;
    if (!text.empty()) return Error(std::move(text));
    return {};
}

bool ChatTemplateConfig::empty() const { return *this == ChatTemplateConfig{}; }

}  // namespace tdm
