// SPDX-License-Identifier: Apache-2.0
// host/ops/custom.cpp: TDM_OP_CUSTOM, a plugin's SPIR-V kernel
// (tandem/ext/custom_op.h): 1..4 f32/i32 activations in, one output whose
// shape and type the op's descriptor gives. The pipeline is compiled at first
// use (vk::PipelineManager::get_module, keyed by the op's uid and the workgroup
// width). Push constants and the grid follow custom_op.h exactly.
// Not here: creating and checking the op (ops/custom_op.cpp).
#include <cstring>

#include "ops/custom_op.h"
#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_custom(const OpDesc& d) {
    if (!d.custom)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "custom: tdm_op_desc.custom is NULL (create the op with the tdm.custom_op extension)");
    if (d.custom->magic != CustomOp::kMagic)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom: tdm_op_desc.custom is not a custom op handle");
    if (d.custom->output_shape == TDM_CUSTOM_OUTPUT_COLS_PARAM && d.i[0] <= 0)
        return Error::coded(TDM_ERR_UNSUPPORTED, "custom op '{}': i[0] (the output columns) must be > 0, got {}",
                            d.custom->name, d.i[0]);
    return {};
}

Status validate_custom(OpContext& c) {
    const CustomOp& op = *c.d.custom;
    if (uint32_t(c.d.n_in) != op.n_inputs)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': expects {} inputs, got {}", op.name, op.n_inputs,
                            c.d.n_in);
    const Tensor& a = c.in(0);
    for (int k = 0; k < c.d.n_in; ++k) {
        const Tensor& t = c.in(k);
        if (t.kind == TensorKind::weight || t.kind == TensorKind::kv || t.kind == TensorKind::state ||
            (t.type != DType::F32 && t.type != DType::I32))
            return Error::coded(TDM_ERR_TYPE, "custom op '{}': input {} must be an f32 or i32 activation, got {}",
                                op.name, k, c.describe(k));
        if (t.rows() != a.rows())
            return Error::coded(TDM_ERR_SHAPE, "custom op '{}': input {} has {} rows, input 0 {}", op.name, k, t.rows(),
                                a.rows());
    }
    if (a.rows() > kMaxCustomOpRows)
        return Error::coded(TDM_ERR_LIMIT, "custom op '{}': {} output rows, this host handles at most {}", op.name,
                            a.rows(), kMaxCustomOpRows);
    const int64_t cols = op.output_shape == TDM_CUSTOM_OUTPUT_COLS_PARAM ? c.d.i[0] : a.ne[0];
    if (op.dispatch == TDM_CUSTOM_DISPATCH_ELEMENTS && div_up(uint64_t(cols), op.local_size_x) > kMaxGroups)
        return Error::coded(TDM_ERR_LIMIT, "custom op '{}': {} output columns need more than {} workgroups of {}",
                            op.name, cols, kMaxGroups, op.local_size_x);
    return c.output(op.output_type, {cols, a.ne[1], a.ne[2], a.ne[3]});
}

Status record_custom(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    const CustomOp& op = *d.custom;
    vk::ShaderModule m;
    m.key = fmt::format("custom#{}:{}", op.uid, op.name);
    m.name = op.name;
    m.code = op.spirv;
    m.entry_point = op.entry_point;
    m.n_storage_buffers = op.n_inputs + 1;
    m.push_bytes = op.push_words() * 4;
    const vk::Pipeline* p = TDM_TRY_CTX(c.pipelines.get_module(m, {op.local_size_x}),
                                        fmt::format("custom op '{}'", op.name));

    // custom_op.h: rows, cols, out_off, out_stride; per input off, stride, cols;
    // i[0 .. n_int_params); f[0 .. n_float_params).
    const Tensor& y = tensor(c, n.out);
    uint32_t push[kMaxCustomOpPushBytes / 4] = {};
    uint32_t w = 0;
    push[w++] = uint32_t(y.rows());
    push[w++] = uint32_t(y.cols());
    push[w++] = off(c, n.out);
    push[w++] = stride(c, n.out);
    vk::Binding bindings[kMaxCustomOpInputs + 1];
    for (int k = 0; k < d.n_in; ++k) {
        push[w++] = off(c, d.in[k]);
        push[w++] = stride(c, d.in[k]);
        push[w++] = uint32_t(tensor(c, d.in[k]).cols());
        bindings[k] = storage(c, d.in[k]);
    }
    bindings[d.n_in] = storage(c, n.out);
    for (uint32_t k = 0; k < op.n_int_params; ++k) push[w++] = uint32_t(d.i[k]);
    for (uint32_t k = 0; k < op.n_float_params; ++k) std::memcpy(&push[w++], &d.f[k], 4);

    const uint32_t rows = uint32_t(y.rows());
    const uint32_t gx = op.dispatch == TDM_CUSTOM_DISPATCH_ELEMENTS ? div_up(y.cols(), op.local_size_x) : 1;
    c.cb.record_dispatch(*p, std::span<const vk::Binding>(bindings, op.n_inputs + 1), push, w * 4, gx, rows, 1,
                         op.name);
    return {};
}

}  // namespace

extern const OpDef kOpDef_CUSTOM = {TDM_OP_CUSTOM, "custom", 1, int(kMaxCustomOpInputs), 0,
                                check_custom, validate_custom, record_custom};

}  // namespace tdm
