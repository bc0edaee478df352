// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_plugins.cpp: `tandem plugins` and `tandem devices`.
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/synthesizers.h"
#include "plugin/plugin_loader.h"

namespace tdm::cli {

namespace {

// A loaded plugin's synthesizer, as `tandem plugins` shows it: absent (no file), opened (its
// architectures), or broken (why).
struct SynthInfo {
    bool present = false;
    std::string path, error;
    std::vector<std::string> archs;
};

SynthInfo synth_info(const PluginRecord& p) {
    SynthInfo info;
    info.path = synthesizer_path(p.path);
    if (p.scan_report && p.scan_report->is_object()) {  // the scanner opened it, out of this process
        const nlohmann::json& r = *p.scan_report;
        const nlohmann::json& s = r.contains("synthesizer") ? r["synthesizer"] : nullptr;
        info.present = p.error.empty() && s.is_object();
        if (!info.present) return info;
        info.path = s.value("path", info.path);
        info.error = s.value("error", "");
        if (s.contains("archs") && s["archs"].is_array())
            for (const auto& a : s["archs"])
                if (a.is_string()) info.archs.push_back(a.get<std::string>());
        return info;
    }
    std::error_code ec;
    info.present = p.error.empty() && std::filesystem::exists(info.path, ec);
    if (!info.present) return info;
    auto s = Synthesizer::open(info.path);
    if (s.ok())
        info.archs = (*s)->archs();
    else
        info.error = s.error().message();
    return info;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

}  // namespace

Status cmd_plugins(App& app) {
    // Lists what the scans found: a scanned plugin is not opened in this process.
    Registry* reg = TDM_TRY(app.registry());
    const auto dirs = plugin_search_dirs(TDM_TRY(plugin_search(app)));
    if (json_output(app.args())) {
        nlohmann::json j;
        j["host_abi"] = {{"min", TDM_ABI_VERSION_MIN}, {"max", TDM_ABI_VERSION}};
        j["search_path"] = dirs;
        nlohmann::json ps = nlohmann::json::array();
        for (const auto& p : reg->plugins()) {
            nlohmann::json j_plugin = {{"name", p->name},         {"version", p->version},   {"path", p->path},
                                       {"abi", p->abi},           {"description", p->description},
                                       {"provides", p->provides}, {"error", p->error},
                                       {"scan", p->scan_origin}};
            const SynthInfo si = synth_info(*p);
            j_plugin["synthesizer"] = si.present ? nlohmann::json{{"path", si.path}, {"archs", si.archs},
                                                                   {"error", si.error}}
                                                 : nlohmann::json(nullptr);
            ps.push_back(std::move(j_plugin));
        }
        j["plugins"] = ps;
        j["spec_types"] = reg->spec_types();
        std::printf("%s\n", j.dump(2).c_str());
        return {};
    }
    std::printf("host ABI: 1..%u\nsearch path:\n", TDM_ABI_VERSION);
    for (const auto& d : dirs) std::printf("  %s\n", d.c_str());
    if (reg->plugins().empty()) std::printf("no plugins found\n");
    for (const auto& p : reg->plugins()) {
        if (!p->error.empty()) {
            std::printf("\n%s  FAILED (%s)\n  %s\n", p->name.c_str(), p->path.c_str(), p->error.c_str());
            continue;
        }
        std::printf("\n%s %s  (ABI %u)  %s\n  %s\n", p->name.c_str(), p->version.c_str(), p->abi, p->path.c_str(),
                    p->description.c_str());
        for (const auto& what : p->provides) std::printf("  provides %s\n", what.c_str());
        const SynthInfo si = synth_info(*p);
        if (si.present && si.error.empty())
            std::printf("  synthesizer %s (writes %s)\n", si.path.c_str(), join(si.archs).c_str());
        else if (si.present)
            std::printf("  synthesizer FAILED (%s)\n  %s\n", si.path.c_str(), si.error.c_str());
    }
    const auto types = reg->spec_types();
    std::printf("\nspeculative types: draft%s", types.empty() ? "" : ", ");
    for (size_t i = 0; i < types.size(); ++i) std::printf("%s%s", i ? ", " : "", types[i].c_str());
    std::printf("\n");
    return {};
}

Status cmd_devices(App& app) {
    vk::Instance::Options io;
    io.validate = app.config().device.validate;
    auto inst = TDM_TRY(vk::Instance::create(io));
    const auto devs = TDM_TRY(vk::list_devices(*inst));
    if (devs.empty())
        return Error("no Vulkan device found. Install a Vulkan driver: 'apt install mesa-vulkan-drivers' provides "
                     "lavapipe, a CPU device that works without a GPU");
    // Which one would be picked: create it (cheap) with the configured selection.
    vk::Device::Options o;
    o.select = app.config().device.select;
    auto picked = vk::Device::create(o);
    const int chosen = picked.ok() ? int((*picked)->caps().index) : -1;
    if (json_output(app.args())) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& c : devs) {
            uint64_t heap = 0;
            for (const auto& h : c.heaps) heap += h.size;
            arr.push_back({{"index", c.index}, {"name", c.name}, {"type", c.type_name},
                           {"api", vk::version_string(c.api_version)}, {"driver", c.driver_name},
                           {"selected", int(c.index) == chosen}, {"unsuitable", c.unsuitable_reason},
                           {"fp16", c.support_fp16_arithmetic}, {"int8", c.support_int8_arithmetic},
                           {"storage_16bit", c.support_storage_16bit}, {"storage_8bit", c.support_storage_8bit},
                           {"subgroup_size", c.subgroup_size}, {"subgroup_arithmetic", c.support_subgroup_arithmetic},
                           {"subgroup_size_fixable", c.subgroup_size_fixable},
                           {"integer_dot_product", c.support_integer_dot_product},
                           {"integer_dot_product_accelerated", c.integer_dot_product_accelerated},
                           {"cooperative_matrix", c.support_cooperative_matrix},
                           {"max_storage_buffer_range", c.max_storage_buffer_range},
                           {"max_texel_buffer_elements", c.max_texel_buffer_elements}, {"heap_bytes", heap},
                           {"weight_path", c.prefer_texel_weights ? "texel" : "storage"}});
        }
        std::printf("%s\n", nlohmann::json{{"devices", arr}}.dump(2).c_str());
        return picked.ok() ? Status{} : Status(picked.take_error());
    }
    for (const auto& c : devs) {
        uint64_t heap = 0;
        for (const auto& h : c.heaps) heap += h.size;
        std::printf("%s[%u] %s (%s, Vulkan %s, %s)\n", int(c.index) == chosen ? "* " : "  ", c.index, c.name.c_str(),
                    c.type_name.c_str(), vk::version_string(c.api_version).c_str(), c.driver_name.c_str());
        if (!c.unsuitable_reason.empty()) std::printf("      unsuitable: %s\n", c.unsuitable_reason.c_str());
        std::printf("      fp16 %s, int8 %s, 16/8-bit storage %s/%s, subgroup %u (arithmetic %s, fixable %s), "
                    "integer dot %s%s, cooperative matrix %s\n",
                    c.support_fp16_arithmetic ? "yes" : "no", c.support_int8_arithmetic ? "yes" : "no",
                    c.support_storage_16bit ? "yes" : "no", c.support_storage_8bit ? "yes" : "no", c.subgroup_size,
                    c.support_subgroup_arithmetic ? "yes" : "no", c.subgroup_size_fixable ? "yes" : "no",
                    c.support_integer_dot_product ? "yes" : "no",
                    c.integer_dot_product_accelerated ? " (accelerated)" : "",
                    c.support_cooperative_matrix ? "yes" : "no");
        std::printf("      max storage buffer %s, max texel buffer %llu elements, memory %s, weights via %s buffers\n",
                    human_bytes(c.max_storage_buffer_range).c_str(), (unsigned long long)c.max_texel_buffer_elements,
                    human_bytes(heap).c_str(), c.prefer_texel_weights ? "texel" : "storage");
    }
    if (!picked.ok()) return picked.take_error();
    return {};
}

}  // namespace tdm::cli
