/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/norm_rope.h: the OpDesc layout of the fused attention prologue
// (ops/norm_rope.cpp), which the fusion pass (graph/fusion.cpp) fills in.
// Not here: the kernel's recording (norm_rope.cpp), the pattern matching (fusion.cpp).
#pragma once

#include "ops/op_def.h"

namespace tdm {

// i[7], i[8], i[9]: how q, k and v rows are normed: not at all, or RMSNorm with
// 1 + tdm_norm_weight (1 no weight, 2 times w, 3 times 1 + w).
constexpr int kNormRopeNormQ = 7, kNormRopeNormK = 8, kNormRopeNormV = 9;
constexpr int32_t kNormRopeNone = 0;
// i[kNormRopeSlot0 + which]: the input index holding that tensor, -1 when absent.
constexpr int kNormRopeSlot0 = 10;
enum NormRopeSlot : int { kNormRopeK, kNormRopeV, kNormRopeQ, kNormRopeFreqFactors, kNormRopeQWeight, kNormRopeKWeight };
// Rows longer than this are not fused (shared memory of shaders/norm_rope.comp).
constexpr int64_t kNormRopeMaxDim = 512;

}  // namespace tdm
