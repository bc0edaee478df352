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
    // CPU devices: rl (ks where rl cannot run): a CPU has a few cores, which the batch's
    // tokens fill without splitting their keys. GPUs: split.
    if (rl_possible) return AttentionLayout::rows_per_lane;
    return caps.is_cpu() ? AttentionLayout::key_chunks : AttentionLayout::key_splits;
}

uint32_t attention_key_splits(uint32_t pos, uint32_t window) {
    const uint32_t k_begin = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    return pos / kAttentionSplitKeys - k_begin / kAttentionSplitKeys + 1;
}

uint32_t attention_splits_in_use(std::span<const int32_t> positions, uint32_t window) {
    uint32_t splits = 1;
    for (const int32_t p : positions) splits = std::max(splits, attention_key_splits(uint32_t(std::max(p, 0)), window));
    return splits;
}

uint32_t attention_max_splits(const KvLayerBinding& kv, uint32_t window) {
    // keys [pos + 1 - window, pos] meet at most (window - 1) / S + 2 splits
    const uint32_t by_window = window > 0 ? (window - 1) / kAttentionSplitKeys + 2 : UINT32_MAX;
    if (kv.ring_blocks) return by_window;  // a ring's positions grow without bound
    const uint64_t capacity = uint64_t(kv.max_blocks) * kv.block_size;
    const uint32_t by_capacity = uint32_t((capacity + kAttentionSplitKeys - 1) / kAttentionSplitKeys);
    return std::max<uint32_t>(1, std::min(by_window, by_capacity));
}

}  // namespace tdm
