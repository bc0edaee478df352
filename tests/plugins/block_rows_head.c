/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/block_rows_head.c: a block draft head (C99, tdm.block_draft) that breaks the
   contract on its output rows, so that a test can see the host refuse it by name: its step
   sets as its logits the context rows' target states, one row per context row, where the
   host asks for one per output row. Option "drafted_rows" = 1: it declares drafted rows
   (version 2: n_outputs = the round's draft count); else every block row (version 1).
   Option "n_embd": the target's width. Blocks of 4 rows, mask token 0, one KV layer of its
   own (never written). */
#include <stdlib.h>
#include <string.h>
#include <tandem/ext/block_draft.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

typedef struct {
    const tdm_host_api* host;
    tdm_attention_layer own;
} head;

static void say(char* err, size_t n, const char* msg) {
    if (n) {
        strncpy(err, msg, n - 1);
        err[n - 1] = 0;
    }
}

static tdm_status create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                         const tdm_options* options, tdm_draft_head_info* info, void** out, char* err,
                         size_t err_size) {
    int64_t n_embd = 0, drafted = 0;
    uint32_t version = 0;
    const tdm_ext_block_draft* bd = (const tdm_ext_block_draft*)host->get_extension(TDM_EXT_BLOCK_DRAFT, 1, &version);
    head* h;
    (void)src;
    (void)target;
    if (options) {
        host->option_get_int(options, "n_embd", &n_embd);
        host->option_get_int(options, "drafted_rows", &drafted);
    }
    if (!bd || n_embd <= 0) {
        say(err, err_size, !bd ? "block-rows-head needs extension tdm.block_draft" : "block-rows-head: option n_embd");
        return TDM_ERR_UNSUPPORTED;
    }
    h = (head*)calloc(1, sizeof(head));
    if (!h) return TDM_ERR_OUT_OF_MEMORY;
    h->host = host;
    h->own.struct_size = sizeof h->own;
    h->own.n_kv_head = 1;
    h->own.head_dim_k = h->own.head_dim_v = 16;
    info->hidden = TDM_HIDDEN_PRE_NORM;
    info->n_embd = (uint32_t)n_embd;
    info->n_own_layers = 1;
    info->own_layers = &h->own;
    if (bd->declare(info, 4, 0) != TDM_OK ||
        (drafted && (version < 2 || !TDM_HAS_MEMBER(bd, tdm_ext_block_draft, declare_drafted_rows) ||
                     bd->declare_drafted_rows(info) != TDM_OK))) {
        say(err, err_size, host->last_error());
        free(h);
        return TDM_ERR_UNSUPPORTED;
    }
    *out = h;
    return TDM_OK;
}

static tdm_status load(void* p, tdm_loader* loader, char* err, size_t err_size) {
    (void)p;
    (void)loader;
    (void)err;
    (void)err_size;
    return TDM_OK;
}

static tdm_status build_step(void* p, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    head* h = (head*)p;
    tdm_builder b = tdm_builder_init(h->host, g);
    (void)batch;
    /* the wrong rows: one per context row */
    tdm_set_output(&b, TDM_OUTPUT_LOGITS, tdm_input(&b, TDM_INPUT_TARGET_HIDDEN));
    return tdm_builder_finish(&b, err, err_size);
}

static void destroy(void* p) { free(p); }

static const char* const kTypes[] = {"block-rows-head", 0};
static const char* const kTargets[] = {"qwen3", 0};
static const tdm_draft_head_desc kHead = {
    .struct_size = sizeof(tdm_draft_head_desc), .name = "block-rows-head", .spec_types = kTypes,
    .target_archs = kTargets, .create = create, .load = load, .build_step = build_step, .destroy = destroy,
};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)err;
    (void)err_size;
    return host->register_draft_head(reg, &kHead);
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "block-rows-head", "1", "test block draft head", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_range(n, &kApi, 3, 3); }
