/* SPDX-License-Identifier: MIT */
/* lookup_drafter.c: an out-of-tree tandem plugin, in plain C99, built against the
 * installed SDK (libtandem-dev). It registers one draftless drafter,
 * "lookup-example": find the most recent earlier place where the last two tokens of
 * the history occurred and propose the tokens that followed them there (prompt
 * lookup decoding with a fixed 2-token key). Repetitive text (code, quotes, lists)
 * drafts well; anything else proposes nothing and tandem decodes normally.
 *
 * It is a teaching example, not a tuned drafter: the lookup scans the whole history
 * on every call (O(n) per round). The in-tree ngram plugin is the real thing.
 *
 * Use it:   tandem run -m MODEL.gguf --spec-type lookup-example --plugin-path DIR ...
 * Options:  draft_max (from [speculative] draft_max or --draft-max) caps a proposal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tandem/tandem.h>

#define KEY_LEN 2 /* tokens matched before proposing */

/* One object per sequence (tandem.h section 7). */
typedef struct lookup_drafter {
    const tdm_host_api* host;
    uint64_t draft_max; /* most tokens proposed per round */
    uint64_t proposed;  /* totals, logged when the drafter is destroyed */
    uint64_t accepted;
} lookup_drafter;

static tdm_status lookup_create(const tdm_host_api* host, const tdm_options* options, void** out, char* err,
                                size_t err_size) {
    (void)err;
    (void)err_size;
    lookup_drafter* d = (lookup_drafter*)calloc(1, sizeof *d);
    if (!d) return TDM_ERR_OUT_OF_MEMORY;
    d->host = host;
    d->draft_max = 16;
    int64_t v = 0;
    /* An absent key is not an error: keep the default. */
    if (options && host->option_get_int(options, "draft_max", &v) == TDM_OK && v > 0) d->draft_max = (uint64_t)v;
    *out = d;
    return TDM_OK;
}

static void lookup_destroy(void* drafter) {
    lookup_drafter* d = (lookup_drafter*)drafter;
    char msg[128];
    snprintf(msg, sizeof msg, "proposed %llu tokens, %llu accepted", (unsigned long long)d->proposed,
             (unsigned long long)d->accepted);
    d->host->log(TDM_LOG_DEBUG, "lookup-example", msg); /* shown with --log-level debug */
    free(d);
}

static void lookup_begin(void* drafter, const int32_t* prompt, uint64_t n_prompt) {
    (void)drafter; /* nothing to index: propose() scans the history it is given */
    (void)prompt;
    (void)n_prompt;
}

static uint64_t lookup_propose(void* drafter, const int32_t* history, uint64_t n_history, int32_t* out,
                               uint64_t max) {
    lookup_drafter* d = (lookup_drafter*)drafter;
    if (max > d->draft_max) max = d->draft_max;
    if (n_history <= KEY_LEN || max == 0) return 0;
    const int32_t* key = history + n_history - KEY_LEN;
    /* Latest earlier occurrence of the key that has at least one token after it
     * (start < n_history - KEY_LEN excludes the key itself). */
    for (uint64_t start = n_history - KEY_LEN; start-- > 0;) {
        int match = 1;
        for (uint64_t j = 0; j < KEY_LEN && match; ++j) match = history[start + j] == key[j];
        if (!match) continue;
        uint64_t n = 0;
        for (uint64_t i = start + KEY_LEN; i < n_history && n < max; ++i) out[n++] = history[i];
        d->proposed += n;
        return n;
    }
    return 0;
}

static void lookup_accept(void* drafter, const int32_t* history, uint64_t n_history, uint64_t n_drafted,
                          uint64_t n_accepted) {
    (void)history;
    (void)n_history;
    (void)n_drafted;
    ((lookup_drafter*)drafter)->accepted += n_accepted;
}

/* Descriptors live in static storage: the host keeps pointers to them until the
 * plugin is unloaded (tandem.h section 4, registration). */
static const char* const kSpecTypes[] = {"lookup-example", NULL};

static const tdm_drafter_desc kDrafter = {
    sizeof(tdm_drafter_desc),
    "lookup-example",
    kSpecTypes,
    lookup_create,
    lookup_destroy,
    lookup_begin,
    lookup_propose,
    lookup_accept,
    NULL, /* save: nothing to persist */
};

static tdm_status plugin_init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)err;
    (void)err_size;
    return host->register_drafter(reg, &kDrafter);
}

static const tdm_plugin_api kPluginApi = {
    sizeof(tdm_plugin_api),
    "lookup-example",
    "1.0",
    "SDK example: prompt-lookup drafter with a 2-token key",
    plugin_init,
    NULL, /* shutdown */
};

/* The plugin ABI versions this plugin speaks. It uses only what ABI 1 has, and
 * every later version keeps that, so it speaks 1 up to the version of the headers
 * it is built with: a tandem of ABI 1 loads it as well as a newer one. */
static const uint32_t kPluginAbiMin = 1, kPluginAbiMax = TDM_ABI_VERSION;

/* The one exported symbol. The negotiation is spelled out here
 * (tdm_negotiate_range() in tandem.h does the same) to show how a plugin declares
 * the ABI versions it speaks. It must not call the host here. */
TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    if (!n || n->struct_size < TDM_V1_SIZEOF_NEGOTIATE) return TDM_ERR_INVALID_ARGUMENT;
    n->plugin_abi_min = kPluginAbiMin; /* reported in the host's refusal message */
    n->plugin_abi_max = kPluginAbiMax;
    /* Highest version both sides speak. */
    const uint32_t v = n->host_abi_max < kPluginAbiMax ? n->host_abi_max : kPluginAbiMax;
    if (v < n->host_abi_min || v < kPluginAbiMin) return TDM_ERR_ABI_MISMATCH;
    n->plugin_abi = v;
    n->plugin_api = &kPluginApi;
    return TDM_OK;
}
