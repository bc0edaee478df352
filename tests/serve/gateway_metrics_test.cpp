// SPDX-License-Identifier: Apache-2.0
// tests/serve/gateway_metrics_test.cpp: the metrics an inference gateway reads, in vLLM's
// names with its model_name label, computed from the engine's gauges. To add a case: set
// EngineGauges fields and look for the exposition line they must give.
#include "serve/gateway_metrics.h"

#include <gtest/gtest.h>

#include <string>

using namespace tdm::server;

TEST(GatewayMetrics, queue_running_and_kv_use_are_exported_under_vllm_names) {
    EngineGauges g;
    g.running = 3;
    g.waiting = 2;
    g.kv_blocks_used = 64;
    g.kv_blocks_free = 192;
    g.kv_block_size = 16;
    const std::string text = gateway_metrics_text("qwen3", 5, g);
    for (const char* line : {"# TYPE vllm:num_requests_waiting gauge\n", "vllm:num_requests_waiting{model_name=\"qwen3\"} 7\n",
                             "vllm:num_requests_running{model_name=\"qwen3\"} 3\n",
                             "vllm:kv_cache_usage_perc{model_name=\"qwen3\"} 0.25\n",
                             "vllm:gpu_cache_usage_perc{model_name=\"qwen3\"} 0.25\n",
                             "vllm:cache_config_info{model_name=\"qwen3\",block_size=\"16\",num_gpu_blocks=\"256\"} 1\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
}

TEST(GatewayMetrics, speculative_counters_follow_vllm_from_the_per_position_tallies) {
    EngineGauges g;
    g.drafted_at = {10, 8, 5};  // rounds with at least 1, 2, 3 drafts
    g.accepted_at = {7, 4, 1};
    const std::string text = gateway_metrics_text("m", 0, g);
    for (const char* line : {"# TYPE vllm:spec_decode_num_drafts counter\n", "vllm:spec_decode_num_drafts_total{model_name=\"m\"} 10\n",
                             "vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} 23\n",
                             "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 12\n",
                             "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"2\"} 1\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
}

TEST(GatewayMetrics, an_empty_pool_reads_zero_and_the_model_name_is_escaped) {
    const std::string text = gateway_metrics_text("a\"b\\c", 0, EngineGauges{});
    EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"a\\\"b\\\\c\"} 0\n"), std::string::npos) << text;
}
