/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/features_head.c: a draft head (C99) that reads its target's states through
   tdm.target_features and drafts them back, so that a test can see what it received. It
   requests the taps of option "taps" ("i0,i2,p0": the inputs of layers 0 and 2, the
   post-norm state), of width n_embd each (option "n_embd", the target's). Its step j
   drafts the argmax of slice j (mod the taps) of its rows: step 0 reads them from
   features(), which must be TDM_INPUT_TARGET_HIDDEN itself, and passes them on as its
   TDM_OUTPUT_HIDDEN_DRAFT; each chained step must get TDM_ERR_NOT_FOUND from features()
   and reads them back from TDM_INPUT_TARGET_HIDDEN. So the k drafts are the argmax of
   each tap at the newest target row. Stateless, one row per round.
   Refusal tests: option "hidden" = 1 also asks for a hidden state (TDM_HIDDEN_PRE_NORM). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

typedef struct {
    const tdm_host_api* host;
    const tdm_ext_target_features* tf;
    uint32_t n_taps, n_embd;
    uint32_t step; /* of the round whose graph is being built */
} head;

static void say(char* err, size_t n, const char* msg) {
    if (n) {
        strncpy(err, msg, n - 1);
        err[n - 1] = 0;
    }
}

/* "i0,i2,p0" -> taps; 0 when malformed. */
static uint32_t parse_taps(const char* s, tdm_feature_tap* out, uint32_t cap) {
    uint32_t n = 0;
    while (*s && n < cap) {
        char* end = NULL;
        if (*s != 'i' && *s != 'p') return 0;
        out[n].kind = *s == 'i' ? TDM_TAP_LAYER_INPUT : TDM_TAP_POST_NORM;
        out[n].layer = (uint32_t)strtoul(s + 1, &end, 10);
        if (end == s + 1) return 0;
        ++n;
        s = *end == ',' ? end + 1 : end;
    }
    return *s ? 0 : n;
}

static tdm_status create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                         const tdm_options* options, tdm_draft_head_info* info, void** out, char* err,
                         size_t err_size) {
    tdm_feature_tap taps[TDM_MAX_FEATURE_TAPS + 4];
    const char* list = "i0";
    int64_t n_embd = 0, hidden = 0;
    tdm_status st;
    head* h;
    (void)src;
    (void)target;
    if (options) {
        host->option_get_string(options, "taps", &list);
        host->option_get_int(options, "n_embd", &n_embd);
        host->option_get_int(options, "hidden", &hidden);
    }
    h = (head*)calloc(1, sizeof(head));
    if (!h) return TDM_ERR_OUT_OF_MEMORY;
    h->host = host;
    h->tf = (const tdm_ext_target_features*)host->get_extension(TDM_EXT_TARGET_FEATURES, 1, NULL);
    h->n_taps = parse_taps(list, taps, TDM_MAX_FEATURE_TAPS + 4);
    h->n_embd = (uint32_t)n_embd;
    if (!h->tf || h->n_taps == 0 || n_embd <= 0) {
        say(err, err_size, !h->tf ? "features-head needs extension tdm.target_features"
                                  : "features-head: options taps (\"i0,p0\") and n_embd are needed");
        free(h);
        return TDM_ERR_UNSUPPORTED;
    }
    info->hidden = hidden ? TDM_HIDDEN_PRE_NORM : TDM_HIDDEN_NONE;
    info->n_embd = h->n_taps * h->n_embd;
    info->flags = TDM_DRAFT_HEAD_CONSTANT_POSITION | TDM_DRAFT_HEAD_STATELESS;
    st = h->tf->request(info, taps, h->n_taps);
    if (st != TDM_OK) {
        say(err, err_size, host->last_error());
        free(h);
        return st;
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
    tdm_tensor f, x, rows;
    tdm_tensor_shape shape;
    char msg[256];
    const tdm_status st = h->tf->features(g, &f);
    if (st == TDM_OK) {
        h->step = 0;
        x = tdm_input(&b, TDM_INPUT_TARGET_HIDDEN);
        if (tdm_ok(&b) && x.id != f.id) {
            say(err, err_size, "features-head: features() is not TDM_INPUT_TARGET_HIDDEN in the first step");
            return TDM_ERR_INVALID_ARGUMENT;
        }
    } else if (st == TDM_ERR_NOT_FOUND) {
        ++h->step;
        x = tdm_input(&b, TDM_INPUT_TARGET_HIDDEN);
    } else {
        say(err, err_size, h->host->last_error());
        return st;
    }
    if (!tdm_ok(&b)) return tdm_builder_finish(&b, err, err_size);
    shape.struct_size = sizeof shape;
    if (h->host->graph_tensor_shape(g, x, &shape) != TDM_OK || shape.ne[0] != (int64_t)(h->n_taps * h->n_embd) ||
        shape.ne[1] != (int64_t)batch->n_tokens) {
        snprintf(msg, sizeof msg, "features-head: step %u reads rows [%lld, %lld], expected [%u, %u]", h->step,
                 (long long)shape.ne[0], (long long)shape.ne[1], h->n_taps * h->n_embd, batch->n_tokens);
        say(err, err_size, msg);
        return TDM_ERR_SHAPE;
    }
    rows = batch->n_outputs == batch->n_tokens ? x : tdm_select_rows(&b, x, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "rows");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_DRAFT, rows);
    tdm_set_output(&b, TDM_OUTPUT_LOGITS,
                   tdm_copy(&b, tdm_view_cols(&b, rows, (int32_t)((h->step % h->n_taps) * h->n_embd), (int32_t)h->n_embd, "tap"),
                            "tap_logits"));
    return tdm_builder_finish(&b, err, err_size);
}

static void destroy(void* p) { free(p); }

static const char* const kTypes[] = {"features-head", 0};
static const char* const kTargets[] = {"qwen3", "llama", "gemma4", "glm4", 0};
static const tdm_draft_head_desc kHead = {
    .struct_size = sizeof(tdm_draft_head_desc), .name = "features-head", .spec_types = kTypes,
    .target_archs = kTargets, .create = create, .load = load, .build_step = build_step, .destroy = destroy,
};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    (void)err;
    (void)err_size;
    return host->register_draft_head(reg, &kHead);
}
static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "features-head", "1", "test draft head", init, 0};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_range(n, &kApi, 3, 3); }
