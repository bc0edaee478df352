// SPDX-License-Identifier: Apache-2.0
// host/plugin/scan_cache.cpp
#include "plugin/scan_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "vk/pipeline.h"

namespace tdm {
namespace {

constexpr int kFormat = 1;
// A cache file larger than this is not ours (entries are a few hundred bytes each).
constexpr std::streamoff kMaxCacheBytes = 16 << 20;

nlohmann::json stamp_json(const std::optional<FileStamp>& s) {
    if (!s) return nullptr;
    return {{"size", s->size}, {"mtime_ns", s->mtime_ns}, {"inode", s->inode}, {"device", s->device}};
}

// Whether `path` still has the stamp `j` recorded (null: it did not exist).
bool unchanged(const std::string& path, const nlohmann::json& j) {
    return stamp_json(file_stamp(path)) == j;
}

}  // namespace

std::optional<FileStamp> file_stamp(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    FileStamp s;
    s.size = uint64_t(st.st_size);
    s.inode = uint64_t(st.st_ino);
    s.device = uint64_t(st.st_dev);
    s.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return s;
}

std::string default_scan_cache_file() {
    const std::string dir = vk::user_cache_dir();
    return dir.empty() ? std::string() : dir + "/plugin-scan.json";
}

ScanCache::ScanCache(std::string file, std::string host_key) : file_(std::move(file)), host_key_(std::move(host_key)) {
    if (file_.empty()) return;
    std::ifstream in(file_, std::ios::binary);
    if (!in) return;  // no cache yet
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    in.seekg(0);
    if (size < 0 || size > kMaxCacheBytes) {
        TDM_LOG_DEBUG("plugins", "{}: ignoring the plugin scan cache ({} bytes is too large)", file_, int64_t(size));
        return;
    }
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("entries") || !j["entries"].is_object() ||
        j.value("format", 0) != kFormat) {
        TDM_LOG_DEBUG("plugins", "{}: ignoring a corrupt plugin scan cache (rescanning)", file_);
        return;
    }
    if (j.value("host", "") != host_key_) {
        TDM_LOG_DEBUG("plugins", "{}: the plugin scan cache is from another tandem (rescanning)", file_);
        return;
    }
    entries_ = j["entries"];
}

std::optional<nlohmann::json> ScanCache::find(const std::string& plugin_path) const {
    auto it = entries_.find(plugin_path);
    if (it == entries_.end() || !it->is_object()) return std::nullopt;
    const nlohmann::json& e = *it;
    if (!e.contains("stamp") || !e.contains("report") || !e["report"].is_object()) return std::nullopt;
    if (!unchanged(plugin_path, e["stamp"])) return std::nullopt;
    if (e.contains("depends")) {
        if (!e["depends"].is_object()) return std::nullopt;
        for (const auto& [dep, stamp] : e["depends"].items())
            if (!unchanged(dep, stamp)) return std::nullopt;
    }
    return e["report"];
}

void ScanCache::store(const std::string& plugin_path, const nlohmann::json& report) {
    nlohmann::json e = {{"stamp", stamp_json(file_stamp(plugin_path))}, {"report", report}};
    nlohmann::json deps = nlohmann::json::object();
    if (report.contains("depends") && report["depends"].is_array())
        for (const auto& d : report["depends"])
            if (d.is_string()) deps[d.get<std::string>()] = stamp_json(file_stamp(d.get<std::string>()));
    e["depends"] = std::move(deps);
    entries_[plugin_path] = std::move(e);
    changed_ = true;
}

Status ScanCache::save() {
    if (file_.empty() || !changed_) return {};
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (file_stamp(it.key()))
            ++it;
        else
            it = entries_.erase(it);
    }
    const nlohmann::json j = {{"format", kFormat}, {"host", host_key_}, {"entries", entries_}};
    // unique per process and per save: concurrent tandems never write the same temporary
    static std::atomic<unsigned> counter{0};
    const std::string tmp = fmt::format("{}.tmp.{}.{}", file_, int(getpid()), counter++);
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << j.dump();
        out.close();
        if (!out) {
            std::remove(tmp.c_str());
            return Error::format("{}: cannot write the plugin scan cache", tmp);
        }
    }
    if (std::rename(tmp.c_str(), file_.c_str()) != 0) {
        std::remove(tmp.c_str());
        return Error::format("{}: cannot replace the plugin scan cache", file_);
    }
    changed_ = false;
    return {};
}

}  // namespace tdm
