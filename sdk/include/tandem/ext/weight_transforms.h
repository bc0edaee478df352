/* SPDX-License-Identifier: MIT */
/* tandem/ext/weight_transforms.h: extension "tdm.weight_transforms", version 1 (ABI 3).
 *
 * Transforms of a vector weight that the host's loader applies once, at load,
 * where a graph would otherwise recompute them in every build: the ops take no
 * constants and a graph's tensors do not outlive its build, so a table derived
 * from a stored vector would be rebuilt from activations in every graph.
 * An EAGLE-3 head is the user: its d2t maps each draft id j to a target id,
 * stored as the target id itself (llama.cpp's GGUF) or as the offset
 * target - j (HF checkpoints: EAGLE, SpecForge, vLLM). Loaded with both
 * transforms below, either becomes the table of target ids that one get_rows
 * reads by draft id:
 *
 *     const tdm_ext_weight_transforms* wt =
 *         host->get_extension(TDM_EXT_WEIGHT_TRANSFORMS, 1, NULL);
 *     // the request as for load_weight: 1-D [Vd], TDM_WEIGHT_F32 (implied)
 *     if (wt) st = wt->load(loader, &req, TDM_WEIGHT_TRANSFORM_ADD_INDEX |
 *                                         TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS, &d2t);
 *     else    st = host->load_weight(loader, &req, &d2t);  // the vector as stored
 *     // in a step: column 0 of get_rows(d2t, ids) is each draft id's target id
 *
 * A host without the extension (get_extension answers NULL) would not apply
 * the transforms: load_weight ignores what it does not know, so a plugin asks
 * for the extension first and keeps a path that does the work in its graphs
 * (TANDEM_HIDE_EXTENSIONS=tdm.weight_transforms runs that path on a current
 * host). A transform bit this host does not know is refused with
 * TDM_ERR_UNSUPPORTED naming it, so a later version's bits never go unapplied. */
#ifndef TANDEM_EXT_WEIGHT_TRANSFORMS_H
#define TANDEM_EXT_WEIGHT_TRANSFORMS_H

#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_WEIGHT_TRANSFORMS "tdm.weight_transforms"
#define TDM_EXT_WEIGHT_TRANSFORMS_VERSION 1u

/* Applied in this order, after the vector is read as f32 (v[i], i = 0 .. n-1). */
typedef enum tdm_weight_transform {
    /* v[i] := v[i] + i, added in f32 as a graph's TDM_OP_ADD would. An integer
     * tensor must stay exact: every |v[i] + i| <= 2^24, else the load fails
     * naming the tensor and the element. (HF d2t offsets -> target ids.) */
    TDM_WEIGHT_TRANSFORM_ADD_INDEX = 1u << 0,
    /* The vector [n] becomes the table F32 [W, n] whose row i is
     * (v[i], 0, ..., 0): column 0 of tdm_get_rows(table, ids) is v[ids], a
     * lookup by index with no copy of the vector in the graph. W is the
     * narrowest row get_rows reads on this host (its get_rows_width_multiple,
     * 4; weight_shape says it). */
    TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS = 1u << 1,
    TDM_WEIGHT_TRANSFORM_MAX_ENUM = 0x7FFFFFFF
} tdm_weight_transform;

typedef struct tdm_ext_weight_transforms {
    uint32_t struct_size;
    /* Loads `req` as load_weight does, then applies `transforms`
     * (tdm_weight_transform bits; 0: the vector as f32). `req` names a vector:
     * n_dims 1, flags at most TDM_WEIGHT_OPTIONAL and TDM_WEIGHT_F32 (f32 is
     * implied), no permutation, parts or slab; any other request is refused
     * with TDM_ERR_INVALID_ARGUMENT. Unknown bits: TDM_ERR_UNSUPPORTED. Other
     * errors (absent tensor, shape, type) as load_weight's. [callback: a load] */
    tdm_status (*load)(tdm_loader* loader, const tdm_weight_request* req, uint32_t transforms,
                       const tdm_weight** out);
} tdm_ext_weight_transforms;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_WEIGHT_TRANSFORMS_H */
