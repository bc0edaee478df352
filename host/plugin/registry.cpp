// SPDX-License-Identifier: Apache-2.0
// host/plugin/registry.cpp
#include "plugin/registry.h"

#include <fmt/format.h>
#include <dlfcn.h>

#include <algorithm>

#include "common/log.h"
#include "plugin/abi_structs.h"

namespace tdm {
namespace {

bool contains(const std::vector<std::string>& v, std::string_view s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// The host's copy of a descriptor and the strings its name fields point at, so
// nothing read later (messages, lookups, `tandem info`) reaches into the plugin.
template <class Desc>
struct OwnedDesc {
    Desc desc{};
    std::string name;
    std::vector<std::string> lists[3];
    std::vector<const char*> pointers[3];

    const char* const* own_list(int i, std::vector<std::string> names) {
        lists[i] = std::move(names);
        for (const auto& n : lists[i]) pointers[i].push_back(n.c_str());
        pointers[i].push_back(nullptr);
        return pointers[i].data();
    }
    // Shares ownership of the whole holder, points at its descriptor.
    static std::shared_ptr<const Desc> share(std::shared_ptr<OwnedDesc> self) {
        const Desc* d = &self->desc;
        return std::shared_ptr<const Desc>(std::move(self), d);
    }
};

template <class Desc>
Result<std::shared_ptr<OwnedDesc<Desc>>> own_descriptor(const PluginRecord* p, const Desc* in, const char* what) {
    const std::string ctx = fmt::format("plugin {}: {} descriptor", p->name, what);
    auto o = std::make_shared<OwnedDesc<Desc>>();
    o->desc = TDM_TRY(read_abi_struct(in, p->abi, ctx));
    if (o->desc.name) {
        o->name = TDM_TRY(plugin_name(o->desc.name, ctx));
        o->desc.name = o->name.c_str();
    }
    return o;
}

}  // namespace

Registry::~Registry() {
    for (auto& p : plugins_)
        if (p->error.empty() && p->api.shutdown) p->api.shutdown();
    archs_.clear();
    heads_.clear();
    drafters_.clear();
    encoders_.clear();
    for (auto& p : plugins_)
        if (p->handle) dlclose(p->handle);
}

PluginRecord* Registry::add_plugin(std::unique_ptr<PluginRecord> p) {
    plugins_.push_back(std::move(p));
    return plugins_.back().get();
}

Status Registry::add_arch(const PluginRecord* p, const tdm_arch_desc* in) {
    auto o = TDM_TRY(own_descriptor(p, in, "architecture"));
    const std::string ctx = fmt::format("plugin {}: architecture {}", p->name, o->name);
    o->desc.gguf_names = o->own_list(0, TDM_TRY(plugin_names(o->desc.gguf_names, ctx + " gguf_names")));
    o->desc.hf_model_types = o->own_list(1, TDM_TRY(plugin_names(o->desc.hf_model_types, ctx + " hf_model_types")));
    std::vector<std::string> gguf = o->lists[0], hf = o->lists[1];
    auto d = OwnedDesc<tdm_arch_desc>::share(std::move(o));
    if (!d->name || !d->create || !d->load || !d->build_graph || !d->destroy)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete architecture descriptor (name, create, load, build_graph and "
                            "destroy are required)",
                            p->name);
    ArchEntry e{d, d.get(), p, std::move(gguf), std::move(hf)};
    if (e.gguf_names.empty() && e.hf_model_types.empty())
        return Error::format("plugin {}: architecture {} matches no GGUF or HF name", p->name, d->name);
    for (const auto& n : e.gguf_names)
        if (const ArchEntry* prev = loaded_arch_gguf(n))
            return Error::format("plugin {}: GGUF architecture '{}' is already provided by plugin {}", p->name, n,
                                 prev->plugin->name);
    archs_.push_back(std::move(e));
    return {};
}

Status Registry::add_draft_head(const PluginRecord* p, const tdm_draft_head_desc* in) {
    auto o = TDM_TRY(own_descriptor(p, in, "draft head"));
    const std::string ctx = fmt::format("plugin {}: draft head {}", p->name, o->name);
    o->desc.spec_types = o->own_list(0, TDM_TRY(plugin_names(o->desc.spec_types, ctx + " spec_types")));
    o->desc.target_archs = o->own_list(1, TDM_TRY(plugin_names(o->desc.target_archs, ctx + " target_archs")));
    if (o->desc.source_archs)
        o->desc.source_archs = o->own_list(2, TDM_TRY(plugin_names(o->desc.source_archs, ctx + " source_archs")));
    std::vector<std::string> types = o->lists[0], targets = o->lists[1], sources = o->lists[2];
    auto d = OwnedDesc<tdm_draft_head_desc>::share(std::move(o));
    if (!d->name || !d->create || !d->load || !d->build_step || !d->destroy)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete draft head descriptor (name, create, load, build_step and destroy "
                            "are required)",
                            p->name);
    DraftHeadEntry e{d, d.get(), p, std::move(types), std::move(targets), std::move(sources)};
    if (e.spec_types.empty()) return Error::format("plugin {}: draft head {} has no spec type", p->name, d->name);
    heads_.push_back(std::move(e));
    return {};
}

Status Registry::add_encoder(const PluginRecord* p, const tdm_encoder_desc* in) {
    auto o = TDM_TRY(own_descriptor(p, in, "encoder"));
    const std::string ctx = fmt::format("plugin {}: encoder {}", p->name, o->name);
    o->desc.target_archs = o->own_list(0, TDM_TRY(plugin_names(o->desc.target_archs, ctx + " target_archs")));
    std::vector<std::string> targets = o->lists[0];
    auto d = OwnedDesc<tdm_encoder_desc>::share(std::move(o));
    if (!d->name || !d->create || !d->load || !d->build_graph || !d->positions || !d->destroy)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete encoder descriptor (name, create, load, build_graph, positions and "
                            "destroy are required)",
                            p->name);
    if (targets.empty()) return Error::format("plugin {}: encoder {} names no target architecture", p->name, d->name);
    encoders_.push_back(EncoderEntry{d, d.get(), p, std::move(targets)});
    return {};
}

Status Registry::add_drafter(const PluginRecord* p, const tdm_drafter_desc* in) {
    auto o = TDM_TRY(own_descriptor(p, in, "drafter"));
    const std::string ctx = fmt::format("plugin {}: drafter {}", p->name, o->name);
    o->desc.spec_types = o->own_list(0, TDM_TRY(plugin_names(o->desc.spec_types, ctx + " spec_types")));
    std::vector<std::string> types = o->lists[0];
    auto d = OwnedDesc<tdm_drafter_desc>::share(std::move(o));
    const bool v1_calls = d->begin && d->propose && d->accept;
    const bool v2_calls = d->begin2 && d->propose2 && d->accept2;
    if (!d->name || !d->create || !d->destroy || (!v1_calls && !v2_calls))
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "plugin {}: incomplete drafter descriptor (name, create, destroy, and begin/propose/accept "
                            "or begin2/propose2/accept2 are required)",
                            p->name);
    DrafterEntry e{d, d.get(), p, std::move(types)};
    if (e.spec_types.empty()) return Error::format("plugin {}: drafter {} has no spec type", p->name, d->name);
    for (const auto& t : e.spec_types)
        if (const DrafterEntry* prev = loaded_drafter(t))
            return Error::format("plugin {}: spec type '{}' is already provided by plugin {}", p->name, t,
                                 prev->plugin->name);
    drafters_.push_back(std::move(e));
    return {};
}

Status Registry::set_propose_branches(const PluginRecord* p, std::string_view name, tdm_propose_branches_fn fn) {
    for (DrafterEntry& e : drafters_)
        if (e.plugin == p && name == e.desc->name) {
            e.propose_branches = fn;
            return {};
        }
    return Error::coded(TDM_ERR_NOT_FOUND, "plugin {}: set_propose_branches: it registered no drafter '{}'", p->name,
                        name);
}

void Registry::remove_entries(const PluginRecord* p) {
    std::erase_if(archs_, [p](const ArchEntry& e) { return e.plugin == p; });
    std::erase_if(heads_, [p](const DraftHeadEntry& e) { return e.plugin == p; });
    std::erase_if(drafters_, [p](const DrafterEntry& e) { return e.plugin == p; });
    std::erase_if(encoders_, [p](const EncoderEntry& e) { return e.plugin == p; });
}

void Registry::open_deferred(const std::function<bool(const ScannedNames&)>& wanted) const {
    // Lookups are const for their callers (a model holds a const Registry&); opening a
    // deferred plugin is the one change they make, to a registry that is never a const
    // object (the loader creates each one).
    auto& self = const_cast<Registry&>(*this);
    for (size_t i = 0; i < self.plugins_.size(); ++i) {
        PluginRecord& p = *self.plugins_[i];
        if (!p.deferred || !wanted(p.scanned)) continue;
        p.deferred = false;
        if (!opener_) {
            p.error = "scanned, but this registry cannot open plugins";
            continue;
        }
        TDM_LOG_DEBUG("plugins", "opening {} ({}) in this process", p.name, p.path);
        auto st = opener_(self, p);
        if (!st.ok()) {
            if (p.error.empty()) p.error = st.error().message();
            TDM_LOG_WARN("plugins", "{}", st.error().message());
        }
    }
}

const ArchEntry* Registry::loaded_arch_gguf(std::string_view n) const {
    for (const auto& a : archs_)
        if (contains(a.gguf_names, n)) return &a;
    return nullptr;
}

const DrafterEntry* Registry::loaded_drafter(std::string_view t) const {
    for (const auto& d : drafters_)
        if (contains(d.spec_types, t)) return &d;
    return nullptr;
}

const ArchEntry* Registry::find_arch_gguf(std::string_view n) const {
    if (const ArchEntry* a = loaded_arch_gguf(n)) return a;
    open_deferred([n](const ScannedNames& s) { return contains(s.gguf_archs, n); });
    return loaded_arch_gguf(n);
}

const ArchEntry* Registry::find_arch_hf(std::string_view n) const {
    auto loaded = [this, n]() -> const ArchEntry* {
        for (const auto& a : archs_)
            if (contains(a.hf_model_types, n)) return &a;
        return nullptr;
    };
    if (const ArchEntry* a = loaded()) return a;
    open_deferred([n](const ScannedNames& s) { return contains(s.hf_model_types, n); });
    return loaded();
}

const DrafterEntry* Registry::find_drafter(std::string_view t) const {
    if (const DrafterEntry* d = loaded_drafter(t)) return d;
    open_deferred([t](const ScannedNames& s) { return contains(s.drafter_types, t); });
    return loaded_drafter(t);
}

const DraftHeadEntry* Registry::find_draft_head(std::string_view t, std::string_view target_arch) const {
    auto loaded = [this, t, target_arch]() -> const DraftHeadEntry* {
        for (const auto& h : heads_)
            if (contains(h.spec_types, t) && (h.target_archs.empty() || contains(h.target_archs, target_arch)))
                return &h;
        return nullptr;
    };
    if (const DraftHeadEntry* h = loaded()) return h;
    open_deferred([t](const ScannedNames& s) { return contains(s.head_types, t); });
    return loaded();
}

const EncoderEntry* Registry::find_encoder(std::string_view target_arch) const {
    auto loaded = [&]() -> const EncoderEntry* {
        for (const EncoderEntry& e : encoders_)
            if (contains(e.target_archs, target_arch)) return &e;
        return nullptr;
    };
    if (const EncoderEntry* e = loaded()) return e;
    open_deferred([target_arch](const ScannedNames& s) { return contains(s.encoder_targets, target_arch); });
    return loaded();
}

const std::deque<EncoderEntry>& Registry::encoders() const {
    open_deferred([](const ScannedNames& s) { return !s.encoder_targets.empty(); });
    return encoders_;
}

const std::deque<ArchEntry>& Registry::archs() const {
    open_deferred([](const ScannedNames& s) { return !s.gguf_archs.empty() || !s.hf_model_types.empty(); });
    return archs_;
}

const DraftHeadEntry* Registry::find_draft_head_source(std::string_view source_arch,
                                                       std::string_view target_arch) const {
    auto loaded = [&]() -> const DraftHeadEntry* {
        for (const DraftHeadEntry& h : heads_)
            if (contains(h.source_archs, source_arch) && contains(h.target_archs, target_arch)) return &h;
        return nullptr;
    };
    if (const DraftHeadEntry* h = loaded()) return h;
    open_deferred([source_arch](const ScannedNames& s) { return contains(s.head_source_archs, source_arch); });
    return loaded();
}

const DraftHeadEntry* Registry::find_draft_head_source(std::string_view source_arch) const {
    auto loaded = [&]() -> const DraftHeadEntry* {
        for (const DraftHeadEntry& h : heads_)
            if (contains(h.source_archs, source_arch)) return &h;
        return nullptr;
    };
    if (const DraftHeadEntry* h = loaded()) return h;
    open_deferred([source_arch](const ScannedNames& s) { return contains(s.head_source_archs, source_arch); });
    return loaded();
}

const DraftHeadEntry* Registry::find_draft_head_source(std::span<const std::string> source_names,
                                                       std::string_view target_arch) const {
    for (const std::string& name : source_names)
        if (const DraftHeadEntry* h = find_draft_head_source(name, target_arch)) return h;
    return nullptr;
}

bool Registry::is_draft_head_source(std::string_view source_arch) const {
    return find_draft_head_source(source_arch) != nullptr;
}

const std::deque<DraftHeadEntry>& Registry::draft_heads() const {
    open_deferred([](const ScannedNames& s) { return !s.head_types.empty(); });
    return heads_;
}

const std::deque<DrafterEntry>& Registry::drafters() const {
    open_deferred([](const ScannedNames& s) { return !s.drafter_types.empty(); });
    return drafters_;
}

std::string Registry::describe_architectures() const {
    std::string s;
    for (const auto& p : plugins_) {
        if (!p->error.empty()) continue;
        std::vector<std::string> g, h;
        if (p->deferred) g = p->scanned.gguf_archs, h = p->scanned.hf_model_types;
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
    // deferred plugins: what their scan reported, in the same order (drafters, then heads)
    for (const auto& p : plugins_)
        if (p->deferred) out.insert(out.end(), p->scanned.drafter_types.begin(), p->scanned.drafter_types.end());
    for (const auto& p : plugins_)
        if (p->deferred)
            for (const auto& t : p->scanned.head_types)
                if (!contains(out, t)) out.push_back(t);
    return out;
}

}  // namespace tdm
