/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/draft_model.h: a second, smaller model as drafter (`-md FILE`,
// speculative type `draft`). It has its own KV in its own pool; it proposes
// greedily with the argmax computed in its graph, so only token ids come back;
// after verification its KV is truncated to what the target accepted.
//
// The draft model's KV lags the target by the tokens it has not seen yet (the
// target's bonus token, the last accepted draft, or every token of rounds
// another drafter won); each draft starts with one catch-up pass over them.
// With --draft-tree it grows trees (tree_growth.h): after the catch-up, one pass per
// level whose rows are the expanded nodes, each attending to the committed KV and its
// own ancestors (the target's verify mechanism, graph/graph.h KvTreeRow); after the
// round its KV keeps only the committed history.
#pragma once

#include <memory>

#include "model/runner.h"
#include "speculative/drafter.h"

namespace tdm {

class DraftModelDrafter : public Drafter {
public:
    // `runner` runs the draft model against its own KV pool (sequence `seq`).
    DraftModelDrafter(std::unique_ptr<Model> model, std::unique_ptr<KvPool> kv, vk::Device& device,
                      vk::PipelineManager& pipelines);
    const std::string& name() const override { return name_; }
    // Keeps the longest prefix of its KV that the new prompt shares with the
    // last history (a chat turn), so only the new tokens are run.
    Status begin(std::span<const int32_t> prompt) override;
    Status prepare(const DraftRequest& req) override;
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override;
    // Trees (draft_model_tree.cpp): a level per pass, each node a tree row of the draft
    // model's own verify-like pass; not for a draft model with recurrent states.
    bool grows_trees() const override;
    Result<DraftTree> draft_tree(const DraftRequest& req) override;
    Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) override;
    void cancel() override;
    // Frees its sequence of the draft model's KV and the history it kept.
    void forget() override;

    const Model& model() const { return *model_; }

private:
    // The pass over the tokens the KV lacks up to req.pos; `logits`: its last row's logits
    // come back too (a tree ranks children by them).
    Status submit_catch_up(const DraftRequest& req, bool logits = false);
    // Rows one pass may store: `want`, or fewer where the KV pool's sliding-window
    // rings were sized for fewer (KvPoolConfig::rows_max).
    uint32_t max_rows(uint32_t want) const;

    std::string name_ = "draft";
    std::unique_ptr<Model> model_;
    std::unique_ptr<KvPool> kv_;
    std::unique_ptr<Runner> runner_;
    int seq_ = -1;
    uint32_t n_past_ = 0;       // positions [0, n_past_) of the history are in the draft KV
    std::vector<int32_t> seen_; // the history of the last accept (a new prompt may continue it)
    uint32_t last_pos_ = 0;     // position of history.back() in the last draft
    uint32_t drafted_ = 0;      // tokens proposed in the last draft
    bool pending_ = false;      // a catch-up pass was submitted by prepare()
    std::vector<int32_t> tokens_, positions_;  // the catch-up batch (kept alive while in flight)
};

// Refuses a draft vocabulary that cannot propose the target's tokens, like
// llama.cpp's common_speculative_are_compatible: same tokenizer type, sizes
// within 128, same BOS/EOS, identical token text for shared ids (from id 5).
// The error lists the first mismatches.
Status check_vocab_compatible(const Tokenizer& target, const Tokenizer& draft);

}  // namespace tdm
