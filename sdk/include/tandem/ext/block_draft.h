/* SPDX-License-Identifier: MIT */
/* tandem/ext/block_draft.h: extension "tdm.block_draft", version 2 (ABI 3).
 * "[version 2]" marks what version 2 added to version 1.
 *
 * A block draft head (DFlash) drafts a whole block of tokens in one pass
 * instead of chaining one-token steps: its rows are the newest token followed
 * by b - 1 copies of a mask token, at consecutive positions, and every row of
 * the block attends to every other one (not causally). The head says so in its
 * create, after filling *info, and only when the host offers this extension:
 *
 *     uint32_t version = 0;
 *     const tdm_ext_block_draft* bd =
 *         host->get_extension(TDM_EXT_BLOCK_DRAFT, 1, &version);
 *     if (!bd || bd->declare(info, block_size, mask_token) != TDM_OK) ... fail
 *     if (version >= 2 && TDM_HAS_MEMBER(bd, tdm_ext_block_draft, declare_drafted_rows)
 *         && bd->declare_drafted_rows(info) != TDM_OK) ... fail
 *
 * declare() sets TDM_DRAFT_HEAD_BLOCK in info->flags (a host without the
 * extension refuses the flag). Such a head has a KV of its own and reads target
 * taps (tdm.target_features); it may not be stateless, constant-position or
 * batched (TDM_DRAFT_HEAD_BATCHED).
 *
 * A round is ONE build_step over n_tokens = m + b rows:
 *   rows 0 .. m-1     the context rows: the committed positions the head has not
 *                     seen yet (j = its committed count .. p - 1, in order), row
 *                     i at position j = first + i; features() (tdm.target_features)
 *                     is F32 [sum of the taps' widths, m]: the target's states
 *                     AT those positions (not the pairing of a chained head).
 *                     Their token ids are the sequence's tokens at j (a head
 *                     that uses context rows only for their K/V ignores them).
 *   rows m .. m+b-1   the block: row m + i at position p + i, its token the
 *                     newest token (i = 0, the one the target has not run yet)
 *                     or the declared mask token (i >= 1).
 * batch->n_outputs = b and TDM_INPUT_OUTPUT_ROWS lists the block rows m ..
 * m+b-1. The outputs (TDM_OUTPUT_LOGITS or TDM_OUTPUT_DRAFT_TOKENS) have one
 * row per block row; the host drafts the picks of block rows 1 .. b-1 (at most
 * the round's draft count, the first ones) and ignores row 0's.
 *
 * [version 2] Drafted rows only. A head that calls declare_drafted_rows() after
 * declare() (a host that offers version 2 has it; check the version get_extension
 * reports and TDM_HAS_MEMBER) gets its block steps with batch->n_outputs = n,
 * 1 <= n <= b - 1, the round's draft count, and TDM_INPUT_OUTPUT_ROWS listing
 * block rows m+1 .. m+n (the drafts, ascending); the step's outputs have one row
 * per listed row (n logits rows, or n token ids), row i the pick of block row
 * m+1+i. The block is still b rows (n_tokens = m + b, the block the last b rows
 * of the batch): the head runs its layers on all of them, as they attend to each
 * other, and only what follows them (its final norm, its LM head) on the listed
 * rows. The host compiles a step per (m, n) and caches them; a long catch-up's
 * graphs have n = 1. A head that does not call it (one built against version 1)
 * gets b output rows as above.
 *
 * Attention in this step is bounded per row, not by the row's position: every
 * TDM_OP_ATTENTION the step builds lets a context row see keys up to its own
 * position (causal) and a block row see keys up to p + b - 1, so a block row
 * sees every context position and the whole block. kv_store still stores each
 * row at its own position. After the round the host keeps only the context
 * rows' entries in the head's KV (positions < p): the block's K/V leave no
 * trace, and the next round's context rows overwrite those positions.
 *
 * Long catch-ups (a prompt) come in several such graphs; the picks of all but
 * the last are dropped. */
#ifndef TANDEM_EXT_BLOCK_DRAFT_H
#define TANDEM_EXT_BLOCK_DRAFT_H

#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_BLOCK_DRAFT "tdm.block_draft"
#define TDM_EXT_BLOCK_DRAFT_VERSION 2u

/* tdm_draft_head_info.flags: the head drafts blocks (above); set by declare().
 * Valid only on a host that offers tdm.block_draft. */
#define TDM_DRAFT_HEAD_BLOCK (1u << 3)

/* The largest block this version takes. */
#define TDM_MAX_DRAFT_BLOCK 64u

typedef struct tdm_ext_block_draft {
    uint32_t struct_size;
    /* Head: it drafts blocks of `block_size` rows (2 .. TDM_MAX_DRAFT_BLOCK),
     * rows 1 .. block_size - 1 holding `mask_token` (a token id of the target's
     * vocabulary). `info` is the pointer its create was passed; called once per
     * create. [callback: a draft head's create] */
    tdm_status (*declare)(tdm_draft_head_info* info, uint32_t block_size, int32_t mask_token);
    /* [version 2] Head: its block steps compute outputs for the drafted rows only
     * (above). `info` is the pointer declare() was given; call it after declare(),
     * at most once per create. [callback: a draft head's create] */
    tdm_status (*declare_drafted_rows)(tdm_draft_head_info* info);
} tdm_ext_block_draft;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_BLOCK_DRAFT_H */
