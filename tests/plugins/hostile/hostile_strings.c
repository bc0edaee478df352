/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/hostile/hostile_strings.c: hands the host strings without a NUL that
   end exactly where an inaccessible page begins, so a host that reads one past any
   bound faults instead of passing by chance: its version and description, a log line,
   a drafter name, a spec type, an extension name and an option key. init succeeds
   only if the host refused each bad name (and registers "hostile-ok" to show it ran);
   otherwise it fails naming what was accepted. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <tandem/tandem.h>
#include <unistd.h>

/* n bytes of `fill` followed by a PROT_NONE page (no NUL anywhere). */
static const char* guarded(size_t n, char fill) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t pages = (n + page - 1) / page + 1;
    char* base = (char*)mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    char* guard = base + (pages - 1) * page;
    mprotect(guard, page, PROT_NONE);
    memset(guard - n, fill, n);
    return guard - n;
}

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

static const char* const kOkTypes[] = {"hostile-ok", 0};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    host->log(TDM_LOG_INFO, guarded(300, 'p'), guarded(20000, 'm'));

    tdm_drafter_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = guarded(300, 'n');
    d.spec_types = kOkTypes;
    d.create = create;
    d.destroy = destroy;
    d.begin = begin;
    d.propose = propose;
    d.accept = accept;
    if (host->register_drafter(reg, &d) == TDM_OK) {
        snprintf(err, err_size, "a drafter name of 300 bytes without NUL was accepted");
        return TDM_ERR_INTERNAL;
    }
    const char* bad_types[] = {guarded(300, 't'), 0};
    d.name = "hostile-list";
    d.spec_types = bad_types;
    if (host->register_drafter(reg, &d) == TDM_OK) {
        snprintf(err, err_size, "a spec type of 300 bytes without NUL was accepted");
        return TDM_ERR_INTERNAL;
    }
    if (host->get_extension(guarded(300, 'e'), 1, NULL)) {
        snprintf(err, err_size, "an extension name of 300 bytes without NUL was found");
        return TDM_ERR_INTERNAL;
    }
    int64_t v = 0;
    if (host->option_get_int(NULL, guarded(300, 'k'), &v) != TDM_ERR_INVALID_ARGUMENT) {
        snprintf(err, err_size, "an option key of 300 bytes without NUL was not refused as invalid");
        return TDM_ERR_INTERNAL;
    }
    d.name = "hostile-ok";
    d.spec_types = kOkTypes;
    return host->register_drafter(reg, &d);
}

static tdm_plugin_api g_api = {sizeof(tdm_plugin_api), "hostile-strings", 0, 0, init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    g_api.version = guarded(300, 'v');
    g_api.description = guarded(20000, 'd');
    return tdm_negotiate_range(n, &g_api, 2, 2);  /* ABI 2: the host table has get_extension */
}
