// SPDX-License-Identifier: Apache-2.0
// common.glsl: helpers shared by every shader (byte/half extraction).
#extension GL_EXT_control_flow_attributes : enable

// Byte i (0..15) of a 16-byte texel, unsigned.
uint byte_of(uvec4 v, uint i) { return (v[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }

// Sign-extended int8 lanes of a word.
ivec4 i8x4(uint w) {
    return ivec4(bitfieldExtract(int(w), 0, 8), bitfieldExtract(int(w), 8, 8),
                 bitfieldExtract(int(w), 16, 8), bitfieldExtract(int(w), 24, 8));
}
// Unsigned byte lanes of a word.
uvec4 u8x4(uint w) { return uvec4(w & 0xffu, (w >> 8) & 0xffu, (w >> 16) & 0xffu, w >> 24); }

// Low / high nibbles of the 4 bytes of a word.
vec4 lo4(uint w) { return vec4(uvec4(w, w >> 8, w >> 16, w >> 24) & 0xfu); }
vec4 hi4(uint w) { return vec4(uvec4(w >> 4, w >> 12, w >> 20, w >> 28) & 0xfu); }

float half_lo(uint w) { return unpackHalf2x16(w).x; }
float half_hi(uint w) { return unpackHalf2x16(w).y; }
