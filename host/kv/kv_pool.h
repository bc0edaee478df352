/* SPDX-License-Identifier: Apache-2.0 */
// host/kv/kv_pool.h: the paged KV cache of one model (DESIGN §1).
//
// Every full-attention layer has a K pool and a V pool of fixed-size blocks
// ([n_blocks][block_size][n_kv_head][head_dim], f16 or f32); a sequence owns a
// list of blocks, kept in a device-visible block table that attention kernels
// read, so positions are data and recorded graphs replay for any step. The full
// layers share that block table (a sequence occupies the same positions in each).
// A sliding-window layer instead keeps a ring of blocks per sequence slot, with a
// table of its own (kv_layout.h: sizes, the position -> slot mapping), so its
// memory does not grow with the context. Truncation frees whole blocks past the
// new length (rollback of rejected drafts); a ring needs no data movement, only
// that the positions the next query reads are still in it (the invariant below);
// freeing a sequence returns all its blocks.
// Blocks are reference-counted: share_prefix() gives a second sequence the full blocks of
// another's prefix (a system prompt computed once); a batch about to write into a shared
// block first copies it (copy-on-write), so neither sequence sees the other's rows.
// Recurrent states (Gated DeltaNet conv and SSM states) live here too, with
// n_checkpoints slots per sequence: a batch writes the state after each row
// into a slot of its own (the lowest ones besides the slot it reads: plan_states),
// and truncation selects the slot of that length.
// Not here: the scheduler (which lengths to keep).
//
// Ring invariant. A windowed layer of window W must hold, for a sequence of
// length L, the positions [L - W + 1, L) the next query reads (clipped at 0);
// the ring has lost every position below stored - R * block_size, where `stored`
// is the highest position written + 1 since the sequence was last emptied
// (rejected drafts included: truncation does not unwrite them). So a truncation
// to L is possible iff L - W + 1 >= stored - R * block_size, and the ring size
// (R * block_size >= W + rows_max - 1) makes that hold for every rollback of a
// batch of at most rows_max rows. truncate() refuses, and can_truncate() says
// false, where it does not hold; begin_batch() checks it for each batch.
#pragma once

#include <tandem/tandem.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kv/kv_layout.h"

namespace tdm {

// The most recurrent-state checkpoints per sequence, up to `want`, with which every state of
// n_seq sequences fits one binding of `max_binding` bytes (KvPool::create refuses more);
// `want` when the model has no recurrent state, 0 when not even 2 fit.
uint32_t checkpoints_that_fit(std::span<const tdm_recurrent_state> states, uint32_t n_seq, uint64_t max_binding,
                              uint32_t want);

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
    const KvLayout& layout() const { return layout_; }
    bool has_rings() const { return has_rings_; }
    uint32_t n_blocks() const { return n_blocks_; }
    uint32_t max_blocks_per_seq() const { return max_blocks_; }
    uint32_t capacity_tokens() const { return max_blocks_ * config_.block_size; }  // per sequence
    uint64_t device_bytes() const { return bytes_; }
    uint32_t free_blocks() const { return uint32_t(free_.size()); }

    // Sequences are small integers (slots into the block table).
    Result<int> add_sequence();
    // Whether share_prefix() works here: not with sliding-window rings or recurrent states,
    // whose memory is per sequence.
    bool can_share() const { return !has_rings_ && states_.empty(); }
    // Makes the empty sequence `dst` hold positions [0, m) of `src` by sharing its blocks,
    // m = the whole blocks of src's first n_tokens positions (it must hold them). Returns m
    // (0: nothing shared).
    Result<uint32_t> share_prefix(int src, int dst, uint32_t n_tokens);
    // Blocks used by more than one sequence (for tests and metrics).
    uint32_t shared_blocks() const;
    // Shared blocks of `seq` holding positions [first, last]: the free blocks a batch there
    // takes for its copies, besides those reserve() adds.
    uint32_t copies_needed(int seq, uint32_t first, uint32_t last) const;
    void free_sequence(int seq);
    // Makes room for positions [0, n_tokens) of `seq`; error (the pool unchanged)
    // when the sequence would exceed its capacity or no block is free.
    Status reserve(int seq, uint32_t n_tokens);
    // A forward pass is about to store positions [first, last] of `seq` (all its
    // rows, before attention reads any): reserve(seq, last + 1), and, in a pool
    // with sliding-window rings, a check that the batch is at most rows_max
    // positions wide and that every ring still holds what its queries read. On
    // error nothing changed and the batch must not run.
    Status begin_batch(int seq, uint32_t first, uint32_t last);
    // Forgets positions >= n_tokens: frees blocks no longer needed and selects
    // the recurrent-state checkpoint of that length (an error if none holds it,
    // or if a sliding-window ring no longer holds the positions before n_tokens
    // that the next query reads; the pool is then unchanged).
    Status truncate(int seq, uint32_t n_tokens);
    // Whether truncate(seq, n_tokens) can succeed without recomputation: for
    // full attention KV always (n_tokens at most the sequence's length, which
    // the caller knows); for recurrent states only to a length a checkpoint
    // holds; for sliding-window layers only where the ring invariant holds.
    bool can_truncate(int seq, uint32_t n_tokens) const;
    uint32_t reserved_tokens(int seq) const;
    // Copies, in order, the K and V of position `from` to position `to` of `seq` in every
    // attention layer, on the device (a draft tree's accepted path made consecutive:
    // kv_move.cpp). Both must be reserved (and still in a ring). Each move sees the rows
    // as the moves before it left them (the path 0, 2, 3 moves 2 -> 1, then 3 -> 2).
    struct RowMove {
        uint32_t from = 0, to = 0;
    };
    Status move_rows(int seq, std::span<const RowMove> moves);

    // Recurrent states: a batch of n rows at positions first_pos.. of `seq`, writing a
    // checkpoint after each row for which `checkpointed(i)` holds (all rows when empty) and
    // after its last; when those do not fit beside the one it reads, after its last only.
    // It takes the lowest checkpoints other than the one it reads, so a sequence decoding
    // without drafts alternates between checkpoints 0 and 1 and the rest of a speculative
    // pool's (one per verify row) is written only by verifies: pages never written are never
    // faulted in (lavapipe's device memory is the process's; in this machine's VM a fault
    // costs some 5 us, and 16 sequences of Qwen3.5-0.8B write 300 MB of states per pass).
    // Fails if the current checkpoint is not at length first_pos.
    Result<StatePlan> plan_states(int seq, uint32_t first_pos, uint32_t n,
                                  const std::function<bool(uint32_t row)>& checkpointed = {}) const;
    // Until release_states(seq), plan_states writes over no checkpoint of `seq` holding a
    // length >= `length`: for a caller that may roll back over several passes (a draft
    // model drafts a token a pass and returns to any of them), where the lowest checkpoints
    // would otherwise be taken again by the next pass. truncate(seq, 0) releases them too.
    void keep_states_from(int seq, uint32_t length);
    void release_states(int seq);
    void commit_states(int seq, const StatePlan& plan);
    // Undoes commit_states after the pass failed: the checkpoint it read is current
    // again, and those it was writing hold nothing.
    void abandon_states(int seq, const StatePlan& plan);
    uint32_t state_length(int seq) const;  // tokens the current checkpoint has seen
    // A copy of recurrent state `index` of `seq` (its current checkpoint), for
    // tests and debugging: a synchronous device read.
    Result<std::vector<float>> read_state(int seq, uint32_t index) const;

