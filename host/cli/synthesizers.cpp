// SPDX-License-Identifier: Apache-2.0
// host/cli/synthesizers.cpp: opening synthesizers and finding them through the plugin registry
// (see synthesizers.h and sdk/include/tandem/synth.h).
#include "cli/synthesizers.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "plugin/abi_structs.h"

namespace tdm::cli {

std::string synthesizer_path(const std::string& plugin_path) {
    const std::filesystem::path p(plugin_path);
    return (p.parent_path() / TDM_SYNTH_SUBDIR / (p.stem().string() + TDM_SYNTH_FILE_SUFFIX)).string();
}

Result<std::unique_ptr<Synthesizer>> Synthesizer::open(const std::string& path) {
    std::unique_ptr<Synthesizer> s(new Synthesizer());
    s->path_ = path;
    dlerror();
    s->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!s->handle_) {
        const char* why = dlerror();
        return Error::format("cannot load synthesizer {}: {}", path, why ? why : "unknown dlopen error");
    }
    auto entry = reinterpret_cast<tdm_synthesizer_negotiate_fn>(dlsym(s->handle_, TDM_SYNTH_ENTRY_NAME));
    if (!entry) return Error::format("synthesizer {} does not export {}", path, TDM_SYNTH_ENTRY_NAME);

    tdm_synth_negotiate n{};
    n.struct_size = sizeof n;
    n.host_version_min = TDM_SYNTH_VERSION_MIN;
    n.host_version_max = TDM_SYNTH_VERSION;
    const tdm_status st = entry(&n);
    if (st == TDM_ERR_ABI_MISMATCH)
        return Error::format("synthesizer {} speaks interface versions {}..{}, this host offers {}..{}", path,
                             n.synth_version_min, n.synth_version_max, TDM_SYNTH_VERSION_MIN, TDM_SYNTH_VERSION);
    if (st != TDM_OK) return Error::format("synthesizer {}: negotiation failed (status {})", path, int(st));
    if (n.synth_version < TDM_SYNTH_VERSION_MIN || n.synth_version > TDM_SYNTH_VERSION)
        return Error::format("synthesizer {} chose interface version {}, outside this host's {}..{}", path,
                             n.synth_version, TDM_SYNTH_VERSION_MIN, TDM_SYNTH_VERSION);
    if (!n.api || n.api->struct_size < TDM_SYNTH_V1_SIZEOF_API)
        return Error::format("synthesizer {} returned no table or one smaller than version 1's", path);
    tdm_synthesizer_api api{};
    std::memcpy(&api, n.api, std::min<size_t>(n.api->struct_size, sizeof api));
    if (!api.name || !api.archs || !api.synthesize)
        return Error::format("synthesizer {}: its table lacks the name, the architectures or synthesize()", path);
    s->version_ = n.synth_version;
    // names read no further than their bounds (plugin/abi_structs.h), never past
    s->name_ = TDM_TRY(plugin_name(api.name, fmt::format("synthesizer {}: name", path)));
    s->description_ = plugin_string(api.description, kPluginTextMax);
    s->archs_ = TDM_TRY(plugin_names(api.archs, fmt::format("synthesizer {}: archs", path)));
    s->synthesize_ = api.synthesize;
    return s;
}

Synthesizer::~Synthesizer() {
    if (handle_) dlclose(handle_);
}

bool Synthesizer::writes(std::string_view arch) const {
    return std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
}

Result<std::string> Synthesizer::synthesize(const std::string& arch, const std::string& output,
                                            const SynthOptions& options) const {
    std::vector<const char*> names, values;
    for (const auto& [name, value] : options) {
        names.push_back(name.c_str());
        values.push_back(value.c_str());
    }
    tdm_synth_request req{};
    req.struct_size = sizeof req;
    req.n_options = uint32_t(options.size());
    req.arch = arch.c_str();
    req.output = output.c_str();
    req.option_names = names.data();
    req.option_values = values.data();
    char message[4096] = {};
    const tdm_status st = synthesize_(&req, message, sizeof message);
    message[sizeof message - 1] = '\0';  // never trust the terminator
    if (st != TDM_OK) {
        if (message[0] == '\0') return Error::format("synthesizer {} failed (status {})", path_, int(st));
        return Error(message);
    }
    return std::string(message);
}

namespace {

// The plugin `arch` comes from: the one registering it as a model architecture, else the one
// whose draft head it is the file architecture of (an assistant file holds the head alone, e.g.
// gemma4-assistant), so that a plugin's synthesizer can write its heads' files too.
const PluginRecord* owner_of(const Registry& reg, std::string_view arch) {
    if (const ArchEntry* a = reg.find_arch_gguf(arch)) return a->plugin;
    if (const DraftHeadEntry* h = reg.find_draft_head_source(arch)) return h->plugin;
    return nullptr;
}

}  // namespace

Result<std::unique_ptr<Synthesizer>> find_synthesizer(const Registry& reg, std::string_view arch) {
    const PluginRecord* owner = owner_of(reg, arch);
    if (!owner) {
        // What could be written instead: each loaded plugin's synthesizer's architectures that
        // the registry gives to that plugin.
        std::string available;
        for (const auto& p : reg.plugins()) {
            const std::string file = synthesizer_path(p->path);
            if (!p->error.empty() || !std::filesystem::exists(file)) continue;
            auto s = Synthesizer::open(file);
            if (!s.ok()) continue;
            for (const std::string& a : (*s)->archs())
                if (owner_of(reg, a) == p.get()) available += (available.empty() ? "" : ", ") + a;
        }
        if (available.empty())
            return Error::format("synth: unknown architecture '{}' (no loaded plugin has a synthesizer)", arch);
        return Error::format("synth: unknown architecture '{}' (available: {})", arch, available);
    }
    const PluginRecord& plugin = *owner;
    const std::string file = synthesizer_path(plugin.path);
    if (!std::filesystem::exists(file))
        return Error::format("synth: architecture '{}' comes from plugin '{}' ({}), which has no synthesizer "
                             "(no {})",
                             arch, plugin.name, plugin.path, file);
    auto s = TDM_TRY_CTX(Synthesizer::open(file), fmt::format("synth: plugin '{}'", plugin.name));
    if (!s->writes(arch)) {
        std::string list;
        for (const std::string& a : s->archs()) list += (list.empty() ? "" : ", ") + a;
        return Error::format("synth: the synthesizer of plugin '{}' ({}) does not write architecture '{}' (it "
                             "writes: {})",
                             plugin.name, file, arch, list.empty() ? "nothing" : list);
    }
    return s;
}

}  // namespace tdm::cli
