// SPDX-License-Identifier: Apache-2.0
// host/ops/get_rows.cpp: TDM_OP_GET_ROWS, embedding lookup: rows of a weight
// (any weight type, dequantized to f32) picked by I32 ids. shaders/get_rows.comp,
// one workgroup per id and one dispatch per row chunk of the weight.
#include "ops/weight_record.h"

namespace tdm {
namespace {

using namespace kernel;

const char* const kShaders[] = {"get_rows", nullptr};

Status check_get_rows(const OpDesc& d) {
    if (d.i[0] < 0) return Error::coded(TDM_ERR_UNSUPPORTED, "get_rows: row width (i[0]) must be >= 0, got {}", d.i[0]);
    return {};
}

Status validate_get_rows(OpContext& c) {
    TDM_TRY(c.weight(0));
    const Tensor& w = c.in(0);
    const Tensor& ids = c.in(1);
    if (ids.type != DType::I32 || ids.kind == TensorKind::weight)
        return Error::coded(TDM_ERR_TYPE, "get_rows: ids must be i32, got {}", c.describe(1));
    const int64_t width = c.d.i[0] > 0 ? c.d.i[0] : w.cols();
    if (c.d.i[0] > 0) {
        // rows regrouped: only a plain f32 weight in one binding is addressed by element
        if (w.type != DType::F32 || w.weight->chunks().size() != 1 || (w.cols() * w.rows()) % width)
            return Error::coded(TDM_ERR_UNSUPPORTED,
                                "get_rows: a row width (i[0] = {}) needs an f32 weight in one binding whose elements "
                                "it divides, got {}",
                                width, c.describe(0));
    }
    if (width % kGetRowsWidthMultiple)
        return Error::coded(TDM_ERR_LIMIT, "get_rows: row width {} is not a multiple of {}", width,
                            kGetRowsWidthMultiple);
    TDM_TRY(texel_weight(c, 0));
    return c.output(DType::F32, {width, ids.elements()});
}

Status record_get_rows(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *tensor(c, d.in[0]).weight;
    const bool texel = act_texel(c) && w.has_texel_views();
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(weight_variant("get_rows", w.type(), texel), {kLocal}));
    const uint32_t n_tok = uint32_t(tensor(c, d.in[1]).elements());
    struct {
        uint32_t K, n_tokens, ids_off, y_off, y_stride, w_off, s_off, row_begin, n_rows;
    } pc{};
    const uint64_t width = d.i[0] > 0 ? uint64_t(d.i[0]) : uint64_t(w.cols());
    for (const WeightChunk& ch : w.chunks()) {
        // rows of `width` (regrouped rows: one chunk, validate_get_rows() checked)
        const uint64_t scale_num = uint64_t(w.cols());
        pc = {uint32_t(width), n_tok, off(c, d.in[1]), off(c, n.out), stride(c, n.out), 0, 0,
              uint32_t(uint64_t(ch.row_begin) * scale_num / width), uint32_t(uint64_t(ch.n_rows) * scale_num / width)};
        vk::Binding bw, bs;
        weight_bindings(ch, texel, &bw, &bs);
        dispatch(c, *p, {bw, bs, storage(c, d.in[1]), storage(c, n.out)}, pc, n_tok, 1, label);
    }
    return {};
}

}  // namespace

extern const OpDef kOpDef_GET_ROWS = {TDM_OP_GET_ROWS, "get_rows", 2, 2, 0,
                                 check_get_rows, validate_get_rows, record_get_rows, kShaders};

}  // namespace tdm
