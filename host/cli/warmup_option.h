/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/warmup_option.h: the warm-up at load (engine/warmup.h) as `tandem run`, `chat`,
// `serve` and `ocr` run it: after the model, its KV pool and the drafters are made, before
// the command takes its own KV sequences; skipped with --no-warmup or [model] warmup = false.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "cli/commands.h"
#include "engine/warmup.h"

namespace tdm::cli {

// The warm-up for the run that follows (drafters: its chain, empty for plain decoding;
// sampling: its sampler settings), or nothing when it is turned off. A warm-up that fails
// is logged as a warning and reported (WarmupReport::failed); the command goes on.
Result<std::optional<WarmupReport>> warm_up_if_on(const App& app, Runner& runner,
                                                  std::span<Drafter* const> drafters,
                                                  const SamplerParams& sampling);

// Its time for a front end's JSON (0 when it did not run).
double warmup_ms(const std::optional<WarmupReport>& report);

// The line a front end prints on stderr, without a newline: the time, or that it was off.
std::string warmup_line(const std::optional<WarmupReport>& report);

}  // namespace tdm::cli
