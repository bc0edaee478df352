/* SPDX-License-Identifier: Apache-2.0 */
/* tandem/ext/target_weights.h: extension "tdm.target_weights", version 1 (ABI 3).
 *
 * Read access, for a draft head, to the weights its TARGET model loaded: e.g.
 * the target's token embedding, which Gemma 4's assistant embeds tokens with.
 * The weight is shared, not copied, and lives as long as the target (longer
 * than the head). Ask for the extension in the head's create or load:
 *
 *     const tdm_ext_target_weights* tw =
 *         host->get_extension(TDM_EXT_TARGET_WEIGHTS, 1, NULL);
 *     const tdm_weight* embd;
 *     if (!tw || tw->get(loader, "token_embd.weight", &embd) != TDM_OK) ...
 *
 * `name` is the source tensor name the target requested the weight under
 * ("token_embd.weight" in a GGUF, "model.language_model.embed_tokens.weight"
 * in an HF directory). get() works only inside a draft head's load callback
 * (the loader knows its target); elsewhere, or when the target loaded no such
 * weight, it returns TDM_ERR_NOT_FOUND with last_error() saying which. */
#ifndef TANDEM_EXT_TARGET_WEIGHTS_H
#define TANDEM_EXT_TARGET_WEIGHTS_H

#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_TARGET_WEIGHTS "tdm.target_weights"
#define TDM_EXT_TARGET_WEIGHTS_VERSION 1u

typedef struct tdm_ext_target_weights {
    uint32_t struct_size;
    /* The target's weight `name`. [callback: a draft head's load] */
    tdm_status (*get)(tdm_loader* loader, const char* name, const tdm_weight** out);
} tdm_ext_target_weights;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_TARGET_WEIGHTS_H */
