/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/record.h: what an op's record function works with: the recording
// context the executor passes for every node, bindings of tensors on the
// texel or storage path, and one dispatch call with typed push constants.
// Not here: any op's recording (its file under host/ops/), barriers and memory
// planning (graph/executor.cpp).
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "graph/executor.h"

namespace tdm {

struct RecordContext {
    vk::Device& device;
    vk::PipelineManager& pipelines;
    vk::CommandBuffer& cb;
    const Graph& graph;
    const CompiledGraph& compiled;
};

// Records one node's dispatches: its OpDef's record function (the executor
// calls it for every node that does work, in order).
Status record_node(RecordContext& ctx, const Node& node);

namespace kernel {

constexpr uint32_t kLocal = 64;         // default workgroup size
constexpr uint32_t kMaxGroups = 65535;  // per grid dimension

inline uint32_t div_up(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

// TANDEM_PROFILE_DETAIL=1 (with profiling on): one profile line per op name and shape.
bool profile_detail();

inline const Tensor& tensor(const RecordContext& c, TensorId t) { return c.graph.tensor(t); }
// Element offset and row stride of a tensor in its storage (push constants).
inline uint32_t off(const RecordContext& c, TensorId t) { return uint32_t(c.graph.tensor(t).off); }
inline uint32_t stride(const RecordContext& c, TensorId t) { return uint32_t(c.graph.tensor(t).row_stride); }

// Whether activation inputs are read through texel views (CPU devices:
// docs/lavapipe.md §4) rather than storage buffers.
inline bool act_texel(const RecordContext& c) { return c.device.caps().prefer_texel_weights; }

inline vk::Binding storage(const RecordContext& c, TensorId t) {
    return vk::Binding::storage(c.compiled.storage(t));
}

// An f32 activation input on the chosen path (ACT_INPUT in shaders/include/activations.glsl).
inline Result<vk::Binding> act_input(const RecordContext& c, TensorId t) {
    if (!act_texel(c)) return storage(c, t);
    return vk::Binding::texel(TDM_TRY(c.compiled.texel_view(t)));
}

// A small f32 weight operand (norm weights, rope frequency factors, elementwise
// b): its single chunk's main plane.
vk::Binding small_weight(const RecordContext& c, TensorId t);

template <class P>
void dispatch(RecordContext& c, const vk::Pipeline& p, std::initializer_list<vk::Binding> b, const P& push,
              uint32_t gx, uint32_t gy, std::string_view label) {
    static_assert(sizeof(P) <= 128, "push constants are limited to 128 bytes");
    c.cb.record_dispatch(p, std::span<const vk::Binding>(b.begin(), b.size()), &push, sizeof(P), gx, gy, 1, label);
}

}  // namespace kernel
}  // namespace tdm
