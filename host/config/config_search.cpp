// SPDX-License-Identifier: Apache-2.0
// host/config/config_search.cpp: where tandem.toml is looked for. The order follows the
// XDG base directory spec for the per-user file, then the system-wide one packaging
// installs. Only the first file found is read: files are not merged, so what is in effect
// is what one file says (plus the command line).
#include "config/config.h"

#include <cstdlib>
#include <filesystem>

#ifndef TANDEM_SYSCONF_DIR
#define TANDEM_SYSCONF_DIR "/etc/tandem"
#endif

namespace tdm {
namespace fs = std::filesystem;

ConfigSearchPaths ConfigSearchPaths::from_environment() {
    ConfigSearchPaths p;
    if (const char* x = std::getenv("XDG_CONFIG_HOME")) p.xdg_config_home = x;
    if (const char* h = std::getenv("HOME")) p.home = h;
    p.sysconf_dir = TANDEM_SYSCONF_DIR;
    return p;
}

std::vector<std::string> config_search_candidates(const ConfigSearchPaths& where) {
    std::vector<std::string> out;
    // The XDG spec says to ignore a relative XDG_CONFIG_HOME.
    if (!where.xdg_config_home.empty() && where.xdg_config_home.front() == '/')
        out.push_back((fs::path(where.xdg_config_home) / "tandem" / "tandem.toml").string());
    else if (!where.home.empty())
        out.push_back((fs::path(where.home) / ".config" / "tandem" / "tandem.toml").string());
    if (!where.sysconf_dir.empty()) out.push_back((fs::path(where.sysconf_dir) / "tandem.toml").string());
    return out;
}

Result<std::optional<std::string>> find_config(const std::optional<std::string>& explicit_path,
                                               const ConfigSearchPaths& where) {
    std::error_code ec;
    if (explicit_path) {
        if (explicit_path->empty()) return Error("--config: empty file name");
        const fs::file_status st = fs::status(*explicit_path, ec);
        if (st.type() == fs::file_type::none)  // stat failed for a reason other than absence
            return Error::format("cannot access config file '{}': {}", *explicit_path, ec.message());
        if (!fs::exists(st)) return Error::format("config file '{}' does not exist", *explicit_path);
        if (!fs::is_regular_file(st)) return Error::format("config file '{}' is not a regular file", *explicit_path);
        return std::optional<std::string>(*explicit_path);
    }
    for (const std::string& path : config_search_candidates(where)) {
        const fs::file_status st = fs::status(path, ec);
        if (st.type() == fs::file_type::none)
            return Error::format("cannot access config file '{}': {}", path, ec.message());
        if (!fs::exists(st)) continue;  // the normal case: no file there
        if (!fs::is_regular_file(st)) return Error::format("config file '{}' is not a regular file", path);
        return std::optional<std::string>(path);
    }
    return std::optional<std::string>();
}

Result<Config> load_config(const std::optional<std::string>& explicit_path, const ConfigSearchPaths& where) {
    const std::optional<std::string> path = TDM_TRY(find_config(explicit_path, where));
    if (!path) return Config{};
    return load_config_file(*path);
}

}  // namespace tdm
