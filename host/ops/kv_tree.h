/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/kv_tree.h: how kv_store and attention bind a tree batch's rows (graph/graph.h,
// kKvTreeInts; shaders/include/kv_tree.glsl). A graph without them binds the positions
// in their place (never read) and passes the offset kNoKvTree.
// Not here: building the tree rows (speculative/draft_tree.h).
#pragma once

#include "ops/record.h"

namespace tdm::kernel {

constexpr uint32_t kNoKvTree = 0xffffffffu;  // kv_tree.glsl's kNoTree

inline uint32_t kv_tree_offset(const RecordContext& c, const Node& n) {
    return n.kv_tree != kNoTensor ? off(c, n.kv_tree) : kNoKvTree;
}

inline vk::Binding kv_tree_binding(const RecordContext& c, const Node& n) {
    return storage(c, n.kv_tree != kNoTensor ? n.kv_tree : n.positions);
}

}  // namespace tdm::kernel
