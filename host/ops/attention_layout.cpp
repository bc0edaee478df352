// SPDX-License-Identifier: Apache-2.0
// host/ops/attention_layout.cpp: the attention layout of a device and the split layout's
// geometry (ops/attention_layout.h says why each).
#include "ops/attention_layout.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace tdm {

AttentionLayout attention_layout(const vk::DeviceCaps& caps, const KvLayerBinding& kv) {
    const bool rl_possible = caps.prefer_texel_weights && kv.k_view && kv.v_view && kv.dk % 4 == 0 && kv.dv % 4 == 0;
    const char* e = std::getenv("TANDEM_ATTENTION_LAYOUT");
    const std::string_view forced = e ? e : "";
    if (forced == "split") return AttentionLayout::key_splits;
    if (forced == "ks") return AttentionLayout::key_chunks;
    if (forced == "rl" && rl_possible) return AttentionLayout::rows_per_lane;
    // CPU devices: rl (ks where rl cannot run). GPUs: ks until split has been timed on one
    // (docs/TUNING.md, "Attention layouts": its cost grows with the KV's capacity).
    return rl_possible ? AttentionLayout::rows_per_lane : AttentionLayout::key_chunks;
}

uint32_t attention_key_splits(uint32_t pos, uint32_t window) {
    const uint32_t k_begin = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    return pos / kAttentionSplitKeys - k_begin / kAttentionSplitKeys + 1;
}

uint32_t attention_max_splits(const KvLayerBinding& kv, uint32_t window) {
    // keys [pos + 1 - window, pos] meet at most (window - 1) / S + 2 splits
    const uint32_t by_window = window > 0 ? (window - 1) / kAttentionSplitKeys + 2 : UINT32_MAX;
    if (kv.ring_blocks) return by_window;  // a ring's positions grow without bound
    const uint64_t capacity = uint64_t(kv.max_blocks) * kv.block_size;
    const uint32_t by_capacity = uint32_t((capacity + kAttentionSplitKeys - 1) / kAttentionSplitKeys);
    return std::max<uint32_t>(1, std::min(by_window, by_capacity));
}

uint32_t attention_split_tokens(uint32_t n_tokens, uint32_t n_head, uint32_t dv, uint32_t max_splits) {
    const uint64_t per_token = uint64_t(n_head) * max_splits * (dv + 2) * sizeof(float);
    return uint32_t(std::clamp<uint64_t>(kAttentionPartialBytes / per_token, 1, std::max(n_tokens, 1u)));
}

}  // namespace tdm
