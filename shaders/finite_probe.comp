// SPDX-License-Identifier: Apache-2.0
// finite_probe.comp: flags[slot] |= 1 when any element of the strided f32 tensor x
// (rows of `cols` elements, `stride` apart, from `off`) is NaN or infinite. Recorded
// after every op only with TANDEM_CHECK_NAN=1 (graph/finite_probe.h), so that an
// error about non-finite logits can name the first op that produced one.
// The test is on the bit pattern (exponent all ones), not isnan()/isinf(): a compiler
// that assumes finite floats may not fold it away.
// Dispatch: x = up to 65535 workgroups; each invocation strides over the elements.
#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { uint x[]; };
layout(binding = 1, std430) buffer FlagBuf { uint flags[]; };
layout(push_constant) uniform Params { uint rows, cols, off, stride, slot; } p;

void main() {
    const uint n = p.rows * p.cols;
    const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    bool bad = false;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += step) {
        const uint r = i / p.cols, c = i - r * p.cols;
        bad = bad || (x[p.off + r * p.stride + c] & 0x7f800000u) == 0x7f800000u;
    }
    if (bad) atomicOr(flags[p.slot], 1u);
}
