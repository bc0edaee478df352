// SPDX-License-Identifier: Apache-2.0
// host/cli/progress.cpp
#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "common/log.h"

namespace tdm::cli {

ProgressHook prefill_progress() {
    struct State {
        bool tty = isatty(fileno(stderr)) != 0;
        double last_ms = -1e9;
        bool shown = false;
    };
    auto s = std::make_shared<State>();
    return [s](uint32_t done, uint32_t total, double ms) {
        const bool finished = done >= total;
        if (!s->shown && ms < 1000.0) return;  // short prefills stay quiet
        if (!finished && ms - s->last_ms < (s->tty ? 100.0 : 5000.0)) return;
        s->last_ms = ms;
        s->shown = true;
        const double tps = ms > 0 ? double(done) / (ms / 1e3) : 0;
        const double eta = tps > 0 ? double(total - done) / tps : 0;
        if (s->tty) {
            if (finished)
                std::fprintf(stderr, "\r\033[K");
            else
                std::fprintf(stderr, "\rprefill: %u / %u tokens, %.1f tok/s, ETA %.0f s  ", done, total, tps, eta);
            std::fflush(stderr);
        } else {
            TDM_LOG_INFO("run", "prefill: {} / {} tokens, {:.1f} tok/s{}", done, total, tps,
                         finished ? std::string(", done") : fmt::format(", ETA {:.0f} s", eta));
        }
    };
}

}  // namespace tdm::cli
