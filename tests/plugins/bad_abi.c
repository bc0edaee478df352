/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/bad_abi.c: a plugin that only speaks ABI 7..9 (refused by a v1 host). */
#include <tandem/tandem.h>

static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "bad-abi", "1", "speaks a future ABI", 0, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    n->plugin_abi_min = 7;
    n->plugin_abi_max = 9;
    if (n->host_abi_max < 7) return TDM_ERR_ABI_MISMATCH;
    n->plugin_abi = 7;
    n->plugin_api = &kApi;
    return TDM_OK;
}
