// host/plugin/plugin_loader.cpp
#include "plugin/plugin_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/log.h"
#include "plugin/abi_structs.h"
#include "plugin/handles.h"

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

Status load_plugin_file(Registry& registry, const std::string& path, const std::vector<std::string>& disabled,
                        uint32_t host_abi_max) {
    const uint32_t abi_max = std::clamp<uint32_t>(host_abi_max, kHostAbiMin, TDM_ABI_VERSION);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return Error::format("cannot load plugin {}: {}", path, dlerror());
    auto close = [&] { dlclose(handle); };
    auto fn = reinterpret_cast<tdm_plugin_negotiate_fn>(dlsym(handle, TDM_PLUGIN_ENTRY_NAME));
    if (!fn) {
        close();
        return Error::format("{} is not a tandem plugin: it does not export {}", path, TDM_PLUGIN_ENTRY_NAME);
    }
    tdm_negotiate n{};
    n.struct_size = sizeof n;
    n.host_abi_min = kHostAbiMin;
    n.host_abi_max = abi_max;
    const tdm_status st = fn(&n);
    if (st == TDM_ERR_ABI_MISMATCH || (st == TDM_OK && (n.plugin_abi < kHostAbiMin || n.plugin_abi > abi_max))) {
        close();
        const std::string speaks = n.plugin_abi_min || n.plugin_abi_max
                                       ? fmt::format("ABI {}..{}", n.plugin_abi_min, n.plugin_abi_max)
                                       : fmt::format("ABI {} (it gave no range)", n.plugin_abi);
        const bool newer = n.plugin_abi_min > abi_max;
        return Error::format("plugin {} speaks {}, this host offers ABI {}..{}: {}", path, speaks, kHostAbiMin,
                             abi_max,
                             newer ? "the plugin needs a newer tandem (or rebuild it against this tandem's SDK)"
                                   : "rebuild the plugin against this tandem's SDK");
    }
    if (st != TDM_OK || !n.plugin_api) {
        close();
        return Error::format("plugin {}: version negotiation failed (status {})", path, int(st));
    }
    auto api_copy = read_abi_struct(n.plugin_api, n.plugin_abi, fmt::format("plugin {}: plugin descriptor", path));
    if (!api_copy.ok()) {
        close();
        return api_copy.take_error();
    }
    const tdm_plugin_api* api = &*api_copy;
    if (!api->name || !api->init) {
        close();
        return Error::format("plugin {}: malformed plugin descriptor (no {})", path, api->name ? "init" : "name");
    }
    for (const auto& p : registry.plugins())
        if (p->name == api->name && p->error.empty()) {
            TDM_LOG_INFO("plugins", "{} ({}) is shadowed by {}", api->name, path, p->path);
            close();
            return {};
        }
    if (std::find(disabled.begin(), disabled.end(), api->name) != disabled.end()) {
        TDM_LOG_INFO("plugins", "{} ({}) is disabled by the config", api->name, path);
        close();
        return {};
    }

    auto rec = std::make_unique<PluginRecord>();
    rec->name = api->name;
    rec->version = api->version ? api->version : "";
    rec->description = api->description ? api->description : "";
    rec->path = path;
    rec->abi = n.plugin_abi;
    rec->handle = handle;
    rec->api = *api_copy;
    PluginRecord* p = registry.add_plugin(std::move(rec));
    tdm_registry reg{&registry, p};
    char err[1024] = {0};
    const tdm_status ist = p->api.init(host_api(p->abi), &reg, err, sizeof err);
    if (ist != TDM_OK) {
        p->error = fmt::format("init failed: {}", plugin_message(err, sizeof err, "(no message)"));
        registry.remove_entries(p);
        return Error::format("plugin {} ({}): {}", p->name, path, p->error);
    }
    return {};
}

Result<std::unique_ptr<Registry>> load_plugins(const PluginSearch& search) {
    auto registry = std::make_unique<Registry>();
    for (const auto& f : search.files) TDM_TRY(load_plugin_file(*registry, f, search.disabled, search.host_abi_max));
    for (const auto& dir : plugin_search_dirs(search)) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) continue;
        std::vector<std::string> files;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
            const std::string name = e.path().filename().string();
            if (name.rfind("tandem-", 0) == 0 && e.path().extension() == ".so") files.push_back(e.path().string());
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            auto st = load_plugin_file(*registry, f, search.disabled, search.host_abi_max);
            if (!st.ok()) {
                TDM_LOG_WARN("plugins", "{}", st.error().message());
                // keep a record so `tandem plugins` can show the failure
                bool recorded = false;
                for (const auto& p : registry->plugins()) recorded |= p->path == f;
                if (!recorded) {
                    auto rec = std::make_unique<PluginRecord>();
                    rec->name = std::filesystem::path(f).stem().string();
                    rec->path = f;
                    rec->error = st.error().message();
                    registry->add_plugin(std::move(rec));
                }
            }
        }
    }
    return registry;
}

}  // namespace tdm
