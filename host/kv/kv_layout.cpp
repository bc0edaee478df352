// SPDX-License-Identifier: Apache-2.0
// host/kv/kv_layout.cpp
#include "kv/kv_layout.h"

#include <algorithm>
#include <set>

#include "vk/memory.h"

namespace tdm {

uint32_t ring_blocks_for(uint32_t window, uint32_t rows_max, uint32_t block_size) {
    const uint64_t positions = uint64_t(window) + std::max<uint32_t>(rows_max, 1) - 1;
    return uint32_t(std::min<uint64_t>((positions + block_size - 1) / block_size, 0xffffffffu));
}

Result<KvLayout> plan_kv_layout(std::span<const tdm_attention_layer> layers,
                                std::span<const tdm_recurrent_state> states, const KvPoolConfig& config) {
    if (config.block_size == 0 || config.n_seq_max == 0)
        return Error("KV pool: block size and sequence count must be > 0");
    const uint64_t es = config.f16 ? 2 : 4;
    const uint64_t bs = config.block_size;
    const uint32_t blocks_per_seq = uint32_t((uint64_t(config.n_ctx) + bs - 1) / bs);
    KvLayout out;
    std::set<uint32_t> ring_sizes;
    for (const auto& l : layers) {
        if (l.n_kv_head == 0 || l.head_dim_k == 0 || l.head_dim_v == 0 || l.head_dim_k % 4 || l.head_dim_v % 4)
            return Error::format("KV pool: attention layer with {} kv heads of dims {}/{} is not supported (dims must "
                                 "be non-zero multiples of 4)",
                                 l.n_kv_head, l.head_dim_k, l.head_dim_v);
        const uint64_t block_bytes = bs * l.n_kv_head * (uint64_t(l.head_dim_k) + l.head_dim_v) * es;
        uint32_t ring = 0;
        if (l.window > 0) {
            ring = ring_blocks_for(l.window, config.rows_max, config.block_size);
            // no gain over keeping the whole context (0 blocks per sequence: unbounded, budget-sized)
            if (blocks_per_seq && ring >= blocks_per_seq) ring = 0;
        }
        out.ring_blocks.push_back(ring);
        if (ring) {
            out.ring_bytes += uint64_t(config.n_seq_max) * ring * block_bytes;
            ring_sizes.insert(ring);
        } else {
            out.linear_block_bytes += block_bytes;
        }
    }
    for (uint32_t r : ring_sizes) out.table_bytes += uint64_t(config.n_seq_max) * r * 4;
    if (config.memory_budget) {
        if (layers.empty()) return Error("KV pool: a memory budget was given for a model without attention");
        if (config.memory_budget < out.ring_bytes)
            return Error::format("KV pool: the memory budget of {} does not hold the sliding-window rings ({} for {} "
                                 "sequences)",
                                 vk::format_bytes(config.memory_budget), vk::format_bytes(out.ring_bytes),
                                 config.n_seq_max);
        if (out.linear_block_bytes) {
            const uint64_t n = (config.memory_budget - out.ring_bytes) / out.linear_block_bytes;
            if (n == 0)
                return Error::format("KV pool: the memory budget of {} holds no block ({} per block of {} tokens{})",
                                     vk::format_bytes(config.memory_budget), vk::format_bytes(out.linear_block_bytes),
                                     config.block_size,
                                     out.ring_bytes ? fmt::format(" after the sliding-window rings' {}",
                                                                  vk::format_bytes(out.ring_bytes))
                                                    : std::string());
            out.n_blocks = uint32_t(std::min<uint64_t>(n, 1u << 30));
        } else {
            // only rings: the linear block list is bookkeeping of the context length
            out.n_blocks = blocks_per_seq ? blocks_per_seq * config.n_seq_max : (1u << 30);
        }
        out.max_blocks = std::min(out.n_blocks, blocks_per_seq ? blocks_per_seq : out.n_blocks);
    } else {
        out.n_blocks = blocks_per_seq * config.n_seq_max;
        out.max_blocks = blocks_per_seq;
    }
    if (out.max_blocks == 0) return Error("KV pool: context length must be > 0");
    out.table_bytes += uint64_t(config.n_seq_max) * out.max_blocks * 4;
    out.linear_bytes = uint64_t(out.n_blocks) * out.linear_block_bytes;
    for (const auto& s : states) out.state_bytes += uint64_t(config.n_seq_max) * config.n_checkpoints * s.n_f32 * 4;
    return out;
}

}  // namespace tdm
