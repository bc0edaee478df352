// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_model.cpp: a draft model's chains, its KV and the vocabulary
// check (trees: draft_model_tree.cpp).
#include "speculative/draft_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"

namespace tdm {
namespace {

// A draft model's pass: its drafts are the argmax ids; its logits stay on the device.
ForwardInput ids_only(ForwardInput in) {
    in.read_logits = false;
    return in;
}

}  // namespace

DraftModelDrafter::DraftModelDrafter(std::unique_ptr<Model> model, std::unique_ptr<KvPool> kv, vk::Device& device,
                                     vk::PipelineManager& pipelines)
    : model_(std::move(model)), kv_(std::move(kv)) {
    runner_ = std::make_unique<Runner>(*model_, *kv_, device, pipelines);
}

Status DraftModelDrafter::begin(std::span<const int32_t> prompt) {
    pending_ = false;
    drafted_ = 0;
    // The prompt goes in now (as the target's did), but for its last token: the
    // first draft's catch-up re-feeds it, since it needs that token's output row.
    const uint32_t want = prompt.empty() ? 0 : uint32_t(prompt.size() - 1);
    uint32_t keep = 0;
    if (seq_ >= 0) {
        const uint32_t limit = std::min({n_past_, want, uint32_t(seen_.size())});
        while (keep < limit && seen_[keep] == prompt[keep]) ++keep;
        if (keep > 0 && !kv_->can_truncate(seq_, keep)) keep = 0;
    }
    if (keep > 0) {
        TDM_TRY(kv_->truncate(seq_, keep));
    } else {
        if (seq_ >= 0) kv_->free_sequence(seq_);
        seq_ = TDM_TRY(kv_->add_sequence());
    }
    n_past_ = keep;
    seen_.assign(prompt.begin(), prompt.end());
    std::vector<int32_t> pos;
    // chunks of at most 512 rows keep the prefill graphs small
    const uint32_t chunk = max_rows(512);
    for (uint32_t c0 = keep; c0 < want; c0 += chunk) {
        const uint32_t n = std::min<uint32_t>(chunk, want - c0);
        pos.resize(n);
        for (uint32_t i = 0; i < n; ++i) pos[i] = int32_t(c0 + i);
        const int32_t row = int32_t(n - 1);
        TDM_TRY(runner_->forward(ids_only({prompt.subspan(c0, n), pos, seq_, std::span<const int32_t>(&row, 1)})));
        n_past_ = c0 + n;
    }
    return {};
}

uint32_t DraftModelDrafter::max_rows(uint32_t want) const {
    return kv_->has_rings() ? std::min(want, kv_->config().rows_max) : want;
}

Status DraftModelDrafter::submit_catch_up(const DraftRequest& req, bool logits) {
    if (req.history.size() != size_t(req.pos) + 1)
        return Error("draft model: the history does not end at the request position");
    if (n_past_ > req.pos) n_past_ = req.pos;  // never happens in order; keeps the invariant
    // a model with recurrent state rolls back to any of this round's passes (accept()), each
    // a checkpoint of its own: the pool must not take them again for the next pass
    kv_->keep_states_from(seq_, req.pos + 1);
    // far behind (other drafters made the last rounds): what a pass cannot hold goes first
    const uint32_t limit = max_rows(req.pos + 1);
    while (req.pos + 1 - n_past_ > limit) {
        std::vector<int32_t> pos(limit);
        for (uint32_t i = 0; i < limit; ++i) pos[i] = int32_t(n_past_ + i);
        const int32_t last = int32_t(limit - 1);
        TDM_TRY(runner_->forward(
            ids_only({req.history.subspan(n_past_, limit), pos, seq_, std::span<const int32_t>(&last, 1)})));
        n_past_ += limit;
    }
    tokens_.assign(req.history.begin() + n_past_, req.history.end());
    positions_.resize(tokens_.size());
    for (size_t i = 0; i < tokens_.size(); ++i) positions_[i] = int32_t(n_past_ + i);
    const int32_t row = int32_t(tokens_.size() - 1);  // copied by submit()
    const ForwardInput in{tokens_, positions_, seq_, std::span<const int32_t>(&row, 1)};
    return runner_->submit(logits ? in : ids_only(in));
}

Status DraftModelDrafter::prepare(const DraftRequest& req) {
    TDM_ASSERT(!pending_);
    TDM_TRY(submit_catch_up(req));
    pending_ = true;
    return {};
}

Result<std::vector<int32_t>> DraftModelDrafter::draft(const DraftRequest& req) {
    if (!pending_) TDM_TRY(submit_catch_up(req));
    pending_ = false;
    ForwardOutput out = TDM_TRY(runner_->wait());
    std::vector<int32_t> drafts;
    drafts.push_back(out.argmax[0]);
    last_pos_ = req.pos;
    // single steps: d_j at position pos + j
    for (uint32_t j = 1; j < req.max; ++j) {
        const int32_t tok = drafts.back(), p = int32_t(req.pos + j), row = 0;
        out = TDM_TRY(runner_->forward(ids_only(
            {std::span<const int32_t>(&tok, 1), std::span<const int32_t>(&p, 1), seq_, std::span<const int32_t>(&row, 1)})));
        drafts.push_back(out.argmax[0]);
    }
    drafted_ = uint32_t(drafts.size());
    // positions up to pos + (k - 1) were written: last, d1 .. d_{k-1}
    n_past_ = req.pos + drafted_;
    return drafts;
}

Status DraftModelDrafter::accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) {
    if (n_drafted == 0) {
        // Another drafter (or a plain step) produced this round; anything this
        // model wrote beyond the verified history is stale.
        if (drafted_ > 0 && n_past_ > last_pos_ + 1) n_past_ = last_pos_ + 1;
    } else {
        // keep last (at last_pos_) and the accepted drafts this model had seen
        n_past_ = last_pos_ + 1 + std::min(n_accepted, drafted_ - 1);
    }
    drafted_ = 0;
    n_past_ = std::min<uint32_t>(n_past_, uint32_t(history.size()) - 1);
    seen_.assign(history.begin(), history.end());
    const Status st = kv_->truncate(seq_, n_past_);
    kv_->release_states(seq_);
    return st;
}

void DraftModelDrafter::cancel() {
    if (!pending_) return;
    pending_ = false;
    (void)runner_->wait();  // the pass wrote positions >= n_past_: forget them
    if (auto st = kv_->truncate(seq_, n_past_); !st.ok())
        TDM_LOG_WARN("spec", "draft model rollback after a cancelled draft: {}", st.error().message());
    kv_->release_states(seq_);
}

void DraftModelDrafter::forget() {
    cancel();
    if (seq_ >= 0) kv_->free_sequence(seq_);
    seq_ = -1;
    n_past_ = 0;
    seen_ = {};
    last_pos_ = 0;
    drafted_ = 0;
}

Status check_vocab_compatible(const Tokenizer& target, const Tokenizer& draft) {
    const Vocab& t = target.vocab();
    const Vocab& d = draft.vocab();
    std::vector<std::string> problems;
    if (t.model != d.model || t.pre != d.pre) problems.push_back("different tokenizer types");
    const int32_t nt = target.n_vocab(), nd = draft.n_vocab();
    if (std::abs(nt - nd) > 128) problems.push_back(fmt::format("vocabulary sizes {} and {} differ by more than 128", nt, nd));
    if (t.add_bos != d.add_bos || (t.add_bos && target.bos() != draft.bos()))
        problems.push_back(fmt::format("BOS differs (target {} add_bos {}, draft {} add_bos {})", target.bos(), t.add_bos,
                                       draft.bos(), d.add_bos));
    if (target.eos() != draft.eos()) problems.push_back(fmt::format("EOS differs (target {}, draft {})", target.eos(), draft.eos()));
    std::vector<std::string> mismatches;
    size_t n_mismatch = 0;
    for (int32_t id = 5; id < std::min(nt, nd); ++id)
        if (target.token_text(id) != draft.token_text(id)) {
            if (mismatches.size() < 5)
                mismatches.push_back(fmt::format("id {}: '{}' vs '{}'", id, target.token_text(id), draft.token_text(id)));
            ++n_mismatch;
        }
    if (n_mismatch)
        problems.push_back(fmt::format("{} token texts differ; first: {}", n_mismatch, fmt::join(mismatches, ", ")));
    if (problems.empty()) return {};
    return Error::format("the draft model's vocabulary is incompatible with the target's: {}", fmt::join(problems, "; "));
}

}  // namespace tdm
