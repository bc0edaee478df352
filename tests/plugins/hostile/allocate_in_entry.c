/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/hostile/allocate_in_entry.c: its entry point allocates 30 GiB, 64 MiB at a
   time, and writes to every page of it, as a plugin that builds huge tables when it is
   loaded would. The scan's memory bound must stop it; a null block (an allocation the
   bound refused) is written through like any other, so the scanner dies of SIGSEGV. */
#include <stdint.h>
#include <stdlib.h>
#include <tandem/tandem.h>

/* volatile: the compiler may not drop the blocks as never read */
static char* volatile g_last_block;

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    (void)n;
    const size_t block = (size_t)64 << 20;
    for (int i = 0; i < 30 * 16; ++i) {
        g_last_block = (char*)malloc(block);
        for (size_t at = 0; at < block; at += 4096) ((volatile char*)g_last_block)[at] = 1;
    }
    return TDM_OK;
}
