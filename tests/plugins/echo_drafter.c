/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/echo_drafter.c: a minimal, valid plugin in plain C99 that proves
   the ABI is usable from C: a draftless drafter proposing the last token again. */
#include <stdlib.h>
#include <tandem/tandem.h>

typedef struct { int64_t max; } echo;

static tdm_status create(const tdm_host_api* h, const tdm_options* o, void** d, char* e, size_t n) {
    (void)e; (void)n;
    echo* x = (echo*)malloc(sizeof(echo));
    if (!x) return TDM_ERR_OUT_OF_MEMORY;
    x->max = 4;
    if (o) h->option_get_int(o, "draft_max", &x->max);
    *d = x;
    return TDM_OK;
}
static void destroy(void* d) { free(d); }
static void begin(void* d, const int32_t* p, uint64_t n) { (void)d; (void)p; (void)n; }
static uint64_t propose(void* d, const int32_t* h, uint64_t n, int32_t* out, uint64_t max) {
    echo* x = (echo*)d;
    uint64_t k = max < (uint64_t)x->max ? max : (uint64_t)x->max;
    if (n == 0) return 0;
    for (uint64_t i = 0; i < k; ++i) out[i] = h[n - 1];
    return k;
}
static void accept(void* d, const int32_t* h, uint64_t n, uint64_t a, uint64_t b) { (void)d; (void)h; (void)n; (void)a; (void)b; }
static const char* const kTypes[] = {"echo", 0};
static const tdm_drafter_desc kDrafter = {
    .struct_size = sizeof(tdm_drafter_desc), .name = "echo", .spec_types = kTypes,
    .create = create, .destroy = destroy, .begin = begin, .propose = propose, .accept = accept,
};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)err; (void)err_size;
    return host->register_drafter(reg, &kDrafter);
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "echo", "1", "test drafter", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }
