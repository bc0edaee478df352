// SPDX-License-Identifier: Apache-2.0
// host/kv/kv_move.cpp: KvPool::move_rows, the device copies that put the K/V a draft tree's
// accepted path left at its nodes' slots into consecutive positions
// (speculative/draft_tree.h). Not here: which rows move (the tree), truncation (kv_pool.cpp).
#include "kv/kv_pool.h"

#include <algorithm>

#include "vk/recorder.h"

namespace tdm {

Status KvPool::move_rows(int seq, std::span<const RowMove> moves) {
    if (moves.empty()) return {};
    TDM_ASSERT(seq >= 0 && size_t(seq) < live_.size() && live_[size_t(seq)]);
    const uint32_t bs = config_.block_size;
    for (const RowMove& m : moves)
        if (std::max(m.from, m.to) >= reserved_tokens(seq) || std::max(m.from, m.to) >= stored_[size_t(seq)])
            return Error::format("{}: sequence {} holds no row {} to move to {}", name_, seq, m.from, m.to);
    auto cb = TDM_TRY(vk::CommandBuffer::create(device_));
    TDM_TRY(cb->begin());
    for (const RowMove& m : moves) {
        for (uint32_t i = 0; i < n_layers(); ++i) {
            const KvLayerBinding& l = layers_[i];
            const uint64_t kr = k_row_bytes(i), vr = v_row_bytes(i);
            const uint64_t from = uint64_t(block_id(seq, i, m.from / bs)) * bs + m.from % bs;
            const uint64_t to = uint64_t(block_id(seq, i, m.to / bs)) * bs + m.to % bs;
            cb->record_copy(l.k.sub(from * kr, kr), l.k.sub(to * kr, kr), kr);
            cb->record_copy(l.v.sub(from * vr, vr), l.v.sub(to * vr, vr), vr);
        }
        cb->record_barrier();  // the next move may overwrite the row this one reads
    }
    TDM_TRY(cb->end());
    return cb->submit_and_wait();
}

}  // namespace tdm
