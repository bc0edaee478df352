// SPDX-License-Identifier: Apache-2.0
// host/plugin/plugin_loader.cpp
#include "plugin/plugin_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/log.h"
#include "plugin/abi_structs.h"
#include "plugin/handles.h"
#include "plugin/plugin_scan.h"
#include "plugin/scan_cache.h"

namespace tdm {
namespace {

constexpr uint32_t kHostAbiMin = TDM_ABI_VERSION_MIN;

std::vector<std::string> split_path_list(const char* s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = s; p && *p; ++p) {
        if (*p == ':') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += *p;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

}  // namespace

std::vector<std::string> plugin_search_dirs(const PluginSearch& search) {
    std::vector<std::string> dirs = search.dirs;
    if (search.use_env)
        for (auto& d : split_path_list(std::getenv("TANDEM_PLUGIN_PATH"))) dirs.push_back(d);
    if (search.use_default_dirs) {
#ifdef TANDEM_BUILD_PLUGIN_DIR
        dirs.push_back(TANDEM_BUILD_PLUGIN_DIR);
#endif
#ifdef TANDEM_PLUGIN_INSTALL_DIR
        dirs.push_back(TANDEM_PLUGIN_INSTALL_DIR);
#endif
    }
    return dirs;
}

namespace {

// A plugin file opened and negotiated, its descriptor copied; not yet initialised.
struct OpenedPlugin {
    void* handle = nullptr;
    uint32_t abi = 0, abi_minor = 0;
    tdm_plugin_api api{};
    std::string name, version, description;
};

Result<OpenedPlugin> open_plugin(const std::string& path, uint32_t host_abi_max) {
    const uint32_t abi_max = std::clamp<uint32_t>(host_abi_max, kHostAbiMin, TDM_ABI_VERSION);
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        return Error::format("cannot load plugin {}: {}", path, why ? why : "unknown dlopen error");
    }
    auto fail = [&](Error e) -> Result<OpenedPlugin> {
        dlclose(handle);
        return e;
    };
    auto fn = reinterpret_cast<tdm_plugin_negotiate_fn>(dlsym(handle, TDM_PLUGIN_ENTRY_NAME));
    if (!fn) return fail(Error::format("{} is not a tandem plugin: it does not export {}", path, TDM_PLUGIN_ENTRY_NAME));
    tdm_negotiate n{};
    n.struct_size = sizeof n;
    n.host_abi_min = kHostAbiMin;
    n.host_abi_max = abi_max;
    const tdm_status st = fn(&n);
    if (st == TDM_ERR_ABI_MISMATCH || (st == TDM_OK && (n.plugin_abi < kHostAbiMin || n.plugin_abi > abi_max))) {
        const std::string speaks = n.plugin_abi_min || n.plugin_abi_max
                                       ? fmt::format("ABI {}..{}", n.plugin_abi_min, n.plugin_abi_max)
                                       : fmt::format("ABI {} (it gave no range)", n.plugin_abi);
        const bool newer = n.plugin_abi_min > abi_max;
        return fail(Error::format("plugin {} speaks {}, this host offers ABI {}..{}: {}", path, speaks, kHostAbiMin,
                                  abi_max,
                                  newer ? "the plugin needs a newer tandem (or rebuild it against this tandem's SDK)"
                                        : "rebuild the plugin against this tandem's SDK"));
    }
    if (st != TDM_OK || !n.plugin_api)
        return fail(Error::format("plugin {}: version negotiation failed (status {})", path, int(st)));
    auto api = read_abi_struct(n.plugin_api, n.plugin_abi, fmt::format("plugin {}: plugin descriptor", path));
    if (!api.ok()) return fail(api.take_error());
    if (!api->name || !api->init)
        return fail(Error::format("plugin {}: malformed plugin descriptor (no {})", path, api->name ? "init" : "name"));
    auto name = plugin_name(api->name, fmt::format("plugin {}: plugin descriptor", path));
    if (!name.ok()) return fail(name.take_error());
    OpenedPlugin o;
    o.handle = handle;
    o.abi = n.plugin_abi;
    // A minor exists only for the host's own version; a plugin built against a
    // newer minor than the host's gets the host's (it asks for what it uses).
    o.abi_minor = n.plugin_abi == TDM_ABI_VERSION ? std::min(n.plugin_abi_minor, TDM_ABI_MINOR_VERSION) : 0;
    o.api = *api;
    o.name = std::move(name).value();
    o.version = plugin_string(api->version, kPluginNameMax);
    o.description = plugin_string(api->description, kPluginTextMax);
    // the host's copy keeps no pointer into the plugin's strings
    o.api.name = o.api.version = o.api.description = nullptr;
    return o;
}

// Hands an opened plugin to its record and runs init; a failure is kept on the
// record, whose registrations are dropped.
Status init_plugin(Registry& registry, PluginRecord* p, OpenedPlugin opened) {
    p->version = std::move(opened.version);
    p->description = std::move(opened.description);
    p->abi = opened.abi;
    p->abi_minor = opened.abi_minor;
    p->handle = opened.handle;
    p->api = opened.api;
    p->provides.clear();
    tdm_registry reg{&registry, p};
    char err[1024] = {0};
    const tdm_status ist = p->api.init(host_api(*p), &reg, err, sizeof err);
    if (ist != TDM_OK) {
        p->error = fmt::format("init failed: {}", plugin_message(err, sizeof err, "(no message)"));
        registry.remove_entries(p);
        return Error::format("plugin {} ({}): {}", p->name, p->path, p->error);
    }
    return {};
}

bool is_disabled(const std::vector<std::string>& disabled, const std::string& name) {
    return std::find(disabled.begin(), disabled.end(), name) != disabled.end();
}

const PluginRecord* loaded_by_name(const Registry& registry, const std::string& name) {
    for (const auto& p : registry.plugins())
        if (p->name == name && p->error.empty()) return p.get();
    return nullptr;
}

// Opens a plugin the scan vetted, now that a lookup needs it.
Status open_deferred_plugin(Registry& registry, PluginRecord& rec, uint32_t host_abi_max) {
    auto opened = open_plugin(rec.path, host_abi_max);
    if (!opened.ok()) {
        rec.error = opened.error().message();
        return opened.take_error();
    }
    if (opened->name != rec.name) {
        dlclose(opened->handle);
        rec.error = fmt::format("the file changed since it was scanned (it now names itself {}, the scan found {})",
                                opened->name, rec.name);
        return Error::format("plugin {}: {}", rec.path, rec.error);
    }
    return init_plugin(registry, &rec, std::move(opened).value());
}

std::string file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// What invalidates every cached report: this host's version and ABI range, the
// scanner executable itself (a rebuilt tandem rescans) and the scan's bounds.
std::string scan_host_key(const PluginSearch& s) {
    const auto stamp = file_stamp(s.scanner);
    return fmt::format("tandem {} abi {}..{} offered {} scanner {} {} {} {} limits {} {}",
                       host_api(TDM_ABI_VERSION)->host_version, kHostAbiMin, TDM_ABI_VERSION, s.host_abi_max,
                       s.scanner, stamp ? stamp->size : 0, stamp ? stamp->mtime_ns : 0, stamp ? stamp->inode : 0,
                       s.scan_memory_bytes, s.scan_timeout.count());
}

// The scan report of one plugin file: from the cache, else from a child process.
nlohmann::json scan_report(const std::string& path, const PluginSearch& s, ScanCache& cache, std::string* origin) {
    if (auto cached = cache.find(path)) {
        TDM_LOG_DEBUG("plugins", "{}: scan report from the cache", path);
        *origin = "cached";
        return std::move(*cached);
    }
    ScanOptions o;
    o.scanner = s.scanner;
    o.timeout = s.scan_timeout;
    o.limits.memory_bytes = s.scan_memory_bytes;
    o.limits.cpu_seconds = uint32_t((s.scan_timeout.count() + 999) / 1000);
    o.host_abi_max = s.host_abi_max;
    nlohmann::json report = scan_plugin_in_child(path, o);
    // a scanner that could not run says nothing about the plugin: not worth remembering
    if (report.value("error", "").find("could not be scanned") == std::string::npos) cache.store(path, report);
    *origin = "scanned";
    return report;
}

// Adds the record of a scanned plugin: failed (with the reason) or deferred;
// shadowed and disabled plugins are left out, as when loading in-process.
void add_scanned(Registry& registry, const std::string& path, const nlohmann::json& report, std::string origin,
                 const std::vector<std::string>& disabled) {
    auto rec = std::make_unique<PluginRecord>();
    rec->path = path;
    rec->name = file_stem(path);
    rec->scan_origin = std::move(origin);
    if (auto st = apply_scan_report(report, *rec); !st.ok())
        rec->error = fmt::format("plugin {}: unreadable scan report: {}", path, st.error().message());
    if (!rec->error.empty()) {
        TDM_LOG_WARN("plugins", "{}", rec->error);
        registry.add_plugin(std::move(rec));
        return;
    }
    if (const PluginRecord* first = loaded_by_name(registry, rec->name)) {
        TDM_LOG_INFO("plugins", "{} ({}) is shadowed by {}", rec->name, path, first->path);
        return;
    }
    if (is_disabled(disabled, rec->name)) {
        TDM_LOG_INFO("plugins", "{} ({}) is disabled by the config", rec->name, path);
        return;
    }
    rec->deferred = true;
    registry.add_plugin(std::move(rec));
}

}  // namespace

Status load_plugin_file(Registry& registry, const std::string& path, const std::vector<std::string>& disabled,
                        uint32_t host_abi_max) {
    auto opened = TDM_TRY(open_plugin(path, host_abi_max));
    if (const PluginRecord* first = loaded_by_name(registry, opened.name)) {
        TDM_LOG_INFO("plugins", "{} ({}) is shadowed by {}", opened.name, path, first->path);
        dlclose(opened.handle);
        return {};
    }
    if (is_disabled(disabled, opened.name)) {
        TDM_LOG_INFO("plugins", "{} ({}) is disabled by the config", opened.name, path);
        dlclose(opened.handle);
        return {};
    }
    auto rec = std::make_unique<PluginRecord>();
    rec->name = opened.name;
    rec->path = path;
    PluginRecord* p = registry.add_plugin(std::move(rec));
    return init_plugin(registry, p, std::move(opened));
}

namespace {

// The plugin files of one search directory, sorted.
std::vector<std::string> plugin_files_in(const std::string& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("tandem-", 0) == 0 && e.path().extension() == ".so") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

void load_in_process(Registry& registry, const std::string& f, const PluginSearch& search) {
    auto st = load_plugin_file(registry, f, search.disabled, search.host_abi_max);
    if (st.ok()) return;
    TDM_LOG_WARN("plugins", "{}", st.error().message());
    // keep a record so `tandem plugins` can show the failure
    for (const auto& p : registry.plugins())
        if (p->path == f) return;
    auto rec = std::make_unique<PluginRecord>();
    rec->name = file_stem(f);
    rec->path = f;
    rec->error = st.error().message();
    registry.add_plugin(std::move(rec));
}

}  // namespace

Result<std::unique_ptr<Registry>> load_plugins(const PluginSearch& search) {
    auto registry = std::make_unique<Registry>();
    const bool scan = !search.scanner.empty();
    ScanCache cache(scan ? search.scan_cache : std::string(), scan ? scan_host_key(search) : std::string());
    if (scan) {
        const uint32_t abi_max = search.host_abi_max;
        registry->set_opener([abi_max](Registry& r, PluginRecord& p) { return open_deferred_plugin(r, p, abi_max); });
    }
    for (const auto& f : search.files) {
        if (scan) {
            std::string origin;
            const nlohmann::json report = scan_report(f, search, cache, &origin);
            if (!report.value("ok", false)) {
                (void)cache.save();
                return Error(report.value("error", fmt::format("plugin {} failed its scan", f)));
            }
        }
        TDM_TRY(load_plugin_file(*registry, f, search.disabled, search.host_abi_max));
    }
    for (const auto& dir : plugin_search_dirs(search))
        for (const auto& f : plugin_files_in(dir)) {
            if (!scan) {
                load_in_process(*registry, f, search);
                continue;
            }
            std::string origin;
            const nlohmann::json report = scan_report(f, search, cache, &origin);
            add_scanned(*registry, f, report, std::move(origin), search.disabled);
        }
    if (auto st = cache.save(); !st.ok()) TDM_LOG_DEBUG("plugins", "{}", st.error().message());
    return registry;
}

}  // namespace tdm
