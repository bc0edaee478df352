// SPDX-License-Identifier: Apache-2.0
// host/ops/get_rows.cpp: TDM_OP_GET_ROWS, embedding lookup: rows of a weight
// (any weight type, dequantized to f32) picked by I32 ids. shaders/get_rows.comp,
// one workgroup per id and one dispatch per row chunk of the weight.
#include "ops/weight_record.h"

namespace tdm {
namespace {

using namespace kernel;

const char* const kShaders[] = {"get_rows", nullptr};

Status validate(OpContext& c) {
    TDM_TRY(c.weight(0));
    const Tensor& w = c.in(0);
    const Tensor& ids = c.in(1);
    if (ids.type != DType::I32 || ids.kind == TensorKind::weight)
        return Error::coded(TDM_ERR_TYPE, "get_rows: ids must be i32, got {}", c.describe(1));
    if (w.cols() % kGetRowsWidthMultiple)
        return Error::coded(TDM_ERR_LIMIT, "get_rows: row width {} is not a multiple of {}", w.cols(),
                            kGetRowsWidthMultiple);
    TDM_TRY(texel_weight(c, 0));
    return c.output(DType::F32, {w.cols(), ids.elements()});
}

Status record(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *tensor(c, d.in[0]).weight;
    const bool texel = act_texel(c) && w.has_texel_views();
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(weight_variant("get_rows", w.type(), texel), {kLocal}));
    const uint32_t n_tok = uint32_t(tensor(c, d.in[1]).elements());
    struct {
        uint32_t K, n_tokens, ids_off, y_off, y_stride, w_off, s_off, row_begin, n_rows;
    } pc{};
    for (const WeightChunk& ch : w.chunks()) {
        pc = {uint32_t(w.cols()), n_tok, off(c, d.in[1]), off(c, n.out), stride(c, n.out), 0, 0,
              uint32_t(ch.row_begin), uint32_t(ch.n_rows)};
        vk::Binding bw, bs;
        weight_bindings(ch, texel, &bw, &bs);
        dispatch(c, *p, {bw, bs, storage(c, d.in[1]), storage(c, n.out)}, pc, n_tok, 1, label);
    }
    return {};
}

}  // namespace

extern const OpDef kOpGetRows = {TDM_OP_GET_ROWS, "get_rows", 2, 2, 0, nullptr, validate, record, kShaders};

}  // namespace tdm
