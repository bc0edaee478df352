/* SPDX-License-Identifier: Apache-2.0 */
/* tests/abi/plugins/v3_plugin.c: a plugin built against the frozen ABI 3.0
 * headers (tests/abi/v3, the release before minor versions), speaking ABI 3
 * only. Its init checks what ABI 3.0 promises and registers only if all of it
 * holds: the host table is version 3; the ops and values added in ABI 3
 * (layer_norm, attention_full, exact GELU) are offered; the extensions of ABI 3
 * are offered at version 1; and an op code at or past TDM_OP_COUNT_V3, which
 * ABI 3.0 does not have, is refused to it (a newer host offers its later ops
 * only to plugins built against the minor version that added them). Then it
 * registers one drafter, "v3-echo": it proposes the last token of the history
 * twice, through the v2 calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tandem/ext/batched_draft.h>
#include <tandem/ext/custom_op.h>
#include <tandem/ext/encoder.h>
#include <tandem/ext/host_rows.h>
#include <tandem/ext/target_weights.h>
#include <tandem/tandem.h>

static tdm_status say(char* err, size_t n, tdm_status st, const char* msg) {
    if (err && n) snprintf(err, n, "%s", msg);
    return st;
}

static int dummy;
static tdm_status create(const tdm_host_api* h, const tdm_options* o, void** d, char* e, size_t n) {
    (void)h; (void)o; (void)e; (void)n;
    *d = &dummy;
    return TDM_OK;
}
static void destroy(void* d) { (void)d; }
static tdm_status begin2(void* d, const int32_t* p, uint64_t n, char* err, size_t err_size) {
    (void)d; (void)p; (void)n; (void)err; (void)err_size;
    return TDM_OK;
}
static tdm_status propose2(void* d, const int32_t* h, uint64_t n, int32_t* out, uint64_t max, uint64_t* n_out,
                           char* err, size_t err_size) {
    (void)d; (void)err; (void)err_size;
    *n_out = 0;
    if (n == 0) return TDM_OK;
    uint64_t k = max < 2 ? max : 2;
    for (uint64_t i = 0; i < k; ++i) out[i] = h[n - 1];
    *n_out = k;
    return TDM_OK;
}
static tdm_status accept2(void* d, const int32_t* h, uint64_t n, uint64_t a, uint64_t b, char* err, size_t err_size) {
    (void)d; (void)h; (void)n; (void)a; (void)b; (void)err; (void)err_size;
    return TDM_OK;
}

static const char* const kTypes[] = {"v3-echo", NULL};
static const tdm_drafter_desc kDrafter = {
    .struct_size = sizeof(tdm_drafter_desc), .name = "v3-echo", .spec_types = kTypes,
    .create = create, .destroy = destroy, .begin2 = begin2, .propose2 = propose2, .accept2 = accept2};

static tdm_status query(const tdm_host_api* host, uint32_t op, int32_t i0) {
    tdm_op_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.op = op;
    d.i[0] = i0;
    return host->query_op(&d);
}

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    if (!host || host->struct_size < TDM_V1_SIZEOF_HOST_API || host->abi_version != 3 ||
        !TDM_HAS_MEMBER(host, tdm_host_api, get_extension))
        return say(err, err_size, TDM_ERR_ABI_MISMATCH, "v3-test needs a host table of ABI 3");
    if (query(host, TDM_OP_LAYER_NORM, 0) != TDM_OK || query(host, TDM_OP_ATTENTION_FULL, 0) != TDM_OK ||
        query(host, TDM_OP_UNARY, TDM_UNARY_GELU_ERF) != TDM_OK)
        return say(err, err_size, TDM_ERR_UNSUPPORTED, "v3-test: an ABI 3 op is not offered");
    const char* const exts[] = {TDM_EXT_CUSTOM_OP, TDM_EXT_TARGET_WEIGHTS, TDM_EXT_HOST_ROWS, TDM_EXT_BATCHED_DRAFT,
                                TDM_EXT_ENCODER};
    for (size_t k = 0; k < sizeof exts / sizeof exts[0]; ++k)
        if (!host->get_extension(exts[k], 1, NULL))
            return say(err, err_size, TDM_ERR_UNSUPPORTED, "v3-test: an ABI 3 extension is not offered");
    if (query(host, TDM_OP_COUNT_V3, 0) != TDM_ERR_UNSUPPORTED)
        return say(err, err_size, TDM_ERR_INTERNAL, "v3-test: the host offers an op that ABI 3.0 does not have");
    if (host->register_drafter(reg, &kDrafter) != TDM_OK) return say(err, err_size, TDM_ERR_INTERNAL, host->last_error());
    return TDM_OK;
}

static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "v3-test", "3.0", "built against ABI 3.0", init, NULL};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_range(n, &kApi, 3, 3); }