    // One sequence's first n positions as bytes independent of the block layout
    // (saved sequence states; kv_transfer.cpp): for each attention layer its K
    // rows then its V rows of its last export_rows(layer, n) positions ([m][n_kv_head][d]
    // each, the pool's element type): all n for a full layer, the last min(n, W)
    // for a layer of window W (what attention can still read, whether the pool
    // keeps it in a ring or not); then each recurrent state of the current
    // checkpoint, which must have seen exactly n tokens. Streams through `sink`
    // in pieces. Fails if a ring no longer holds those positions.
    using ByteSink = std::function<Status(const uint8_t* data, uint64_t n)>;
    using ByteSource = std::function<Status(uint8_t* data, uint64_t n)>;
    Status export_sequence(int seq, uint32_t n, const ByteSink& sink) const;
    // Replaces what live sequence `seq` holds with n positions read from `source`
    // in export_sequence()'s order; the current checkpoint then has length n. On
    // error the sequence is left empty (length 0). Windowed layers then hold only
    // the imported rows: the sequence can be truncated by one position at most.
    Status import_sequence(int seq, uint32_t n, const ByteSource& source);
    // Positions of attention layer i that export_sequence() streams for a sequence of n.
    uint32_t export_rows(uint32_t i, uint32_t n) const;
    // Bytes per position of attention layer i: K row, V row.
    uint64_t k_row_bytes(uint32_t i) const;
    uint64_t v_row_bytes(uint32_t i) const;
    uint64_t sequence_bytes(uint32_t n) const;  // what export_sequence() streams for n positions

    // Device block id of block index `b` (position / block_size) of `seq` in attention layer i.
    int32_t block_id(int seq, uint32_t i, uint32_t b) const;
    // The lowest position attention layer i still holds for `seq` once positions
    // up to `stored` (exclusive) have been written (the ring invariant above).
    uint32_t held_from(int seq, uint32_t i, uint32_t stored) const;

private:
    KvPool(vk::Device& d) : device_(d) {}
    Status write_table_row(int seq);
    // Gives back one reference to a block; the last one frees it.
    void release(int32_t block);
    // Copies every shared block of `seq` holding positions [first, last] to a block of its
    // own (copy-on-write), before a batch writes there.
    Status make_writable(int seq, uint32_t first, uint32_t last);
    // The first windowed layer of `seq` that lacks some of the positions
    // [pos - keep, pos) (clipped at 0; keep = window - 1, what the query at pos
    // reads, or window for an export) once positions up to `stored` (exclusive)
    // have been written; -1 if every one holds them.
    int32_t windows_missing(int seq, uint32_t pos, uint32_t stored, bool for_export) const;
    std::string ring_message(int seq, int32_t layer, uint32_t pos, uint32_t stored) const;

    vk::Device& device_;
    KvPoolConfig config_;
    std::string name_;
    std::vector<std::unique_ptr<vk::Buffer>> buffers_;  // K and V per layer, the block table
    std::vector<KvLayerBinding> layers_;
    std::vector<VkBufferView> views_;
    vk::BufferSlice table_;
    vk::BufferSlice table_host_;  // staged I/O only: what the host writes (KvLayerBinding::block_table_source)
    KvLayout layout_;
    bool has_rings_ = false;
    std::vector<uint32_t> stored_;                 // per sequence: highest position written + 1 since emptied
    std::vector<uint32_t> imported_;               // per sequence: length of the import it holds (0: none)
    uint32_t n_blocks_ = 0, max_blocks_ = 0;
    uint64_t bytes_ = 0;
    std::vector<uint32_t> free_;                   // free block ids (stack)
    std::vector<uint32_t> refs_;                   // per block: sequences holding it
    std::vector<std::vector<int32_t>> seq_blocks_; // per slot; empty + !live = unused
    std::vector<bool> live_;
    // recurrent states
    std::vector<StateBinding> states_;
    uint64_t state_bytes_ = 0;
    std::vector<int32_t> cur_;                     // per sequence: current checkpoint
    std::vector<uint32_t> keep_from_;              // per sequence: lengths plan_states keeps (keep_states_from)
    std::vector<std::vector<uint32_t>> ckpt_len_;  // per sequence, per checkpoint: length (kNoLength: invalid)
    Status zero_states(int seq);
};

}  // namespace tdm
