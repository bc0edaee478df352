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

// The KV_TREE specialization constant of the attention pipelines (kv_tree.glsl). On CPU
// devices a graph without tree rows gets 0, a pipeline without the per-key tree lookup
// (about 5% of a long prefill on lavapipe); there the tests hold tree verify to plain decode
// bit for bit. GPUs always get 1: decode and tree verify run one compiled pipeline, so their
// exactness never rests on a GPU compiler contracting two specializations alike.
inline uint32_t kv_tree_pipeline(const RecordContext& c, const Node& n) {
    return n.kv_tree != kNoTensor || !c.device.caps().is_cpu() ? 1u : 0u;
}

inline vk::Binding kv_tree_binding(const RecordContext& c, const Node& n) {
    return storage(c, n.kv_tree != kNoTensor ? n.kv_tree : n.positions);
}

}  // namespace tdm::kernel
