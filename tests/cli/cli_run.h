/* SPDX-License-Identifier: Apache-2.0 */
// tests/cli/cli_run.h: running the built `tandem` (TANDEM_BIN) as a child process and capturing its
// exit status, stdout and stderr, for the CLI tests.
//
//   CliRun r = tandem({"synth", "-o", path}, "TANDEM_LOG=off");
//   EXPECT_EQ(r.status, 0) << r.err;
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/fixtures.h"

namespace tdm {

struct CliRun {
    int status = -1;  // exit code; 128+N for signal N
    std::string out, err;
    bool has(const std::string& s) const { return out.find(s) != std::string::npos || err.find(s) != std::string::npos; }
};

// `s` as one single-quoted shell word.
inline std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs TANDEM_BIN with `args`; `env` ("VAR=value ...", already quoted) goes before the command;
// `stdin_path`, if given, is its standard input.
inline CliRun tandem(const std::vector<std::string>& args, const std::string& env = "",
                     const std::string& stdin_path = "") {
    static const std::string dir = test::make_temp_dir("cli");
    const std::string out = dir + "/out", err = dir + "/err";
    std::string cmd = env + " " + quote(TANDEM_BIN);
    for (const auto& a : args) cmd += " " + quote(a);
    if (!stdin_path.empty()) cmd += " <" + quote(stdin_path);
    cmd += " >" + out + " 2>" + err;
    CliRun r;
    const int st = std::system(cmd.c_str());
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = test::read_file(out);
    r.err = test::read_file(err);
    return r;
}

}  // namespace tdm
