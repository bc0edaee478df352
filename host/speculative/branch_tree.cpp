// SPDX-License-Identifier: Apache-2.0
// host/speculative/branch_tree.cpp: ranked branches merged into a draft tree (see
// branch_tree.h).
#include "speculative/branch_tree.h"

#include <algorithm>
#include <vector>

namespace tdm {

DraftTree tree_of_branches(int32_t root, std::span<const int32_t> tokens, uint32_t stride,
                           std::span<const uint32_t> lens, const TreeShape& shape) {
    DraftTree t(root);
    const uint32_t max_nodes = std::min(shape.nodes, kKvTreeMaxNodes);
    const uint32_t steps = shape.steps ? shape.steps : kKvTreeMaxNodes;
    const uint32_t topk = std::max(1u, shape.topk);
    std::vector<uint32_t> children(1, 0);  // per node
    for (size_t b = 0; b < lens.size(); ++b) {
        const size_t len = std::min<size_t>({lens[b], stride, steps});
        if ((b + 1) * size_t(stride) > tokens.size()) break;
        uint32_t at = 0;
        for (size_t i = 0; i < len; ++i) {
            const int32_t tok = tokens[b * stride + i];
            uint32_t child = 0;  // the node of `at` that holds tok already, if any
            for (uint32_t c = at + 1; c < t.size() && !child; ++c)
                if (t.parent(c) == int32_t(at) && t.token(c) == tok) child = c;
            if (!child) {
                if (t.size() >= max_nodes || children[at] >= topk) break;
                auto added = t.add(at, tok);  // cannot fail: at is a node and there is room
                if (!added.ok()) break;
                child = *added;
                ++children[at];
                children.push_back(0);
            }
            at = child;
        }
    }
    return t;
}

}  // namespace tdm
