// host/kv/kv_pool.h: the paged KV cache of one model (DESIGN §1).
//
// Every attention layer has a K pool and a V pool of fixed-size blocks
// ([n_blocks][block_size][n_kv_head][head_dim], f16 or f32); a sequence owns a
// list of blocks, kept in a device-visible block table that attention kernels
// read, so positions are data and recorded graphs replay for any step. All
// layers of a model share the block table (a sequence occupies the same
// positions in every layer). Truncation frees whole blocks past the new length
// (rollback of rejected drafts); freeing a sequence returns all its blocks.
// Not here: recurrent state and its checkpoints (issue 6), the scheduler.
#pragma once

#include <tandem/tandem.h>

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
};

class KvPool {
public:
    static Result<std::unique_ptr<KvPool>> create(vk::Device& device, std::span<const tdm_attention_layer> layers,
                                                  const KvPoolConfig& config, std::string name);
    ~KvPool();
    KvPool(const KvPool&) = delete;
    KvPool& operator=(const KvPool&) = delete;

    uint32_t n_layers() const { return uint32_t(layers_.size()); }
    const KvLayerBinding* layer(uint32_t i) const { return &layers_[i]; }
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
    // Forgets positions >= n_tokens: frees blocks no longer needed.
    void truncate(int seq, uint32_t n_tokens);
    uint32_t reserved_tokens(int seq) const;

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
};

}  // namespace tdm
