/* SPDX-License-Identifier: Apache-2.0 */
// host/common/child_process.h: work on untrusted input done in a child process under a
// memory and a CPU-time bound (setrlimit), so that input built to exhaust either costs
// the child, never this process: rendering a PDF page (image/pdf_pages.h), scanning a
// plugin (plugin/plugin_scan.h). Here: the bounds a child puts on itself, reading a
// child's output and error pipes up to a deadline, and running a function in a forked
// child. Not here: what the work is, or how its failures are worded for users.
//
// Usage (forked):
//   ChildLimits limits{.memory_bytes = 512 << 20, .cpu_seconds = 30};
//   ChildResult r = TDM_TRY(run_forked([&](int out) { return write_all(out, bytes) ? 0 : 1; }, limits, 60s, 1 << 30));
//   if (r.out_of_memory()) ...; else if (r.out_of_cpu()) ...; else use r.out
#pragma once

#include "common/error.h"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tdm {

struct ChildLimits {
    // Address space the child may take beyond what it has when it applies the limits
    // (RLIMIT_AS); 0 = no bound. Allocations past it fail, as they would on a full machine.
    uint64_t memory_bytes = 0;
    // CPU time (RLIMIT_CPU): SIGXCPU at this many seconds, SIGKILL a second later; 0 = no bound.
    uint32_t cpu_seconds = 0;
};

// The exit status of a child whose operator new failed under its memory bound, and the
// line it writes to stderr then (glibc and Poppler write "Out of memory" before they abort).
inline constexpr int kOutOfMemoryExit = 86;
inline constexpr std::string_view kOutOfMemoryLine = "Out of memory";

// In the child: applies `limits` to the calling process and makes a failed operator new
// write kOutOfMemoryLine to stderr and _exit(kOutOfMemoryExit). Uses only system calls
// (safe in a child forked from threads). The memory bound is skipped where
// memory_limits_work() is false.
Status apply_child_limits(const ChildLimits& limits);

// False under AddressSanitizer, whose shadow memory takes terabytes of address space: no
// address-space bound can be set there.
bool memory_limits_work();

// "SIGSEGV"; "signal 77" for one without a name.
std::string signal_name(int sig);

// "1 GiB", "300 MiB": a limit as messages give it.
std::string bytes_text(uint64_t bytes);

struct ChildResult {
    std::string out;       // the child's output pipe, whole (up to max_out bytes)
    std::string err;       // the last few KiB of its stderr
    int status = 0;        // as waitpid reports it
    bool timed_out = false;        // killed at the deadline
    bool too_much_output = false;  // killed past max_out bytes of output
    uint64_t max_rss_bytes = 0;    // its peak resident memory (inherited pages included)
    double cpu_seconds = 0;        // user and system time it used

    bool exited_ok() const;          // exit status 0
    bool out_of_memory() const;      // kOutOfMemoryExit, or a crash after kOutOfMemoryLine
    bool out_of_cpu(const ChildLimits& limits) const;  // SIGXCPU, or the SIGKILL of the hard limit
    int signal() const;              // the signal that ended it, or 0
    std::string last_error_line() const;  // the last line of err
};

// In the parent: reads `out_fd` and `err_fd` (both closed on return) until both close or
// `timeout` passes (then kills the child), and reaps `pid`. Output past `max_out` bytes
// kills the child too.
ChildResult wait_for_child(pid_t pid, int out_fd, int err_fd, std::chrono::milliseconds timeout, size_t max_out);

// Forks a child that applies `limits`, sends its stderr to the parent, runs work(out_fd)
// and exits with its return value, without running this process's exit handlers or
// destructors. The child has only the calling thread: `work` must not take locks another
// thread may have held at the fork (the caller's own, held across the call, are fine).
// Errors: the pipes or the fork could not be made.
Result<ChildResult> run_forked(const std::function<int(int out_fd)>& work, const ChildLimits& limits,
                               std::chrono::milliseconds timeout, size_t max_out);

// Writes all of `data` to `fd` (retrying short writes); false on an error.
bool write_all(int fd, const void* data, size_t n);

}  // namespace tdm
