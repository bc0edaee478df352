// SPDX-License-Identifier: Apache-2.0
// host/plugin/custom_op_ext.cpp: extension "tdm.custom_op" version 1. create()
// reads the plugin's descriptor append-safely, checks it and its SPIR-V
// (ops/custom_op.cpp), and hands the op to the plugin's record, which owns it
// until the plugin is unloaded.
#include "plugin/custom_op_ext.h"

#include <algorithm>
#include <cstring>

#include "ops/custom_op.h"
#include "plugin/abi_structs.h"
#include "plugin/handles.h"
#include "plugin/registry.h"

namespace tdm {
namespace {

static_assert(sizeof(tdm_custom_op_desc) == TDM_EXT_CUSTOM_OP_V1_SIZEOF_DESC, "tdm_custom_op_desc changed size");

tdm_status api_custom_op_create(tdm_registry* reg, const tdm_custom_op_desc* desc, const tdm_custom_op** out) {
    if (!desc || !out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.custom_op create: null argument");
    const bool has_name = desc->struct_size >= offsetof(tdm_custom_op_desc, name) + sizeof(desc->name) && desc->name;
    const std::string name = has_name ? plugin_string(desc->name, kPluginNameMax) : "(unnamed)";
    if (!reg)
        return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                              fmt::format("custom op '{}': create is only allowed during init (the registry is NULL)",
                                          name));
    if (desc->struct_size < TDM_EXT_CUSTOM_OP_V1_SIZEOF_DESC)
        return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                              fmt::format("custom op '{}': tdm_custom_op_desc.struct_size {} is below the version 1 "
                                          "size {}",
                                          name, desc->struct_size, TDM_EXT_CUSTOM_OP_V1_SIZEOF_DESC));
    tdm_custom_op_desc d{};  // fields a newer plugin appended are not read
    std::memcpy(&d, desc, std::min<size_t>(desc->struct_size, sizeof d));
    // make_custom_op copies the name and entry point: from the host's bounded copies
    std::string bounded_name, entry_point;
    if (d.name && *d.name) {  // an empty one: make_custom_op says what a name is for
        auto n = plugin_name(d.name, "custom op");
        if (!n.ok()) return set_last_error(n.error().context(fmt::format("plugin {}", reg->plugin->name)));
        bounded_name = std::move(n).value();
        d.name = bounded_name.c_str();
    }
    if (d.entry_point) {
        auto e = plugin_name(d.entry_point, fmt::format("custom op '{}': entry point", name));
        if (!e.ok()) return set_last_error(e.error().context(fmt::format("plugin {}", reg->plugin->name)));
        entry_point = std::move(e).value();
        d.entry_point = entry_point.c_str();
    }
    auto op = make_custom_op(d);
    if (!op.ok()) return set_last_error(op.error().context(fmt::format("plugin {}", reg->plugin->name)));
    reg->plugin->provides.push_back(fmt::format("custom op {}", (*op)->name));
    reg->plugin->custom_ops.push_back(std::move(op).value());
    *out = to_handle(reg->plugin->custom_ops.back().get());
    return TDM_OK;
}

const tdm_ext_custom_op kCustomOpExt = {sizeof(tdm_ext_custom_op), api_custom_op_create};

}  // namespace

const tdm_ext_custom_op* custom_op_extension() { return &kCustomOpExt; }

}  // namespace tdm
