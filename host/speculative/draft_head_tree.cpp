// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_head_tree.cpp: a draft head grows a draft tree (tree_growth.h),
// one graph per level, for one sequence.
//
// The first level is the chain's first step (a stateless head's one row, or the catch-up
// over the committed pairs, whose last row, at head position p - 1, drafts under the
// root); its logits give the root's children and its next hidden feeds them. Each later
// level runs one row per expanded node: the node's token and its parent's next hidden.
// A stateless, constant-position head runs them as independent rows at p over the
// target's committed KV (< p). A head with a KV of its own runs the node at depth d at
// head position p - 1 + d as a tree row (graph/graph.h, KvTreeRow, base p - 1): it stores
// its entry at slot p - 1 + (its expansion slot) and attends to the committed pairs and
// its own ancestors' entries, never its siblings'. After the round the head keeps only
// the committed pairs (accept() truncates to them), as after a chain: nothing of the
// tree is left in its KV.
// Not here: the chain rounds and batched drafting (draft_head.cpp, draft_head_seq.cpp).
#include <algorithm>
#include <cstring>

#include "plugin/abi_structs.h"
#include "speculative/draft_head_shared.h"
#include "speculative/tree_growth.h"

namespace tdm {

namespace {

// The KV entries a tree of `shape` writes: the root's and one per expanded node, at most.
uint32_t tree_kv_slots(const TreeShape& shape) {
    return std::min(kKvTreeMaxNodes, 1 + (std::max(shape.steps, 1u) - 1) * std::max(shape.topk, 1u));
}

// `shape`, with fewer levels where the head's KV has room for fewer than its slots (near the
// end of the context): a shorter tree drafts on where a refused reservation would have
// turned the head off for the rest of the request. `room` >= 1: the root's entry, at p - 1,
// fits whenever the target can still run p.
TreeShape tree_within_room(TreeShape shape, uint32_t room) {
    if (tree_kv_slots(shape) <= room) return shape;
    shape.steps = 1 + (std::max(room, 1u) - 1) / std::max(shape.topk, 1u);
    return shape;
}

}  // namespace

Result<DraftHead::Level*> DraftHead::level(uint32_t n_rows, uint32_t n_out, bool from_draft) {
    const auto key = std::make_tuple(n_rows, n_out, from_draft);
    if (auto it = levels.find(key); it != levels.end()) return it->second.get();
    if (levels.size() >= std::max<size_t>(opt.graph_limit, 1)) levels.clear();  // run synchronously: none busy
    auto L = std::make_unique<Level>();
    tdm_batch_desc b{sizeof(tdm_batch_desc), n_rows, n_out, 0};
    auto g = step_graph(b);
    L->tokens = g->tokens;
    L->pos = g->positions;
    L->seq = g->seq_ids;
    L->rows = g->output_rows;
    if (info.flags & TDM_DRAFT_HEAD_CONSTANT_POSITION) {
        L->attn_pos = g->graph.input(DType::I32, {n_rows}, "attn_pos");
        g->graph.set_batch(L->attn_pos, L->seq);
    }
    if (from_draft) {
        // the head's own next hiddens, as a chain's later steps read them
        L->hidden_width = info.n_embd ? info.n_embd : n_embd_target;
        g->target_hidden = g->graph.input(DType::F32, {L->hidden_width, n_rows}, "draft_hidden");
    } else {
        L->hidden_width = n_embd_target;
    }
    g->taps.target_step = !from_draft;
    char err[1024] = {0};
    if (entry->desc->build_step(head, g.get(), &b, err, sizeof err) != TDM_OK)
        return Error::format("building draft head {} tree step: {}", entry->desc->name,
                             plugin_message(err, sizeof err, "failed"));
    if (g->outputs[TDM_OUTPUT_DRAFT_TOKENS]) {
        picks_tokens = true;
        return nullptr;
    }
    L->logits = g->outputs[TDM_OUTPUT_LOGITS];
    L->hidden_out = g->outputs[TDM_OUTPUT_HIDDEN_DRAFT];
    if (!L->logits || g->graph.tensor(L->logits).cols() > int64_t(n_vocab) ||
        g->graph.tensor(L->logits).rows() != int64_t(n_out))
        return Error::format("draft head {}: step logits must be [n <= {}, {}]", entry->desc->name, n_vocab, n_out);
    if (!L->hidden_out)
        return Error::format("draft head {} sets no TDM_OUTPUT_HIDDEN_DRAFT, so it cannot grow a tree",
                             entry->desc->name);
    L->width = uint32_t(g->graph.tensor(L->logits).cols());
    L->hidden = g->target_hidden;
    if (!L->hidden) return Error::format("draft head {}: a step that reads no hidden state", entry->desc->name);
    L->pos4 = g->positions4;
    if (kv && from_draft) {
        L->kv_tree = g->graph.input(DType::I32, {kKvTreeInts, int64_t(n_rows)}, "kv_tree");
        g->graph.attach_kv_tree(g->positions, L->kv_tree);
    }
    TDM_TRY(g->graph.mark_output(L->logits));
    TDM_TRY(g->graph.mark_output(L->hidden_out));
    CompileOptions co;
    co.probe_non_finite = opt.nan_debug;
    L->cg = TDM_TRY(CompiledGraph::compile(*device, *pipelines, std::move(g->graph), co));
    Level* out = L.get();
    levels.emplace(key, std::move(L));
    return out;
}

Result<DraftTree> DraftHead::grow(DraftHeadDrafter& d, const DraftRequest& req) {
    const bool st = stateless();
    const uint32_t p = req.pos;
    const TreeShape shape = st ? req.tree : tree_within_room(req.tree, kv->capacity_tokens() - (p - 1));
    TreeGrowth growth(req.history.back(), shape);
    // the next hidden each expanded node's children read: [expansion slot][hidden width]
    std::vector<float> next_hidden;
    uint32_t hidden_width = 0;
    {
        const uint32_t first = st ? p - 1 : d.n_past_, count = st ? 1 : p - d.n_past_;
        Level* L = TDM_TRY(level(count, 1, false));
        if (!L) {
            // a chain within the tree's bounds
            DraftRequest c = req;
            c.max = std::min({req.max, std::max(req.tree.steps, 1u), std::max(req.tree.nodes, 2u) - 1});
            return DraftTree::chain(req.history.back(), TDM_TRY(d.draft(c)));
        }
        if (!st) TDM_TRY(kv->reserve(d.seq_, p - 1 + tree_kv_slots(shape)));
        CompiledGraph& cg = *L->cg;
        for (uint32_t i = 0; i < count; ++i) {
            // as a chain's first step (DraftHead::submit)
            cg.input_as<int32_t>(L->tokens)[i] = st ? req.history[p] : req.history[first + i + 1];
            const int32_t at = int32_t(st ? p : first + i);
            cg.input_as<int32_t>(L->pos)[i] = at;
            cg.input_as<int32_t>(L->seq)[i] = st ? req.target_seq : d.seq_;
            if (L->attn_pos) cg.input_as<int32_t>(L->attn_pos)[i] = int32_t(p - 1);
            if (L->pos4) {
                int32_t* e = cg.input_as<int32_t>(L->pos4) + 4 * size_t(i);
                e[0] = e[1] = e[2] = at;
                e[3] = 0;
            }
            std::memcpy(cg.input_as<float>(L->hidden) + size_t(i) * n_embd_target,
                        d.hidden_.data() + size_t(first + i - d.hidden_first_) * n_embd_target,
                        size_t(n_embd_target) * 4);
        }
        cg.input_as<int32_t>(L->rows)[0] = int32_t(count - 1);
        rows_from_host += count;
        TDM_TRY(cg.run());
        TDM_TRY(check_finite(cg));
        if (!st) d.n_past_ = p;  // the catch-up rows are committed pairs
        hidden_width = uint32_t(cg.graph().tensor(L->hidden_out).cols());
        const float* h = cg.output_as<float>(L->hidden_out);
        next_hidden.assign(h, h + hidden_width);
        growth.expand(std::span<const float>(cg.output_as<float>(L->logits), L->width), L->width);
    }
    while (!growth.frontier().empty()) {
        const std::vector<uint32_t> frontier = growth.frontier();
        const auto n = uint32_t(frontier.size());
        Level* L = TDM_TRY(level(n, n, true));
        if (!L) break;
        if (L->hidden_width != hidden_width)
            return Error::format("draft head {}: its next hidden is {} wide, its steps read {}", entry->desc->name,
                                 hidden_width, L->hidden_width);
        CompiledGraph& cg = *L->cg;
        for (uint32_t i = 0; i < n; ++i) {
            const GrownNode& node = growth.nodes()[frontier[i]];
            const GrownNode& parent = growth.nodes()[size_t(node.parent)];
            const int32_t at = int32_t(st ? p : p - 1 + node.depth);
            cg.input_as<int32_t>(L->tokens)[i] = node.token;
            cg.input_as<int32_t>(L->pos)[i] = at;
            cg.input_as<int32_t>(L->seq)[i] = st ? req.target_seq : d.seq_;
            cg.input_as<int32_t>(L->rows)[i] = int32_t(i);
            if (L->attn_pos) cg.input_as<int32_t>(L->attn_pos)[i] = int32_t(p - 1);
            if (L->pos4) {
                int32_t* e = cg.input_as<int32_t>(L->pos4) + 4 * size_t(i);
                e[0] = e[1] = e[2] = at;
                e[3] = 0;
            }
            if (L->kv_tree) {  // graph/graph.h, kKvTreeInts
                const uint64_t mask = growth.ancestor_slots(frontier[i]);
                int32_t* t = cg.input_as<int32_t>(L->kv_tree) + 3 * size_t(i);
                t[0] = int32_t(p - 1);
                t[1] = int32_t(uint32_t(mask));
                t[2] = int32_t(uint32_t(mask >> 32));
            }
            std::memcpy(cg.input_as<float>(L->hidden) + size_t(i) * hidden_width,
                        next_hidden.data() + size_t(parent.expanded) * hidden_width, size_t(hidden_width) * 4);
        }
        TDM_TRY(cg.run());
        TDM_TRY(check_finite(cg));
        const float* h = cg.output_as<float>(L->hidden_out);
        for (uint32_t i = 0; i < n; ++i) {
            const size_t slot = size_t(growth.nodes()[frontier[i]].expanded);
            if (next_hidden.size() < (slot + 1) * hidden_width) next_hidden.resize((slot + 1) * hidden_width);
            std::memcpy(next_hidden.data() + slot * hidden_width, h + size_t(i) * hidden_width,
                        size_t(hidden_width) * 4);
        }
        growth.expand(std::span<const float>(cg.output_as<float>(L->logits), size_t(n) * L->width), L->width);
    }
    return growth.tree();
}

// A block head (DFlash) drafts its whole block in one pass, with no per-level step to
// expand: it proposes chains.
bool DraftHeadDrafter::grows_trees() const { return !head_->picks_tokens && head_->block_size == 0; }

Result<DraftTree> DraftHeadDrafter::draft_tree(const DraftRequest& req) {
    if (pending_) cancel();  // a chain prepared for this round: the tree replaces it
    if (stateless() && (req.pos == 0 || !holds_row(req.pos - 1))) return DraftTree(req.history.back());
    if (!stateless() && req.pos > 0 && n_past_ >= req.pos && holds_row(req.pos - 1)) {
        // pairs committed up to the root's row: the tree's first level runs that row again
        n_past_ = req.pos - 1;
        TDM_TRY(head_->kv->truncate(seq_, n_past_));
    }
    TDM_TRY(ready_for(req));
    return head_->grow(*this, req);
}

}  // namespace tdm
