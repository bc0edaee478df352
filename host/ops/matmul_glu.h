/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/matmul_glu.h: the host-internal gate/up matmul with the GLU as its epilogue,
// y [M, n] = act(x W_gate^T) * (x W_up^T) in one dispatch of matmul_mv.comp's GLU variant
// (graph/fusion_glu.h forms it from a matmul_group of gate and up and the glu that reads
// both). The gate and up results are never written: a subgroup computes row r of both
// and writes act(gate) * up with the glu op's own function (shaders/include/glu.glsl),
// so y is the unfused graph's, bit for bit.
// OpDesc: in[0] = x, in[1] = W_gate, in[2] = W_up; i[0] = TDM_EW_SWIGLU or TDM_EW_GEGLU.
// Not here: the grouped matmul without an epilogue (matmul_group.cpp), the pattern
// matching (graph/fusion_glu.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/weight.h"
#include "vk/device.h"

namespace tdm {

// The planes one dispatch binds for gate and up: each a span of one buffer covering both
// weights, read through texel views (CPU devices) or storage buffers.
struct MatmulGluSpans {
    vk::BufferSlice main, scale;
    bool texel = false;
};

// The spans of gate and up on this device, or nullopt where the pair cannot run as one
// GLU dispatch: a layout other than "mv" (ops/matmul_split.h), weights that differ in type
// or shape, more than one row chunk, planes in different buffers or beyond one binding's
// range. The fusion pass asks before it fuses; the recorder asks again for the spans.
std::optional<MatmulGluSpans> matmul_glu_spans(const vk::DeviceCaps& caps, const DeviceWeight& gate,
                                               const DeviceWeight& up);

namespace kernel {
// The smallest slice of one buffer covering all of `parts`, or an empty slice when they
// lie in different buffers or the span exceeds `limit` bytes. Defined in matmul_group.cpp.
vk::BufferSlice buffer_span(const std::vector<vk::BufferSlice>& parts, uint64_t limit);
}  // namespace kernel

}  // namespace tdm
