// SPDX-License-Identifier: Apache-2.0
// activations.glsl: the two read paths for f32 activation inputs (docs/lavapipe.md §4).
// ACT_TEXEL: an RGBA32F texel view of the tensor's storage. On lavapipe texel
//   fetches are vector gathers, while storage loads whose address varies across
//   lanes (or comes from a loop counter) become per-lane scalar loops.
// otherwise: a plain float storage buffer, the normal path on GPUs.
// ACT_INPUT(binding, name) declares the binding and the readers
//   float name_at(uint e)   element e (absolute element offset in the storage)
//   vec4  name_at4(uint e)  elements e .. e+3 (one fetch when e is a multiple of 4)
#ifdef ACT_TEXEL
#define ACT_INPUT(b, name)                                                                 \
    layout(binding = b) uniform samplerBuffer name##_tex;                                  \
    float name##_at(uint e) { return texelFetch(name##_tex, int(e >> 2))[e & 3u]; }        \
    vec4 name##_at4(uint e) {                                                              \
        if ((e & 3u) == 0u) return texelFetch(name##_tex, int(e >> 2));                    \
        return vec4(name##_at(e), name##_at(e + 1u), name##_at(e + 2u), name##_at(e + 3u)); \
    }
#else
#define ACT_INPUT(b, name)                                                                 \
    layout(binding = b, std430) readonly buffer name##_buf_t { float name##_buf[]; };       \
    float name##_at(uint e) { return name##_buf[e]; }                                      \
    vec4 name##_at4(uint e) {                                                              \
        return vec4(name##_buf[e], name##_buf[e + 1u], name##_buf[e + 2u], name##_buf[e + 3u]); \
    }
#endif
