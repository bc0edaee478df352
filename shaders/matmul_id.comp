// SPDX-License-Identifier: Apache-2.0
// matmul_id.comp: the mixture-of-experts matmul (TDM_OP_MATMUL_ID):
//   y[t][j][r] = sum_k W[ids[t][j]][r][k] * x[t][k]   (or x[t][j][k])
// for every (token t, slot j) pair, W an [E][M][K] stack of experts in any weight
// type (rows of expert e are rows e*M .. e*M + M-1 of the weight).
//
// The per-row work is matmul.comp's for one token: a subgroup owns R rows of
// one expert, its lanes stride over K in units (dequant.glsl pieces), each
// piece's 8 dot products are summed and added to the lane's accumulator, and the
// lanes are reduced with subgroupAdd. A pair's result therefore depends only on
// its expert's rows and its x row, never on how many pairs the batch holds
// (batch invariance, tests/ops/moe_ops_test.cpp). No weight reuse across pairs:
// decode and verify batches rarely share experts between tokens.
//
// Weights larger than one binding come in row chunks whose boundaries fall
// between experts (WeightUploadOptions::row_group); the host dispatches once per
// chunk with the chunk's experts [e_begin, e_end), and a pair whose expert lives
// in another chunk returns at once. Ids outside [0, E) read no weights: their
// rows are written as zeros (by the first chunk's dispatch).
//
// Dispatch: x = ceil(M / (R * subgroups per workgroup)), y = pairs (sliced by
// 65535, pair0 = first pair of the slice). Variants: matmul_id_<wtype>_<tex|buf>,
// wtype as matmul.comp; spec constants: local size, R (rows per subgroup).
#version 450
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint R = 8;  // rows per subgroup

#define W_BINDING 0
#define S_BINDING 1
#include "weights.glsl"
#ifdef WEIGHTS_TEXEL
layout(binding = 2) uniform samplerBuffer x_tex;
#define X4(row, k) texelFetch(x_tex, int((p.x_off + (row) * p.x_stride + (k)) >> 2))
#else
layout(binding = 2, std430) readonly buffer XBuf { vec4 x4[]; };
#define X4(row, k) x4[(p.x_off + (row) * p.x_stride + (k)) >> 2]
#endif
layout(binding = 3, std430) writeonly buffer YBuf { float y[]; };
layout(binding = 4, std430) readonly buffer IdBuf { int ids[]; };

layout(push_constant) uniform Params {
    uint K;               // columns
    uint M;               // rows per expert
    uint E;               // experts
    uint n_used;          // slots per token
    uint x_off, x_stride; // multiples of 4
    uint x_per_slot;      // 1: x row of pair (t, j) is t * n_used + j; 0: t
    uint y_off;           // y row of pair (t, j) is t * n_used + j, M elements each
    uint ids_off, ids_stride;
    uint e_begin, e_end;  // experts held by this dispatch's weight chunk
    uint zero_invalid;    // 1: write zeros for ids outside [0, E)
    uint pair0;           // first pair of this dispatch slice
    uint w_off;           // texel offset of the chunk's first row (0)
    uint s_off;           // scale offset of the chunk's first row (0)
} p;

#include "dequant.glsl"

void main() {
    const uint pair = gl_WorkGroupID.y + p.pair0;
    const uint t = pair / p.n_used, slot = pair % p.n_used;
    const int e = ids[p.ids_off + t * p.ids_stride + slot];
    const uint row0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * R;
    if (row0 >= p.M) return;  // whole subgroup: uniform
    const uint lane = gl_SubgroupInvocationID, LS = gl_SubgroupSize;
    const uint ybase = p.y_off + pair * p.M;
    if (e < 0 || uint(e) >= p.E) {
        if (p.zero_invalid != 0)
            for (uint r = lane; r < R; r += LS)
                if (row0 + r < p.M) y[ybase + row0 + r] = 0.0;
        return;
    }
    if (uint(e) < p.e_begin || uint(e) >= p.e_end) return;  // another chunk's expert
    const uint erow = (uint(e) - p.e_begin) * p.M;          // chunk row of the expert's row 0
    const uint xrow = p.x_per_slot != 0 ? pair : t;
    const uint units = p.K / UNIT;

    float acc[R];
    [[unroll]] for (uint r = 0; r < R; ++r) acc[r] = 0.0;
    for (uint u = lane; u < units; u += LS) {
        [[unroll]] for (uint pc = 0; pc < PIECES; ++pc) {
            const uint k0 = u * UNIT + piece_offset(pc);
            vec4 xv[8];
            [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = X4(xrow, k0 + 4 * j);
            [[unroll]] for (uint r = 0; r < R; ++r) {
                vec4 w[8];
                dequant_piece(erow + min(row0 + r, p.M - 1), u, pc, w);
                float s = 0.0;
                [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(w[j], xv[j]);
                acc[r] += s;
            }
        }
    }
#ifdef PLAIN_TAIL
    for (uint k = units * UNIT + 4 * lane; k < p.K; k += 4 * LS) {  // a partial last unit (plain types)
        const vec4 xv = X4(xrow, k);
        [[unroll]] for (uint r = 0; r < R; ++r) acc[r] += dot(dequant4(erow + min(row0 + r, p.M - 1), k), xv);
    }
#endif
    [[unroll]] for (uint r = 0; r < R; ++r) {
        const float v = subgroupAdd(acc[r]);
        if (lane == 0 && row0 + r < p.M) y[ybase + row0 + r] = v;
    }
}
