/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/hostile/hang_in_init.c: negotiates, then never returns from init. The
   scan must time out and kill it; the host never opens it. */
#include <tandem/tandem.h>
#include <unistd.h>

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)host; (void)reg; (void)err; (void)err_size;
    for (;;) pause();
    return TDM_OK;
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "hang-in-init", "1", "never returns", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }
