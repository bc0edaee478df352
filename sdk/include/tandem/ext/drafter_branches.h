/* SPDX-License-Identifier: MIT */
/* tandem/ext/drafter_branches.h: extension "tdm.drafter_branches", version 1 (ABI 3).
 *
 * A draftless drafter (tandem.h section 7) proposes one chain per round. When
 * its table holds several continuations of the current context (the history
 * matched its key more than once, followed by different tokens), the host can
 * verify them all in one pass as a draft tree: a round whose first draft is
 * wrong then still keeps the branch that is right. A drafter says it can
 * propose branches by handing the host a propose_branches callback during
 * init, after register_drafter:
 *
 *     const tdm_ext_drafter_branches* b = host->get_extension(TDM_EXT_DRAFTER_BRANCHES, 1, NULL);
 *     if (b) st = b->set_propose_branches(reg, "ngram_simple", my_propose_branches);
 *
 * The host asks for branches only in rounds that may verify a tree
 * (--draft-tree); otherwise it calls propose as before. Branches are listed
 * best first (the first is the chain propose would return); the host merges
 * their common prefixes into one tree and cuts them to the tree's shape
 * (levels, children per node, nodes), so a drafter need not know it. accept
 * then reports n_drafted = the tree's draft tokens (its nodes but the round's
 * first token, so a fully accepted branch can have n_accepted < n_drafted) and
 * n_accepted = the depth of the accepted path, which may follow any branch:
 * `history` says which. */
#ifndef TANDEM_EXT_DRAFTER_BRANCHES_H
#define TANDEM_EXT_DRAFTER_BRANCHES_H

#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_DRAFTER_BRANCHES "tdm.drafter_branches"
#define TDM_EXT_DRAFTER_BRANCHES_VERSION 1u

/* Writes up to max_branches continuations of history[0, n_history), best
 * first, each of at most max_len tokens: branch b's tokens at
 * tokens[b * max_len ...], its length at lens[b]; their count to *n_branches
 * (0: no proposal). On an error status (with a message in err) the host
 * turns the drafter off for the rest of the sequence, as for propose2.
 * [object], as propose: never concurrent with another call on `drafter`.
 * Lifetime: history, tokens (max_branches * max_len), lens (max_branches) and
 * err are the host's, valid during the call only. */
typedef tdm_status (*tdm_propose_branches_fn)(void* drafter, const int32_t* history, uint64_t n_history,
                                              uint32_t max_branches, uint32_t max_len, int32_t* tokens,
                                              uint32_t* lens, uint32_t* n_branches, char* err, size_t err_size);

typedef struct tdm_ext_drafter_branches {
    uint32_t struct_size;
    /* [init] The drafter this plugin registered under `drafter_name` (its
     * descriptor's name, already registered) also proposes branches with `fn`.
     * TDM_ERR_NOT_FOUND for a name this plugin did not register,
     * TDM_ERR_INVALID_ARGUMENT for a null argument or a call outside init;
     * last_error() says which. `fn` must stay valid until shutdown. */
    tdm_status (*set_propose_branches)(tdm_registry* reg, const char* drafter_name, tdm_propose_branches_fn fn);
} tdm_ext_drafter_branches;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_DRAFTER_BRANCHES_H */
