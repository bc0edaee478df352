// SPDX-License-Identifier: Apache-2.0
// host/plugin/capabilities.cpp: the answers to a plugin's capability queries,
// all derived from what the host runs: ops and their parameters from the op
// table (host/ops/), weight types from the shader variants that were built,
// limits from host/ops/limits.h, extensions from the table below.
#include "plugin/capabilities.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <tandem/ext/batched_draft.h>

#include "ops/custom_op.h"
#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/weight_record.h"
#include "plugin/block_draft_ext.h"
#include "plugin/custom_op_ext.h"
#include "plugin/drafter_branches_ext.h"
#include "plugin/handles.h"
#include "plugin/target_features_ext.h"
#include "vk/pipeline.h"

namespace tdm {
namespace {

// Whether every shader `op` needs for weights of `type` was built.
bool has_weight_kernels(const OpDef& op, DType type) {
    for (const char* const* family = op.weight_shaders; *family; ++family)
        for (bool texel : {false, true})
            if (!vk::find_shader(kernel::weight_variant(*family, type, texel))) return false;
    return true;
}

struct Extension {
    const char* name;
    uint32_t version;                      // the newest this host offers
    const void* (*table)(uint32_t version);  // the table of a version 1 .. `version`
};
const Extension kExtensions[] = {
    {TDM_EXT_CUSTOM_OP, TDM_EXT_CUSTOM_OP_VERSION, [](uint32_t) { return static_cast<const void*>(custom_op_extension()); }},
    {TDM_EXT_TARGET_WEIGHTS, TDM_EXT_TARGET_WEIGHTS_VERSION,
     [](uint32_t) { return static_cast<const void*>(target_weights_extension()); }},
    {TDM_EXT_HOST_ROWS, TDM_EXT_HOST_ROWS_VERSION, [](uint32_t) { return static_cast<const void*>(host_rows_extension()); }},
    {TDM_EXT_ENCODER, TDM_EXT_ENCODER_VERSION, [](uint32_t) { return static_cast<const void*>(encoder_extension()); }},
    // a flag a draft head may set (speculative/draft_head.h drafts its sequences in one graph)
    {TDM_EXT_BATCHED_DRAFT, TDM_EXT_BATCHED_DRAFT_VERSION,
     [](uint32_t) {
         static const tdm_ext_batched_draft ext{sizeof(tdm_ext_batched_draft), 256};
         return static_cast<const void*>(&ext);
     }},
    {TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION,
     [](uint32_t) { return static_cast<const void*>(target_features_extension()); }},
    // a head that drafts a block per round (speculative/draft_head.cpp); version 2: the
    // block's outputs for the drafted rows only
    {TDM_EXT_BLOCK_DRAFT, TDM_EXT_BLOCK_DRAFT_VERSION,
     [](uint32_t version) { return static_cast<const void*>(block_draft_extension(version)); }},
    // a draftless drafter that lists several continuations (speculative/plugin_drafter.cpp)
    {TDM_EXT_DRAFTER_BRANCHES, TDM_EXT_DRAFTER_BRANCHES_VERSION,
     [](uint32_t) { return static_cast<const void*>(drafter_branches_extension()); }},
    // vector transforms applied once at load (model/weight_store.cpp load_vector)
    {TDM_EXT_WEIGHT_TRANSFORMS, TDM_EXT_WEIGHT_TRANSFORMS_VERSION,
     [](uint32_t) { return static_cast<const void*>(weight_transforms_extension()); }},
};

// TANDEM_HIDE_EXTENSIONS=a,b@N: this host answers as one without extension a and with
// version N of b at most, so that a plugin author can run the fallback a plugin keeps for
// older hosts. The version `name` is offered at: e.version, or lower, 0 when hidden.
uint32_t offered_version(const Extension& e) {
    const char* env = std::getenv("TANDEM_HIDE_EXTENSIONS");
    if (!env) return e.version;
    std::string_view list(env);
    while (!list.empty()) {
        const size_t comma = list.find(',');
        const std::string_view item = list.substr(0, comma);
        const size_t at = item.find('@');
        if (item.substr(0, at) == e.name) {
            if (at == std::string_view::npos) return 0;
            uint32_t cap = 0;
            for (char ch : item.substr(at + 1)) {
                if (ch < '0' || ch > '9') return 0;  // not a version: hidden
                cap = std::min<uint32_t>(cap * 10 + uint32_t(ch - '0'), e.version);
            }
            return std::min(cap, e.version);
        }
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return e.version;
}

std::string offered_extensions() {
    std::string s;
    for (const Extension& e : kExtensions)
        if (const uint32_t v = offered_version(e))
            s += fmt::format("{}{} version {}", s.empty() ? "" : ", ", e.name, v);
    return s;
}

}  // namespace

tdm_status host_limits(tdm_host_limits* out) {
    if (!out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "get_limits: null argument");
    if (out->struct_size < offsetof(tdm_host_limits, max_op_inputs) + sizeof(uint32_t))
        return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                              fmt::format("get_limits: tdm_host_limits.struct_size {} holds no field", out->struct_size));
    tdm_host_limits l{};
    l.max_op_inputs = kMaxOpInputs;
    l.max_verify_rows = kMaxVerifyRows;
    l.max_query_heads_per_kv_head = kMaxQueryHeadsPerKvHead;
    l.max_top_k = kMaxTopK;
    l.max_delta_rule_chunk = kMaxDeltaRuleChunk;
    l.weight_row_align_bytes = kWeightRowAlignBytes;
    l.activation_align_elems = kActivationAlignElems;
    l.get_rows_width_multiple = kGetRowsWidthMultiple;
    l.max_custom_op_push_bytes = kMaxCustomOpPushBytes;
    // Whole fields that fit the caller's struct, after its struct_size.
    const size_t begin = offsetof(tdm_host_limits, max_op_inputs);
    const size_t end = std::min<size_t>(out->struct_size, sizeof l) / sizeof(uint32_t) * sizeof(uint32_t);
    std::memcpy(reinterpret_cast<char*>(out) + begin, reinterpret_cast<const char*>(&l) + begin, end - begin);
    return TDM_OK;
}

tdm_status query_op_params(const tdm_op_desc& desc) {
    const OpDef* def = find_public_op(desc.op);
    if (!def) return set_last_error(unknown_op(desc.op));
    if (!def->check_params) return TDM_OK;
    OpDesc o;
    o.op = tdm_op(desc.op);
    std::memcpy(o.i, desc.i, sizeof o.i);
    std::memcpy(o.f, desc.f, sizeof o.f);
    o.custom = from_handle(desc.custom);
    auto st = def->check_params(o);
    return st.ok() ? TDM_OK : set_last_error(st.error());
}

tdm_status query_weight_type(tdm_dtype type, uint32_t op) {
    const OpDef* def = find_public_op(op);
    if (!def) return set_last_error(unknown_op(op));
    if (!def->weight_shaders)
        return set_last_error(TDM_ERR_UNSUPPORTED,
                              fmt::format("{} reads no weights (weight types apply to get_rows, matmul, matmul_id)",
                                          def->name));
    if (!dtype_traits(uint32_t(type)))
        return set_last_error(TDM_ERR_UNSUPPORTED, fmt::format("{}: weight type id {} is unknown to this host",
                                                               def->name, uint32_t(type)));
    if (has_weight_kernels(*def, DType(type))) return TDM_OK;
    std::string have;
    for (uint32_t id = 0; id < 64; ++id)
        if (dtype_traits(id) && has_weight_kernels(*def, DType(id)))
            have += fmt::format("{}{}", have.empty() ? "" : ", ", dtype_name(DType(id)));
    return set_last_error(TDM_ERR_UNSUPPORTED, fmt::format("{}: no kernel for {} weights (this host has {})", def->name,
                                                           dtype_name(DType(type)), have));
}

const void* find_extension(std::string_view name, uint32_t min_version, uint32_t* version) {
    for (const Extension& e : kExtensions) {
        if (name != e.name) continue;
        const uint32_t offered = offered_version(e);
        if (offered == 0) {
            set_last_error(TDM_ERR_NOT_FOUND,
                           fmt::format("extension '{}' is hidden by TANDEM_HIDE_EXTENSIONS (this host answers as "
                                       "one without it)",
                                       name));
            return nullptr;
        }
        if (offered < min_version) {
            set_last_error(TDM_ERR_UNSUPPORTED,
                           fmt::format("extension '{}' version {} or later asked for, this host offers version {}{}",
                                       name, min_version, offered,
                                       offered < e.version ? " (TANDEM_HIDE_EXTENSIONS holds back the newer ones)" : ""));
            return nullptr;
        }
        if (version) *version = offered;
        return e.table(offered);
    }
    set_last_error(TDM_ERR_NOT_FOUND, fmt::format("this host offers no extension '{}' (it offers {})", name,
                                                  offered_extensions()));
    return nullptr;
}

}  // namespace tdm
