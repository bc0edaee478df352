/* SPDX-License-Identifier: Apache-2.0 */
/* tandem/ext/batched_draft.h: extension "tdm.batched_draft", version 1 (ABI 3).
 *
 * A server drafts for many requests at once. A draft head whose build_step
 * handles several sequences in one batch lets the host draft for all of them in
 * ONE graph per round (its weights, the LM head above all, read once for every
 * sequence) instead of one graph per sequence. The head says so by setting
 * TDM_DRAFT_HEAD_BATCHED in tdm_draft_head_info.flags from its create, and only
 * when the host offers this extension (a host without it refuses the flag):
 *
 *     if (host->get_extension(TDM_EXT_BATCHED_DRAFT, 1, NULL))
 *         info->flags |= TDM_DRAFT_HEAD_BATCHED;
 *
 * What build_step then gets, for S sequences drafting k tokens:
 *   step 0: the catch-up rows of every sequence, each sequence's a run of
 *           consecutive rows (a stateless head: one row per sequence);
 *           batch->n_outputs = S and output row i (TDM_INPUT_OUTPUT_ROWS) is the
 *           last row of sequence i's run;
 *   step j: one row per sequence (n_tokens = n_outputs = S), in the same order.
 * Every row carries its own position and sequence id (TDM_INPUT_POSITIONS, the
 * graph's sequence ids, which attention and kv_store follow), so a step written
 * for any n_tokens and n_outputs, as a model's forward is, needs nothing else.
 * Every output (TDM_OUTPUT_LOGITS, TDM_OUTPUT_HIDDEN_DRAFT,
 * TDM_OUTPUT_DRAFT_TOKENS) must have one row per output row: a step that picks
 * its token from one row only (say, a top-k over a single row) must not set the
 * flag. Without the flag the host builds every graph for one sequence, as
 * before. */
#ifndef TANDEM_EXT_BATCHED_DRAFT_H
#define TANDEM_EXT_BATCHED_DRAFT_H

#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_BATCHED_DRAFT "tdm.batched_draft"
#define TDM_EXT_BATCHED_DRAFT_VERSION 1u

/* tdm_draft_head_info.flags: the head drafts several sequences per graph (above).
 * Valid only on a host that offers tdm.batched_draft. */
#define TDM_DRAFT_HEAD_BATCHED (1u << 2)

typedef struct tdm_ext_batched_draft {
    uint32_t struct_size;
    /* The most sequences this host puts in one draft graph (informative). */
    uint32_t max_sequences;
} tdm_ext_batched_draft;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_BATCHED_DRAFT_H */
