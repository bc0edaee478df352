// SPDX-License-Identifier: Apache-2.0
// host/plugin/plugin_scan.cpp
#include "plugin/plugin_scan.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/child_process.h"
#include "common/log.h"
#include "plugin/plugin_loader.h"

extern char** environ;

namespace tdm {
namespace {

// A report larger than this is not a report (the real ones are a few hundred bytes).
constexpr size_t kMaxReportBytes = 1 << 20;

nlohmann::json failure(std::string message) { return {{"ok", false}, {"error", std::move(message)}}; }

std::string seconds_text(std::chrono::milliseconds ms) {
    return ms.count() % 1000 == 0 ? fmt::format("{} s", ms.count() / 1000) : fmt::format("{} ms", ms.count());
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key)) return out;
    for (const auto& e : j.at(key)) out.push_back(e.get<std::string>());
    return out;
}

}  // namespace

nlohmann::json scan_plugin_here(const std::string& path, uint32_t host_abi_max) {
    nlohmann::json j;
    {
        Registry reg;
        auto st = load_plugin_file(reg, path, {}, host_abi_max);
        if (!st.ok()) {
            j = failure(st.error().message());
            if (!reg.plugins().empty()) j["name"] = reg.plugins().front()->name;  // failed in init
            return j;
        }
        const PluginRecord& p = *reg.plugins().front();
        j = {{"ok", true},           {"name", p.name},          {"version", p.version},
             {"description", p.description}, {"abi", p.abi}, {"provides", p.provides}};
        std::vector<std::string> gguf, hf, drafters, heads, head_sources, encoder_targets;
        for (const auto& a : reg.archs()) {
            gguf.insert(gguf.end(), a.gguf_names.begin(), a.gguf_names.end());
            hf.insert(hf.end(), a.hf_model_types.begin(), a.hf_model_types.end());
        }
        for (const auto& d : reg.drafters()) drafters.insert(drafters.end(), d.spec_types.begin(), d.spec_types.end());
        for (const auto& h : reg.draft_heads()) {
            heads.insert(heads.end(), h.spec_types.begin(), h.spec_types.end());
            head_sources.insert(head_sources.end(), h.source_archs.begin(), h.source_archs.end());
        }
        j["gguf_archs"] = gguf;
        j["hf_model_types"] = hf;
        j["drafter_types"] = drafters;
        j["head_types"] = heads;
        j["head_source_archs"] = head_sources;
        for (const auto& e : reg.encoders())
            encoder_targets.insert(encoder_targets.end(), e.target_archs.begin(), e.target_archs.end());
        j["encoder_targets"] = encoder_targets;
    }  // shut down and closed here: a plugin that crashes doing so fails its scan too
    return j;
}

