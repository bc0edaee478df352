/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/draft_head.h: a plugin's draft head (an MTP/NextN head, an
// assistant model) as Drafters, one per sequence, sharing one head.
//
// The head reads the target's hidden states: the scheduler hands it the
// target's hidden row of every committed position (observe()). The head's own
// KV holds one entry per committed pair (h_i, x_{i+1}), at head position i
// (the target position of the hidden; the head only sees relative positions).
// A draft is ONE graph: a catch-up over the committed pairs the head has not
// seen yet, then k-1 chained steps (hidden <- the head's own output, token <-
// its own argmax, both on the device); only the k token ids come back. When the
// catch-up's target rows are those of the last verify, the graph reads them
// where the verify left them on the device (TargetRows::hidden_on_device), by
// row index; rows of a prefill are copied in from the host. After
// verification the entries the chain wrote are dropped (they were computed from
// draft hiddens, not the target's); the next catch-up writes the committed ones.
// A head that requested target taps (tdm.target_features) is fed their concatenation
// instead of one hidden state: the same rows, n_taps * n_embd wide (model/feature_taps.h).
// A stateless, constant-position head (Gemma 4's assistant) has no KV: a round
// is one row (x_p and the target hidden of p - 1) and k steps, all at position
// p, attending only the target's committed KV (< p), read-only.
//
// Trees (--draft-tree): the head grows them level by level, one graph per level
// (draft_head_tree.cpp); a head with a KV of its own reads it as the target's verify does
// (each node its own ancestors' entries), and keeps only the committed pairs after.
//
// Many sequences (a server's requests): each has a DraftHeadDrafter of its own
// (another()), holding its sequence of the head's KV and its hidden rows, while the
// plugin's head, its weights and its compiled graphs are shared (DraftHead). A head
// that declares TDM_DRAFT_HEAD_BATCHED (tandem/ext/batched_draft.h) drafts for all
// of them in ONE graph per round (prepare_batch(): each sequence's catch-up rows,
// then each chained step one row per sequence); other heads draft one sequence per
// graph. A block head (TDM_DRAFT_HEAD_BLOCK, tandem/ext/block_draft.h: DFlash) drafts
// b - 1 tokens in ONE step instead of a chain: its context rows are the same target rows
// at the same positions, followed by a block of b rows that see each other
// (draft_head_block.cpp).
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "model/runner.h"
#include "speculative/draft_vocab.h"
#include "speculative/drafter.h"

namespace tdm {

struct DraftHeadOptions {
    std::map<std::string, std::string> options;  // tdm_options for the plugin
    KvPoolConfig kv;                              // the head's own KV layers (n_seq_max: drafters at once)
    uint32_t catch_up_chunk = 64;                 // rows per pass when catching up a long prompt
    bool check_weights = true;  // refuse NaN/Inf head weights, as the target's (model/weight_check.h)
    // The NaN debugging mode (TANDEM_CHECK_NAN=1, model/logits_check.h): every op of the
    // draft graphs is probed, and a draft that produced a NaN or infinity is an error naming
    // the first op and layer that did (the scheduler then turns the head off: the output
    // stays exact). Without it a broken head only drafts tokens that are never accepted.
    bool nan_debug = false;
    // Read the target's rows where a verify left them on the device (TargetRows::
    // hidden_on_device); false: always from host copies (tests compare the two).
    bool rows_on_device = true;
    // Draft for several sequences in one graph when the head allows it; false: one
    // sequence per graph always (tests compare the two).
    bool batch = true;
    // Compiled draft graphs kept (one per round shape: a server's come in many); past it
    // the least recently used idle one goes.
    size_t graph_limit = 32;
    // Draft logits over a prefix of the ids chosen each round from the sequence's own
    // tokens (draft_vocab.h), for heads that take the request (tdm_batch_desc.draft_vocab).
    // Off: the head's own choice (its draft_vocab option, else the whole vocabulary).
    bool auto_vocab = false;
    DraftVocabPolicy vocab_policy;
};

class DraftHead;

// The drafted rows a version-2 block graph (tandem/ext/block_draft.h) computes for a request of
// k drafts: k rounded up to 1, 2, 3, 4, 6, 8, 12, 16, 24, ... and at most b - 1. Graphs are kept
// per (context rows, drafted rows); a controller that moves k between 5 and 9 would otherwise
// keep dozens of shapes and evict and rebuild them every few rounds. The extra rows' picks are
// dropped (a sequence keeps its request's count), so the drafts are the same.
uint32_t block_drafted_rows(uint32_t k, uint32_t block_size);

class DraftHeadDrafter : public Drafter {
public:
    // `source` holds the head's weights: the target's own file (shared, mapped
    // once) or a side file. Errors from the plugin (e.g. no MTP layer in the
    // file) come back as they are.
    static Result<std::unique_ptr<DraftHeadDrafter>> create(const DraftHeadEntry& entry, std::string spec_type,
                                                            std::shared_ptr<const ModelSource> source,
                                                            const Model& target, const KvPool& target_kv,
                                                            vk::Device& device, vk::PipelineManager& pipelines,
                                                            const DraftHeadOptions& opt);
    // A drafter for another sequence on the same head (its weights, KV pool and graphs).
    std::unique_ptr<DraftHeadDrafter> another() const;
    ~DraftHeadDrafter() override;

    const std::string& name() const override;
    tdm_hidden_point hidden_point() const override;
    Status begin(std::span<const int32_t> prompt) override;
    // Resumes where the target's KV resumes, if the head still holds the
    // target's hidden row of every position it has not paired yet.
    bool can_resume(uint32_t n_cached) const override;
    Status resume(std::span<const int32_t> prompt, uint32_t n_cached) override;
    // Its KV pairs and the hidden rows not yet paired (draft_head_state.cpp).
    bool needs_saved_state() const override { return !stateless(); }
    Result<std::string> save_state(uint32_t n_tokens) override;
    Status load_state(std::span<const int32_t> tokens, std::string_view bytes) override;
    Status observe(const TargetRows& rows) override;
    Status prepare(const DraftRequest& req) override;
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override;
    // Trees grown by the head's draft probabilities (draft_head_tree.cpp); not for a head
    // that picks its own tokens (no logits to rank children by: it drafts chains).
    bool grows_trees() const override;
    Result<DraftTree> draft_tree(const DraftRequest& req) override;
    Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) override;
    void cancel() override;
    // Frees its sequence of the head's KV and the rows it held.
    void forget() override;
    // The shared head, when it drafts several sequences in one graph.
    DraftBatcher* batcher() override;

    uint64_t weight_bytes() const;
    // Target hidden rows the draft graphs have read, from the device (a verify's
    // rows, in place) and from host copies (prefill rows), by every drafter of the head.
    uint64_t rows_read_on_device() const;
    uint64_t rows_read_from_host() const;
    uint64_t kv_bytes() const;
    // TDM_DRAFT_HEAD_STATELESS: no KV of its own, one-row rounds
    bool stateless() const;
    // Graphs that drafted several sequences at once, since the head was made.
    uint64_t batched_graphs() const;
    size_t cached_graphs() const;  // compiled rounds the head keeps
    // A block head that takes outputs for the drafted rows only (tandem/ext/block_draft.h
    // version 2): its rounds compile a graph per (context rows, draft count), so a warm-up
    // visits the counts it will time.
    bool graph_per_draft_count() const;
    // Draft rounds by the width of their draft logits (0: every id, or a head that picks
    // its own tokens), since the head was made.
    std::map<uint32_t, uint64_t> rounds_by_vocab() const;
    // The head is asked for a draft vocabulary each round (auto_vocab, and it has not built
    // a step that ignored the request).
    bool asks_vocab() const;

private:
    friend class DraftHead;
    struct Run;  // a submitted draft graph, shared by the drafters it drafts for
    explicit DraftHeadDrafter(std::shared_ptr<DraftHead> head) : head_(std::move(head)) {}
    // What a draft graph needs of this sequence for `req` (the long catch-ups of a prompt
    // are run first, synchronously); an error when its state does not fit the request.
    Status ready_for(const DraftRequest& req);
    bool holds_row(uint32_t pos) const;  // the target hidden row of `pos` is held
    // The target row of `pos` is in the device table of the last pass (its row there).
    bool row_on_device(uint32_t pos, uint32_t* row) const;

    std::shared_ptr<DraftHead> head_;
    int seq_ = -1;                         // in the head's KV
    uint32_t n_past_ = 0;                  // head positions [0, n_past_) hold committed pairs
    uint32_t hidden_first_ = 0;            // target position of hidden_[0]
    std::vector<float> hidden_;            // committed target hidden rows not yet paired
    // the last observed rows on the device: positions [device_first_, + device_n_)
    // are rows [device_row0_, + device_n_) of device_rows_, until the target's next pass
    const DeviceWeight* device_rows_ = nullptr;
    uint32_t device_first_ = 0, device_n_ = 0, device_row0_ = 0;
    // submitted by prepare() or prepare_batch(): the graph, this sequence's place in it
    std::shared_ptr<Run> pending_;
    uint32_t pending_index_ = 0, pending_pos_ = 0, pending_k_ = 0;
};

}  // namespace tdm
