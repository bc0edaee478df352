/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/drafter.h: what the speculative round (round.h) asks of a drafter.
// The round is generic over this interface and never knows which drafter it
// drives (a draft model, a plugin's n-gram table, an MTP head, a benchmark's
// forced drafter).
//
// Protocol per sequence: begin(prompt) before the target's prefill (or
// resume(prompt, n) when the target continues from n cached tokens); then per
// round prepare(req) (may start device work and return at once: the depth-2
// overlap), draft(req) with the same request (finishes and returns the
// proposal), and accept() with the verification result. cancel() drops prepared
// work (the sequence ended); finish() ends the sequence; forget() drops its state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tandem/tandem.h>

#include "common/error.h"
#include "speculative/draft_tree.h"

namespace tdm {

class DeviceWeight;

// A speculative type as --spec-type, the config file and a server request spell it:
// words joined by '-' (ngram-simple). llama.cpp's statistics names, which plugin drafters
// take as their name(), join them by '_' (ngram_simple); both spellings name one type.
inline std::string spec_type_key(std::string_view type) {
    std::string k(type);
    for (char& c : k)
        if (c == '_') c = '-';
    return k;
}
inline bool same_spec_type(std::string_view a, std::string_view b) { return spec_type_key(a) == spec_type_key(b); }

// Rows the target has just committed (prefill chunks, accepted verify rows):
// token i at position first_pos + i, and its hidden state when the drafter asked
// for one (hidden_point()): hidden [n][n_embd], n_embd being the target's or, for a
// head's taps (model/feature_taps.h), their concatenation's width. After a verify-sized pass the
// same rows are also on the device, rows [device_row0, device_row0 + n) of
// `hidden_on_device` (an f32 table for get_rows), until the target's next forward pass.
struct TargetRows {
    std::span<const int32_t> tokens;
    uint32_t first_pos = 0;
    const float* hidden = nullptr;
    uint32_t n_embd = 0;
    const DeviceWeight* hidden_on_device = nullptr;
    uint32_t device_row0 = 0;
};

struct DraftRequest {
    // Prompt and every token emitted so far. history.back() is the last emitted
    // token: the target has not processed it yet; it sits at position `pos`.
    std::span<const int32_t> history;
    uint32_t pos = 0;
    uint32_t max = 0;  // most tokens to propose (>= 1)
    int target_seq = -1;  // the target's KV sequence (heads that read the target's KV)
    // tree.nodes > 1: a drafter that grows trees may answer draft_tree() with a tree of
    // this shape (draft_tree.h); else a chain of up to `max`.
    TreeShape tree;
};

class Drafter;

// Drafters whose proposals for several sequences can come from one device pass (the
// drafters of one draft head). The engine hands the requests of all sequences drafting
// with them in a pass to prepare_batch(), then asks each drafter as usual (draft(req)
// with the same request returns its part); a drafter the batch could not take drafts
// alone then.
class DraftBatcher {
public:
    virtual ~DraftBatcher() = default;
    // drafters[i] (each of this batcher) drafts reqs[i].
    virtual void prepare_batch(std::span<Drafter* const> drafters, std::span<const DraftRequest> reqs) = 0;
};

// What kind of drafter it is, for the goodput controller's prior and first draft length
// (goodput.h).
enum class DrafterKind {
    head,   // a model that drafts one token per step: MTP, NextN, an assistant, a draft model
    ngram,  // a lookup in the token history (a plugin's drafter): drafts cost next to nothing,
            // their length is the match's
};

class Drafter {
public:
    virtual ~Drafter() = default;
    virtual const std::string& name() const = 0;
    virtual DrafterKind kind() const { return DrafterKind::head; }
    // Whose costs and acceptance this drafter's sequences teach the engine's goodput history
    // (goodput_history.h) and start from: its own name. A wrapper that drafts with another
    // drafter (ForcedDrafter) answers that one's, so that a benchmark's warm-up hands its
    // costs to the runs after it.
    virtual const std::string& history_name() const { return name(); }
    virtual Status begin(std::span<const int32_t> prompt) = 0;
    // A continuation: the target's KV keeps prompt[0, n_cached) from an earlier
    // request of this drafter (a chat turn, a restored prompt cache) and
    // prefills the rest. Drafters that rebuild their state from tokens alone
    // simply begin again; those fed by the target's hidden states keep theirs.
    virtual bool can_resume(uint32_t n_cached) const { return true; }
    virtual Status resume(std::span<const int32_t> prompt, uint32_t n_cached) { return begin(prompt); }
    // Saved sequence states (a prompt cache, a chat's /save): what this drafter
    // needs, beside the target's KV of `n_tokens` tokens, to resume there in
    // another process. Drafters that rebuild their state from tokens (begin,
    // resume) save nothing: empty bytes. Those fed by the target's hidden states
    // cannot rebuild it (needs_saved_state()): a file saved without their section
    // is refused. load_state() restores a section for the target KV holding
    // `tokens`; resume(prompt, n) may follow for any n <= tokens.size().
    virtual bool needs_saved_state() const { return false; }
    virtual Result<std::string> save_state(uint32_t n_tokens) { return std::string(); }
    virtual Status load_state(std::span<const int32_t> tokens, std::string_view bytes) { return {}; }
    // Which target hidden state this drafter reads (TDM_HIDDEN_NONE: none; a list of taps
    // from kFirstTapPoint on, model/feature_taps.h).
    virtual tdm_hidden_point hidden_point() const { return TDM_HIDDEN_NONE; }
    // Target rows committed since the last call (only for drafters that read
    // hidden states): every prefill row, then the accepted rows of each round.
    virtual Status observe(const TargetRows& rows) { return {}; }
    virtual Status prepare(const DraftRequest& req) { return {}; }
    // The proposal: up to req.max tokens to follow history (may be empty).
    virtual Result<std::vector<int32_t>> draft(const DraftRequest& req) = 0;
    // Trees: a drafter that proposes several branches says so, and is asked draft_tree()
    // instead of draft() when the round may verify a tree (req.tree.nodes > 1). The tree's
    // root is history.back(); at most req.tree.nodes nodes. accept() then hears the nodes
    // drafted and the depth accepted; history ends with the accepted path.
    virtual bool grows_trees() const { return false; }
    virtual Result<DraftTree> draft_tree(const DraftRequest& req) {
        return DraftTree::chain(req.history.back(), TDM_TRY(draft(req)));
    }
    // The target accepted the first n_accepted of n_drafted proposed tokens (0
    // drafted: the round used another drafter or a plain step). `history` now
    // ends with the accepted drafts and the target's own next token.
    virtual Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) = 0;
    virtual void cancel() {}
    virtual Status finish() { return {}; }
    // Drops everything this drafter holds of its sequence (its own KV, the target rows it
    // kept, prepared work), as if it had never begun one; the next sequence starts with
    // begin() (or load_state()). What it compiled stays. For the warm-up at load
    // (engine/warmup.h), whose sequence must leave nothing behind. Drafters that keep no
    // sequence state beyond what begin() rebuilds need not override it.
    virtual void forget() { cancel(); }
    // Where this drafter's drafts may be batched with other sequences' (null: alone).
    virtual DraftBatcher* batcher() { return nullptr; }
};

}  // namespace tdm
