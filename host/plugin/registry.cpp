// host/plugin/registry.cpp
#include "plugin/registry.h"

#include <dlfcn.h>

#include <algorithm>

#include "plugin/abi_structs.h"

namespace tdm {
namespace {

std::vector<std::string> names_of(const char* const* list) {
    std::vector<std::string> out;
    for (size_t i = 0; list && list[i] && i < 64; ++i) out.emplace_back(list[i]);
    return out;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Registry::~Registry() {
    for (auto& p : plugins_)
        if (p->error.empty() && p->api.shutdown) p->api.shutdown();
    archs_.clear();
    heads_.clear();
    drafters_.clear();
    for (auto& p : plugins_)
        if (p->handle) dlclose(p->handle);
}

PluginRecord* Registry::add_plugin(std::unique_ptr<PluginRecord> p) {
    plugins_.push_back(std::move(p));
    return plugins_.back().get();
}

Status Registry::add_arch(const PluginRecord* p, const tdm_arch_desc* in) {
    auto copy = TDM_TRY(read_abi_struct(in, p->abi, fmt::format("plugin {}: architecture descriptor", p->name)));
    auto d = std::make_shared<const tdm_arch_desc>(copy);
    if (!d->name || !d->create || !d->load || !d->build_graph || !d->destroy)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete architecture descriptor (name, create, load, build_graph and "
                            "destroy are required)",
                            p->name);
    ArchEntry e{d, d.get(), p, names_of(d->gguf_names), names_of(d->hf_model_types)};
    if (e.gguf_names.empty() && e.hf_model_types.empty())
        return Error::format("plugin {}: architecture {} matches no GGUF or HF name", p->name, d->name);
    for (const auto& n : e.gguf_names)
        if (const ArchEntry* prev = find_arch_gguf(n))
            return Error::format("plugin {}: GGUF architecture '{}' is already provided by plugin {}", p->name, n,
                                 prev->plugin->name);
    archs_.push_back(std::move(e));
    return {};
}

Status Registry::add_draft_head(const PluginRecord* p, const tdm_draft_head_desc* in) {
    auto copy = TDM_TRY(read_abi_struct(in, p->abi, fmt::format("plugin {}: draft head descriptor", p->name)));
    auto d = std::make_shared<const tdm_draft_head_desc>(copy);
    if (!d->name || !d->create || !d->load || !d->build_step || !d->destroy)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete draft head descriptor (name, create, load, build_step and destroy "
                            "are required)",
                            p->name);
    DraftHeadEntry e{d, d.get(), p, names_of(d->spec_types), names_of(d->target_archs)};
    if (e.spec_types.empty()) return Error::format("plugin {}: draft head {} has no spec type", p->name, d->name);
    heads_.push_back(std::move(e));
    return {};
}

Status Registry::add_drafter(const PluginRecord* p, const tdm_drafter_desc* in) {
    auto copy = TDM_TRY(read_abi_struct(in, p->abi, fmt::format("plugin {}: drafter descriptor", p->name)));
    auto d = std::make_shared<const tdm_drafter_desc>(copy);
    const bool v1_calls = d->begin && d->propose && d->accept;
    const bool v2_calls = d->begin2 && d->propose2 && d->accept2;
    if (!d->name || !d->create || !d->destroy || (!v1_calls && !v2_calls))
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete drafter descriptor (name, create, destroy, and begin/propose/accept "
                            "or begin2/propose2/accept2 are required)",
                            p->name);
    DrafterEntry e{d, d.get(), p, names_of(d->spec_types)};
    if (e.spec_types.empty()) return Error::format("plugin {}: drafter {} has no spec type", p->name, d->name);
    for (const auto& t : e.spec_types)
        if (const DrafterEntry* prev = find_drafter(t))
            return Error::format("plugin {}: spec type '{}' is already provided by plugin {}", p->name, t,
                                 prev->plugin->name);
    drafters_.push_back(std::move(e));
    return {};
}

void Registry::remove_entries(const PluginRecord* p) {
    std::erase_if(archs_, [p](const ArchEntry& e) { return e.plugin == p; });
    std::erase_if(heads_, [p](const DraftHeadEntry& e) { return e.plugin == p; });
    std::erase_if(drafters_, [p](const DrafterEntry& e) { return e.plugin == p; });
}

const ArchEntry* Registry::find_arch_gguf(std::string_view n) const {
    for (const auto& a : archs_)
        if (contains(a.gguf_names, n)) return &a;
    return nullptr;
}

const ArchEntry* Registry::find_arch_hf(std::string_view n) const {
    for (const auto& a : archs_)
        if (contains(a.hf_model_types, n)) return &a;
    return nullptr;
}

const DrafterEntry* Registry::find_drafter(std::string_view t) const {
    for (const auto& d : drafters_)
        if (contains(d.spec_types, t)) return &d;
    return nullptr;
}

const DraftHeadEntry* Registry::find_draft_head(std::string_view t, std::string_view target_arch) const {
    for (const auto& h : heads_)
        if (contains(h.spec_types, t) && (h.target_archs.empty() || contains(h.target_archs, target_arch))) return &h;
    return nullptr;
}

std::string Registry::describe_architectures() const {
    std::string s;
    for (const auto& p : plugins_) {
        if (!p->error.empty()) continue;
        std::vector<std::string> g, h;
        for (const auto& a : archs_)
            if (a.plugin == p.get()) {
                g.insert(g.end(), a.gguf_names.begin(), a.gguf_names.end());
                h.insert(h.end(), a.hf_model_types.begin(), a.hf_model_types.end());
            }
        if (!s.empty()) s += "; ";
        if (g.empty() && h.empty())
            s += fmt::format("{} (no architectures)", p->name);
        else
            s += fmt::format("{} (GGUF: {} / HF: {})", p->name, fmt::join(g, ", "), fmt::join(h, ", "));
    }
    return s.empty() ? "no plugins loaded" : s;
}

std::vector<std::string> Registry::spec_types() const {
    std::vector<std::string> out;
    for (const auto& d : drafters_) out.insert(out.end(), d.spec_types.begin(), d.spec_types.end());
    for (const auto& h : heads_)
        for (const auto& t : h.spec_types)
            if (!contains(out, t)) out.push_back(t);
    return out;
}

}  // namespace tdm
