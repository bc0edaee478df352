// SPDX-License-Identifier: Apache-2.0
// host/cli/interrupt.cpp
#include "cli/interrupt.h"

#include <signal.h>

namespace tdm::cli {
namespace {

std::atomic<bool> g_interrupted{false};
struct sigaction g_previous;

void on_sigint(int) {
    if (g_interrupted.load(std::memory_order_relaxed)) {
        // the second Ctrl-C: the default action (the process ends)
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
        return;
    }
    g_interrupted.store(true, std::memory_order_relaxed);
}

static_assert(std::atomic<bool>::is_always_lock_free, "the flag is set from a signal handler");

}  // namespace

InterruptScope::InterruptScope() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking read returns EINTR, so a prompt can notice
    sigaction(SIGINT, &sa, &g_previous);
}

InterruptScope::~InterruptScope() { sigaction(SIGINT, &g_previous, nullptr); }

const std::atomic<bool>* InterruptScope::flag() const { return &g_interrupted; }
bool InterruptScope::fired() const { return g_interrupted.load(); }
void InterruptScope::clear() { g_interrupted.store(false); }

}  // namespace tdm::cli
