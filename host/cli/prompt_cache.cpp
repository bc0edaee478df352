// SPDX-License-Identifier: Apache-2.0
// host/cli/prompt_cache.cpp
#include "cli/prompt_cache.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "engine/continuation.h"
#include "engine/state_file.h"

namespace tdm::cli {

namespace {
double elapsed_ms(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

PromptCache::PromptCache(std::string path, bool read_only) {
    report_.path = std::move(path);
    report_.read_only = read_only;
}

uint32_t PromptCache::restore(const Model& model, KvPool& kv, int seq, std::span<const int32_t> prompt,
                              std::span<Drafter* const> drafters) {
    struct stat st {};
    if (::stat(report_.path.c_str(), &st) != 0) return 0;  // absent: written after this prompt
    report_.found = true;
    // a cache for another model is replaced; a directory or FIFO never is
    if (!S_ISREG(st.st_mode)) writable_ = false;
    const auto t0 = std::chrono::steady_clock::now();
    auto loaded = load_sequence_state(report_.path, model, kv, seq, drafters);
    report_.restore_ms = elapsed_ms(t0);
    if (!loaded.ok()) {
        report_.refused = loaded.error().message();
        std::fprintf(stderr, "tandem: warning: prompt cache %s; prefilling the whole prompt\n", report_.refused.c_str());
        (void)kv.truncate(seq, 0);
        return 0;
    }
    report_.n_restored = uint32_t(loaded->tokens.size());
    report_.file_bytes = loaded->file_bytes;
    const uint32_t n = resumable_prefix(kv, seq, loaded->tokens, prompt, drafters);
    if (auto t = kv.truncate(seq, n); !t.ok()) {  // resumable_prefix() checked it can; be safe anyway
        report_.refused = t.error().message();
        (void)kv.truncate(seq, 0);
        return 0;
    }
    report_.n_reused = n;
    return n;
}

std::function<Status(uint32_t)> PromptCache::save_hook(const Model& model, const KvPool& kv, int seq,
                                                       std::span<const int32_t> prompt,
                                                       std::span<Drafter* const> drafters) {
    if (report_.read_only || !writable_) return {};
    return [this, &model, &kv, seq, prompt, drafters](uint32_t n_kv) -> Status {
        const auto t0 = std::chrono::steady_clock::now();
        auto saved = save_sequence_state(report_.path, model, kv, seq, prompt.first(n_kv), drafters);
        report_.save_ms = elapsed_ms(t0);
        if (!saved.ok()) {
            // the generation goes on: the cache is an optimisation
            report_.save_error = saved.error().message();
            std::fprintf(stderr, "tandem: warning: prompt cache not saved: %s\n", report_.save_error.c_str());
            return {};
        }
        report_.saved = true;
        report_.n_saved = n_kv;
        report_.file_bytes = saved->file_bytes;
        report_.kv_bytes = saved->kv_bytes;
        return {};
    };
}

nlohmann::json PromptCacheReport::json() const {
    nlohmann::json j;
    j["file"] = path;
    j["read_only"] = read_only;
    j["restored_tokens"] = n_restored;
    j["reused_tokens"] = n_reused;
    j["restore_ms"] = restore_ms;
    j["refused"] = refused.empty() ? nlohmann::json(nullptr) : nlohmann::json(refused);
    j["saved"] = saved;
    j["saved_tokens"] = n_saved;
    j["save_ms"] = save_ms;
    j["file_bytes"] = file_bytes;
    if (saved) j["kv_bytes"] = kv_bytes;
    if (!save_error.empty()) j["save_error"] = save_error;
    return j;
}

std::string PromptCacheReport::summary() const {
    std::string s = fmt::format("prompt cache {}: ", path);
    if (!found)
        s += "not found";
    else if (!refused.empty())
        s += "refused";
    else
        s += fmt::format("reused {} of its {} tokens (restored in {:.1f} ms)", n_reused, n_restored, restore_ms);
    if (saved)
        s += fmt::format("; saved {} tokens in {:.1f} ms ({:.1f} MiB for {:.1f} MiB of KV)", n_saved, save_ms,
                         double(file_bytes) / (1 << 20), double(kv_bytes) / (1 << 20));
    return s + "\n";
}

}  // namespace tdm::cli
