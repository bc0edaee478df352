/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/short_descriptor.c: a plugin whose drafter descriptor claims a
 * struct_size below ABI 1's (a forgotten or garbage struct_size). The host must
 * refuse it with both sizes and the file named, and keep loading the others. */
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
static void accept(void* d, const int32_t* h, uint64_t n, uint64_t a, uint64_t b) {
    (void)d; (void)h; (void)n; (void)a; (void)b;
}
static const char* const kTypes[] = {"short", 0};
static const tdm_drafter_desc kDrafter = {
    .struct_size = 8, .name = "short", .spec_types = kTypes,
    .create = create, .destroy = destroy, .begin = begin, .propose = propose, .accept = accept,
};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    if (host->register_drafter(reg, &kDrafter) != TDM_OK) {
        snprintf(err, err_size, "%s", host->last_error());
        return TDM_ERR_INVALID_ARGUMENT;
    }
    return TDM_OK;
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "short-descriptor", "1", "bad struct_size", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }
