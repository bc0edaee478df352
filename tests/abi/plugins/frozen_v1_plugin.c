/* SPDX-License-Identifier: Apache-2.0 */
/* tests/abi/plugins/frozen_v1_plugin.c: a plugin built against the frozen ABI 1
 * headers (tests/abi/v1/tandem/, never sdk/include), as a third party built
 * one before ABI 2 existed. The current host must load and run it unchanged.
 *
 * Architecture "frozenv1" (GGUF general.architecture = "frozenv1"): one
 * attention layer whose single KV head is the token embedding itself:
 *   x = E[token];  store k = v = x;  a = attention(q = x) over the sequence;
 *   h = x + a;  logits = W_out rms_norm(h) * w_norm.
 * Drafter "frozen-echo": proposes the last token again, up to 3 times. */
#include <stdlib.h>
#include <string.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

typedef struct {
    const tdm_host_api* host;
    int64_t n_embd, n_vocab, n_ctx;
    tdm_attention_layer layer; /* one element: the host reads it with a v1 stride */
    const tdm_weight *tok_embd, *out_norm, *output;
} frozen_model;

static const tdm_host_api* g_host;

static tdm_status fail(char* err, size_t n, tdm_status st, const char* msg) {
    if (err && n) {
        strncpy(err, msg, n - 1);
        err[n - 1] = '\0';
    }
    return st;
}

static tdm_status create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* opt,
                         tdm_model_info* info, void** out, char* err, size_t err_size) {
    (void)opt;
    if (info->struct_size < sizeof(tdm_model_info)) return fail(err, err_size, TDM_ERR_ABI_MISMATCH, "model info too small");
    frozen_model* m = (frozen_model*)calloc(1, sizeof *m);
    if (!m) return fail(err, err_size, TDM_ERR_OUT_OF_MEMORY, "out of memory");
    m->host = host;
    if (host->meta_get_int(src, "frozenv1.embedding_length", &m->n_embd) != TDM_OK ||
        host->meta_get_int(src, "frozenv1.vocab_size", &m->n_vocab) != TDM_OK ||
        host->meta_get_int(src, "frozenv1.context_length", &m->n_ctx) != TDM_OK) {
        free(m);
        return fail(err, err_size, TDM_ERR_BAD_MODEL, host->last_error());
    }
    if (m->n_embd < 8 || m->n_embd > 4096 || m->n_embd % 8 || m->n_vocab < 2 || m->n_vocab > 1000000 ||
        m->n_ctx < 1) {
        free(m);
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "frozenv1: hyper-parameters out of range");
    }
    m->layer.struct_size = sizeof m->layer;
    m->layer.n_kv_head = 1;
    m->layer.head_dim_k = (uint32_t)m->n_embd;
    m->layer.head_dim_v = (uint32_t)m->n_embd;
    m->layer.window = 0;
    info->n_vocab = (uint32_t)m->n_vocab;
    info->n_embd = (uint32_t)m->n_embd;
    info->n_ctx_train = (uint32_t)m->n_ctx;
    info->n_attention_layers = 1;
    info->attention_layers = &m->layer;
    info->n_recurrent_states = 0;
    info->recurrent_states = NULL;
    info->description = "frozen ABI 1 test architecture";
    *out = m;
    return TDM_OK;
}

static tdm_status load_one(frozen_model* m, tdm_loader* loader, const char* name, uint32_t n_dims, int64_t ne0,
                           int64_t ne1, uint32_t flags, const tdm_weight** out, char* err, size_t err_size) {
    tdm_weight_request r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r; /* the v1 header's size: 128 bytes */
    r.name = name;
    r.n_dims = n_dims;
    r.ne[0] = ne0;
    r.ne[1] = ne1;
    r.flags = flags;
    if (m->host->load_weight(loader, &r, out) != TDM_OK) return fail(err, err_size, TDM_ERR_BAD_MODEL, m->host->last_error());
    return TDM_OK;
}

static tdm_status load(void* model, tdm_loader* loader, char* err, size_t err_size) {
    frozen_model* m = (frozen_model*)model;
    tdm_status st = load_one(m, loader, "token_embd.weight", 2, m->n_embd, m->n_vocab, 0, &m->tok_embd, err, err_size);
    if (st == TDM_OK)
        st = load_one(m, loader, "output_norm.weight", 1, m->n_embd, 0, TDM_WEIGHT_F32, &m->out_norm, err, err_size);
    if (st == TDM_OK) st = load_one(m, loader, "output.weight", 2, m->n_embd, m->n_vocab, 0, &m->output, err, err_size);
    return st;
}

static tdm_status build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    frozen_model* m = (frozen_model*)model;
    tdm_builder b = tdm_builder_init(m->host, g);
    const int64_t n = batch->n_tokens;
    tdm_tensor x = tdm_get_rows(&b, m->tok_embd, tdm_input(&b, TDM_INPUT_TOKENS));
    tdm_tensor heads = tdm_reshape(&b, x, m->n_embd, 1, n, 1);
    tdm_tensor kv = tdm_kv_store(&b, tdm_kv(&b, 0), heads, heads, "kv");
    tdm_tensor a = tdm_attention(&b, heads, kv, 0.0f, 0, 0.0f, "attn");
    tdm_tensor h = tdm_add(&b, x, a, "residual");
    h = tdm_select_rows(&b, h, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    h = tdm_rms_norm(&b, h, m->out_norm, 0, 1e-6f, "out_norm");
    tdm_set_output(&b, TDM_OUTPUT_LOGITS, tdm_matmul(&b, m->output, h, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

static void destroy(void* model) { free(model); }

static const char* const kGguf[] = {"frozenv1", NULL};
static const char* const kHf[] = {"frozenv1", NULL};
static const tdm_arch_desc kArch = {sizeof(tdm_arch_desc), "frozenv1", kGguf, kHf, create, load, build_graph, destroy};

/* ---- the drafter ---- */
typedef struct {
    uint64_t proposals;
} echo;

static tdm_status echo_create(const tdm_host_api* h, const tdm_options* o, void** d, char* e, size_t n) {
    (void)h; (void)o;
    echo* x = (echo*)calloc(1, sizeof *x);
    if (!x) return fail(e, n, TDM_ERR_OUT_OF_MEMORY, "out of memory");
    *d = x;
    return TDM_OK;
}
static void echo_destroy(void* d) { free(d); }
static void echo_begin(void* d, const int32_t* p, uint64_t n) { (void)d; (void)p; (void)n; }
static uint64_t echo_propose(void* d, const int32_t* h, uint64_t n, int32_t* out, uint64_t max) {
    echo* x = (echo*)d;
    uint64_t k = max < 3 ? max : 3;
    if (n == 0) return 0;
    for (uint64_t i = 0; i < k; ++i) out[i] = h[n - 1];
    x->proposals++;
    return k;
}
static void echo_accept(void* d, const int32_t* h, uint64_t n, uint64_t a, uint64_t b) {
    (void)d; (void)h; (void)n; (void)a; (void)b;
}
static const char* const kTypes[] = {"frozen-echo", NULL};
static const tdm_drafter_desc kDrafter = {sizeof(tdm_drafter_desc), "frozen-echo", kTypes, echo_create, echo_destroy,
                                          echo_begin, echo_propose, echo_accept, NULL};

static tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    /* A v1 plugin's check: the host table holds at least what this header knows. */
    if (!host || host->struct_size < sizeof(tdm_host_api)) return fail(err, err_size, TDM_ERR_ABI_MISMATCH, "host table too small");
    g_host = host;
    if (host->register_arch(reg, &kArch) != TDM_OK) return fail(err, err_size, TDM_ERR_INTERNAL, host->last_error());
    if (host->register_drafter(reg, &kDrafter) != TDM_OK) return fail(err, err_size, TDM_ERR_INTERNAL, host->last_error());
    return TDM_OK;
}

static const tdm_plugin_api kApi = {sizeof(tdm_plugin_api), "frozen-v1", "1.0", "built against the frozen ABI 1 headers",
                                    init, NULL};

TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) { return tdm_negotiate_v1(n, &kApi); }

/* The frozen headers are the ABI 1 release: these sizes are the host's v1
 * minimums (tandem.h TDM_V1_SIZEOF_*). */
_Static_assert(sizeof(tdm_op_desc) == 152, "v1 tdm_op_desc");
_Static_assert(sizeof(tdm_arch_desc) == 64, "v1 tdm_arch_desc");
_Static_assert(sizeof(tdm_drafter_desc) == 72, "v1 tdm_drafter_desc");
_Static_assert(sizeof(tdm_plugin_api) == 48, "v1 tdm_plugin_api");
_Static_assert(sizeof(tdm_host_api) == 256, "v1 tdm_host_api");
_Static_assert(sizeof(tdm_model_info) == 56, "v1 tdm_model_info");
_Static_assert(sizeof(tdm_attention_layer) == 20, "v1 tdm_attention_layer");
_Static_assert(sizeof(tdm_draft_head_desc) == 64, "v1 tdm_draft_head_desc");
_Static_assert(sizeof(tdm_draft_head_info) == 48, "v1 tdm_draft_head_info");
