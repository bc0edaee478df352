/* SPDX-License-Identifier: Apache-2.0 */
/* tandem/ext/host_rows.h: extension "tdm.host_rows", version 1 (ABI 3).
 *
 * A table that a model reads only by the rows of the batch's tokens, such as
 * Gemma 4's per-layer embeddings ([layers x 256, 262144]: 2.3 GiB in Q8_0,
 * 4.7 GB in BF16), need not sit in device memory. Load it through this
 * extension and the host decides where it lives: in device memory like any
 * weight, or in host memory (the file's mapping, so only the rows read are
 * resident), from which each forward reads the rows of its tokens, converts
 * them to f32 and uploads only those. The user chooses with `--host-rows
 * auto|on|off` ([model] host_rows); auto keeps a table in host memory on a CPU
 * device (its device memory is host memory: a copy would only add to it) and
 * on a GPU when the table is at least [model] host_rows_share of the device's
 * memory. Only a model's own graphs read host tables: a draft head's steps
 * take their tokens from the device, so a draft head that reaches a host table
 * (through tdm.target_weights) is refused when its graph is built.
 *
 *     const tdm_ext_host_rows* hr = host->get_extension(TDM_EXT_HOST_ROWS, 1, NULL);
 *     // in load: the request as for load_weight (2-D, no slab, permutation or
 *     // conversion flags: the rows are read as they are stored)
 *     if (hr) st = hr->load(loader, &req, &m->table);
 *     else    st = host->load_weight(loader, &req, &m->table);
 *     // in build_graph: F32 [ne0, n_tokens], the rows of the batch's tokens
 *     // (tdm_token_rows below does this with a graph builder)
 *     if (hr) st = hr->token_rows(g, m->table, "ple_rows", &rows);
 *     else    rows = tdm_get_rows(b, m->table, tokens);
 *
 * A table in host memory is usable only through token_rows: graph_weight and
 * the ops that take weights refuse it with TDM_ERR_INVALID_ARGUMENT. */
#ifndef TANDEM_EXT_HOST_ROWS_H
#define TANDEM_EXT_HOST_ROWS_H

#include "../graph.h"
#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_HOST_ROWS "tdm.host_rows"
#define TDM_EXT_HOST_ROWS_VERSION 1u

typedef struct tdm_ext_host_rows {
    uint32_t struct_size;
    /* Loads a 2-D table read by token rows; where it lives is the host's choice
     * (above). Errors as load_weight's. [callback: a model's load] */
    tdm_status (*load)(tdm_loader* loader, const tdm_weight_request* req, const tdm_weight** out);
    /* F32 [ne0 of `table`, n_tokens]: row t of `table` for each token t of the
     * batch (TDM_INPUT_TOKENS), whichever memory the table is in. `name` may be
     * NULL. [callback: build_graph] */
    tdm_status (*token_rows)(tdm_graph* g, const tdm_weight* table, const char* name, tdm_tensor* out);
    /* Whether `table` lives in host memory (1) or device memory (0). */
    int (*in_host_memory)(const tdm_weight* table);
} tdm_ext_host_rows;

/* Builder form (tandem/graph.h): the rows through `ext`, or without the
 * extension (ext NULL: an older host) a get_rows of the batch's tokens. */
static inline tdm_tensor tdm_token_rows(tdm_builder* b, const tdm_ext_host_rows* ext, const tdm_weight* table,
                                        const char* name) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    if (!ext) return tdm_get_rows(b, table, tdm_input(b, TDM_INPUT_TOKENS));
    tdm_status st = ext->token_rows(b->g, table, name, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, name ? name : "token_rows");
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_HOST_ROWS_H */
