/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/scan_cache.h: scan reports (plugin_scan.h) kept between runs, so a
// plugin is scanned in a child process once per version of its file. One small
// JSON file (by default $XDG_CACHE_HOME/tandem/plugin-scan.json), keyed by each
// plugin's path, size, mtime and inode, plus those of the files its report
// depends on; the whole file belongs to one scanner build ("host key": tandem's
// version, ABI range and the scanner executable's own stamp), so a new tandem
// rescans everything. Written atomically (a unique temporary, then rename); a
// missing, unreadable or corrupt cache is ignored (debug log) and rebuilt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace tdm {

struct FileStamp {
    uint64_t size = 0, inode = 0, device = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileStamp&) const = default;
};

// The file's stamp (stat); nullopt when it does not exist or cannot be read.
std::optional<FileStamp> file_stamp(const std::string& path);

// The default cache file: <user cache dir>/plugin-scan.json; empty without one.
std::string default_scan_cache_file();

class ScanCache {
public:
    // Reads `file` (empty: a cache that is never read or written). A cache
    // written under another host key starts empty.
    ScanCache(std::string file, std::string host_key);

    // The cached report for `plugin_path`, if the file and every file in its
    // report's "depends" are unchanged.
    std::optional<nlohmann::json> find(const std::string& plugin_path) const;
    void store(const std::string& plugin_path, const nlohmann::json& report);

    // Writes the cache if something was stored; drops entries whose file is gone.
    Status save();

private:
    std::string file_, host_key_;
    nlohmann::json entries_ = nlohmann::json::object();
    bool changed_ = false;
};

}  // namespace tdm
