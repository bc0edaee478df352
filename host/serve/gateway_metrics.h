/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/gateway_metrics.h: the metrics an inference gateway reads to route between
// replicas, under vLLM's names, beside tandem's own in GET /metrics (serve/server_metrics.h).
// Not here: tandem's own counters, or routing itself (docs/SCALE_OUT.md says who routes).
//
// Why vLLM's names: the Kubernetes Gateway API Inference Extension's model-server protocol
// asks a model server for a gauge of queued requests, a gauge of running requests and a
// gauge of KV-cache use as a fraction (1 = full), and its endpoint picker reads them by
// vLLM's names out of the box (vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc, and the older vllm:gpu_cache_usage_perc); the optional
// vllm:cache_config_info carries the block size and block count its prefix-cache scorer
// uses. vLLM labels every series with model_name. The speculative counters keep vLLM's
// names too, so dashboards written for vLLM's speculative decoding read tandem unchanged.
#pragma once

#include "serve/backend.h"

#include <cstdint>
#include <string>

namespace tdm::server {

// `waiting` is the requests admitted by the HTTP side and not yet in the engine; the
// engine's own waiting sequences are added to it.
std::string gateway_metrics_text(const std::string& model_name, uint32_t waiting, const EngineGauges& engine);

}  // namespace tdm::server
