/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/dflash/dflash_fixture.h: what the DFlash tests share: the tiny Qwen3 target (5
// layers, so that z-lab's default spreads two draft layers over layers 1 and 2), heads for it
// written by the dflash synthesizer (config.json editable before loading), and the head
// attached as `--spec-type dflash -md DIR` attaches it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kv/kv_pool.h"
#include "model/model.h"
#include "speculative/draft_head.h"

namespace tdm::test::dflash {

struct Target {
    std::string path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

// The target's GGUF in `dir` (F16 weights), loaded with a KV pool of n_ctx positions.
Target load_target(const std::string& dir, uint32_t n_ctx = 256);
// A head for the target at `target` (F32 weights, blocks of `block` rows); `edit` may change its
// config.json before it is written back. Its directory.
std::string write_head(const std::string& target, const std::string& dir, int32_t block = 8,
                       const std::function<void(nlohmann::json&)>& edit = nullptr);
// The head at `head` on `t`, created and loaded.
Result<std::unique_ptr<DraftHeadDrafter>> make_head(const Target& t, const std::string& head);

}  // namespace tdm::test::dflash
