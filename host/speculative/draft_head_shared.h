/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/draft_head_shared.h: what the drafters of one draft head share
// (private to draft_head*.cpp): the plugin's head object, its weights, its KV pool (one
// sequence per drafter) and the compiled draft graphs, which one submission at a time
// uses; a graph's tokens are copied out of it (settle) before it runs again.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "graph/executor.h"
#include "model/weight_store.h"
#include "plugin/handles.h"
#include "speculative/draft_head.h"

namespace tdm {

class DraftHead : public DraftBatcher {
public:
    // A compiled round: catch-up rows of n_seq sequences, then k - 1 chained steps.
    struct Chain {
        std::unique_ptr<CompiledGraph> cg;
        uint32_t n_rows = 0, n_seq = 0, k = 0;
        uint32_t vocab = 0;  // tdm_batch_desc.draft_vocab asked of each step (0: the head's choice)
        uint32_t width = 0;  // the width its draft logits have (0: all ids, or the head picks its tokens)
        TensorId tokens0 = 0, pos0 = 0, seq0 = 0, rows0 = 0;
        TensorId hidden0 = 0;       // the catch-up's target rows, written by the host, or
        TensorId hidden_index = 0;  // their row indices into the device table
        std::vector<TensorId> pos4;   // per step, when the head asked for M-RoPE positions (0: none)
        std::vector<TensorId> pos_j;  // steps 1..k-1: one position per sequence
        TensorId seq1 = 0, rows1 = 0;
        std::vector<TensorId> ids;    // per step: one token per sequence (argmax or the head's choice)
        TensorId attn_pos = 0;        // constant-position heads: the attention's causal bound, p - 1
        // A block head's round (draft_head_block.cpp): n_rows context rows, then `block` rows
        // whose attention bound is key_bound; ids[0] holds one pick per output row: every
        // block row, or (drafted_rows) block rows 1 .. k only.
        uint32_t block = 0;
        bool drafted_rows = false;
        TensorId key_bound = 0;
        std::shared_ptr<DraftHeadDrafter::Run> last;  // the last submission
        uint64_t last_used = 0;
    };

    // A compiled level of a tree (draft_head_tree.cpp): one step over n_rows rows, n_out of
    // them output rows, whose logits and next hiddens come back to the host. The first level
    // reads the target's rows (a stateless head's one row, or a catch-up whose last row
    // drafts under the root); the others read the head's own hiddens, one row per expanded
    // node, and a head with a KV of its own reads it as a tree (KvTreeRow).
    struct Level {
        std::unique_ptr<CompiledGraph> cg;
        TensorId tokens = 0, pos = 0, seq = 0, rows = 0, hidden = 0, attn_pos = 0, pos4 = 0, kv_tree = 0;
        TensorId logits = 0, hidden_out = 0;
        uint32_t width = 0, hidden_width = 0;
    };

    ~DraftHead() override;
    // The drafters of this head among `drafters` draft in one graph (draft_head_seq.cpp).
    void prepare_batch(std::span<Drafter* const> drafters, std::span<const DraftRequest> reqs) override;
    bool stateless() const { return (info.flags & TDM_DRAFT_HEAD_STATELESS) != 0; }
    // The compiled round, reading the catch-up's target rows from `device_rows` by index
    // (null: from a host input), its steps asked for logits over the first `vocab` ids (0:
    // the head's choice).
    Result<Chain*> chain(uint32_t n_rows, uint32_t n_seq, uint32_t k, const DeviceWeight* device_rows,
                         uint32_t vocab);
    // A step graph of batch `b` with this head's inputs, its own KV layers and the target's
    // layers it reads bound: what every round's graph (chain, block, tree level) starts from.
    std::unique_ptr<tdm_graph> step_graph(const tdm_batch_desc& b) const;
    // The target rows of `n` rows gathered from `device_rows` by index (the verify's table
    // stays where it is); `index` gets the index input.
    Result<TensorId> gather_target_rows(tdm_graph& g, const DeviceWeight* device_rows, uint32_t n,
                                        TensorId& index) const;
    // A block head's round of n_ctx context rows drafting k tokens (draft_head_block.cpp);
    // chain() for it.
    Result<std::unique_ptr<Chain>> block_chain(uint32_t n_ctx, uint32_t k, const DeviceWeight* device_rows,
                                               uint32_t vocab);
    // Writes a block round's inputs but the context rows' target rows: the context rows
    // [first, p) of `history` and the block at p (draft_head_block.cpp).
    void fill_block(Chain& c, std::span<const int32_t> history, uint32_t first, uint32_t p, int32_t seq) const;
    // chain(), falling back to host rows when the head refuses the gathered input.
    Result<Chain*> chain_for(uint32_t n_rows, uint32_t n_seq, uint32_t k, const DeviceWeight* device_rows,
                             uint32_t vocab);
    // The vocabulary of the round drafting `reqs` (opt.auto_vocab: the widest that any of
    // its sequences needs; else 0, the head's choice).
    uint32_t round_vocab(std::span<const DraftRequest> reqs) const;
    bool busy(const Chain& c) const;
    // Waits for a submission and copies its tokens out (once).
    void settle(DraftHeadDrafter::Run& r);
    Status check_finite(const Chain& c) const;  // nan_debug: what the probes of c's last run caught
    Status check_finite(const CompiledGraph& cg) const;
    // The compiled tree level (null: the head picks its own tokens, so it has no logits to
    // rank children by, and it drafts chains).
    Result<Level*> level(uint32_t n_rows, uint32_t n_out, bool from_draft);
    // d's tree for `req` (d is ready_for() it), grown level by level (tree_growth.h).
    Result<DraftTree> grow(DraftHeadDrafter& d, const DraftRequest& req);
    // Runs d's committed pairs up to `until` - chunk in chunks, synchronously (a prompt).
    Status catch_up(DraftHeadDrafter& d, std::span<const int32_t> history, uint32_t until);
    // One graph drafting reqs[i] for ds[i] (each ready_for() it; k: the largest asked).
    Result<std::shared_ptr<DraftHeadDrafter::Run>> submit(std::span<DraftHeadDrafter* const> ds,
                                                          std::span<const DraftRequest> reqs);

