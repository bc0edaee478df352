/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/host_rows_head.c: a draft head (C99) that reaches a table of its TARGET
   which may live in host memory (tdm.host_rows): Gemma 4's per-layer embeddings, taken
   through tdm.target_weights. A draft step's tokens come from the device, so the host must
   refuse the head when its graph is built, with a message, whichever way the step reads
   the table: through token_rows (option read = 0, the default) or as a weight (read = 1). */
#include <stdlib.h>
#include <string.h>
#include <tandem/ext/host_rows.h>
#include <tandem/ext/target_weights.h>
#include <tandem/tandem.h>

typedef struct {
    const tdm_host_api* host;
    const tdm_ext_host_rows* rows;
    const tdm_weight* table;
    int64_t read;
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
    (void)src;
    (void)target;
    head* h = (head*)calloc(1, sizeof(head));
    if (!h) return TDM_ERR_OUT_OF_MEMORY;
    h->host = host;
    h->rows = (const tdm_ext_host_rows*)host->get_extension(TDM_EXT_HOST_ROWS, 1, NULL);
    if (options) host->option_get_int(options, "read", &h->read);
    if (!h->rows) {
        free(h);
        say(err, err_size, "host-rows-head needs extension tdm.host_rows");
        return TDM_ERR_UNSUPPORTED;
    }
    info->hidden = TDM_HIDDEN_POST_NORM;
    info->n_embd = 0;
    info->flags = TDM_DRAFT_HEAD_CONSTANT_POSITION | TDM_DRAFT_HEAD_STATELESS;
    *out = h;
    return TDM_OK;
}

static tdm_status load(void* p, tdm_loader* loader, char* err, size_t err_size) {
    head* h = (head*)p;
    const tdm_ext_target_weights* tw =
        (const tdm_ext_target_weights*)h->host->get_extension(TDM_EXT_TARGET_WEIGHTS, 1, NULL);
    if (!tw || tw->get(loader, "per_layer_token_embd.weight", &h->table) != TDM_OK) {
        say(err, err_size, h->host->last_error());
        return TDM_ERR_NOT_FOUND;
    }
    return TDM_OK;
}

static tdm_status build_step(void* p, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    head* h = (head*)p;
    tdm_tensor t;
    (void)batch;
    tdm_status st = h->read == 1 ? h->host->graph_weight(g, h->table, &t)
                                 : h->rows->token_rows(g, h->table, "target_rows", &t);
    if (st != TDM_OK) say(err, err_size, h->host->last_error());
    return st;
}

static void destroy(void* p) { free(p); }

static const char* const kTypes[] = {"host-rows-head", 0};
static const char* const kTargets[] = {"gemma4", 0};
static const tdm_draft_head_desc kHead = {
    .struct_size = sizeof(tdm_draft_head_desc), .name = "host-rows-head", .spec_types = kTypes,
    .target_archs = kTargets, .create = create, .load = load, .build_step = build_step, .destroy = destroy,
};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)err;
    (void)err_size;
    return host->register_draft_head(reg, &kHead);
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "host-rows-head", "1", "test draft head", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_range(n, &kApi, 3, 3); }
