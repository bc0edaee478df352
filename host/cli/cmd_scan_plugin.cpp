// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_scan_plugin.cpp: the CLI's side of out-of-process plugin scanning
// (plugin/plugin_scan.h): the hidden subcommand `tandem __scan-plugin [--abi-max N]
// [--memory-limit BYTES] [--cpu-limit SECONDS] PATH` that the loader runs in a child
// process, which bounds itself so before it opens the plugin, and the search settings the
// commands use (this executable as the scanner, the timeout, the memory bound, the cache
// file).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "cli/commands.h"
#include "cli/synthesizers.h"
#include "common/child_process.h"
#include "common/log.h"
#include "plugin/plugin_scan.h"
#include "plugin/scan_cache.h"

namespace tdm::cli {
namespace {

// The running executable, to run again as the scanner; empty if it cannot be found.
std::string self_executable() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : p.string();
}

// TANDEM_PLUGIN_SCAN_TIMEOUT: seconds (a decimal number above 0) one scan may take.
Result<std::chrono::milliseconds> scan_timeout() {
    const char* env = std::getenv("TANDEM_PLUGIN_SCAN_TIMEOUT");
    if (!env || !*env) return std::chrono::milliseconds(10000);
    char* end = nullptr;
    errno = 0;
    const double s = std::strtod(env, &end);
    if (*end || errno || !(s > 0) || s > 3600)
        return Error::format("TANDEM_PLUGIN_SCAN_TIMEOUT: '{}' is not a number of seconds between 0 and 3600", env);
    return std::chrono::milliseconds(std::max<int64_t>(1, int64_t(s * 1000)));
}

// The synthesizer next to the plugin, as the scan reports it (opening it can crash too).
nlohmann::json scan_synthesizer(const std::string& plugin_path) {
    const std::string path = synthesizer_path(plugin_path);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return nullptr;
    auto s = Synthesizer::open(path);
    if (!s.ok()) return {{"path", path}, {"archs", nlohmann::json::array()}, {"error", s.error().message()}};
    return {{"path", path}, {"archs", (*s)->archs()}, {"error", ""}};
}

// TANDEM_PLUGIN_SCAN_MEMORY: MiB of memory one scan may take (0: no bound).
Result<uint64_t> scan_memory() {
    const char* env = std::getenv("TANDEM_PLUGIN_SCAN_MEMORY");
    if (!env || !*env) return uint64_t(4) << 30;
    char* end = nullptr;
    errno = 0;
    const unsigned long long mib = std::strtoull(env, &end, 10);
    if (*end || errno || env[0] == '-' || mib > (uint64_t(1) << 30))
        return Error::format("TANDEM_PLUGIN_SCAN_MEMORY: '{}' is not a number of MiB (0 = no bound)", env);
    return uint64_t(mib) << 20;
}

}  // namespace

Result<PluginSearch> plugin_search(const App& app) {
    PluginSearch s;
    s.dirs = app.config().plugins.paths;
    s.disabled = app.config().plugins.disable;
    if (app.args().flag("no-plugin-scan")) return s;
    s.scanner = self_executable();
    if (s.scanner.empty()) {
        TDM_LOG_WARN("plugins", "cannot find this executable (/proc/self/exe): plugins are opened without a scan");
        return s;
    }
    s.scan_timeout = TDM_TRY(scan_timeout());
    s.scan_memory_bytes = TDM_TRY(scan_memory());
    s.scan_cache = default_scan_cache_file();
    return s;
}

int cmd_scan_plugin(int argc, const char* const* argv) {
    uint32_t abi_max = TDM_ABI_VERSION;
    ChildLimits limits;
    std::string path;
    for (int i = 2; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--abi-max" && i + 1 < argc) {
            abi_max = uint32_t(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--memory-limit" && i + 1 < argc) {
            limits.memory_bytes = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--cpu-limit" && i + 1 < argc) {
            limits.cpu_seconds = uint32_t(std::strtoul(argv[++i], nullptr, 10));
        } else if (path.empty() && !a.starts_with("-")) {
            path = argv[i];
        } else {
            std::fprintf(stderr,
                         "tandem %s: usage: tandem %s [--abi-max N] [--memory-limit BYTES] [--cpu-limit SECONDS] "
                         "PLUGIN.so\n",
                         kScanSubcommand, kScanSubcommand);
            return 2;
        }
    }
    if (path.empty()) {
        std::fprintf(stderr, "tandem %s: no plugin file given\n", kScanSubcommand);
        return 2;
    }
    // The report goes to the original stdout; whatever the plugin prints goes to stderr.
    std::fflush(stdout);
    const int report_fd = dup(STDOUT_FILENO);
    if (report_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        std::fprintf(stderr, "tandem %s: cannot set up the report: %s\n", kScanSubcommand, std::strerror(errno));
        return 1;
    }
    // bound before the plugin runs any code: its constructors run when it is opened
    if (Status st = apply_child_limits(limits); !st.ok()) {
        std::fprintf(stderr, "tandem %s: cannot bound the scan: %s\n", kScanSubcommand, st.error().message().c_str());
        return 1;
    }
    nlohmann::json report = scan_plugin_here(path, abi_max);
    if (report.value("ok", false)) {
        report["synthesizer"] = scan_synthesizer(path);
        report["depends"] = {synthesizer_path(path)};
    }
    std::fflush(stdout);
    const std::string text = report.dump() + "\n";
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = write(report_fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 1;
        done += size_t(n);
    }
    close(report_fd);
    return 0;
}

}  // namespace tdm::cli
