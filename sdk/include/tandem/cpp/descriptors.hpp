// SPDX-License-Identifier: MIT
// tandem/cpp/descriptors.hpp: what a plugin hands the host, built with named
// members and struct_size set: the plugin's tdm_plugin_api and the entry
// point, architecture / draft head / drafter descriptors, and the attention
// layers and recurrent states a model declares.
//
// The builders are constexpr, so descriptors stay static constants (the host
// keeps pointers to them until shutdown, tandem.h section 4):
//
//     constexpr tdm_arch_desc kQwen3 = ArchDesc("qwen3")
//                                          .gguf_names(kQwen3Gguf)
//                                          .hf_model_types(kQwen3Hf)
//                                          .callbacks(create, load, build_graph, destroy);
//     constexpr tdm_plugin_api kPlugin = PluginApi("qwen-nextn").version("0.1.0").init(init);
//     TDM_SDK_PLUGIN_ENTRY(kPlugin, 2, 2)
//
// Header-only, C++17.
#ifndef TANDEM_CPP_DESCRIPTORS_HPP
#define TANDEM_CPP_DESCRIPTORS_HPP

#include <cstdint>

#include "../tandem.h"
#include "structs.hpp"

namespace tdm::sdk {

// ---- the model's memory (tdm_model_info, tdm_draft_head_info) ----------------

// An attention layer of full (causal) attention over the KV pool.
constexpr tdm_attention_layer full_attention(std::uint32_t n_kv_head, std::uint32_t head_dim_k,
                                             std::uint32_t head_dim_v) noexcept {
    tdm_attention_layer l{};
    l.struct_size = sizeof l;
    l.n_kv_head = n_kv_head;
    l.head_dim_k = head_dim_k;
    l.head_dim_v = head_dim_v;
    l.window = 0;
    return l;
}
// An attention layer with a sliding window of `window` tokens (> 0).
constexpr tdm_attention_layer sliding_attention(std::uint32_t n_kv_head, std::uint32_t head_dim_k,
                                                std::uint32_t head_dim_v, std::uint32_t window) noexcept {
    tdm_attention_layer l = full_attention(n_kv_head, head_dim_k, head_dim_v);
    l.window = window;
    return l;
}
// A recurrent state of n_f32 floats per sequence.
constexpr tdm_recurrent_state recurrent_state(std::uint64_t n_f32) noexcept {
    tdm_recurrent_state s{};
    s.struct_size = sizeof s;
    s.n_f32 = n_f32;
    return s;
}

// Fills the host's tdm_model_info / tdm_draft_head_info (create callbacks)
// append-safely: only the fields the host's struct_size covers are written.
inline void set_model_info(tdm_model_info* host, const tdm_model_info& info) noexcept { write_struct(host, info); }
inline void set_draft_head_info(tdm_draft_head_info* host, const tdm_draft_head_info& info) noexcept {
    write_struct(host, info);
}

// ---- descriptors ---------------------------------------------------------------

// tdm_arch_desc: name, the names it matches, and the four callbacks.
class ArchDesc {
public:
    constexpr explicit ArchDesc(const char* name) noexcept : d_() {
        d_.struct_size = sizeof(tdm_arch_desc);
        d_.name = name;
    }
    // NULL-terminated general.architecture values.
    constexpr ArchDesc gguf_names(const char* const* v) const noexcept {
        ArchDesc c = *this;
        c.d_.gguf_names = v;
        return c;
    }
    // NULL-terminated config.json model_type values.
    constexpr ArchDesc hf_model_types(const char* const* v) const noexcept {
        ArchDesc c = *this;
        c.d_.hf_model_types = v;
        return c;
    }
    constexpr ArchDesc callbacks(decltype(tdm_arch_desc::create) create, decltype(tdm_arch_desc::load) load,
                                 decltype(tdm_arch_desc::build_graph) build_graph,
                                 decltype(tdm_arch_desc::destroy) destroy) const noexcept {
        ArchDesc c = *this;
        c.d_.create = create;
        c.d_.load = load;
        c.d_.build_graph = build_graph;
        c.d_.destroy = destroy;
        return c;
    }
    constexpr const tdm_arch_desc& desc() const noexcept { return d_; }
    constexpr operator tdm_arch_desc() const noexcept { return d_; }  // NOLINT: implicit on purpose

private:
    tdm_arch_desc d_;
};

// tdm_draft_head_desc: name, --spec-type names, target architectures, callbacks.
class DraftHeadDesc {
public:
    constexpr explicit DraftHeadDesc(const char* name) noexcept : d_() {
        d_.struct_size = sizeof(tdm_draft_head_desc);
        d_.name = name;
    }
    constexpr DraftHeadDesc spec_types(const char* const* v) const noexcept {
        DraftHeadDesc c = *this;
        c.d_.spec_types = v;
        return c;
    }
    constexpr DraftHeadDesc target_archs(const char* const* v) const noexcept {
        DraftHeadDesc c = *this;
        c.d_.target_archs = v;
        return c;
    }
    // [v2] Architectures of files that hold this head alone (`-md FILE`).
    constexpr DraftHeadDesc source_archs(const char* const* v) const noexcept {
        DraftHeadDesc c = *this;
        c.d_.source_archs = v;
        return c;
    }
    constexpr DraftHeadDesc callbacks(decltype(tdm_draft_head_desc::create) create,
                                      decltype(tdm_draft_head_desc::load) load,
                                      decltype(tdm_draft_head_desc::build_step) build_step,
                                      decltype(tdm_draft_head_desc::destroy) destroy) const noexcept {
        DraftHeadDesc c = *this;
        c.d_.create = create;
        c.d_.load = load;
        c.d_.build_step = build_step;
        c.d_.destroy = destroy;
        return c;
    }
    constexpr const tdm_draft_head_desc& desc() const noexcept { return d_; }
    constexpr operator tdm_draft_head_desc() const noexcept { return d_; }  // NOLINT

private:
    tdm_draft_head_desc d_;
};

// tdm_drafter_desc: name, --spec-type names, create/destroy, the v2 calls
// (begin2/propose2/accept2, which an ABI 2 host prefers) and optionally the v1
// ones (begin/propose/accept, for a host that calls only those) and save.
class DrafterDesc {
public:
    constexpr explicit DrafterDesc(const char* name) noexcept : d_() {
        d_.struct_size = sizeof(tdm_drafter_desc);
        d_.name = name;
    }
    constexpr DrafterDesc spec_types(const char* const* v) const noexcept {
        DrafterDesc c = *this;
        c.d_.spec_types = v;
        return c;
    }
    constexpr DrafterDesc lifetime(decltype(tdm_drafter_desc::create) create,
                                   decltype(tdm_drafter_desc::destroy) destroy) const noexcept {
        DrafterDesc c = *this;
        c.d_.create = create;
        c.d_.destroy = destroy;
        return c;
    }
    constexpr DrafterDesc calls_v2(decltype(tdm_drafter_desc::begin2) begin2,
                                   decltype(tdm_drafter_desc::propose2) propose2,
                                   decltype(tdm_drafter_desc::accept2) accept2) const noexcept {
        DrafterDesc c = *this;
        c.d_.begin2 = begin2;
        c.d_.propose2 = propose2;
        c.d_.accept2 = accept2;
        return c;
    }
    constexpr DrafterDesc calls_v1(decltype(tdm_drafter_desc::begin) begin, decltype(tdm_drafter_desc::propose) propose,
                                   decltype(tdm_drafter_desc::accept) accept) const noexcept {
        DrafterDesc c = *this;
        c.d_.begin = begin;
        c.d_.propose = propose;
        c.d_.accept = accept;
        return c;
    }
    constexpr DrafterDesc save(decltype(tdm_drafter_desc::save) fn) const noexcept {
        DrafterDesc c = *this;
        c.d_.save = fn;
        return c;
    }
    constexpr const tdm_drafter_desc& desc() const noexcept { return d_; }
    constexpr operator tdm_drafter_desc() const noexcept { return d_; }  // NOLINT

private:
    tdm_drafter_desc d_;
};

// tdm_plugin_api: name, version, one-line description, init and shutdown.
class PluginApi {
public:
    constexpr explicit PluginApi(const char* name) noexcept : d_() {
        d_.struct_size = sizeof(tdm_plugin_api);
        d_.name = name;
    }
    constexpr PluginApi version(const char* v) const noexcept {
        PluginApi c = *this;
        c.d_.version = v;
        return c;
    }
    constexpr PluginApi description(const char* v) const noexcept {
        PluginApi c = *this;
        c.d_.description = v;
        return c;
    }
    constexpr PluginApi init(decltype(tdm_plugin_api::init) fn) const noexcept {
        PluginApi c = *this;
        c.d_.init = fn;
        return c;
    }
    constexpr PluginApi shutdown(decltype(tdm_plugin_api::shutdown) fn) const noexcept {
        PluginApi c = *this;
        c.d_.shutdown = fn;
        return c;
    }
    constexpr const tdm_plugin_api& desc() const noexcept { return d_; }
    constexpr operator tdm_plugin_api() const noexcept { return d_; }  // NOLINT

private:
    tdm_plugin_api d_;
};

// The negotiation body: speak the highest version in [abi_min, abi_max] the
// host also offers (tdm_negotiate_range). A plugin that calls v2 host entries
// (query_op, get_limits, get_extension) or sets v2 callbacks passes abi_min 2.
inline tdm_status negotiate(tdm_negotiate* n, const tdm_plugin_api& api, std::uint32_t abi_min,
                            std::uint32_t abi_max) noexcept {
    return tdm_negotiate_range(n, &api, abi_min, abi_max);
}

}  // namespace tdm::sdk

// Defines the plugin's one exported symbol, tdm_plugin_negotiate, at namespace
// scope: TDM_SDK_PLUGIN_ENTRY(kPlugin, 2, 2). `plugin_api` is a tdm_plugin_api
// (or a PluginApi); the host gets a pointer to a static copy of it.
#define TDM_SDK_PLUGIN_ENTRY(plugin_api, abi_min, abi_max)                                  \
    extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {        \
        static const tdm_plugin_api tdm_sdk_plugin_api_ = (plugin_api);                     \
        return ::tdm::sdk::negotiate(n, tdm_sdk_plugin_api_, (abi_min), (abi_max));         \
    }

#endif  // TANDEM_CPP_DESCRIPTORS_HPP
