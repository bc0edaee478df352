/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/prompt_cache.h: `--prompt-cache FILE` (and --prompt-cache-ro) for
// `tandem run` and `tandem chat`, as in llama.cpp: the state of a processed
// prompt is saved to FILE, and a later prompt that starts with the same tokens
// restores it and prefills only the new suffix.
//
// restore() loads FILE if it exists and returns how many prompt tokens the
// sequence resumes from (GenerateParams::n_cached); a refused file (another
// model, another KV type, corrupt, truncated...) is a warning on stderr and a
// full prefill. save_hook() is the GenerateParams::on_prefix that writes FILE
// once the KV holds all but the prompt's last token: unless read-only, and only
// when the prompt went beyond what FILE gave (a failed save is a warning too).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kv/kv_pool.h"
#include "model/model.h"
#include "speculative/drafter.h"

namespace tdm::cli {

struct PromptCacheReport {
    std::string path;
    bool read_only = false;
    bool found = false;          // FILE existed
    uint32_t n_restored = 0;     // tokens the file held (0: refused or absent)
    uint32_t n_reused = 0;       // prompt tokens not prefilled
    double restore_ms = 0;
    std::string refused;         // why the file was not used
    bool saved = false;
    uint32_t n_saved = 0;
    uint64_t file_bytes = 0, kv_bytes = 0;  // of the file saved (or else restored)
    double save_ms = 0;
    std::string save_error;

    nlohmann::json json() const;
    std::string summary() const;  // one line for stderr
};

class PromptCache {
public:
    PromptCache(std::string path, bool read_only);
    // Before generating `prompt` on live sequence `seq` (empty or not): the n_cached to use.
    uint32_t restore(const Model& model, KvPool& kv, int seq, std::span<const int32_t> prompt,
                     std::span<Drafter* const> drafters);
    // The on_prefix hook; empty when nothing is to be saved. The arguments must
    // outlive the generation.
    std::function<Status(uint32_t)> save_hook(const Model& model, const KvPool& kv, int seq,
                                              std::span<const int32_t> prompt, std::span<Drafter* const> drafters);
    const PromptCacheReport& report() const { return report_; }

private:
    PromptCacheReport report_;
    bool writable_ = true;
};

}  // namespace tdm::cli
