// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_head_seq.cpp: one sequence of a draft head: its pairs in the
// head's KV, the target rows it holds, its rounds (alone or in a batched graph).
#include <algorithm>

#include "common/log.h"
#include "speculative/draft_head.h"
#include "speculative/draft_head_shared.h"

namespace tdm {

DraftHeadDrafter::~DraftHeadDrafter() {
    if (pending_) head_->settle(*pending_);
    if (head_->kv && seq_ >= 0) head_->kv->free_sequence(seq_);
}

void DraftHeadDrafter::forget() {
    cancel();
    if (head_->kv && seq_ >= 0) head_->kv->free_sequence(seq_);
    seq_ = -1;
    n_past_ = 0;
    hidden_first_ = 0;
    hidden_ = {};
    device_rows_ = nullptr;
    device_first_ = device_n_ = device_row0_ = 0;
}

Status DraftHeadDrafter::begin(std::span<const int32_t> prompt) {
    if (pending_) cancel();
    if (head_->kv) {
        if (seq_ >= 0) head_->kv->free_sequence(seq_);
        seq_ = -1;
        seq_ = TDM_TRY(head_->kv->add_sequence());
    }
    n_past_ = 0;
    hidden_first_ = 0;
    hidden_.clear();
    device_rows_ = nullptr;
    return {};
}

// Head positions [0, n_past_) pair target hidden j with token j+1; the hidden
// rows [hidden_first_, held_end) wait for their token. Resuming at n keeps the
// pairs whose token is below n, which needs the rows from n_past_ (clamped to
// n - 1) up to n - 1 still held.
bool DraftHeadDrafter::can_resume(uint32_t n_cached) const {
    if (n_cached == 0 || (stateless() && !pending_)) return true;  // a stateless head needs only the next rows
    if (seq_ < 0 || pending_) return false;
    const uint32_t held_end = hidden_first_ + uint32_t(hidden_.size() / head_->n_embd_target);
    return std::min(n_past_, n_cached - 1) >= hidden_first_ && n_cached <= held_end;
}

Status DraftHeadDrafter::resume(std::span<const int32_t> prompt, uint32_t n_cached) {
    if (n_cached == 0) return begin(prompt);
    device_rows_ = nullptr;  // another request's passes may have run since
    if (!can_resume(n_cached))
        return Error::format("draft head: cannot resume at {} tokens (it holds pairs up to {} and hidden rows {}..{})",
                             n_cached, n_past_, hidden_first_,
                             hidden_first_ + uint32_t(hidden_.size() / head_->n_embd_target));
    if (stateless()) {
        hidden_.clear();
        hidden_first_ = n_cached;  // the prefill of the rest brings the rows it drafts from
        return {};
    }
    n_past_ = std::min(n_past_, n_cached - 1);
    TDM_TRY(head_->kv->truncate(seq_, n_past_));
    hidden_.resize(size_t(n_cached - hidden_first_) * head_->n_embd_target);
    return {};
}

Status DraftHeadDrafter::observe(const TargetRows& rows) {
    const uint32_t n_embd = head_->n_embd_target;
    if (!rows.hidden || rows.n_embd != n_embd) return Error("draft head: target rows without hidden states");
    const uint32_t end = hidden_first_ + uint32_t(hidden_.size() / n_embd);
    if (rows.first_pos > end || rows.first_pos < hidden_first_)
        return Error::format("draft head: target hidden rows from position {} do not continue the {} held from {}",
                             rows.first_pos, end - hidden_first_, hidden_first_);
    hidden_.resize(size_t(rows.first_pos - hidden_first_) * n_embd);  // drop rolled-back rows
    hidden_.insert(hidden_.end(), rows.hidden, rows.hidden + rows.tokens.size() * n_embd);
    // a stateless head drafts from the newest row only: keep a few, not the whole history
    constexpr size_t kKeepRows = 64;
    const size_t n_rows = hidden_.size() / n_embd;
    if (stateless() && n_rows > 2 * kKeepRows) {
        hidden_.erase(hidden_.begin(), hidden_.begin() + std::ptrdiff_t((n_rows - kKeepRows) * n_embd));
        hidden_first_ += uint32_t(n_rows - kKeepRows);
    }
    if (!head_->opt.rows_on_device) return {};
    device_rows_ = rows.hidden_on_device;
    device_first_ = rows.first_pos;
    device_n_ = uint32_t(rows.tokens.size());
    device_row0_ = rows.device_row0;
    return {};
}

bool DraftHeadDrafter::holds_row(uint32_t pos) const {
    return pos >= hidden_first_ && pos < hidden_first_ + uint32_t(hidden_.size() / head_->n_embd_target);
}

bool DraftHeadDrafter::row_on_device(uint32_t pos, uint32_t* row) const {
    if (!device_rows_ || pos < device_first_ || pos >= device_first_ + device_n_) return false;
    *row = device_row0_ + (pos - device_first_);
    return true;
}

Status DraftHeadDrafter::ready_for(const DraftRequest& req) {
    const uint32_t p = req.pos;
    if (stateless()) {
        if (p == 0 || req.history.size() != size_t(p) + 1)
            return Error::format("draft head: request at position {} with {} tokens of history", p,
                                 req.history.size());
        if (req.target_seq < 0)
            return Error("draft head: a head that reads the target's KV needs the target's sequence");
        if (!holds_row(p - 1)) return Error::format("draft head: the target hidden row of position {} is missing", p - 1);
        return {};
    }
    if (seq_ < 0) return Error("draft head: a draft before begin()");
    if (p < n_past_ + 1 || req.history.size() != size_t(p) + 1)
        return Error::format("draft head: request at position {} while {} positions are committed", p, n_past_);
    const uint32_t held_end = hidden_first_ + uint32_t(hidden_.size() / head_->n_embd_target);
    if (hidden_first_ > n_past_ || held_end < p)
        return Error::format("draft head: target hidden rows for positions {}..{} are missing", n_past_, p - 1);
    // long catch-ups (the prompt): leading chunks first, synchronously
    return head_->catch_up(*this, req.history, p);
}

Status DraftHeadDrafter::prepare(const DraftRequest& req) {
    TDM_ASSERT(!pending_);
    if (stateless() && (req.pos == 0 || !holds_row(req.pos - 1))) return {};  // draft() proposes nothing
    TDM_TRY(ready_for(req));
    DraftHeadDrafter* self = this;
    pending_ = TDM_TRY(head_->submit(std::span<DraftHeadDrafter* const>(&self, 1), std::span(&req, 1)));
    pending_index_ = 0;
    pending_pos_ = req.pos;
    pending_k_ = std::max<uint32_t>(1, req.max);
    return {};
}

void DraftHead::prepare_batch(std::span<Drafter* const> drafters, std::span<const DraftRequest> reqs) {
    std::vector<DraftHeadDrafter*> ds;
    std::vector<DraftRequest> rs;
    for (size_t i = 0; i < drafters.size(); ++i) {
        auto* d = dynamic_cast<DraftHeadDrafter*>(drafters[i]);
        if (!d || d->head_.get() != this) continue;
        if (d->pending_) d->cancel();
        // one that is not ready drafts alone, and fails there with its own message
        if (!d->ready_for(reqs[i]).ok()) continue;
        ds.push_back(d);
        rs.push_back(reqs[i]);
    }
    if (ds.empty()) return;
    auto run = submit(ds, rs);
    if (!run.ok()) {
        TDM_LOG_DEBUG("spec", "draft head {}: a batch of {} sequences failed ({}); each drafts alone", name,
                      ds.size(), run.error().message());
        return;
    }
    for (size_t i = 0; i < ds.size(); ++i) {
        ds[i]->pending_ = *run;
        ds[i]->pending_index_ = uint32_t(i);
        ds[i]->pending_pos_ = rs[i].pos;
        ds[i]->pending_k_ = std::max<uint32_t>(1, rs[i].max);
    }
}

Result<std::vector<int32_t>> DraftHeadDrafter::draft(const DraftRequest& req) {
    if (!pending_ || pending_pos_ != req.pos || pending_k_ != std::max<uint32_t>(1, req.max)) {
        const DeviceWeight* rows = device_rows_;  // still the last pass's: no pass ran since
        if (pending_) cancel();
        device_rows_ = rows;
        // after a restored prompt cache a stateless head may lack the row it needs: no proposal
        if (stateless() && (req.pos == 0 || !holds_row(req.pos - 1))) return std::vector<int32_t>{};
        TDM_TRY(prepare(req));
    }
    std::shared_ptr<Run> run = std::move(pending_);
    pending_ = nullptr;
    device_rows_ = nullptr;  // read; the target's next pass overwrites them
    head_->settle(*run);
    TDM_TRY(run->status);
    // the catch-up rows are committed pairs: keep them
    if (!stateless()) n_past_ = pending_pos_;
    const uint32_t n_seq = run->n_seq;
    std::vector<int32_t> out;
    for (uint32_t j = 0; j < pending_k_ && j < run->k; ++j)
        out.push_back(run->tokens[size_t(j) * n_seq + pending_index_]);
    out.resize(std::min<size_t>(out.size(), req.max));
    return out;
}

Status DraftHeadDrafter::accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) {
    if (stateless()) return {};  // nothing of its own to roll back
    // entries the chain wrote beyond the committed pairs came from draft hiddens
    TDM_TRY(head_->kv->truncate(seq_, n_past_));
    // hidden rows before n_past_ have been paired; drop them
    if (n_past_ > hidden_first_) {
        const size_t drop = std::min(hidden_.size(), size_t(n_past_ - hidden_first_) * head_->n_embd_target);
        hidden_.erase(hidden_.begin(), hidden_.begin() + std::ptrdiff_t(drop));
        hidden_first_ = n_past_;
    }
    return {};
}

void DraftHeadDrafter::cancel() {
    device_rows_ = nullptr;
    if (!pending_) return;
    std::shared_ptr<Run> run = std::move(pending_);
    pending_ = nullptr;
    head_->settle(*run);
    if (stateless()) return;
    // The catch-up's pairs are valid, but a draft at the same position needs its last one
    // again (the chained steps start from its output): keep the pairs before it.
    if (run->status.ok()) n_past_ = std::max(n_past_, pending_pos_ > 0 ? pending_pos_ - 1 : 0);
    if (auto st = head_->kv->truncate(seq_, n_past_); !st.ok()) TDM_LOG_WARN("spec", "{}", st.error().message());
}

}  // namespace tdm
