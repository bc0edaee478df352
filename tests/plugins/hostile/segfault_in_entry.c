/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/hostile/segfault_in_entry.c: its entry point writes through a null
   pointer (SIGSEGV) when the host negotiates. */
#include <stdint.h>
#include <tandem/tandem.h>

/* volatile: the compiler cannot prove the address null and turn the store into a trap */
static volatile uintptr_t g_address = 0;

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    (void)n;
    *(volatile int*)g_address = 42;
    return TDM_OK;
}
