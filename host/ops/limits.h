/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/limits.h: the host's op limits (tandem.h tdm_host_limits, the list in
// tandem/ops.h). The ops enforce them (TDM_ERR_LIMIT) and get_limits reports
// them from these same constants.
#pragma once

#include <cstdint>

namespace tdm {

constexpr uint32_t kMaxOpInputs = 8;              // tdm_op_desc.inputs
constexpr uint32_t kMaxVerifyRows = 16;           // rows a batch-invariant matmul/attention handles alike
constexpr uint32_t kMaxQueryHeadsPerKvHead = 16;  // attention: G (attention.comp keeps G accumulators per lane)
constexpr uint32_t kMaxTopK = 256;                // top_k: k
// Largest chunk of the gated delta rule's chunked form (its C x C matrices live
// in shared memory: 16 KiB at 64).
constexpr uint32_t kMaxDeltaRuleChunk = 64;
constexpr uint32_t kMaxDeltaRuleDim = 256;        // gated delta rule: dk, dv (multiples of 4)
constexpr uint32_t kWeightRowAlignBytes = 16;     // matmul/get_rows/matmul_id weight rows (16-byte texels)
constexpr uint32_t kActivationAlignElems = 4;     // matmul/matmul_id x: offset and row stride (vec4 loads)
constexpr uint32_t kGetRowsWidthMultiple = 4;     // get_rows: row width
constexpr uint32_t kMaxCustomOpPushBytes = 128;   // custom ops: the push-constant block
constexpr uint32_t kMaxCustomOpInputs = 4;        // custom ops: inputs
constexpr int64_t kMaxCustomOpRows = 65535;       // custom ops: output rows (one workgroup row each)

}  // namespace tdm