    std::string name;
    const DraftHeadEntry* entry = nullptr;
    std::shared_ptr<const ModelSource> source;
    tdm_model_source src_handle;
    tdm_options options;
    tdm_draft_head_info info{};
    std::vector<tdm_attention_layer> own_layers;  // info.own_layers points here (host copies)
    void* head = nullptr;
    std::unique_ptr<WeightStore> weights;
    std::unique_ptr<KvPool> kv;
    const KvPool* target_kv = nullptr;
    // n_embd_target: the width of the target rows the first step reads (the target's n_embd,
    // or the concatenation of `taps`, which tap_point stands for: model/feature_taps.h)
    uint32_t n_embd_target = 0, n_vocab = 0;
    std::vector<tdm_feature_tap> taps;  // tdm.target_features request(), in its order
    tdm_hidden_point tap_point = TDM_HIDDEN_NONE;
    vk::Device* device = nullptr;
    vk::PipelineManager* pipelines = nullptr;
    DraftHeadOptions opt;
    bool batched = false;  // TDM_DRAFT_HEAD_BATCHED, and opt.batch
    // TDM_DRAFT_HEAD_BLOCK (tandem/ext/block_draft.h): rows per block (0: a chained head)
    uint32_t block_size = 0;
    int32_t mask_token = 0;
    // declare_drafted_rows() (block_draft.h version 2): its block steps give outputs for the
    // drafted rows only, so a round's graph is compiled per draft count
    bool drafted_rows = false;
    // Compiled rounds by shape. A server's rounds come in many shapes (the catch-up rows of
    // all its requests): past opt.graph_limit the least recently used idle one goes.
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, const DeviceWeight*, uint32_t>, std::unique_ptr<Chain>> chains;
    uint64_t chain_uses = 0;
    // Compiled tree levels by (rows, output rows, reads the head's own hiddens).
    std::map<std::tuple<uint32_t, uint32_t, bool>, std::unique_ptr<Level>> levels;
    bool picks_tokens = false;  // a step set TDM_OUTPUT_DRAFT_TOKENS: no trees
    const DeviceWeight* device_table = nullptr;  // the table the cached device chains read
    uint64_t rows_on_device = 0, rows_from_host = 0, batched_graphs = 0;
    std::map<uint32_t, uint64_t> rounds_by_vocab;  // submitted rounds by Chain::width
    // The head built a step with other logits than asked for (a head that predates
    // tdm_batch_desc.draft_vocab, or one that picks its own tokens): it is asked no more,
    // so its rounds do not get a graph per width that all compute the same.
    bool ignores_vocab = false;
};

struct DraftHeadDrafter::Run {
    DraftHead::Chain* chain = nullptr;  // until settled: the chain may be evicted after
    uint32_t n_seq = 0, k = 0;          // the chain's
    bool settled = false;  // waited for, its tokens copied
    Status status;
    std::vector<int32_t> tokens;  // [k][n_seq]
};

}  // namespace tdm
