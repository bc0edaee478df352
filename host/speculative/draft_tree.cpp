// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_tree.cpp: the draft tree, its verify rows, greedy acceptance and
// the accepted path's KV (see draft_tree.h).
#include "speculative/draft_tree.h"

#include <algorithm>

namespace tdm {

DraftTree DraftTree::chain(int32_t root, std::span<const int32_t> drafts) {
    DraftTree t(root);
    const size_t n = std::min<size_t>(drafts.size(), kKvTreeMaxNodes - 1);
    for (size_t i = 0; i < n; ++i) t.nodes_.push_back({drafts[i], int32_t(i), uint32_t(i + 1)});
    return t;
}

Result<uint32_t> DraftTree::add(uint32_t parent, int32_t token) {
    if (parent >= size()) return Error::format("draft tree: no node {} among {}", parent, size());
    for (uint32_t i = parent + 1; i < size(); ++i)
        if (nodes_[i].parent == int32_t(parent) && nodes_[i].token == token) return i;
    if (size() >= kKvTreeMaxNodes) return Error::format("draft tree: {} nodes is the most", kKvTreeMaxNodes);
    nodes_.push_back({token, int32_t(parent), nodes_[parent].depth + 1});
    return size() - 1;
}

uint32_t DraftTree::max_depth() const {
    uint32_t d = 0;
    for (const Node& n : nodes_) d = std::max(d, n.depth);
    return d;
}

uint64_t DraftTree::ancestors(uint32_t i) const {
    uint64_t m = 0;
    for (int32_t j = int32_t(i); j >= 0; j = nodes_[size_t(j)].parent) m |= uint64_t(1) << j;
    return m;
}

std::vector<uint32_t> DraftTree::path(uint32_t i) const {
    std::vector<uint32_t> p;
    for (int32_t j = int32_t(i); j >= 0; j = nodes_[size_t(j)].parent) p.push_back(uint32_t(j));
    std::reverse(p.begin(), p.end());
    return p;
}

std::vector<uint32_t> DraftTree::children(uint32_t i) const {
    std::vector<uint32_t> c;
    for (uint32_t j = i + 1; j < size(); ++j)
        if (nodes_[j].parent == int32_t(i)) c.push_back(j);
    return c;
}

void DraftTree::set_children_drawn_from(uint32_t i, TokenDistribution q) {
    if (drawn_from_.size() <= i) drawn_from_.resize(size_t(i) + 1);
    drawn_from_[i] = std::move(q);
}

const TokenDistribution* DraftTree::children_drawn_from(uint32_t i) const {
    return i < drawn_from_.size() && !drawn_from_[i].ids.empty() ? &drawn_from_[i] : nullptr;
}

std::vector<int32_t> DraftTree::tokens() const {
    std::vector<int32_t> t;
    for (const Node& n : nodes_) t.push_back(n.token);
    return t;
}

std::vector<int32_t> DraftTree::positions(int32_t base) const {
    std::vector<int32_t> p;
    for (const Node& n : nodes_) p.push_back(base + int32_t(n.depth));
    return p;
}

std::vector<KvTreeRow> DraftTree::kv_rows(int32_t base) const {
    std::vector<KvTreeRow> r;
    for (uint32_t i = 0; i < size(); ++i) r.push_back({base, ancestors(i)});
    return r;
}

TreeVerdict accept_greedy(const DraftTree& tree, std::span<const int32_t> argmax) {
    TreeVerdict v;
    uint32_t cur = 0;
    v.path.push_back(0);
    for (;;) {
        const int32_t want = argmax[cur];
        uint32_t next = 0;
        for (uint32_t i = cur + 1; i < tree.size() && !next; ++i)
            if (tree.parent(i) == int32_t(cur) && tree.token(i) == want) next = i;
        if (!next) break;
        cur = next;
        v.path.push_back(cur);
    }
    v.next = argmax[cur];
    return v;
}

Status commit_path(KvPool& kv, int seq, int32_t base, std::span<const uint32_t> path) {
    std::vector<KvPool::RowMove> moves;
    for (uint32_t j = 0; j < path.size(); ++j)
        if (path[j] != j) moves.push_back({uint32_t(base) + path[j], uint32_t(base) + j});
    TDM_TRY(kv.move_rows(seq, moves));
    return kv.truncate(seq, uint32_t(base) + uint32_t(path.size()));
}

}  // namespace tdm
