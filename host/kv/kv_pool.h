/* SPDX-License-Identifier: Apache-2.0 */
// host/kv/kv_pool.h: the paged KV cache of one model (DESIGN §1).
//
// Every attention layer has a K pool and a V pool of fixed-size blocks
// ([n_blocks][block_size][n_kv_head][head_dim], f16 or f32); a sequence owns a
// list of blocks, kept in a device-visible block table that attention kernels
// read, so positions are data and recorded graphs replay for any step. All
// layers of a model share the block table (a sequence occupies the same
// positions in every layer). Truncation frees whole blocks past the new length
// (rollback of rejected drafts); freeing a sequence returns all its blocks.
// Recurrent states (Gated DeltaNet conv and SSM states) live here too, with
// n_checkpoints slots per sequence: a batch writes the state after each row
// into the next slots, and truncation selects the slot of that length.
// Not here: the scheduler (which lengths to keep).
#pragma once

#include <tandem/tandem.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tdm {

struct KvPoolConfig {
    uint32_t n_ctx = 4096;        // longest sequence, in tokens
    uint32_t n_seq_max = 1;       // sequences that can be live at once
    uint32_t block_size = 16;     // tokens per block
    bool f16 = true;              // storage type of K and V
    uint64_t memory_budget = 0;   // bytes; if set, sizes the pool instead of n_ctx * n_seq_max
    uint32_t n_checkpoints = 2;   // recurrent-state checkpoints per sequence (>= widest batch + 1)
};

// Where a forward pass reads and writes the recurrent states of its sequence.
struct StatePlan {
    int32_t read = 0;             // checkpoint holding the state before the batch
    std::vector<int32_t> write;   // per row: checkpoint receiving the state after it, or -1
    uint32_t first_pos = 0;
};

class KvPool {
public:
    static Result<std::unique_ptr<KvPool>> create(vk::Device& device, std::span<const tdm_attention_layer> layers,
                                                  const KvPoolConfig& config, std::string name,
                                                  std::span<const tdm_recurrent_state> states = {});
    ~KvPool();
    KvPool(const KvPool&) = delete;
    KvPool& operator=(const KvPool&) = delete;

    uint32_t n_layers() const { return uint32_t(layers_.size()); }
    const KvLayerBinding* layer(uint32_t i) const { return &layers_[i]; }
    uint32_t n_states() const { return uint32_t(states_.size()); }
    const StateBinding* state(uint32_t i) const { return &states_[i]; }
    uint64_t state_bytes() const { return state_bytes_; }  // all checkpoints of all sequences
    const KvPoolConfig& config() const { return config_; }
    uint32_t n_blocks() const { return n_blocks_; }
    uint32_t max_blocks_per_seq() const { return max_blocks_; }
    uint32_t capacity_tokens() const { return max_blocks_ * config_.block_size; }  // per sequence
    uint64_t device_bytes() const { return bytes_; }
    uint32_t free_blocks() const { return uint32_t(free_.size()); }

    // Sequences are small integers (slots into the block table).
    Result<int> add_sequence();
    void free_sequence(int seq);
    // Makes room for positions [0, n_tokens) of `seq`; error (the pool unchanged)
    // when the sequence would exceed its capacity or no block is free.
    Status reserve(int seq, uint32_t n_tokens);
    // Forgets positions >= n_tokens: frees blocks no longer needed and selects
    // the recurrent-state checkpoint of that length (an error if none holds it).
    Status truncate(int seq, uint32_t n_tokens);
    // Whether truncate(seq, n_tokens) can succeed without recomputation: always
    // for attention KV (n_tokens at most the sequence's length, which the
    // caller knows); for recurrent states only to a length a checkpoint holds.
    bool can_truncate(int seq, uint32_t n_tokens) const;
    uint32_t reserved_tokens(int seq) const;

    // Recurrent states: a batch of n rows at positions first_pos.. of `seq`.
    // Fails if the current checkpoint is not at length first_pos.
    Result<StatePlan> plan_states(int seq, uint32_t first_pos, uint32_t n) const;
    void commit_states(int seq, const StatePlan& plan);
    uint32_t state_length(int seq) const;  // tokens the current checkpoint has seen
    // A copy of recurrent state `index` of `seq` (its current checkpoint), for
    // tests and debugging: a synchronous device read.
    Result<std::vector<float>> read_state(int seq, uint32_t index) const;

    // One sequence's first n positions as bytes independent of the block layout
    // (saved sequence states; kv_transfer.cpp): for each attention layer its K
    // rows then its V rows of positions [0, n) ([n][n_kv_head][d] each, the pool's
    // element type), then each recurrent state of the current checkpoint, which
    // must have seen exactly n tokens. Streams through `sink` in pieces.
    using ByteSink = std::function<Status(const uint8_t* data, uint64_t n)>;
    using ByteSource = std::function<Status(uint8_t* data, uint64_t n)>;
    Status export_sequence(int seq, uint32_t n, const ByteSink& sink) const;
    // Replaces what live sequence `seq` holds with n positions read from `source`
    // in export_sequence()'s order; the current checkpoint then has length n. On
    // error the sequence is left empty (length 0).
    Status import_sequence(int seq, uint32_t n, const ByteSource& source);
    // Bytes per position of attention layer i: K row, V row.
    uint64_t k_row_bytes(uint32_t i) const;
    uint64_t v_row_bytes(uint32_t i) const;
    uint64_t sequence_bytes(uint32_t n) const;  // what export_sequence() streams for n positions

private:
    KvPool(vk::Device& d) : device_(d) {}
    Status write_table_row(int seq);

    vk::Device& device_;
    KvPoolConfig config_;
    std::string name_;
    std::vector<std::unique_ptr<vk::Buffer>> buffers_;  // K and V per layer, the block table
    std::vector<KvLayerBinding> layers_;
    std::vector<VkBufferView> views_;
    vk::BufferSlice table_;
    uint32_t n_blocks_ = 0, max_blocks_ = 0;
    uint64_t bytes_ = 0;
    std::vector<uint32_t> free_;                   // free block ids (stack)
    std::vector<std::vector<int32_t>> seq_blocks_; // per slot; empty + !live = unused
    std::vector<bool> live_;
    // recurrent states
    std::vector<StateBinding> states_;
    uint64_t state_bytes_ = 0;
    std::vector<int32_t> cur_;                     // per sequence: current checkpoint
    std::vector<std::vector<uint32_t>> ckpt_len_;  // per sequence, per checkpoint: length (kNoLength: invalid)
    Status zero_states(int seq);
};

}  // namespace tdm
