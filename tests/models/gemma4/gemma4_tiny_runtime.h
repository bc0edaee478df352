// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_tiny_runtime.h: the tiny models of gemma4_tiny*.h run by the runtime,
// shared by the end-to-end tests: a model with its KV pool and runner (the sliding-window
// layers in rings by default), the assistant loaded as the target's draft head, greedy
// parameters and random prompts. Kept apart from gemma4_tiny*.cpp, the writers,
// which need no runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "model/runner.h"
#include "plugin/plugin_loader.h"
#include "speculative/draft_head.h"
#include "support/plugin_registry.h"

namespace tdm::test::g4 {

// Passes of at most 16 rows (the KV pools' rows_max): the sliding-window layers (window 8)
// keep rings of ceil((8 + 16 - 1) / 16) = 2 blocks of 16 positions, which wrap at 32.
constexpr uint32_t kRowsMax = 16;

// Greedy, kRowsMax-row prefill chunks, `n` tokens whatever they are.
GenerateParams greedy(int n);

// A loaded model with its KV pool and runner.
struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
};

// rows_max: kRowsMax (sliding-window layers in rings), or 0 for a pool whose windowed layers
// keep every position (rings as long as the context are not made). Failures are test failures
// and leave the members null.
Loaded load(const std::string& path, vk::Device& dev, vk::PipelineManager& pipes, uint32_t n_ctx = 128,
            uint32_t rows_max = kRowsMax, uint32_t block_size = 16);

// The gemma4 assistant at `path` as the draft head of `target` (a stateless, constant-position
// head reading `target_kv`), as `-md` would load it. The runner must then produce the hidden
// state it reads: runner.set_hidden_point(drafter->hidden_point()).
Result<std::unique_ptr<DraftHeadDrafter>> load_assistant(const std::string& path, const Model& target,
                                                         const KvPool& target_kv);

// n ids drawn uniformly from [lo, hi), reproducibly from `seed`.
std::vector<int32_t> random_tokens(uint64_t seed, size_t n, int32_t lo = 3, int32_t hi = 1024);

}  // namespace tdm::test::g4
