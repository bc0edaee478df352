/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/plugin_scan.h: vetting a plugin file in a child process before it
// is opened in this one, as audio hosts do with untrusted plugins. The child is
// tandem itself (`tandem __scan-plugin PATH`): it opens the plugin, negotiates,
// lets it register, closes it and prints a small JSON report. A plugin that
// crashes, hangs, fails or takes more memory or CPU time than the scan allows
// (setrlimit) there is reported with the reason; this process never opens it. Not here: caching reports (scan_cache.h), searching (plugin_loader.h).
//
// The report: {"ok": true, "name", "version", "description", "abi", "provides": [...],
// "gguf_archs", "hf_model_types", "drafter_types", "head_types": [...]}, or
// {"ok": false, "error": "..."}. The scanner may add "depends" (files whose change
// invalidates a cached report) and fields of its own ("synthesizer").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/child_process.h"
#include "common/error.h"
#include "plugin/registry.h"

namespace tdm {

// The hidden subcommand the scanner executable answers to.
inline constexpr const char* kScanSubcommand = "__scan-plugin";

struct ScanOptions {
    // the executable, run as `scanner __scan-plugin --abi-max N --memory-limit BYTES
    // --cpu-limit SECONDS PATH`
    std::string scanner;
    std::chrono::milliseconds timeout{10000};
    uint32_t host_abi_max = TDM_ABI_VERSION;
    // The bounds the scanner puts on itself before it opens the plugin; a plugin that
    // exceeds one while it loads is refused with the reason.
    ChildLimits limits{uint64_t(4) << 30, 10};
};

// In the child: opens `path` in this process, lets it register, closes it, and
// describes what it registered (or why it failed).
nlohmann::json scan_plugin_here(const std::string& path, uint32_t host_abi_max);

// In the parent: runs the scanner on `path` and returns its report. A crash (the
// signal's name), a timeout (the child is killed), the memory or CPU bound passed, a
// failure to start the scanner or an unreadable report come back as
// {"ok": false, "error": ...}.
nlohmann::json scan_plugin_in_child(const std::string& path, const ScanOptions& options);

// Checks a report (from a child or the cache) and copies it into a record: name,
// version, description, abi, provides, the scanned names, scan_report; a failed
// report sets error. A malformed report is an error (the record is untouched).
Status apply_scan_report(const nlohmann::json& report, PluginRecord& record);

}  // namespace tdm
