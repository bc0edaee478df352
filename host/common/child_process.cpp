// SPDX-License-Identifier: Apache-2.0
// host/common/child_process.cpp
#include "common/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include <fmt/format.h>

#if defined(__SANITIZE_ADDRESS__)
#define TDM_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TDM_UNDER_ASAN 1
#endif
#endif

namespace tdm {
namespace {

// What is kept of a child's stderr for messages.
constexpr size_t kStderrTail = 2048;

// The calling process's address space in bytes (/proc/self/statm's first field), read with
// system calls only; 0 if unknown.
uint64_t address_space_bytes() {
    const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[64];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    uint64_t pages = 0;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pages = pages * 10 + uint64_t(buf[i] - '0');
    return pages * uint64_t(sysconf(_SC_PAGESIZE));
}

void out_of_memory() {
    static constexpr char line[] = "Out of memory\n";
    (void)!write(STDERR_FILENO, line, sizeof line - 1);
    _exit(kOutOfMemoryExit);
}

// Lowers the soft and hard limit of `resource` to `value` (never above the hard limit
// already set).
bool lower_limit(int resource, rlim_t soft, rlim_t hard) {
    rlimit now{};
    if (getrlimit(resource, &now) != 0) return false;
    if (now.rlim_max != RLIM_INFINITY) {
        hard = std::min(hard, now.rlim_max);
        soft = std::min(soft, hard);
    }
    const rlimit want{soft, hard};
    return setrlimit(resource, &want) == 0;
}

}  // namespace

bool memory_limits_work() {
#ifdef TDM_UNDER_ASAN
    return false;
#else
    return true;
#endif
}

std::string signal_name(int sig) {
    if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
    return fmt::format("signal {}", sig);
}

std::string bytes_text(uint64_t bytes) {
    if (bytes >= (uint64_t(1) << 30) && bytes % (uint64_t(1) << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
    if (bytes >= (uint64_t(1) << 20)) return fmt::format("{} MiB", bytes >> 20);
    return fmt::format("{} bytes", bytes);
}

Status apply_child_limits(const ChildLimits& limits) {
    std::set_new_handler(out_of_memory);
    // A child stopped at its bound aborts or takes SIGXCPU; a core of a fork of the whole
    // process (gigabytes, and a piped core_pattern ignores RLIMIT_CORE) helps nobody.
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (limits.memory_bytes && memory_limits_work()) {
        // Without /proc the bound cannot be set relative to the child's size: the child runs
        // with the CPU and time bounds only, rather than every page and scan failing.
        if (const uint64_t now = address_space_bytes(); now != 0) {
            const rlim_t cap = rlim_t(now + limits.memory_bytes);
            if (!lower_limit(RLIMIT_AS, cap, cap))
                return Error::format("setrlimit(RLIMIT_AS): {}", std::strerror(errno));
        }
    }
    if (limits.cpu_seconds) {
        signal(SIGXCPU, SIG_DFL);
        if (!lower_limit(RLIMIT_CPU, limits.cpu_seconds, rlim_t(limits.cpu_seconds) + 1))
            return Error::format("setrlimit(RLIMIT_CPU): {}", std::strerror(errno));
    }
    return {};
}

bool ChildResult::exited_ok() const { return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

int ChildResult::signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }

bool ChildResult::out_of_memory() const {
    if (WIFEXITED(status)) return WEXITSTATUS(status) == kOutOfMemoryExit;
    return WIFSIGNALED(status) && !timed_out && err.find(kOutOfMemoryLine) != std::string::npos;
}

bool ChildResult::out_of_cpu(const ChildLimits& limits) const {
    // SIGKILL comes from the hard limit when SIGXCPU was caught or ignored
    if (timed_out || too_much_output || !limits.cpu_seconds) return false;
    return signal() == SIGXCPU || (signal() == SIGKILL && cpu_seconds >= double(limits.cpu_seconds));
}

std::string ChildResult::last_error_line() const {
    std::string s = err;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    const size_t nl = s.rfind('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
}

ChildResult wait_for_child(pid_t pid, int out_fd, int err_fd, std::chrono::milliseconds timeout, size_t max_out) {
    ChildResult r;
    rusage usage{};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    bool reaped = false;
    char buf[65536];
    // Reads what the ready pipes hold; false once the output is over max_out.
    auto read_ready = [&]() {
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                continue;
            }
            std::string& dst = i == 0 ? r.out : r.err;
            dst.append(buf, size_t(got));
            if (i == 1 && dst.size() > 2 * kStderrTail) dst.erase(0, dst.size() - kStderrTail);
            if (i == 0 && dst.size() > max_out) {
                r.too_much_output = true;
                return false;
            }
        }
        return true;
    };
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            r.timed_out = true;
            break;
        }
        const int n = poll(fds, 2, int(std::min<int64_t>(left.count(), 100)));
        if (n < 0 && errno != EINTR) break;
        if (n <= 0) {
            // nothing to read: a child that exited while something else holds its pipes is done
            if (!reaped && wait4(pid, &r.status, WNOHANG, &usage) == pid) reaped = true;
            if (reaped) {
                // what it wrote between the last poll and its exit is still in the pipes
                // (bounded: a grandchild holding the pipes may write on)
                for (int k = 0; k < 256 && (fds[0].fd >= 0 || fds[1].fd >= 0) && poll(fds, 2, 0) > 0; ++k)
                    if (!read_ready()) break;
                break;
            }
            continue;
        }
        if (!read_ready()) break;
    }
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    if (!reaped) {
        // still running after its pipes closed, past the deadline, or talking too much
        while (!r.timed_out && !r.too_much_output) {
            const pid_t w = wait4(pid, &r.status, WNOHANG, &usage);
            if (w == pid || (w < 0 && errno != EINTR)) {
                reaped = true;
                break;
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                r.timed_out = true;
                break;
            }
            usleep(10000);
        }
        if (!reaped) {
            kill(pid, SIGKILL);
            while (wait4(pid, &r.status, 0, &usage) < 0 && errno == EINTR) {
            }
        }
    }
    r.max_rss_bytes = uint64_t(usage.ru_maxrss) * 1024;
    r.cpu_seconds = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    return r;
}

Result<ChildResult> run_forked(const std::function<int(int out_fd)>& work, const ChildLimits& limits,
                               std::chrono::milliseconds timeout, size_t max_out) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return Error::format("pipe: {}", std::strerror(errno));
    if (pipe2(err, O_CLOEXEC) != 0) {
        const int e = errno;
        close(out[0]);
        close(out[1]);
        return Error::format("pipe: {}", std::strerror(e));
    }
    const pid_t pid = fork();
    if (pid < 0) {
        const int e = errno;
        for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
        return Error::format("fork: {}", std::strerror(e));
    }
    if (pid == 0) {
        close(out[0]);
        close(err[0]);
        if (dup2(err[1], STDERR_FILENO) < 0) _exit(1);
        if (Status st = apply_child_limits(limits); !st.ok()) {
            const std::string m = "cannot bound this process: " + st.error().message() + "\n";
            (void)write_all(STDERR_FILENO, m.data(), m.size());
            _exit(1);
        }
        int rc = 1;
        try {
            rc = work(out[1]);
        } catch (...) {
            rc = 1;
        }
        _exit(rc);
    }
    close(out[1]);
    close(err[1]);
    return wait_for_child(pid, out[0], err[0], timeout, max_out);
}

bool write_all(int fd, const void* data, size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= size_t(w);
    }
    return true;
}

}  // namespace tdm
