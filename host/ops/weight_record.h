/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/weight_record.h: what the ops that read weights (get_rows, matmul,
// matmul_id) share: the shader variant for a weight type and access path, the
// bindings of a weight's row chunk, and the validation of its rows.
// Not here: the variants themselves (shaders/variants.cmake).
#pragma once

#include <string>

#include "graph/weight.h"
#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm::kernel {

// "<family>_<type>_<tex|buf>": matmul_q8_0_tex.
inline std::string weight_variant(std::string_view family, DType t, bool texel) {
    return fmt::format("{}_{}_{}", family, dtype_name(t), texel ? "tex" : "buf");
}

// TDM_OP_MATMUL's recording of node n (in[0] = W, in[1] = x) with `epilogue`, a
// TDM_MATMUL_EPILOGUE_* code: the kernel of the weight type's layout and split
// (matmul_split.h), then record_matmul_dispatches. Defined in matmul.cpp.
Status record_matmul_op(RecordContext& c, const Node& n, uint32_t epilogue, const std::string& label);

// The dispatches of a matmul kernel (matmul_mv.comp, matmul.comp, matmul_rl.comp, matmul_q8_rl.comp: one
// push-constant block and binding order): one per row chunk of the weight, node n's input 1
// bound as `x` (binding 2, and again as binding 5 for the kernels that read it twice),
// `rows_per_group` output rows per workgroup, `epilogue` a TDM_MATMUL_EPILOGUE_* code
// (shaders/include/op_codes.h) whose operand, if any, is node n's input 2. Defined in matmul.cpp.
Status record_matmul_dispatches(RecordContext& c, const Node& n, const vk::Pipeline& p, vk::Binding x, bool texel,
                                uint32_t rows_per_group, uint32_t epilogue, const std::string& label);

// The weight's main and scale planes of one row chunk (a weight without a
// scale plane binds its main plane twice).
inline void weight_bindings(const WeightChunk& ch, bool texel, vk::Binding* w, vk::Binding* s) {
    if (texel) {
        *w = vk::Binding::texel(ch.main_view);
        *s = vk::Binding::texel(ch.scale_view ? ch.scale_view : ch.main_view);
    } else {
        *w = vk::Binding::storage(ch.main);
        *s = vk::Binding::storage(ch.scale ? ch.scale : ch.main);
    }
}

// Input k is a weight whose rows the kernels can read as 16-byte texels.
inline Status texel_weight(const OpContext& c, int k) {
    TDM_TRY(c.weight(k));
    if (!c.in(k).weight->layout().texel_rows)
        return Error::coded(TDM_ERR_LIMIT, "{}: weight {} rows are not {}-byte multiples", c.op(), c.describe(k),
                            kWeightRowAlignBytes);
    return {};
}

// Input k's offset and row stride are multiples of 4 elements (vec4 loads).
inline Status aligned_activation(const OpContext& c, int k) {
    const Tensor& x = c.in(k);
    if (x.off % kActivationAlignElems || x.row_stride % kActivationAlignElems)
        return Error::coded(TDM_ERR_LIMIT, "{}: input {} must be {}-element aligned (copy it first)", c.op(),
                            c.describe(k), kActivationAlignElems);
    return {};
}

}  // namespace tdm::kernel
