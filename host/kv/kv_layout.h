/* SPDX-License-Identifier: Apache-2.0 */
// host/kv/kv_layout.h: how a KV pool of a given configuration is laid out and how
// many bytes it takes, from the model's declared layers alone (no device):
// KvPool::create allocates exactly this, and the memory plan shown before loading
// (host/cli/memory_plan.cpp) and `tandem info` report it.
//
// Full-attention layers (window 0) keep every position: blocks of block_size
// tokens from one pool of n_blocks, found through a per-sequence block table.
// A sliding-window layer (window W > 0) keeps a ring of R blocks per sequence,
// R = ceil((W + rows_max - 1) / block_size), where rows_max is the most positions
// one forward pass stores: position p lives in ring block (p / block_size) % R at
// slot p % block_size, i.e. at p mod (R * block_size). Every row of a batch is
// stored before attention reads, so the ring must hold the W - 1 positions before
// the batch's first row plus the batch itself: W + rows_max - 1 positions.
// (Whole blocks give R * block_size - (W + rows_max - 1) < block_size spare
// positions, which also let a truncation drop that many more rejected rows.)
// A windowed layer whose ring would not be shorter than the whole context is kept
// linear, as a full layer is. Not here: the pool itself (kv_pool.h).
#pragma once

#include <tandem/tandem.h>

#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"

namespace tdm {

struct KvPoolConfig {
    uint32_t n_ctx = 4096;        // longest sequence, in tokens
    uint32_t n_seq_max = 1;       // sequences that can be live at once
    uint32_t block_size = 16;     // tokens per block
    bool f16 = true;              // storage type of K and V
    uint64_t memory_budget = 0;   // bytes; if set, sizes the pool instead of n_ctx * n_seq_max
    uint32_t n_checkpoints = 2;   // recurrent-state checkpoints per sequence (>= widest batch + 1)
    // The most positions one forward pass stores per sequence (the prefill chunk,
    // n_batch, or the widest verify, draft_max + 1): sizes sliding-window rings.
    // A pool with rings refuses a wider batch (KvPool::begin_batch).
    uint32_t rows_max = 256;
};

// The widest prefill chunk a pool with rings is sized for, whatever -b asks: each ring holds
// window + rows_max - 1 positions, so -b 512 would add 25% to the rings of Gemma 4 31B at 32k
// (1.115x the KV formula instead of 1.055x). Prefill in rings runs in chunks of at most this.
inline constexpr uint32_t kRingPrefillRowsMax = 256;

// rows_max for a prefill chunk of n_batch and verify passes of up to verify_rows rows.
inline uint32_t ring_rows_max(uint32_t n_batch, uint32_t verify_rows) {
    return n_batch < kRingPrefillRowsMax ? (n_batch > verify_rows ? n_batch : verify_rows)
                                         : (kRingPrefillRowsMax > verify_rows ? kRingPrefillRowsMax : verify_rows);
}

// Blocks per sequence of a sliding-window ring (see the file comment).
uint32_t ring_blocks_for(uint32_t window, uint32_t rows_max, uint32_t block_size);

struct KvLayout {
    std::vector<uint32_t> ring_blocks;  // per attention layer: its ring's blocks per sequence; 0 = linear
    uint32_t n_blocks = 0;              // blocks of each linear layer's pool
    uint32_t max_blocks = 0;            // linear blocks one sequence may hold (the context)
    uint64_t linear_block_bytes = 0;    // K + V of one block of every linear layer
    uint64_t table_bytes = 0;           // the linear block table and one table per distinct ring size
    uint64_t linear_bytes = 0;          // K + V of the linear layers
    uint64_t ring_bytes = 0;            // K + V of the rings
    uint64_t state_bytes = 0;           // recurrent states, all checkpoints
    uint64_t total_bytes() const { return table_bytes + linear_bytes + ring_bytes + state_bytes; }
};

// The layout KvPool::create builds. Errors: unsupported head dims, an empty
// context, a memory budget that holds no block (or not even the rings).
Result<KvLayout> plan_kv_layout(std::span<const tdm_attention_layer> layers,
                                std::span<const tdm_recurrent_state> states, const KvPoolConfig& config);

}  // namespace tdm
