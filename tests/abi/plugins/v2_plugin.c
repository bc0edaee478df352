/* SPDX-License-Identifier: Apache-2.0 */
/* tests/abi/plugins/v2_plugin.c: a plugin built against the ABI 2 SDK that
 * speaks ABI 2 only, so a host offering ABI 1 must refuse it by name; and two
 * drafters that use the v2 failure-reporting calls (begin2/propose2/accept2):
 *   "flaky-propose": proposes the last token twice; its third proposal fails;
 *   "flaky-begin":   fails at once in begin2.
 * The host must turn each off for the request and keep the output exact. */
#include <stdio.h>
#include <stdlib.h>
#include <tandem/tandem.h>

typedef struct {
    int fail_begin;
    uint64_t calls;
} flaky;

static tdm_status say(char* err, size_t n, tdm_status st, const char* msg) {
    if (err && n) snprintf(err, n, "%s", msg);
    return st;
}

static tdm_status create_propose(const tdm_host_api* h, const tdm_options* o, void** d, char* e, size_t n) {
    (void)h; (void)o;
    flaky* x = (flaky*)calloc(1, sizeof *x);
    if (!x) return say(e, n, TDM_ERR_OUT_OF_MEMORY, "out of memory");
    *d = x;
    return TDM_OK;
}
static tdm_status create_begin(const tdm_host_api* h, const tdm_options* o, void** d, char* e, size_t n) {
    tdm_status st = create_propose(h, o, d, e, n);
    if (st == TDM_OK) ((flaky*)*d)->fail_begin = 1;
    return st;
}
static void destroy(void* d) { free(d); }
static tdm_status begin2(void* d, const int32_t* p, uint64_t n, char* err, size_t err_size) {
    (void)p; (void)n;
    if (((flaky*)d)->fail_begin) return say(err, err_size, TDM_ERR_BAD_MODEL, "flaky-begin: synthetic failure in begin");
    return TDM_OK;
}
static tdm_status propose2(void* d, const int32_t* h, uint64_t n, int32_t* out, uint64_t max, uint64_t* n_out,
                           char* err, size_t err_size) {
    flaky* x = (flaky*)d;
    *n_out = 0;
    if (++x->calls == 3) return say(err, err_size, TDM_ERR_INTERNAL, "flaky-propose: synthetic failure on call 3");
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

static const char* const kProposeTypes[] = {"flaky-propose", NULL};
static const char* const kBeginTypes[] = {"flaky-begin", NULL};
/* Only the v2 calls: begin/propose/accept stay NULL. */
static const tdm_drafter_desc kProposeDrafter = {
    .struct_size = sizeof(tdm_drafter_desc), .name = "flaky-propose", .spec_types = kProposeTypes,
    .create = create_propose, .destroy = destroy, .begin2 = begin2, .propose2 = propose2, .accept2 = accept2};
static const tdm_drafter_desc kBeginDrafter = {
    .struct_size = sizeof(tdm_drafter_desc), .name = "flaky-begin", .spec_types = kBeginTypes,
    .create = create_begin, .destroy = destroy, .begin2 = begin2, .propose2 = propose2, .accept2 = accept2};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    if (!host || host->struct_size < TDM_V1_SIZEOF_HOST_API) return say(err, err_size, TDM_ERR_ABI_MISMATCH, "no host table");
    if (host->abi_version < 2 || !TDM_HAS_MEMBER(host, tdm_host_api, get_extension))
        return say(err, err_size, TDM_ERR_ABI_MISMATCH, "v2-test needs a host of ABI 2");
    if (host->register_drafter(reg, &kProposeDrafter) != TDM_OK ||
        host->register_drafter(reg, &kBeginDrafter) != TDM_OK)
        return say(err, err_size, TDM_ERR_INTERNAL, host->last_error());
    return TDM_OK;
}

static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "v2-test", "2.0", "speaks ABI 2 only", init, NULL};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_range(n, &kApi, 2, 2); }
