/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/memory_plan.h: what a run will allocate on the device, added up before anything
// large is: the weights, each KV cache and the recurrent states, of the target and of its
// drafters (a draft model, a draft head's own layers), checked against the device's memory
// budget. Each allocation is also checked when it is made (vk/memory.cpp), but only this
// sees the total: forty allocations that each fit can together be far more than the device
// has (on lavapipe, memory is only taken when touched, so nothing fails until the OOM killer).
// An estimate from the files and the plugins' declarations: activations and graph buffers
// are not counted, so it refuses what cannot fit rather than promising what will.
// Not here: sizing or creating the KV pool (kv/kv_pool.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <tandem/tandem.h>

#include "kv/kv_pool.h"

namespace tdm::vk {
class Device;
}

namespace tdm::cli {

class App;

struct MemoryItem {
    std::string what;  // "weights of tiny.gguf", "KV cache of tiny.gguf"
    // Bytes at a context of n_ctx tokens as -c gives it (0 = each model's trained length).
    std::function<uint64_t(uint32_t n_ctx)> bytes_at;
};

struct MemoryPlan {
    uint32_t n_ctx = 0;  // the configured -c / [model] n_ctx (0 = trained length)
    uint32_t sequences = 1;  // KV sequences of -c tokens each (serve: --parallel)
    bool kv_by_memory = false;  // --kv-memory sizes the KV caches: -c changes nothing
    std::vector<MemoryItem> items;
    uint64_t total_at(uint32_t n_ctx) const;
};

struct MemoryBudget {
    uint64_t bytes = 0;  // 0 = unknown: nothing is checked
    std::string source;  // "the memory limit of 64.00 KiB (--memory-limit)"
};

// Mirrors KvPool::create's allocations (a test keeps the two in step).
uint64_t kv_pool_bytes(std::span<const tdm_attention_layer> layers, std::span<const tdm_recurrent_state> states,
                       const KvPoolConfig& config);

// What tandem may still allocate: the smallest of the configured limit, the device-local
// heap (a GPU), or the host memory available (a CPU device such as lavapipe, whose heap is
// host memory the driver does not reserve), less what is already allocated.
MemoryBudget device_memory_budget(const vk::Device& device);

// An error listing the items, the total and the budget, and the largest -c whose weights
// and KV caches fit (or that even the shortest context does not), when the plan does not fit.
Status check_memory_plan(const MemoryPlan& plan, const MemoryBudget& budget);

// How many sequences a command keeps in its KV caches, and whether the draft head the file
// carries drafts without --spec-type (serve and chat: make_drafters' carried_head_by_default).
struct RunShape {
    bool speculative = false;
    uint32_t sequences = 1;       // the target's KV sequences (serve: --parallel)
    uint32_t head_sequences = 1;  // a draft head's (serve: --parallel + 1)
    bool carried_head = false;
};

// Plans a run of `model_path` with the configured context, KV type and drafters (with
// --spec-auto and no type, or `carried_head`, the draft head the file carries, which
// make_drafters picks after this check) and checks it against the device. A model that
// cannot be probed is left to the loader to report.
Status check_memory_fits(App& app, const std::string& model_path, const RunShape& shape);
inline Status check_memory_fits(App& app, const std::string& model_path, bool speculative) {
    return check_memory_fits(app, model_path, RunShape{.speculative = speculative});
}

}  // namespace tdm::cli
