// host/cli/sigint_guard.h: Ctrl-C as a request, not an ending. While a
// SigintGuard lives, SIGINT sets interrupted() instead of killing the program;
// generation polls the flag (GenerateParams::cancel) and a blocked read of the
// terminal returns (the handler is installed without SA_RESTART), so the chat
// can stop a reply or leave at the prompt. The previous disposition comes back
// when the guard goes.
#pragma once

#include <signal.h>

#include <atomic>

namespace tdm::cli {

class SigintGuard {
public:
    SigintGuard();
    ~SigintGuard();
    SigintGuard(const SigintGuard&) = delete;
    SigintGuard& operator=(const SigintGuard&) = delete;

    // Set by the handler; the chat clears it once it has acted on it.
    static std::atomic<bool>& interrupted();

private:
    struct sigaction previous_ {};
    bool installed_ = false;
};

}  // namespace tdm::cli
