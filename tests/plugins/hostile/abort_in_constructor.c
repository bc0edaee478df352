/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/hostile/abort_in_constructor.c: aborts in a shared-object constructor,
   which runs inside dlopen before the host sees any entry point. Scanning must report
   the crash (SIGABRT); opening it in the host process would kill the host. */
#include <stdlib.h>
#include <tandem/tandem.h>

__attribute__((constructor)) static void explode(void) { abort(); }

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)host; (void)reg; (void)err; (void)err_size;
    return TDM_OK;
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "abort-in-constructor", "1", "never seen", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }
