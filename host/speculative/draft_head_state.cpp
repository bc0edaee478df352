// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_head_state.cpp: DraftHeadDrafter's saved state. The
// head's KV holds pairs (target hidden j, token j+1) that only the target's
// hidden states can rebuild, and those are gone once the target's prefill is
// over: a saved sequence carries them. The bytes (little-endian):
//   u32 version, n_embd_target, n_past, hidden_first, n_rows; u64 kv_bytes;
//   the head KV of positions [0, n_past) (KvPool::export_sequence order);
//   n_rows x n_embd_target f32: the target hidden rows from hidden_first.
#include <algorithm>
#include <cstring>

#include "speculative/draft_head.h"
#include "speculative/draft_head_shared.h"

namespace tdm {

namespace {
constexpr uint32_t kHeadStateVersion = 1;
constexpr size_t kHeadStateFixed = 5 * 4 + 8;
}  // namespace

Result<std::string> DraftHeadDrafter::save_state(uint32_t n_tokens) {
    if (n_tokens == 0) return Error("draft head: no state to save for an empty sequence");
    // a stateless head keeps nothing between rounds (no KV; it resumes from the next rows)
    if (stateless()) return std::string();
    if (pending_) cancel();
    if (!can_resume(n_tokens))
        return Error::format("draft head: cannot save a state for {} tokens (it holds pairs up to {} and hidden rows "
                             "{}..{})",
                             n_tokens, n_past_, hidden_first_,
                             hidden_first_ + uint32_t(hidden_.size() / head_->n_embd_target));
    const uint32_t n_past = std::min(n_past_, n_tokens - 1);
    const uint32_t n_rows = n_tokens - hidden_first_;
    const uint64_t kv_bytes = head_->kv->sequence_bytes(n_past);
    std::string out;
    out.reserve(kHeadStateFixed + kv_bytes + size_t(n_rows) * head_->n_embd_target * 4);
    auto put = [&out](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
    for (uint32_t v : {kHeadStateVersion, head_->n_embd_target, n_past, hidden_first_, n_rows}) put(&v, 4);
    put(&kv_bytes, 8);
    TDM_TRY(head_->kv->export_sequence(seq_, n_past, [&](const uint8_t* p, uint64_t n) -> Status {
        put(p, size_t(n));
        return {};
    }));
    put(hidden_.data(), size_t(n_rows) * head_->n_embd_target * 4);
    return out;
}

Status DraftHeadDrafter::load_state(std::span<const int32_t> tokens, std::string_view bytes) {
    if (bytes.size() < kHeadStateFixed) return Error::format("draft head state: {} bytes, too short", bytes.size());
    uint32_t f[5];
    uint64_t kv_bytes = 0;
    std::memcpy(f, bytes.data(), sizeof f);
    std::memcpy(&kv_bytes, bytes.data() + sizeof f, 8);
    const auto [version, n_embd, n_past, hidden_first, n_rows] = f;
    if (version != kHeadStateVersion) return Error::format("draft head state: version {}, this one reads {}", version,
                                                           kHeadStateVersion);
    if (n_embd != head_->n_embd_target)
        return Error::format("draft head state: hidden rows of {} floats, the target's have {}", n_embd, head_->n_embd_target);
    const uint64_t n = tokens.size();
    if (n == 0 || hidden_first > n_past || n_past >= n || uint64_t(hidden_first) + n_rows != n)
        return Error::format("draft head state: pairs up to {} and hidden rows {}..{} do not fit {} tokens", n_past,
                             hidden_first, uint64_t(hidden_first) + n_rows, n);
    if (kv_bytes != head_->kv->sequence_bytes(n_past))
        return Error::format("draft head state: its KV of {} positions has {} bytes, this head's would have {} "
                             "(another KV type?)",
                             n_past, kv_bytes, head_->kv->sequence_bytes(n_past));
    const uint64_t hidden_bytes = uint64_t(n_rows) * n_embd * 4;
    if (bytes.size() != kHeadStateFixed + kv_bytes + hidden_bytes)
        return Error::format("draft head state: {} bytes, {} expected", bytes.size(),
                             kHeadStateFixed + kv_bytes + hidden_bytes);
    TDM_TRY(begin(tokens));
    size_t at = kHeadStateFixed;
    TDM_TRY(head_->kv->import_sequence(seq_, n_past, [&](uint8_t* dst, uint64_t m) -> Status {
        std::memcpy(dst, bytes.data() + at, size_t(m));
        at += size_t(m);
        return {};
    }));
    n_past_ = n_past;
    hidden_first_ = hidden_first;
    hidden_.resize(size_t(n_rows) * n_embd);
    std::memcpy(hidden_.data(), bytes.data() + at, size_t(hidden_bytes));
    return {};
}

}  // namespace tdm
