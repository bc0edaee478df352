/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/interrupt.h: Ctrl-C as a request rather than a kill. While an
// InterruptScope lives, the first SIGINT only sets a flag that generation polls
// (GenerateParams::cancel): the command stops at the next step, keeps what it
// produced, and exits with 130 as a killed shell job would. A second SIGINT
// before the flag is cleared ends the process the usual way (for a command
// stuck somewhere that does not poll).
#pragma once

#include <atomic>

namespace tdm::cli {

class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

    const std::atomic<bool>* flag() const;
    bool fired() const;
    void clear();  // ready for the next request (an interactive session)
};

// The exit status of a command stopped by SIGINT (128 + SIGINT).
inline constexpr int kInterruptedExitCode = 130;

}  // namespace tdm::cli
