// SPDX-License-Identifier: Apache-2.0
// tests/cli/interrupt_test.cpp: Ctrl-C stops `tandem run` cleanly (the tokens
// so far printed, exit 130; a prefill it cut short reported as such), and long
// prefills report progress.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/cli_models.h"
#include "cli_run.h"
#include "common/log.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

off_t file_size(const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 ? st.st_size : 0;
}

TEST(CliInterrupt, sigint_during_decoding_prints_the_tokens_so_far_and_exits_130) {
    const std::string dir = test::make_temp_dir("interrupt");
    const std::string out = dir + "/out", err = dir + "/err";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        // long enough (thousands of steps) that SIGINT arrives mid-decoding
        execl(TANDEM_BIN, TANDEM_BIN, "run", "-m", tiny_qwen3_model().c_str(), "--prompt-tokens", "1,2,3", "-n", "4000",
              "--ignore-eos", "-c", "4096", static_cast<char*>(nullptr));
        _exit(127);
    }
    // wait for output to stream (the model loaded and decoding runs)
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (file_size(out) < 8 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_GE(file_size(out), 8) << test::read_file(err);
    kill(pid, SIGINT);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << WTERMSIG(st);
    EXPECT_EQ(WEXITSTATUS(st), 130);
    const std::string e = test::read_file(err);
    EXPECT_NE(e.find("stop: cancelled"), std::string::npos) << e;
    EXPECT_GE(file_size(out), 8);
}

TEST(CliInterrupt, sigint_during_a_long_prefill_reports_the_tokens_it_ran_not_the_whole_prompt) {
    const std::string dir = test::make_temp_dir("interrupt-prefill");
    const std::string prompt = dir + "/prompt.txt", err = dir + "/err";
    {
        // about 11,000 tokens, prefilled 16 at a time: seconds of work on any machine
        const char* words[] = {"alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "seven", "orange", "music"};
        std::string text;
        for (int i = 0; i < 3000; ++i) text += std::string(words[(i * 7 + i / 10) % 10]) + " ";
        std::ofstream(prompt, std::ios::binary) << text;
    }
    const std::string model = tiny_qwen3_model();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const int fo = open("/dev/null", O_WRONLY);
        const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        execl(TANDEM_BIN, TANDEM_BIN, "run", "-m", model.c_str(), "-f", prompt.c_str(), "-n", "4", "-b", "16",
              "-c", "16384", "--log-level", "info", static_cast<char*>(nullptr));
        _exit(127);
    }
    // the first progress line comes a second into the prefill
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (file_size(err) == 0 || test::read_file(err).find("prefill: ") == std::string::npos) {
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGINT);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    const std::string e = test::read_file(err);
    ASSERT_NE(e.find("prefill: "), std::string::npos) << e;
    ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << WTERMSIG(st);
    EXPECT_EQ(WEXITSTATUS(st), 130) << e;
    const size_t at = e.find("prompt: interrupted after ");
    ASSERT_NE(at, std::string::npos) << e;
    unsigned done = 0, total = 0;
    ASSERT_EQ(std::sscanf(e.c_str() + at, "prompt: interrupted after %u of %u tokens", &done, &total), 2) << e;
    EXPECT_LT(done, total) << e;
    EXPECT_GT(done, 0u) << e;
    EXPECT_EQ(e.find("prompt: " + std::to_string(total) + " tokens"), std::string::npos) << e;
}

TEST(CliInterrupt, the_scope_turns_sigint_into_a_flag_and_restores_the_handler) {
    struct sigaction before {};
    sigaction(SIGINT, nullptr, &before);
    {
        cli::InterruptScope scope;
        EXPECT_FALSE(scope.fired());
        raise(SIGINT);
        EXPECT_TRUE(scope.fired());
        EXPECT_TRUE(scope.flag()->load());
        scope.clear();
        EXPECT_FALSE(scope.fired());
    }
    struct sigaction after {};
    sigaction(SIGINT, nullptr, &after);
    EXPECT_EQ(before.sa_handler, after.sa_handler);
}

TEST(CliProgress, long_prefills_log_tokens_rate_and_eta_short_ones_stay_quiet) {
    set_log_level(LogLevel::info);
    {
        testing::internal::CaptureStderr();
        ProgressHook quiet = cli::prefill_progress();
        quiet(256, 512, 300.0);
        quiet(512, 512, 600.0);
        EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    }
    testing::internal::CaptureStderr();
    ProgressHook hook = cli::prefill_progress();
    hook(2048, 10000, 8000.0);  // 256 tok/s: 31 s to go
    hook(10000, 10000, 39000.0);
    const std::string log = testing::internal::GetCapturedStderr();
    set_log_level(LogLevel::warn);
    EXPECT_NE(log.find("prefill: 2048 / 10000 tokens, 256.0 tok/s, ETA 31 s"), std::string::npos) << log;
    EXPECT_NE(log.find("10000 / 10000 tokens"), std::string::npos) << log;
}

}  // namespace
}  // namespace tdm
