/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/hostile/unterminated_error.c: fails init after filling the whole error
   buffer with 'x' and no terminating NUL. The host must read err_size bytes, not one more. */
#include <string.h>
#include <tandem/tandem.h>

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)host; (void)reg;
    memset(err, 'x', err_size);
    return TDM_ERR_INTERNAL;
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "unterminated-error", "1", "fills err", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }
