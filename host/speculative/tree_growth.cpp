// SPDX-License-Identifier: Apache-2.0
// host/speculative/tree_growth.cpp: growing a draft tree by cumulative draft probability
// (see tree_growth.h).
#include "speculative/tree_growth.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tdm {

namespace {

// Better first: higher score, then shallower (a parent before a child that ties it: a child
// of probability 1), then older.
bool better(const std::vector<GrownNode>& n, uint32_t a, uint32_t b) {
    if (n[a].score != n[b].score) return n[a].score > n[b].score;
    if (n[a].depth != n[b].depth) return n[a].depth < n[b].depth;
    return a < b;
}

}  // namespace

TreeGrowth::TreeGrowth(int32_t root, const TreeShape& shape) : shape_(shape) {
    shape_.topk = std::max(1u, shape_.topk);
    shape_.nodes = std::min(shape_.nodes, kKvTreeMaxNodes);
    nodes_.push_back({root, -1, 0, 1.0, 0});
    if (shape_.steps > 0 && shape_.nodes > 1) frontier_.push_back(0);
}

uint64_t TreeGrowth::ancestor_slots(uint32_t i) const {
    uint64_t m = 0;
    for (int32_t j = int32_t(i); j >= 0; j = nodes_[size_t(j)].parent)
        if (nodes_[size_t(j)].expanded >= 0) m |= uint64_t(1) << nodes_[size_t(j)].expanded;
    return m;
}

void TreeGrowth::expand(std::span<const float> logits, uint32_t width) {
    const std::vector<uint32_t> parents = std::move(frontier_);
    frontier_.clear();
    std::vector<uint32_t> level;  // the new nodes
    for (size_t f = 0; f < parents.size(); ++f) {
        const GrownNode parent = nodes_[parents[f]];  // nodes_ grows below
        for (const auto& [tok, prob] : top_probabilities(logits.subspan(f * width, width), shape_.topk)) {
            level.push_back(uint32_t(nodes_.size()));
            nodes_.push_back({tok, int32_t(parents[f]), parent.depth + 1, parent.score * prob, -1});
        }
    }
    ++level_;
    if (level_ >= shape_.steps) return;
    // the next frontier: the level's topk best, and of those only nodes that are among the
    // nodes - 1 best so far (else nodes - 1 others already score at least as high as any of
    // their children, which then could not be kept)
    std::vector<uint32_t> all(nodes_.size() - 1);
    std::iota(all.begin(), all.end(), 1u);
    const size_t keep = std::min<size_t>(all.size(), shape_.nodes - 1);
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(keep), all.end(),
                      [&](uint32_t a, uint32_t b) { return better(nodes_, a, b); });
    std::sort(level.begin(), level.end(), [&](uint32_t a, uint32_t b) { return better(nodes_, a, b); });
    level.resize(std::min<size_t>(level.size(), shape_.topk));
    for (uint32_t n : level)
        if (std::find(all.begin(), all.begin() + std::ptrdiff_t(keep), n) != all.begin() + std::ptrdiff_t(keep) &&
            n_expanded_ < int32_t(kKvTreeMaxNodes)) {
            nodes_[n].expanded = n_expanded_++;
            frontier_.push_back(n);
        }
}

DraftTree TreeGrowth::tree() const {
    std::vector<uint32_t> all(nodes_.size() - 1);
    std::iota(all.begin(), all.end(), 1u);
    std::sort(all.begin(), all.end(), [&](uint32_t a, uint32_t b) { return better(nodes_, a, b); });
    all.resize(std::min<size_t>(all.size(), shape_.nodes - 1));
    // parents first: by depth, and by score within a depth (the best branch first)
    std::stable_sort(all.begin(), all.end(), [&](uint32_t a, uint32_t b) { return nodes_[a].depth < nodes_[b].depth; });
    DraftTree t(nodes_[0].token);
    std::vector<int32_t> at(nodes_.size(), -1);  // grown node -> tree node
    at[0] = 0;
    for (uint32_t n : all) {
        const int32_t p = at[size_t(nodes_[n].parent)];
        if (p < 0) continue;  // its parent was not kept (cannot happen: a parent scores at least as high)
        if (auto i = t.add(uint32_t(p), nodes_[n].token); i.ok()) at[n] = int32_t(*i);
    }
    return t;
}

std::vector<std::pair<int32_t, double>> top_probabilities(std::span<const float> logits, uint32_t k) {
    const uint32_t n = uint32_t(logits.size());
    k = std::min(k, n);
    std::vector<int32_t> ids(n);
    std::iota(ids.begin(), ids.end(), 0);
    // a broken head's NaN ranks last (and keeps the order strict)
    const auto at = [&](int32_t i) {
        const float v = logits[size_t(i)];
        return std::isnan(v) ? -INFINITY : double(v);
    };
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int32_t a, int32_t b) { return at(a) != at(b) ? at(a) > at(b) : a < b; });
    const double top = n ? at(ids[0]) : 0.0;
    double sum = 0;
    for (uint32_t i = 0; i < n; ++i) sum += std::exp(at(int32_t(i)) - top);
    std::vector<std::pair<int32_t, double>> out;
    for (uint32_t i = 0; i < k; ++i) {
        // all -inf or NaN, or an infinite logit: no probability to rank by (0 keeps every
        // score finite, so the orders above stay strict)
        const double q = std::exp(at(ids[i]) - top) / sum;
        out.emplace_back(ids[i], std::isfinite(q) ? q : 0.0);
    }
    return out;
}

}  // namespace tdm
