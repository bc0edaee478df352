/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/custom_op.c: a plugin in plain C99 that speaks ABI 2 and, in its
   init, checks what it needs (get_limits, then query_op) and creates a custom
   SPIR-V op through the tdm.custom_op extension: y = a * f[0] + b
   (shaders/scale_add.comp). It registers nothing else; the host keeps it loaded
   and its record owns the op (tests/plugin/custom_op_test.cpp runs it). */
#include <stdio.h>
#include <string.h>
#include <tandem/ext/custom_op.h>

static const uint32_t kScaleAdd[] =
#include "scale_add.spv.inc"
    ;

static const tdm_custom_op* g_op;

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    if (!TDM_HAS_MEMBER(host, tdm_host_api, get_extension)) {
        snprintf(err, err_size, "this host has no capability queries (ABI %u)", host->abi_version);
        return TDM_ERR_UNSUPPORTED;
    }
    tdm_host_limits limits;
    memset(&limits, 0, sizeof limits);
    limits.struct_size = sizeof limits;
    if (host->get_limits(&limits) != TDM_OK || limits.max_custom_op_push_bytes < 44) {
        snprintf(err, err_size, "custom ops need 44 push-constant bytes, the host allows %u",
                 limits.max_custom_op_push_bytes);
        return TDM_ERR_UNSUPPORTED;
    }
    uint32_t version = 0;
    const tdm_ext_custom_op* ext =
        (const tdm_ext_custom_op*)host->get_extension(TDM_EXT_CUSTOM_OP, TDM_EXT_CUSTOM_OP_VERSION, &version);
    if (!ext) {
        snprintf(err, err_size, "%s", host->last_error());
        return TDM_ERR_UNSUPPORTED;
    }
    tdm_custom_op_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "custom-op-test.scale_add";
    d.spirv = kScaleAdd;
    d.spirv_bytes = sizeof kScaleAdd;
    d.n_inputs = 2;
    d.local_size_x = 64;
    d.dispatch = TDM_CUSTOM_DISPATCH_ELEMENTS;
    d.output_shape = TDM_CUSTOM_OUTPUT_LIKE_INPUT0;
    d.output_type = TDM_DTYPE_F32;
    d.n_float_params = 1;
    tdm_status st = ext->create(reg, &d, &g_op);
    if (st != TDM_OK) {
        snprintf(err, err_size, "%s", host->last_error());
        return st;
    }
    /* The graph will use the op with these parameters: ask as graph_op would. */
    tdm_op_desc q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = TDM_OP_CUSTOM;
    q.custom = g_op;
    q.f[0] = 2.0f;
    st = host->query_op(&q);
    if (st != TDM_OK) {
        snprintf(err, err_size, "%s", host->last_error());
        return st;
    }
    return TDM_OK;
}

static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "custom-op-test", "1",
                                    "creates a custom SPIR-V op in init", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_range(n, &kApi, 2, 2); }
