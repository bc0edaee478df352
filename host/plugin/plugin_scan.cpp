// SPDX-License-Identifier: Apache-2.0
// host/plugin/plugin_scan.cpp
#include "plugin/plugin_scan.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "plugin/plugin_loader.h"

extern char** environ;

namespace tdm {
namespace {

// A report larger than this is not a report (the real ones are a few hundred bytes).
constexpr size_t kMaxReportBytes = 1 << 20;
// What is kept of the scanner's stderr for an error message.
constexpr size_t kStderrTail = 2048;

nlohmann::json failure(std::string message) { return {{"ok", false}, {"error", std::move(message)}}; }

std::string seconds_text(std::chrono::milliseconds ms) {
    return ms.count() % 1000 == 0 ? fmt::format("{} s", ms.count() / 1000) : fmt::format("{} ms", ms.count());
}

// The last line of what the scanner wrote to stderr, for messages.
std::string last_line(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    const size_t nl = s.rfind('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
}

struct ChildResult {
    std::string out, err;
    int status = 0;
    bool timed_out = false, too_much_output = false;
};

// Reads the child's stdout and stderr until both close or the deadline passes
// (then kills it), and reaps it.
ChildResult wait_for_child(pid_t pid, int out_fd, int err_fd, std::chrono::milliseconds timeout) {
    ChildResult r;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    bool reaped = false;
    char buf[4096];
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
            if (!reaped && waitpid(pid, &r.status, WNOHANG) == pid) reaped = true;
            if (reaped) break;
            continue;
        }
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
            if (i == 0 && dst.size() > kMaxReportBytes) {
                r.too_much_output = true;
                break;
            }
        }
        if (r.too_much_output) break;
    }
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    if (!reaped) {
        // still running after its pipes closed, past the deadline, or talking too much
        while (!r.timed_out && !r.too_much_output) {
            const pid_t w = waitpid(pid, &r.status, WNOHANG);
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
            while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
            }
        }
    }
    return r;
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key)) return out;
    for (const auto& e : j.at(key)) out.push_back(e.get<std::string>());
    return out;
}

}  // namespace

std::string signal_name(int sig) {
    if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
    return fmt::format("signal {}", sig);
}

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
    const std::string abi = std::to_string(o.host_abi_max);
    const char* argv[] = {o.scanner.c_str(), kScanSubcommand, "--abi-max", abi.c_str(), path.c_str(), nullptr};
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
    const ChildResult r = wait_for_child(pid, out[0], err[0], o.timeout);
    if (r.timed_out)
        return failure(fmt::format("plugin {} did not finish loading within {} and was killed (set "
                                   "TANDEM_PLUGIN_SCAN_TIMEOUT to allow longer)",
                                   path, seconds_text(o.timeout)));
    if (r.too_much_output)
        return failure(fmt::format("plugin {}: the scanner wrote more than {} bytes; not a report", path,
                                   kMaxReportBytes));
    if (WIFSIGNALED(r.status))
        return failure(fmt::format("plugin {} crashed ({}) while loading", path, signal_name(WTERMSIG(r.status))));
    const std::string why = last_line(r.err);
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
