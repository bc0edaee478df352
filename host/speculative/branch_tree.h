/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/branch_tree.h: a draft tree (draft_tree.h) from a drafter's ranked
// continuations (an n-gram table's several matches: tandem/ext/drafter_branches.h).
// Branches are taken best first; a branch follows the nodes of the branches before it while
// its tokens agree (common prefixes are shared) and grows new nodes where it departs, as
// long as the tree's shape allows: at most `steps` levels, `topk` children per node, `nodes`
// nodes with the root. Where the shape stops a branch the rest of it is dropped. The first
// branch alone gives the chain it spells (cut to the shape), so one branch is a chain.
// Not here: how drafters find branches, verifying the tree.
#pragma once

#include <cstdint>
#include <span>

#include "speculative/draft_tree.h"

namespace tdm {

// Branch b is tokens[b * stride, b * stride + lens[b]).
DraftTree tree_of_branches(int32_t root, std::span<const int32_t> tokens, uint32_t stride,
                           std::span<const uint32_t> lens, const TreeShape& shape);

}  // namespace tdm
