// SPDX-License-Identifier: Apache-2.0
// host/cli/warmup_option.cpp
#include "cli/warmup_option.h"

#include <chrono>

#include <fmt/format.h>

#include "common/log.h"
#include "serve/generation_settings.h"

namespace tdm::cli {

Result<std::optional<WarmupReport>> warm_up_if_on(const App& app, Runner& runner,
                                                  std::span<Drafter* const> drafters,
                                                  const SamplerParams& sampling) {
    const Config& cfg = app.config();
    if (!cfg.model.warmup) return std::optional<WarmupReport>();
    const auto t0 = std::chrono::steady_clock::now();
    Result<WarmupReport> r = warm_up(runner, drafters, spec_params(cfg), sampling, uint32_t(cfg.model.n_batch));
    if (r.ok()) return std::optional<WarmupReport>(std::move(*r));
    // An untimed head start, not the work asked for: the command goes on without it (its
    // scratch sequence was given back), and a real fault shows again in the command itself.
    TDM_LOG_WARN("warmup", "the warm-up at load failed, going on without it: {}", r.error().message());
    WarmupReport failed;
    failed.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    failed.failed = r.error().message();
    return std::optional<WarmupReport>(std::move(failed));
}

double warmup_ms(const std::optional<WarmupReport>& report) { return report ? report->ms : 0.0; }

std::string warmup_line(const std::optional<WarmupReport>& report) {
    if (!report) return "warm-up: off (--no-warmup)";
    if (!report->failed.empty()) return fmt::format("warm-up: failed after {:.1f} ms, skipped", report->ms);
    return fmt::format("warm-up: {:.1f} ms at load (--no-warmup skips it)", report->ms);
}

}  // namespace tdm::cli
