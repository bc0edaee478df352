/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/plugin_loader.h: finding and opening plugins.
//
// Search order (first plugin of a given name wins; later ones are reported as
// shadowed): directories from the config ([plugins] paths), TANDEM_PLUGIN_PATH
// (':'-separated), the build tree's plugin directory (a development build runs
// its own plugins without installing), then the install directory
// (/usr/lib/<multiarch>/tandem/plugins). A plugin file is named tandem-*.so.
// Each is opened with dlopen(RTLD_NOW | RTLD_LOCAL), its one entry point looked
// up, the ABI version negotiated, and init() called with the registry.
// A broken plugin found by searching is recorded (shown by `tandem plugins`)
// and skipped; a plugin named explicitly must load.
//
// With a scanner (the CLI sets its own executable), each plugin is first vetted
// in a child process (plugin_scan.h), its report cached (scan_cache.h): one
// that crashes, hangs or fails there is recorded with the reason and never
// opened here; the others are deferred, opened by the first lookup that needs a
// name they registered (registry.h), so a command opens only the plugins it
// uses. Without one (library users, --no-plugin-scan) every plugin is opened
// in this process as it is found.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "plugin/registry.h"

namespace tdm {

struct PluginSearch {
    std::vector<std::string> dirs;       // from the config, searched first
    std::vector<std::string> files;      // explicit plugin files: must load
    std::vector<std::string> disabled;   // plugin names not to load
    bool use_env = true;                 // TANDEM_PLUGIN_PATH
    bool use_default_dirs = true;        // build tree, then install dir
    // The newest ABI version offered (clamped to what this host speaks): lower
    // it to see how a plugin fares with an older host (tests do).
    uint32_t host_abi_max = TDM_ABI_VERSION;
    // Out-of-process scanning: the executable that answers `__scan-plugin`
    // (empty: none, plugins are opened in this process), how long one scan may
    // take before the child is killed, the address space it may take beyond its
    // own at the start (a plugin past it is refused; 0 = no bound), and the cache
    // file (empty: no cache). The scan's CPU time is bounded by its timeout.
    std::string scanner;
    std::chrono::milliseconds scan_timeout{10000};
    uint64_t scan_memory_bytes = uint64_t(4) << 30;
    std::string scan_cache;
};

Result<std::unique_ptr<Registry>> load_plugins(const PluginSearch& search);

// Loads one plugin file into the registry; the error names the file and the
// reason (no entry point, ABI versions of both sides, init failure).
Status load_plugin_file(Registry& registry, const std::string& path, const std::vector<std::string>& disabled = {},
                        uint32_t host_abi_max = TDM_ABI_VERSION);

// The directories load_plugins() would search, in order.
std::vector<std::string> plugin_search_dirs(const PluginSearch& search);

}  // namespace tdm
