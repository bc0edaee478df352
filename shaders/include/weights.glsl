// SPDX-License-Identifier: Apache-2.0
// weights.glsl: the two weight access paths (spec/lavapipe.md §3-4).
// WEIGHTS_TEXEL: uniform texel buffers (RGBA32UI main plane, R16UI scale plane):
//   3-5x faster than storage-buffer loads on lavapipe.
// otherwise: storage buffers, the normal path on GPUs.
// Before including: define W_BINDING and S_BINDING (binding numbers).
#ifdef WEIGHTS_TEXEL
layout(binding = W_BINDING) uniform usamplerBuffer w_tex;
layout(binding = S_BINDING) uniform usamplerBuffer s_tex;
uvec4 load_w(uint i) { return texelFetch(w_tex, int(i)); }
// f16 scale i of the scale plane
float load_scale(uint i) { return unpackHalf2x16(texelFetch(s_tex, int(i)).x).x; }
#else
layout(binding = W_BINDING, std430) readonly buffer WeightBuf { uvec4 w_buf[]; };
layout(binding = S_BINDING, std430) readonly buffer ScaleBuf { uint s_buf[]; };
uvec4 load_w(uint i) { return w_buf[i]; }
float load_scale(uint i) { return unpackHalf2x16(s_buf[i >> 1] >> ((i & 1u) * 16u)).x; }
#endif