nlohmann::json scan_plugin_in_child(const std::string& path, const ScanOptions& o) {
    if (o.scanner.empty()) return failure(fmt::format("plugin {} could not be scanned: no scanner executable", path));
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return failure(fmt::format("plugin {} could not be scanned: pipe: {}", path, std::strerror(errno)));
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return failure(fmt::format("plugin {} could not be scanned: pipe: {}", path, std::strerror(errno)));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    const std::string abi = std::to_string(o.host_abi_max), memory = std::to_string(o.limits.memory_bytes),
                      cpu = std::to_string(o.limits.cpu_seconds);
    const char* argv[] = {o.scanner.c_str(), kScanSubcommand, "--abi-max",     abi.c_str(), "--memory-limit",
                          memory.c_str(),    "--cpu-limit",   cpu.c_str(), path.c_str(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, o.scanner.c_str(), &fa, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
        close(out[0]);
        close(err[0]);
        return failure(fmt::format("plugin {} could not be scanned: cannot run the scanner {}: {}", path, o.scanner,
                                   std::strerror(rc)));
    }
    TDM_LOG_DEBUG("plugins", "scanning {} in a child process (pid {})", path, int(pid));
    const ChildResult r = wait_for_child(pid, out[0], err[0], o.timeout, kMaxReportBytes);
    if (r.timed_out)
        return failure(fmt::format("plugin {} did not finish loading within {} and was killed (set "
                                   "TANDEM_PLUGIN_SCAN_TIMEOUT to allow longer)",
                                   path, seconds_text(o.timeout)));
    if (r.too_much_output)
        return failure(fmt::format("plugin {}: the scanner wrote more than {} bytes; not a report", path,
                                   kMaxReportBytes));
    // A plugin refused memory may crash on the allocation it was refused: a crash after
    // the scanner held half its bound is put down to the bound.
    const bool near_memory_limit = o.limits.memory_bytes && r.signal() && r.max_rss_bytes >= o.limits.memory_bytes / 2;
    if (r.out_of_memory() || near_memory_limit)
        return failure(fmt::format("plugin {} needed more than the scan's memory limit of {} while loading{} and is "
                                   "refused (TANDEM_PLUGIN_SCAN_MEMORY raises it)",
                                   path, bytes_text(o.limits.memory_bytes),
                                   r.signal() ? fmt::format(" ({})", signal_name(r.signal())) : std::string()));
    if (r.out_of_cpu(o.limits))
        return failure(fmt::format("plugin {} used more than the scan's {} s of CPU time while loading and is "
                                   "refused (TANDEM_PLUGIN_SCAN_TIMEOUT raises it)",
                                   path, o.limits.cpu_seconds));
    if (WIFSIGNALED(r.status))
        return failure(fmt::format("plugin {} crashed ({}) while loading", path, signal_name(WTERMSIG(r.status))));
    const std::string why = r.last_error_line();
    if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
        return failure(fmt::format("plugin {}: the scanner exited with status {}{}{}", path,
                                   WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, why.empty() ? "" : ": ", why));
    nlohmann::json report = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (report.is_discarded() || !report.is_object())
        return failure(fmt::format("plugin {}: the scanner's report is not a JSON object{}{}", path,
                                   why.empty() ? "" : ": ", why));
    return report;
}

Status apply_scan_report(const nlohmann::json& report, PluginRecord& rec) {
    try {
        if (!report.is_object() || !report.contains("ok")) return Error("scan report: not an object with \"ok\"");
        if (!report.at("ok").get<bool>()) {
            rec.error = report.at("error").get<std::string>();
            if (rec.error.empty()) rec.error = "failed its scan (no reason given)";
            if (report.contains("name") && report["name"].is_string() && !report["name"].get<std::string>().empty())
                rec.name = report["name"].get<std::string>();
            rec.scan_report = std::make_shared<const nlohmann::json>(report);
            return {};
        }
        PluginRecord r;
        r.name = report.at("name").get<std::string>();
        if (r.name.empty()) return Error("scan report: empty plugin name");
        r.version = report.value("version", "");
        r.description = report.value("description", "");
        r.abi = report.at("abi").get<uint32_t>();
        r.provides = string_list(report, "provides");
        r.scanned.gguf_archs = string_list(report, "gguf_archs");
        r.scanned.hf_model_types = string_list(report, "hf_model_types");
        r.scanned.drafter_types = string_list(report, "drafter_types");
        r.scanned.head_types = string_list(report, "head_types");
        r.scanned.head_source_archs = string_list(report, "head_source_archs");
        r.scanned.encoder_targets = string_list(report, "encoder_targets");
        rec.name = std::move(r.name);
        rec.version = std::move(r.version);
        rec.description = std::move(r.description);
        rec.abi = r.abi;
        rec.provides = std::move(r.provides);
        rec.scanned = std::move(r.scanned);
        rec.scan_report = std::make_shared<const nlohmann::json>(report);
        return {};
    } catch (const nlohmann::json::exception& e) {
        return Error::format("scan report: {}", e.what());
    }
}

}  // namespace tdm
