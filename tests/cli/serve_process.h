/* SPDX-License-Identifier: Apache-2.0 */
// tests/cli/serve_process.h: `tandem serve` (TANDEM_BIN) as a child process for the server
// tests: started on a free port (--port 0), its port read from the "listening on" line,
// stopped with SIGTERM (or killed if a test leaves it running).
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tdm::test {

class ServeProcess {
public:
    // Starts `tandem serve ARGS --port 0` and waits (up to 120 s) for it to listen; with
    // `max_open_files`, the server may open that many files at most (soft and hard limit).
    explicit ServeProcess(const std::vector<std::string>& args, uint64_t max_open_files = 0);
    ~ServeProcess();
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    bool started() const { return port_ > 0; }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    // Its standard error so far (the reason, when it did not start).
    std::string log() const;
    // SIGTERM, then waits for the exit; returns the exit status (128+N for signal N).
    int terminate();

private:
    pid_t pid_ = -1;
    int port_ = 0;
    std::string log_path_;
};

}  // namespace tdm::test
