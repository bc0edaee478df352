// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_process.cpp
#include "cli/serve_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "support/fixtures.h"

namespace tdm::test {

ServeProcess::ServeProcess(const std::vector<std::string>& args, uint64_t max_open_files) {
    static const std::string dir = make_temp_dir("serve");
    static int counter = 0;
    log_path_ = dir + "/serve-" + std::to_string(++counter) + ".log";
    int out[2];
    if (pipe(out) != 0) return;
    std::vector<std::string> all = {TANDEM_BIN, "serve"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--port", "0"});
    pid_ = fork();
    if (pid_ == 0) {
        dup2(out[1], STDOUT_FILENO);
        const int err = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err >= 0) dup2(err, STDERR_FILENO);
        close(out[0]);
        if (max_open_files) {
            const rlimit lim{rlim_t(max_open_files), rlim_t(max_open_files)};
            setrlimit(RLIMIT_NOFILE, &lim);
        }
        std::vector<char*> argv;
        for (std::string& a : all) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(out[1]);
    // Read stdout until "listening on http://HOST:PORT\n".
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline && got.find('\n') == std::string::npos) {
        pollfd p{out[0], POLLIN, 0};
        if (poll(&p, 1, 1000) <= 0) continue;
        char buf[256];
        const ssize_t n = read(out[0], buf, sizeof buf);
        if (n <= 0) break;  // the server exited
        got.append(buf, size_t(n));
    }
    close(out[0]);
    const std::string marker = "listening on http://";
    if (const size_t at = got.find(marker); at != std::string::npos) {
        const size_t colon = got.find(':', at + marker.size());
        if (colon != std::string::npos) port_ = std::atoi(got.c_str() + colon + 1);
    }
}

ServeProcess::~ServeProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
}

std::string ServeProcess::log() const { return read_file(log_path_); }

int ServeProcess::terminate() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace tdm::test
