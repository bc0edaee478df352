/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/tree_check.h: the exactness checks of draft trees (speculative/draft_tree.h)
// on any target, shared by the Qwen3 and Gemma 4 tests: every node's logits in the one
// verify pass equal, bit for bit, a plain decode of its path, alone or beside another
// sequence's decode row; and after a path is committed, later steps equal a run that
// decoded only that path (no trace of the other nodes).
// Not here: the models (each test loads its own), drafters growing trees.
#pragma once

#include <cstdint>
#include <optional>

#include "model/runner.h"
#include "speculative/draft_tree.h"

namespace tdm::test {

// n nodes under `root` (fewer if two siblings drew one token), tokens in [lo, hi): each
// node's parent is the node before it half of the time (deep branches), else any earlier
// node (bushy ones), reproducibly from `seed`.
DraftTree random_tree(uint64_t seed, int32_t root, uint32_t n, int32_t lo, int32_t hi);

// A sequence decoding one ordinary row in the same pass as the tree.
struct BesideRow {
    int seq = 0;
    int32_t token = 0;
    int32_t pos = 0;  // its length: the row stores there
};

// `seq` holds `base` committed positions. Runs the tree in one pass at `base` (after
// `beside`'s row, if any), then checks (gtest expectations) each node against decoding its
// path token by token, and `beside`'s row against decoding it alone. Leaves `seq` at
// some length >= base and `beside` at length pos + 1.
void expect_tree_rows_equal_path_decoding(Runner& runner, int seq, int32_t base, const DraftTree& tree,
                                          std::optional<BesideRow> beside = std::nullopt);

// `seq` holds `base` committed positions. Runs the tree, commits the path to node `node`
// (commit_path) and decodes `steps` greedy tokens after it; then decodes the path alone
// from `base` and the same steps, and expects every step's logits to match bit for bit.
void expect_committed_path_leaves_no_trace(Runner& runner, int seq, int32_t base, const DraftTree& tree,
                                           uint32_t node, uint32_t steps);

}  // namespace tdm::test
