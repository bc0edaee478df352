// SPDX-License-Identifier: Apache-2.0
// host/serve/gateway_metrics.cpp
#include "serve/gateway_metrics.h"

#include <fmt/format.h>

namespace tdm::server {

namespace {

// Prometheus' text format: a label value escapes backslash, double quote and newline.
std::string label_value(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

}  // namespace

std::string gateway_metrics_text(const std::string& model_name, uint32_t waiting, const EngineGauges& engine) {
    const std::string label = fmt::format("model_name=\"{}\"", label_value(model_name));
    std::string out;
    const auto one = [&](const char* name, const char* type, const char* help, const std::string& value) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{{{}}} {}\n", name, help, name, type, name, label, value);
    };
    one("vllm:num_requests_waiting", "gauge",
        "Requests waiting: admitted and not yet running, in the server's queue or the engine's.",
        fmt::format("{}", uint64_t(waiting) + engine.waiting));
    one("vllm:num_requests_running", "gauge", "Sequences in the engine's forward passes.",
        fmt::format("{}", engine.running));
    const uint64_t total = uint64_t(engine.kv_blocks_used) + engine.kv_blocks_free;
    const double usage = total ? double(engine.kv_blocks_used) / double(total) : 0.0;
    one("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage as a fraction: 1 means every block is in use.",
        fmt::format("{}", usage));
    one("vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage as a fraction (vLLM's older name).",
        fmt::format("{}", usage));
    out += fmt::format("# HELP vllm:cache_config_info The KV cache's configuration, in labels.\n"
                       "# TYPE vllm:cache_config_info gauge\n"
                       "vllm:cache_config_info{{{},block_size=\"{}\",num_gpu_blocks=\"{}\"}} 1\n",
                       label, engine.kv_block_size, total);

    // vLLM's speculative counters: a draft is a verified round with at least one draft token.
    uint64_t draft_tokens = 0, accepted = 0;
    for (uint64_t d : engine.drafted_at) draft_tokens += d;
    for (uint64_t a : engine.accepted_at) accepted += a;
    const uint64_t drafts = engine.drafted_at.empty() ? 0 : engine.drafted_at[0];
    const auto counter = [&](const char* name, const char* help, uint64_t v) {
        out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{}_total{{{}}} {}\n", name, help, name, name, label, v);
    };
    counter("vllm:spec_decode_num_drafts", "Verified rounds that drafted at least one token.", drafts);
    counter("vllm:spec_decode_num_draft_tokens", "Tokens drafted.", draft_tokens);
    counter("vllm:spec_decode_num_accepted_tokens", "Drafted tokens accepted.", accepted);
    out += "# HELP vllm:spec_decode_num_accepted_tokens_per_pos Drafted tokens accepted, by position in the draft "
           "(0: the first).\n# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n";
    for (size_t i = 0; i < engine.accepted_at.size(); ++i)
        out += fmt::format("vllm:spec_decode_num_accepted_tokens_per_pos_total{{{},position=\"{}\"}} {}\n", label, i,
                           engine.accepted_at[i]);
    return out;
}

}  // namespace tdm::server
