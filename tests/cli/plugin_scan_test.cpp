// SPDX-License-Identifier: Apache-2.0
// tests/cli/plugin_scan_test.cpp: out-of-process plugin scanning (plugin/plugin_scan.h,
// scan_cache.h): hostile plugins (tests/plugins/hostile/*.c), garbage and truncated
// files are vetted in a child `tandem __scan-plugin` under memory and CPU bounds, listed
// with the reason and never opened in the host; reports are cached by file; `tandem
// plugins` and `tandem run` carry on beside them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/cli_models.h"
#include "cli_run.h"
#include "common/child_process.h"
#include "plugin/plugin_loader.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

namespace fs = std::filesystem;

std::string hostile(const char* name) {
    return std::string(TANDEM_TEST_HOSTILE_PLUGIN_DIR) + "/tandem-hostile-" + name + ".so";
}

void copy_into(const std::string& dir, const std::string& file, const std::string& as = "") {
    fs::copy_file(file, dir + "/" + (as.empty() ? fs::path(file).filename().string() : as),
                  fs::copy_options::overwrite_existing);
}

// A plugin directory with every kind of broken plugin that fails fast (the hanging
// one has a directory of its own), plus a valid drafter.
std::string broken_plugin_dir() {
    const std::string dir = test::make_temp_dir("scan-plugins");
    for (const char* p : {"abort_in_constructor", "segfault_in_entry", "unterminated_error", "hostile_strings"})
        copy_into(dir, hostile(p));
    copy_into(dir, std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-echo_drafter.so");
    std::mt19937 rng(7);
    std::string garbage(64 * 1024, '\0');
    for (char& c : garbage) c = char(rng());
    std::ofstream(dir + "/tandem-garbage.so", std::ios::binary) << garbage;
    const std::string elf = test::read_file(std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-echo_drafter.so");
    std::ofstream(dir + "/tandem-truncated.so", std::ios::binary) << elf.substr(0, elf.size() / 3);
    return dir;
}

std::string hang_plugin_dir() {
    const std::string dir = test::make_temp_dir("scan-hang");
    copy_into(dir, hostile("hang_in_init"));
    return dir;
}

PluginSearch scanning(const std::vector<std::string>& dirs, const std::string& cache,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    PluginSearch s;
    s.dirs = dirs;
    s.use_env = false;
    s.use_default_dirs = false;
    s.scanner = TANDEM_BIN;
    s.scan_timeout = timeout;
    s.scan_cache = cache;
    return s;
}

const PluginRecord* record(const Registry& reg, const std::string& file) {
    for (const auto& p : reg.plugins())
        if (fs::path(p->path).filename() == file) return p.get();
    return nullptr;
}

TEST(PluginScan, crashing_hanging_and_garbage_plugins_are_reported_and_never_opened_here) {
    const std::string cache = test::make_temp_dir("scan-cache") + "/scan.json";
    auto reg = load_plugins(scanning({broken_plugin_dir()}, cache));
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    auto error_of = [&](const char* file) {
        const PluginRecord* p = record(**reg, file);
        EXPECT_NE(p, nullptr) << file;
        if (!p) return std::string();
        EXPECT_EQ(p->handle, nullptr) << file << " was opened in the host";
        return p->error;
    };
    EXPECT_NE(error_of("tandem-hostile-abort_in_constructor.so").find("crashed (SIGABRT) while loading"),
              std::string::npos);
    EXPECT_NE(error_of("tandem-hostile-segfault_in_entry.so").find("crashed (SIGSEGV) while loading"),
              std::string::npos);
    const std::string unterminated = error_of("tandem-hostile-unterminated_error.so");
    EXPECT_NE(unterminated.find("init failed: " + std::string(1024, 'x')), std::string::npos);
    EXPECT_EQ(unterminated.find(std::string(1025, 'x')), std::string::npos);
    EXPECT_FALSE(error_of("tandem-garbage.so").empty());
    EXPECT_FALSE(error_of("tandem-truncated.so").empty());

    // the good ones wait, unopened, until a lookup needs them
    const PluginRecord* echo = record(**reg, "tandem-test-echo_drafter.so");
    ASSERT_NE(echo, nullptr);
    EXPECT_TRUE(echo->error.empty()) << echo->error;
    EXPECT_TRUE(echo->deferred);
    EXPECT_EQ(echo->scan_origin, "scanned");
    EXPECT_EQ(echo->provides, std::vector<std::string>{"drafter echo"});
    EXPECT_EQ((*reg)->find_arch_gguf("qwen3"), nullptr);
    EXPECT_EQ(echo->handle, nullptr) << "an architecture lookup opened a drafter-only plugin";
    const DrafterEntry* d = (*reg)->find_drafter("echo");
    ASSERT_NE(d, nullptr);
    EXPECT_NE(echo->handle, nullptr);
    EXPECT_FALSE(echo->deferred);
    const PluginRecord* strings = record(**reg, "tandem-hostile-hostile_strings.so");
    ASSERT_NE(strings, nullptr);
    EXPECT_TRUE(strings->error.empty()) << strings->error;
    EXPECT_NE((*reg)->find_drafter("hostile-ok"), nullptr);
}

TEST(PluginScan, plugin_that_hangs_while_loading_is_killed_at_the_timeout) {
    const std::string cache = test::make_temp_dir("scan-cache") + "/scan.json";
    auto reg = load_plugins(scanning({hang_plugin_dir()}, cache, std::chrono::milliseconds(300)));
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    ASSERT_EQ((*reg)->plugins().size(), 1u);
    const PluginRecord& p = *(*reg)->plugins().front();
    EXPECT_NE(p.error.find("did not finish loading within 300 ms and was killed"), std::string::npos) << p.error;
    EXPECT_EQ(p.handle, nullptr);
}

TEST(PluginScan, plugin_that_allocates_30_gib_while_loading_is_refused_at_the_memory_bound) {
    if (!memory_limits_work()) GTEST_SKIP() << "no address-space bound under AddressSanitizer";
    const std::string dir = test::make_temp_dir("scan-memory");
    copy_into(dir, hostile("allocate_in_entry"));
    PluginSearch s = scanning({dir}, test::make_temp_dir("scan-cache") + "/scan.json");
    s.scan_memory_bytes = uint64_t(256) << 20;
    auto reg = load_plugins(s);
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    ASSERT_EQ((*reg)->plugins().size(), 1u);
    const PluginRecord& p = *(*reg)->plugins().front();
    EXPECT_NE(p.error.find("needed more than the scan's memory limit of 256 MiB while loading"), std::string::npos)
        << p.error;
    EXPECT_EQ(p.handle, nullptr);
}

TEST(PluginScan, second_search_reads_the_cache_and_a_changed_file_is_scanned_again) {
    const std::string dir = broken_plugin_dir();
    const std::string cache = test::make_temp_dir("scan-cache") + "/scan.json";
    ASSERT_TRUE(load_plugins(scanning({dir}, cache)).ok());
    ASSERT_TRUE(fs::exists(cache));

    auto again = load_plugins(scanning({dir}, cache));
    ASSERT_TRUE(again.ok());
    for (const auto& p : (*again)->plugins()) EXPECT_EQ(p->scan_origin, "cached") << p->path;
    // a cached failure keeps its reason; a cached success still opens on demand
    EXPECT_NE(record(**again, "tandem-hostile-segfault_in_entry.so")->error.find("SIGSEGV"), std::string::npos);
    EXPECT_NE((*again)->find_drafter("echo"), nullptr);

    const std::string echo = dir + "/tandem-test-echo_drafter.so";
    fs::last_write_time(echo, fs::last_write_time(echo) + std::chrono::seconds(5));
    auto changed = load_plugins(scanning({dir}, cache));
    ASSERT_TRUE(changed.ok());
    for (const auto& p : (*changed)->plugins())
        EXPECT_EQ(p->scan_origin, p->path == echo ? "scanned" : "cached") << p->path;
}

TEST(PluginScan, corrupt_cache_is_ignored_and_rewritten) {
    const std::string dir = test::make_temp_dir("scan-one");
    copy_into(dir, std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-echo_drafter.so");
    const std::string cache = test::make_temp_dir("scan-cache") + "/scan.json";
    for (const char* bad : {"{\"format\": 1, \"entries\": [1, 2", "\x7f" "ELF not json", "{\"format\": 1, \"host\": 3}"}) {
        std::ofstream(cache, std::ios::binary | std::ios::trunc) << bad;
        auto reg = load_plugins(scanning({dir}, cache));
        ASSERT_TRUE(reg.ok()) << reg.error().message();
        ASSERT_EQ((*reg)->plugins().size(), 1u);
        EXPECT_EQ((*reg)->plugins().front()->scan_origin, "scanned");
        EXPECT_NE((*reg)->find_drafter("echo"), nullptr);
        EXPECT_TRUE(nlohmann::json::parse(test::read_file(cache), nullptr, false).is_object());
    }
    // a cached report of the wrong shape is a failed plugin with a reason, not a crash
    nlohmann::json j = nlohmann::json::parse(test::read_file(cache));
    for (auto& [path, entry] : j["entries"].items()) entry["report"] = {{"ok", true}, {"name", 42}};
    std::ofstream(cache, std::ios::binary | std::ios::trunc) << j.dump();
    auto reg = load_plugins(scanning({dir}, cache));
    ASSERT_TRUE(reg.ok());
    EXPECT_NE((*reg)->plugins().front()->error.find("unreadable scan report"), std::string::npos)
        << (*reg)->plugins().front()->error;
}

// ------------------------------------------------------------------ the CLI

// The environment for a CLI run: the broken plugins and the hanging one on the path,
// a short scan timeout and a cache of the test's own.
std::string hostile_env(const std::string& cache_home) {
    static const std::string dirs = broken_plugin_dir() + ":" + hang_plugin_dir();
    return "TANDEM_PLUGIN_PATH=" + quote(dirs) + " TANDEM_PLUGIN_SCAN_TIMEOUT=0.3 XDG_CACHE_HOME=" + quote(cache_home);
}

TEST(PluginScanCli, plugins_lists_each_broken_plugin_with_its_reason) {
    const std::string env = hostile_env(test::make_temp_dir("scan-xdg"));
    CliRun r = tandem({"plugins", "--output-format", "json"}, env);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    std::map<std::string, nlohmann::json> by_file;
    for (const auto& p : j["plugins"]) by_file[fs::path(p["path"].get<std::string>()).filename().string()] = p;
    EXPECT_NE(by_file["tandem-hostile-abort_in_constructor.so"]["error"].get<std::string>().find("crashed (SIGABRT)"),
              std::string::npos);
    EXPECT_NE(by_file["tandem-hostile-segfault_in_entry.so"]["error"].get<std::string>().find("crashed (SIGSEGV)"),
              std::string::npos);
    EXPECT_NE(by_file["tandem-hostile-hang_in_init.so"]["error"].get<std::string>().find("did not finish loading"),
              std::string::npos);
    EXPECT_FALSE(by_file["tandem-garbage.so"]["error"].get<std::string>().empty());
    EXPECT_FALSE(by_file["tandem-truncated.so"]["error"].get<std::string>().empty());
    EXPECT_EQ(by_file["tandem-qwen-nextn.so"]["error"], "");
    EXPECT_EQ(by_file["tandem-qwen-nextn.so"]["scan"], "scanned");
    EXPECT_EQ(by_file["tandem-qwen-nextn.so"]["synthesizer"]["archs"][0], "qwen3");

    r = tandem({"plugins"}, env);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("tandem-hostile-segfault_in_entry  FAILED")) << r.out;
    EXPECT_TRUE(r.has("architecture qwen3")) << r.out;
}

TEST(PluginScanCli, run_works_beside_broken_plugins_and_a_second_run_spawns_no_scanner) {
    const std::string env = hostile_env(test::make_temp_dir("scan-xdg"));
    const std::vector<std::string> run = {"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2,3", "-n", "3",
                                          "--temp", "0", "--ignore-eos", "--log-level", "debug"};
    CliRun r = tandem(run, env);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("in a child process")) << r.err;
    r = tandem(run, env);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(r.has("in a child process")) << r.err;
    EXPECT_TRUE(r.has("scan report from the cache")) << r.err;
    // the architecture's plugin is opened; the drafter-only one is not needed and stays shut
    EXPECT_TRUE(r.has("opening qwen-nextn")) << r.err;
    EXPECT_FALSE(r.has("opening echo")) << r.err;
}

TEST(PluginScanCli, no_plugin_scan_opens_plugins_in_process) {
    const std::string env = std::string("TANDEM_PLUGIN_PATH=") + TANDEM_TEST_PLUGIN_DIR +
                            " XDG_CACHE_HOME=" + quote(test::make_temp_dir("scan-xdg"));
    CliRun r = tandem({"plugins", "--no-plugin-scan", "--output-format", "json"}, env);
    ASSERT_EQ(r.status, 0) << r.err;
    for (const auto& p : nlohmann::json::parse(r.out)["plugins"]) EXPECT_EQ(p["scan"], "in-process") << p["path"];
    r = tandem({"plugins", "--help"});
    EXPECT_TRUE(r.has("--no-plugin-scan")) << r.out;
    EXPECT_TRUE(r.has("child process")) << r.out;
}

TEST(PluginScanCli, scanner_subcommand_reports_json_and_a_bad_timeout_or_memory_bound_is_a_clear_error) {
    CliRun r = tandem({"__scan-plugin", std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-echo_drafter.so"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ok"], true);
    EXPECT_EQ(j["name"], "echo");
    EXPECT_EQ(j["drafter_types"], std::vector<std::string>{"echo"});
    r = tandem({"__scan-plugin"});
    EXPECT_EQ(r.status, 2) << r.err;
    r = tandem({"plugins"}, "TANDEM_PLUGIN_SCAN_TIMEOUT=soon");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("TANDEM_PLUGIN_SCAN_TIMEOUT: 'soon'")) << r.err;
    r = tandem({"plugins"}, "TANDEM_PLUGIN_SCAN_MEMORY=lots");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("TANDEM_PLUGIN_SCAN_MEMORY: 'lots' is not a number of MiB")) << r.err;
}

}  // namespace
}  // namespace tdm
