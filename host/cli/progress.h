/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/progress.h: progress of a long prefill, so that it cannot be taken
// for a hang: on a terminal a self-updating line on stderr (tokens done of
// total, tokens/s, ETA); otherwise info-level log lines every few seconds
// (shown with --log-level info). Quiet for prefills that end within a second.
#pragma once

#include "engine/generate.h"

namespace tdm::cli {

ProgressHook prefill_progress();

}  // namespace tdm::cli
