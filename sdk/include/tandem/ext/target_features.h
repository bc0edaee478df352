/* SPDX-License-Identifier: MIT */
/* tandem/ext/target_features.h: extension "tdm.target_features", version 1 (ABI 3).
 *
 * A draft head may need more of its target than the one hidden state
 * tdm_draft_head_info.hidden names: EAGLE-3 reads the residual stream entering
 * three target layers (say {2, L/2, L-3}), DFlash reads several more. Through
 * this extension a target says which points of its forward pass it can tap, a
 * head asks for some of them, and the host hands the head their concatenation,
 * kept on the device. The host computes and keeps only the taps an attached
 * head asked for; without such a head a tap costs nothing.
 *
 * Target side (an architecture's create and build_graph):
 *
 *     const tdm_ext_target_features* tf =
 *         host->get_extension(TDM_EXT_TARGET_FEATURES, 1, NULL);
 *     // create: this forward taps the input of each of its n_layer layers,
 *     // the final pre-norm state and the post-norm state (LM-head input)
 *     if (tf) tf->provide(info, n_layer);
 *     // build_graph, at the top of layer il (x: F32 [n_embd, n_tokens]):
 *     if (tf) tf->tap(g, TDM_TAP_LAYER_INPUT, il, x);
 *     // after the last layer / after the final norm:
 *     if (tf) tf->tap(g, TDM_TAP_LAYER_INPUT, n_layer, x);
 *     if (tf) tf->tap(g, TDM_TAP_POST_NORM, 0, xn);
 *
 *   A tap nobody asked for returns TDM_OK and records nothing. tap() may be
 *   called only for points the target provided (TDM_ERR_INVALID_ARGUMENT
 *   otherwise) and at most once per point per graph.
 *
 * Head side (a draft head's create and build_step):
 *
 *     // create, after filling *info (info->hidden must be TDM_HIDDEN_NONE):
 *     const tdm_feature_tap taps[3] = {{TDM_TAP_LAYER_INPUT, 2},
 *                                      {TDM_TAP_LAYER_INPUT, 16},
 *                                      {TDM_TAP_LAYER_INPUT, 29}};
 *     if (!tf || tf->request(info, taps, 3) != TDM_OK) ... fail create
 *     // build_step:
 *     tdm_tensor f;
 *     st = tf->features(g, &f);
 *     // TDM_OK: this step's rows are the target's (the round's first step,
 *     //   its catch-up rows included): f is F32 [sum of the taps' widths,
 *     //   n_tokens], the taps concatenated in the order requested, row i being
 *     //   the target's state at the token that produced row i's token (the
 *     //   pairing TDM_INPUT_TARGET_HIDDEN has).
 *     // TDM_ERR_NOT_FOUND: a chained step; TDM_INPUT_TARGET_HIDDEN is the
 *     //   head's own TDM_OUTPUT_HIDDEN_DRAFT of the previous step.
 *
 *   `info` identifies the head being created (the pointer the host passed to
 *   its create); request() may be called once per create. The host checks the
 *   request when it attaches the head to its target and refuses a head whose
 *   target does not provide a requested point (or does not offer the
 *   extension), with a message naming the head, the target and the tap. */
#ifndef TANDEM_EXT_TARGET_FEATURES_H
#define TANDEM_EXT_TARGET_FEATURES_H

#include "../graph.h"
#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_TARGET_FEATURES "tdm.target_features"
#define TDM_EXT_TARGET_FEATURES_VERSION 1u

typedef enum tdm_tap_kind {
    /* The residual stream entering layer `layer` (0 .. n_layer - 1); `layer` =
     * n_layer is the output of the last layer, the final norm's input
     * (TDM_HIDDEN_PRE_NORM). Width: the target's n_embd. */
    TDM_TAP_LAYER_INPUT = 0,
    /* The final norm's output, the LM head's input (TDM_HIDDEN_POST_NORM);
     * `layer` must be 0. Width: n_embd. */
    TDM_TAP_POST_NORM = 1,
    TDM_TAP_KIND_MAX_ENUM = 0x7FFFFFFF
} tdm_tap_kind;

typedef struct tdm_feature_tap {
    tdm_tap_kind kind;
    uint32_t layer;
} tdm_feature_tap;

/* The most taps one head may request. */
#define TDM_MAX_FEATURE_TAPS 16u

typedef struct tdm_ext_target_features {
    uint32_t struct_size;
    /* Target: its build_graph taps the input of layers 0 .. n_layers - 1, the
     * output of the last (layer n_layers) and the post-norm state.
     * [callback: an architecture's create] */
    tdm_status (*provide)(tdm_model_info* info, uint32_t n_layers);
    /* Target: `x` (F32 [n_embd, n_tokens]) is the state at this point.
     * [callback: build_graph] */
    tdm_status (*tap)(tdm_graph* g, tdm_tap_kind kind, uint32_t layer, tdm_tensor x);
    /* Head: the points whose concatenation its first step reads (1 ..
     * TDM_MAX_FEATURE_TAPS, no point twice). [callback: a draft head's create] */
    tdm_status (*request)(tdm_draft_head_info* info, const tdm_feature_tap* taps, uint32_t n_taps);
    /* Head: the concatenated taps of this step's rows, or TDM_ERR_NOT_FOUND in
     * a chained step (above). [callback: build_step] */
    tdm_status (*features)(tdm_graph* g, tdm_tensor* out);
} tdm_ext_target_features;

/* A target's build_graph over a tdm_builder (tandem/graph.h): taps `x` at this
 * point when `tf` is not NULL (the host offers the extension), a failure going
 * to the builder like any op's:
 *
 *     tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, il, x);  */
static inline void tdm_tap(tdm_builder* b, const tdm_ext_target_features* tf, tdm_tap_kind kind, uint32_t layer,
                           tdm_tensor x) {
    tdm_status st;
    if (!tf || b->status != TDM_OK) return;
    st = tf->tap(b->g, kind, layer, x);
    if (st != TDM_OK) tdm_fail_(b, st, "tdm.target_features tap");
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_TARGET_FEATURES_H */
