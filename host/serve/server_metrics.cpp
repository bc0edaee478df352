// SPDX-License-Identifier: Apache-2.0
// host/serve/server_metrics.cpp
#include "serve/server_metrics.h"

#include <fmt/format.h>

namespace tdm::server {

void ServerMetrics::Histogram::add(double seconds) {
    size_t i = 0;
    while (i < kBounds.size() && seconds > kBounds[i]) ++i;
    ++counts[i];
    sum += seconds;
    ++count;
}

void ServerMetrics::request_done(const std::string& endpoint, int status) {
    std::lock_guard lock(mutex_);
    ++requests_[{endpoint, status}];
}

void ServerMetrics::generation_done(uint64_t prompt_tokens, uint64_t cached_tokens, uint64_t generated_tokens,
                                    uint64_t drafted, uint64_t accepted) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += prompt_tokens;
    cached_tokens_ += cached_tokens;
    generated_tokens_ += generated_tokens;
    drafted_ += drafted;
    accepted_ += accepted;
}

void ServerMetrics::controller_done(const ControllerStats& c, double measured_speedup) {
    std::lock_guard lock(mutex_);
    controller_.add(c);
    measured_speedup_sum_ += measured_speedup;
    ++controlled_;
}

void ServerMetrics::time_to_first_token(double seconds) {
    std::lock_guard lock(mutex_);
    ttft_.add(seconds);
}

void ServerMetrics::time_per_output_token(double seconds) {
    std::lock_guard lock(mutex_);
    tpot_.add(seconds);
}

void ServerMetrics::generation_timed_out() {
    std::lock_guard lock(mutex_);
    ++timed_out_;
}

void ServerMetrics::write_histogram(std::string& out, const char* name, const char* help, const Histogram& h) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
        cumulative += h.counts[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cumulative);
    }
    cumulative += h.counts[kBounds.size()];
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cumulative, name, h.sum, name,
                       h.count);
}

std::string ServerMetrics::text(uint32_t waiting, uint32_t running, const EngineGauges& engine) const {
    std::lock_guard lock(mutex_);
    std::string out;
    out += "# HELP tandem_requests_total HTTP requests answered, by endpoint and status.\n"
           "# TYPE tandem_requests_total counter\n";
    for (const auto& [key, n] : requests_)
        out += fmt::format("tandem_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
    const auto gauge = [&](const char* name, const char* help, uint64_t v) {
        out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
    };
    const auto counter = [&](const char* name, const char* help, uint64_t v) {
        out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
    };
    gauge("tandem_requests_waiting", "Admitted requests waiting for the model.", waiting);
    gauge("tandem_requests_running", "Requests generating now.", running);
    gauge("tandem_sequences_running", "Sequences in the engine's forward passes.", engine.running);
    gauge("tandem_sequences_waiting", "Sequences in the engine waiting for a slot or for KV blocks.", engine.waiting);
    gauge("tandem_kv_blocks_used", "KV cache blocks holding tokens (running and idle slots).", engine.kv_blocks_used);
    gauge("tandem_kv_blocks_free", "KV cache blocks free.", engine.kv_blocks_free);
    gauge("tandem_kv_blocks_shared", "KV cache blocks held by more than one sequence (a shared prefix).",
          engine.kv_blocks_shared);
    counter("tandem_prefix_cache_hits_total", "Requests that resumed a prefix from an idle slot's KV.",
            engine.prefix_hits);
    counter("tandem_preemptions_total", "Sequences that gave their KV back when the pool ran out, and recomputed.",
            engine.preemptions);
    out += "# HELP tandem_spec_accepted_at_position_total Rounds whose draft at this position (0: the first) "
           "was accepted, and rounds that drafted it.\n# TYPE tandem_spec_accepted_at_position_total counter\n";
    for (size_t i = 0; i < engine.drafted_at.size(); ++i)
        out += fmt::format("tandem_spec_accepted_at_position_total{{position=\"{}\"}} {}\n"
                           "tandem_spec_drafted_at_position_total{{position=\"{}\"}} {}\n",
                           i, i < engine.accepted_at.size() ? engine.accepted_at[i] : 0, i, engine.drafted_at[i]);
    counter("tandem_generations_timed_out_total",
            "Generations stopped by --request-timeout (answered with what they made, finish_reason length).",
            timed_out_);
    counter("tandem_prompt_tokens_total", "Prompt tokens of finished generations.", prompt_tokens_);
    counter("tandem_prompt_tokens_cached_total", "Prompt tokens resumed from the KV cache, not prefilled.",
            cached_tokens_);
    counter("tandem_generation_tokens_total", "Tokens generated.", generated_tokens_);
    counter("tandem_spec_draft_tokens_total", "Tokens proposed by drafters.", drafted_);
    counter("tandem_spec_accepted_tokens_total", "Proposed tokens the model accepted.", accepted_);
    const auto sum = [&](const char* name, const char* help, double v) {
        out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
    };
    counter("tandem_spec_controller_plain_steps_total",
            "Plain steps the goodput controller chose (calibrating, or drafting off because it did not pay).",
            controller_.off_steps);
    counter("tandem_spec_controller_probes_total", "One-token drafts the controller tried while drafting was off.",
            controller_.probes);
    counter("tandem_spec_controller_rounds_total", "Rounds the controller chose to draft.", controller_.chosen_rounds);
    counter("tandem_spec_controller_draft_length_total",
            "Draft lengths the controller chose, summed (over its rounds: the mean k).", controller_.chosen_k_sum);
    sum("tandem_spec_controller_estimated_speedup_total",
        "The speedup the controller predicted for each round it drafted, summed (over its rounds: the mean).",
        controller_.predicted_sum);
    sum("tandem_spec_controller_measured_speedup_total",
        "Per generation the controller drafted for, decode tokens per ms over its plain step estimate, summed.",
        measured_speedup_sum_);
    counter("tandem_spec_controller_generations_total", "Generations the controller drafted for.", controlled_);
    write_histogram(out, "tandem_time_to_first_token_seconds",
                    "From the request's arrival to its first generated text (queueing included).", ttft_);
    write_histogram(out, "tandem_time_per_output_token_seconds",
                    "Decoding time per generated token after the first, per request.", tpot_);
    return out;
}

}  // namespace tdm::server
