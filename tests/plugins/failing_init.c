/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/failing_init.c: registers a drafter, then fails its init; the
   registration must be rolled back and the error reported. */
#include <stdio.h>
#include <tandem/tandem.h>

static tdm_status create(const tdm_host_api* h, const tdm_options* o, void** d, char* e, size_t n) {
    (void)h; (void)o; (void)e; (void)n;
    *d = 0;
    return TDM_OK;
}
static void destroy(void* d) { (void)d; }
static void begin(void* d, const int32_t* p, uint64_t n) { (void)d; (void)p; (void)n; }
static uint64_t propose(void* d, const int32_t* h, uint64_t n, int32_t* out, uint64_t max) {
    (void)d; (void)h; (void)n; (void)out; (void)max;
    return 0;
}
static void accept(void* d, const int32_t* h, uint64_t n, uint64_t a, uint64_t b) { (void)d; (void)h; (void)n; (void)a; (void)b; }
static const char* const kTypes[] = {"never-registered", 0};
static const tdm_drafter_desc kDrafter = {
    .struct_size = sizeof(tdm_drafter_desc), .name = "never-registered", .spec_types = kTypes,
    .create = create, .destroy = destroy, .begin = begin, .propose = propose, .accept = accept,
};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    host->register_drafter(reg, &kDrafter);
    snprintf(err, err_size, "the answer is not 42 today");
    return TDM_ERR_INTERNAL;
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "failing-init", "1", "fails in init", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }
