/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/dflash/dflash_fixture.h: what the DFlash tests share: the tiny Qwen3 and Llama
// targets (5 layers, so that z-lab's default spreads two draft layers over layers 1 and 2),
// heads for them written by the dflash synthesizer in z-lab's HF layout (config.json editable
// before loading) or llama.cpp's GGUF layout, and the head attached as
// `--spec-type dflash -md FILE` attaches it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "dflash/synth/dflash_synth.h"
#include "kv/kv_pool.h"
#include "model/model.h"
#include "speculative/draft_head.h"

namespace tdm::test::dflash {

struct Target {
    std::string path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

enum class TargetArch { qwen3, llama };

// The target's GGUF in `dir` (F16 weights), loaded with a KV pool of n_ctx positions.
Target load_target(const std::string& dir, uint32_t n_ctx = 256, TargetArch arch = TargetArch::qwen3);
// A head for the target at `target` (F32 weights, blocks of `block` rows); `edit` may change its
// config.json before it is written back. Its directory.
std::string write_head(const std::string& target, const std::string& dir, int32_t block = 8,
                       const std::function<void(nlohmann::json&)>& edit = nullptr);
// The same head (same seed and shape, F32) as llama.cpp's GGUF at `path`; `edit` may change its
// shape first (a head for another target). Its path.
std::string write_gguf_head(const std::string& target, const std::string& path, int32_t block = 8,
                            const std::function<void(synth::DflashShape&)>& edit = nullptr);
// The GGUF head at `head` with the target's token_embd.weight and output.weight (when it has
// one) added as its own tables, written to `out`. Its path.
std::string with_target_tables(const std::string& head, const std::string& target, const std::string& out);
// The head at `head` on `t`, created and loaded.
Result<std::unique_ptr<DraftHeadDrafter>> make_head(const Target& t, const std::string& head);

}  // namespace tdm::test::dflash
