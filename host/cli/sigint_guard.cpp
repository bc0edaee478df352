// host/cli/sigint_guard.cpp
#include "cli/sigint_guard.h"

namespace tdm::cli {
namespace {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler needs a lock-free flag");

extern "C" void on_sigint(int) { g_interrupted.store(true, std::memory_order_relaxed); }

}  // namespace

std::atomic<bool>& SigintGuard::interrupted() { return g_interrupted; }

SigintGuard::SigintGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a read waiting for the user returns EINTR
    installed_ = sigaction(SIGINT, &sa, &previous_) == 0;
}

SigintGuard::~SigintGuard() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
}

}  // namespace tdm::cli
