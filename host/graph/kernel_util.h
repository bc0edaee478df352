// host/graph/kernel_util.h: small helpers shared by the op recording files
// (kernels_recurrent.cpp, kernels_moe.cpp): bindings of activations on the
// texel or storage path, and one dispatch call with typed push constants.
// Not here: any op's recording (kernels*.cpp).
#pragma once

#include <initializer_list>
#include <span>
#include <string_view>

#include "graph/kernels.h"

namespace tdm::kernel {

constexpr uint32_t kMaxGroups = 65535;  // per grid dimension

inline uint32_t div_up(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

// Whether activation inputs are read through texel views (CPU devices:
// spec/lavapipe.md §4) rather than storage buffers.
inline bool act_texel(const RecordContext& c) { return c.device.caps().prefer_texel_weights; }

inline vk::Binding storage(const RecordContext& c, TensorId t) {
    return vk::Binding::storage(c.compiled.storage(t));
}

// An f32 activation input on the chosen path (ACT_INPUT in shaders/include/activations.glsl).
inline Result<vk::Binding> act_input(const RecordContext& c, TensorId t) {
    if (!act_texel(c)) return storage(c, t);
    return vk::Binding::texel(TDM_TRY(c.compiled.texel_view(t)));
}

template <class P>
void dispatch(RecordContext& c, const vk::Pipeline& p, std::initializer_list<vk::Binding> b, const P& push,
              uint32_t gx, uint32_t gy, std::string_view label) {
    static_assert(sizeof(P) <= 128, "push constants are limited to 128 bytes");
    c.cb.record_dispatch(p, std::span<const vk::Binding>(b.begin(), b.size()), &push, sizeof(P), gx, gy, 1, label);
}

}  // namespace tdm::kernel
