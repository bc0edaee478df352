// SPDX-License-Identifier: Apache-2.0
// host/cli/warmup_option.cpp
#include "cli/warmup_option.h"

#include <fmt/format.h>

#include "serve/generation_settings.h"

namespace tdm::cli {

Result<std::optional<WarmupReport>> warm_up_if_on(const App& app, Runner& runner,
                                                  std::span<Drafter* const> drafters,
                                                  const SamplerParams& sampling) {
    const Config& cfg = app.config();
    if (!cfg.model.warmup) return std::optional<WarmupReport>();
    Result<WarmupReport> r = warm_up(runner, drafters, spec_params(cfg), sampling, uint32_t(cfg.model.n_batch));
    if (!r.ok()) return Error::format("{} (--no-warmup skips the warm-up)", r.error().message());
    return std::optional<WarmupReport>(std::move(*r));
}

double warmup_ms(const std::optional<WarmupReport>& report) { return report ? report->ms : 0.0; }

std::string warmup_line(const std::optional<WarmupReport>& report) {
    if (!report) return "warm-up: off (--no-warmup)";
    return fmt::format("warm-up: {:.1f} ms at load (--no-warmup skips it)", report->ms);
}

}  // namespace tdm::cli
