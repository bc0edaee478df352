// host/graph/kernels.cpp: per-op dispatch recording. Each function picks the
// shader variant (weight type, access path), fills the push constants in the
// layout its shader declares, binds, and dispatches.
#include "graph/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "graph/weight.h"

namespace tdm {
namespace {

constexpr uint32_t kLocal = 64;     // default workgroup size
constexpr uint32_t kMaxGroupsY = 65535;
uint32_t env_or(const char* name, uint32_t dflt) {
    const char* e = std::getenv(name);
    return e && std::atoi(e) > 0 ? uint32_t(std::atoi(e)) : dflt;
}
// Matmul layouts (measured in docs/BENCHMARKS.md; env overrides are for
// experiments and for tests that run both on one device):
//  "ks" (matmul.comp): lanes stride over K, R rows per subgroup, several
//      subgroups per workgroup: coalesced loads, the layout for GPUs.
//  "rl" (matmul_rl.comp): every lane owns R whole rows, x at a uniform
//      address, no cross-lane reduction: 1.2-2x faster on lavapipe, where a
//      lane is a SIMD slot of one CPU thread and gathers cost the same anyway.
struct MatmulLayout {
    bool rows_per_lane;
    uint32_t rows;       // R
    uint32_t subgroups;  // per workgroup
};
MatmulLayout matmul_layout(const vk::DeviceCaps& caps) {
    const char* e = std::getenv("TANDEM_MATMUL_LAYOUT");
    const bool rl = e ? std::string_view(e) == "rl" : caps.is_cpu();
    return rl ? MatmulLayout{true, env_or("TANDEM_MATMUL_ROWS", 4), env_or("TANDEM_MATMUL_SUBGROUPS", 1)}
              : MatmulLayout{false, env_or("TANDEM_MATMUL_ROWS", 8), env_or("TANDEM_MATMUL_SUBGROUPS", 8)};
}

uint32_t div_up(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

struct Rec {
    RecordContext& c;

    const Tensor& T(TensorId id) const { return c.graph.tensor(id); }
    vk::Binding sb(TensorId id) const { return vk::Binding::storage(c.compiled.storage(id)); }
    uint32_t off(TensorId id) const { return uint32_t(T(id).off); }
    uint32_t stride(TensorId id) const { return uint32_t(T(id).row_stride); }
    bool texel() const { return c.device.caps().prefer_texel_weights; }

    Result<const vk::Pipeline*> pipe(std::string_view name, std::vector<uint32_t> spec) {
        return c.pipelines.get(name, spec);
    }
    template <class P>
    void dispatch(const vk::Pipeline& p, std::initializer_list<vk::Binding> b, const P& push, uint32_t gx,
                  uint32_t gy, std::string_view label) {
        static_assert(sizeof(P) <= 128);
        c.cb.record_dispatch(p, std::span<const vk::Binding>(b.begin(), b.size()), &push, sizeof(P), gx, gy, 1, label);
    }
};

// ---------------------------------------------------------------------------
// weights: matmul and get_rows
// ---------------------------------------------------------------------------
std::string weight_variant(const char* op, DType t, bool texel) {
    return fmt::format("{}_{}_{}", op, dtype_name(t), texel ? "tex" : "buf");
}

void weight_bindings(const WeightChunk& ch, bool texel, vk::Binding* w, vk::Binding* s) {
    if (texel) {
        *w = vk::Binding::texel(ch.main_view);
        *s = vk::Binding::texel(ch.scale_view ? ch.scale_view : ch.main_view);
    } else {
        *w = vk::Binding::storage(ch.main);
        *s = vk::Binding::storage(ch.scale ? ch.scale : ch.main);
    }
}

Status record_matmul(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor& wt = r.T(d.in[0]);
    const DeviceWeight& w = *wt.weight;
    const Tensor& x = r.T(d.in[1]);
    const Tensor& y = r.T(n.out);
    const bool fuse_add = d.n_in == 3;
    const bool texel = r.texel() && w.has_texel_views();
    const uint32_t N = uint32_t(x.rows());
    // Tokens per pass: the smallest variant covering the batch (see matmul.comp).
    const uint32_t nt = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : 8;
    const uint32_t sg = std::max<uint32_t>(1, r.c.device.caps().subgroup_size);
    const MatmulLayout lay = matmul_layout(r.c.device.caps());
    const uint32_t ls = sg * lay.subgroups;
    const uint32_t rows_per_group = lay.rows_per_lane ? ls * lay.rows : lay.rows * lay.subgroups;
    const vk::Pipeline* p = TDM_TRY(r.pipe(weight_variant(lay.rows_per_lane ? "matmul_rl" : "matmul", w.type(), texel),
                                           {ls, nt, fuse_add ? 1u : 0u, lay.rows}));
    struct {
        uint32_t K, M, N, x_off, x_stride, y_off, y_stride, w_off, s_off, add_off, add_stride;
    } pc{};
    for (const WeightChunk& ch : w.chunks()) {
        pc.K = uint32_t(w.cols());
        pc.M = uint32_t(ch.n_rows);
        pc.N = N;
        pc.x_off = r.off(d.in[1]);
        pc.x_stride = r.stride(d.in[1]);
        pc.y_off = r.off(n.out) + uint32_t(ch.row_begin);
        pc.y_stride = r.stride(n.out);
        if (fuse_add) {
            pc.add_off = r.off(d.in[2]) + uint32_t(ch.row_begin);
            pc.add_stride = r.stride(d.in[2]);
        }
        vk::Binding bw, bs;
        weight_bindings(ch, texel, &bw, &bs);
        const vk::Binding bx = texel ? vk::Binding::texel(TDM_TRY(r.c.compiled.texel_view(d.in[1]))) : r.sb(d.in[1]);
        const uint32_t groups = div_up(ch.n_rows, rows_per_group);
        r.dispatch(*p, {bw, bs, bx, r.sb(n.out), fuse_add ? r.sb(d.in[2]) : r.sb(d.in[1])}, pc,
                   std::min(groups, kMaxGroupsY), div_up(groups, kMaxGroupsY), label);
    }
    (void)y;
    return {};
}

Status record_get_rows(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *r.T(d.in[0]).weight;
    const bool texel = r.texel() && w.has_texel_views();
    if (!w.layout().texel_rows)
        return Error::format("get_rows: weight {} rows are not 16-byte multiples", w.name());
    const vk::Pipeline* p = TDM_TRY(r.pipe(weight_variant("get_rows", w.type(), texel), {kLocal}));
    const uint32_t n_tok = uint32_t(r.T(d.in[1]).elements());
    struct {
        uint32_t K, n_tokens, ids_off, y_off, y_stride, w_off, s_off, row_begin, n_rows;
    } pc{};
    for (const WeightChunk& ch : w.chunks()) {
        pc = {uint32_t(w.cols()), n_tok, r.off(d.in[1]), r.off(n.out), r.stride(n.out), 0, 0,
              uint32_t(ch.row_begin), uint32_t(ch.n_rows)};
        vk::Binding bw, bs;
        weight_bindings(ch, texel, &bw, &bs);
        r.dispatch(*p, {bw, bs, r.sb(d.in[1]), r.sb(n.out)}, pc, n_tok, 1, label);
    }
    return {};
}

// ---------------------------------------------------------------------------
// elementwise family
// ---------------------------------------------------------------------------
enum ElementwiseOp : uint32_t {
    kEwAdd = 0, kEwMul = 1, kEwScale = 2, kEwSilu = 3, kEwGelu = 4, kEwSigmoid = 5, kEwSoftplus = 6, kEwExp = 7,
    kEwSwiglu = 8, kEwGeglu = 9, kEwCopy = 10, kEwNeg = 11, kEwAddScalar = 12, kEwSub = 13, kEwSoftcap = 14,
    kEwRoundF16 = 15, kEwRoundBf16 = 16,
};

// y[rows x cols] = op(a, b) with strided views. b is a's shape, one row
// (b_stride 0: broadcast over rows), or one column [1, rows] (b_cstride 0:
// broadcast over columns); an f32 weight operand binds its single chunk's main
// plane (graph validation guarantees one chunk), element offset 0.
Status record_elementwise(Rec& r, uint32_t op, TensorId a, TensorId b, TensorId y, uint32_t y_col_off, float s,
                          const std::string& label) {
    const vk::Pipeline* p = TDM_TRY(r.pipe("elementwise", {kLocal, op}));
    const Tensor& ta = r.T(a);
    const uint32_t rows = uint32_t(ta.rows()), cols = uint32_t(ta.cols());
    struct {
        uint32_t rows, cols, a_off, a_stride, b_off, b_stride, b_cstride, y_off, y_stride, row0;
        float s;
    } pc{rows, cols, r.off(a), r.stride(a), 0, 0, 1, r.off(y) + y_col_off, r.stride(y), 0, s};
    vk::Binding bb = r.sb(a);
    if (b != kNoTensor) {
        const Tensor& tb = r.T(b);
        const bool weight = tb.kind == TensorKind::weight;
        bb = weight ? vk::Binding::storage(tb.weight->chunks()[0].main) : r.sb(b);
        pc.b_off = weight ? 0 : r.off(b);
        pc.b_stride = r.stride(b);
        const bool same = tb.cols() == ta.cols() && tb.rows() == ta.rows();
        if (!same && tb.rows() == 1 && tb.cols() == ta.cols()) pc.b_stride = 0;  // one row over all rows
        if (!same && tb.cols() == 1) pc.b_cstride = 0;                            // one column over all columns
    }
    for (uint32_t row0 = 0; row0 < rows; row0 += kMaxGroupsY) {
        pc.row0 = row0;
        r.dispatch(*p, {r.sb(a), bb, r.sb(y)}, pc, div_up(cols, kLocal), std::min(kMaxGroupsY, rows - row0), label);
    }
    return {};
}

uint32_t unary_to_ew(int32_t u) {
    switch (u) {
        case TDM_UNARY_SILU: return kEwSilu;
        case TDM_UNARY_GELU_TANH: return kEwGelu;
        case TDM_UNARY_SIGMOID: return kEwSigmoid;
        case TDM_UNARY_SOFTPLUS: return kEwSoftplus;
        case TDM_UNARY_EXP: return kEwExp;
        case TDM_UNARY_NEG: return kEwNeg;
        case TDM_UNARY_SOFTCAP: return kEwSoftcap;
        default: return kEwAddScalar;
    }
}

// ---------------------------------------------------------------------------
// row kernels: norms, softmax, argmax, top-k, select_rows
// ---------------------------------------------------------------------------
Status record_norm(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const uint32_t mode = d.op == TDM_OP_L2_NORM ? 1 : d.op == TDM_OP_GATED_RMS_NORM ? 2 : 0;
    const uint32_t wmode = d.op == TDM_OP_GATED_RMS_NORM ? 1 : d.op == TDM_OP_L2_NORM ? 0 : uint32_t(d.i[0]);
    const vk::Pipeline* p = TDM_TRY(r.pipe("norm", {kLocal, mode, wmode}));
    const Tensor& x = r.T(d.in[0]);
    const TensorId w = d.n_in >= 2 ? d.in[1] : d.in[0];
    const TensorId z = mode == 2 ? d.in[2] : d.in[0];
    const uint32_t rows = uint32_t(x.rows());
    struct {
        uint32_t rows, cols, x_off, x_stride, y_off, y_stride, w_off, z_off, z_stride;
        float eps;
    } pc{rows, uint32_t(x.cols()), r.off(d.in[0]), r.stride(d.in[0]), r.off(n.out), r.stride(n.out),
         0, r.off(z), r.stride(z), d.f[0]};
    vk::Binding wb;
    if (r.T(w).kind == TensorKind::weight) {
        wb = vk::Binding::storage(r.T(w).weight->chunks()[0].main);
    } else {
        wb = r.sb(w);
        pc.w_off = r.off(w);
    }
    r.dispatch(*p, {r.sb(d.in[0]), wb, r.sb(z), r.sb(n.out)}, pc, std::min(rows, kMaxGroupsY),
               div_up(rows, kMaxGroupsY), label);
    return {};
}

Status record_softmax(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(r.pipe("softmax", {kLocal}));
    const Tensor& x = r.T(d.in[0]);
    const uint32_t rows = uint32_t(x.rows());
    struct {
        uint32_t rows, cols, x_off, x_stride, y_off, y_stride;
        float scale;
    } pc{rows, uint32_t(x.cols()), r.off(d.in[0]), r.stride(d.in[0]), r.off(n.out), r.stride(n.out),
         d.f[0] == 0 ? 1.0f : d.f[0]};
    r.dispatch(*p, {r.sb(d.in[0]), r.sb(n.out)}, pc, std::min(rows, kMaxGroupsY), div_up(rows, kMaxGroupsY), label);
    return {};
}

Status record_argmax(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(r.pipe("argmax", {kLocal}));
    const Tensor& x = r.T(d.in[0]);
    struct {
        uint32_t rows, cols, x_off, x_stride, y_off;
    } pc{uint32_t(x.rows()), uint32_t(x.cols()), r.off(d.in[0]), r.stride(d.in[0]), r.off(n.out)};
    r.dispatch(*p, {r.sb(d.in[0]), r.sb(n.out)}, pc, uint32_t(x.rows()), 1, label);
    return {};
}

Status record_topk(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(r.pipe("topk", {kLocal}));
    const Tensor& x = r.T(d.in[0]);
    struct {
        uint32_t rows, cols, x_off, x_stride, k, y_off, y_stride;
    } pc{uint32_t(x.rows()), uint32_t(x.cols()), r.off(d.in[0]), r.stride(d.in[0]), uint32_t(d.i[0]), r.off(n.out),
         r.stride(n.out)};
    // ids and values are separate [k, rows] tensors that start their storage, so
    // one offset/stride pair addresses both.
    if (r.off(n.out) != 0 || r.off(n.out2) != 0) return Error("top_k: outputs must start their storage");
    r.dispatch(*p, {r.sb(d.in[0]), r.sb(n.out), r.sb(n.out2)}, pc, uint32_t(x.rows()), 1, label);
    return {};
}

Status record_select_rows(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(r.pipe("select_rows", {kLocal}));
    const Tensor& x = r.T(d.in[0]);
    const uint32_t m = uint32_t(r.T(d.in[1]).elements());
    struct {
        uint32_t n, cols, x_off, x_stride, ids_off, y_off, y_stride;
    } pc{m, uint32_t(x.cols()), r.off(d.in[0]), r.stride(d.in[0]), r.off(d.in[1]), r.off(n.out), r.stride(n.out)};
    r.dispatch(*p, {r.sb(d.in[0]), r.sb(d.in[1]), r.sb(n.out)}, pc, div_up(x.cols(), kLocal), m, label);
    return {};
}

// ---------------------------------------------------------------------------
// rope, KV, attention
// ---------------------------------------------------------------------------
Status record_rope(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor& x = r.T(d.in[0]);
    const bool has_ff = d.n_in == 3;
    const vk::Pipeline* p =
        TDM_TRY(r.pipe("rope", {kLocal, uint32_t(d.i[0]), uint32_t(d.i[2]), has_ff ? 1u : 0u}));
    const uint32_t rows = uint32_t(x.rows());
    struct {
        uint32_t rows, head_dim, n_rot, heads_per_token, x_off, x_stride, y_off, y_stride, pos_off, pos_stride, sec0,
            sec1, sec2, row0;
        float theta, freq_scale;
    } pc{rows, uint32_t(x.ne[0]), uint32_t(d.i[1] ? d.i[1] : x.ne[0]), uint32_t(x.ne[1]), r.off(d.in[0]),
         r.stride(d.in[0]), r.off(n.out), r.stride(n.out), r.off(d.in[1]), d.i[2] ? 4u : 1u, uint32_t(d.i[3]),
         uint32_t(d.i[4]), uint32_t(d.i[5]), 0, d.f[0], d.f[1] == 0 ? 1.0f : d.f[1]};
    const vk::Binding ff = has_ff ? (r.T(d.in[2]).kind == TensorKind::weight
                                         ? vk::Binding::storage(r.T(d.in[2]).weight->chunks()[0].main)
                                         : r.sb(d.in[2]))
                                  : r.sb(d.in[0]);
    if (has_ff && r.T(d.in[2]).kind != TensorKind::weight && r.off(d.in[2]) != 0)
        return Error("rope: frequency factors must start their storage");
    for (uint32_t row0 = 0; row0 < rows; row0 += kMaxGroupsY) {
        pc.row0 = row0;
        r.dispatch(*p, {r.sb(d.in[0]), r.sb(d.in[1]), ff, r.sb(n.out)}, pc, div_up(x.ne[0] / 2, kLocal),
                   std::min(kMaxGroupsY, rows - row0), label);
    }
    return {};
}

Status record_kv_store(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const KvLayerBinding& kv = *r.T(d.in[0]).kv;
    const vk::Pipeline* p = TDM_TRY(r.pipe("kv_store", {kLocal, kv.f16 ? 1u : 0u}));
    const TensorId pos = n.positions, seq = n.seq_ids;
    const uint32_t n_tok = uint32_t(r.T(pos).elements());
    struct {
        uint32_t n_tokens, n_kv_head, dk, dv, k_off, k_stride, v_off, v_stride, pos_off, seq_off, block_size, max_blocks;
    } pc{n_tok, kv.n_kv_head, kv.dk, kv.dv, r.off(d.in[1]), kv.n_kv_head * kv.dk, r.off(d.in[2]),
         kv.n_kv_head * kv.dv, r.off(pos), r.off(seq), kv.block_size, kv.max_blocks};
    const uint32_t pairs = kv.n_kv_head * std::max(kv.dk, kv.dv) / 2;
    r.dispatch(*p,
               {r.sb(d.in[1]), r.sb(d.in[2]), r.sb(pos), r.sb(seq), vk::Binding::storage(kv.block_table),
                vk::Binding::storage(kv.k), vk::Binding::storage(kv.v)},
               pc, div_up(pairs, kLocal), n_tok, label);
    return {};
}

Status record_attention(Rec& r, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const KvLayerBinding& kv = *r.T(d.in[1]).kv;
    const Tensor& q = r.T(d.in[0]);
    const uint32_t n_head = uint32_t(q.ne[1]);
    const uint32_t G = n_head / kv.n_kv_head;
    const uint32_t ls = std::max<uint32_t>(32, r.c.device.caps().subgroup_size);
    const uint32_t dv4 = div_up(kv.dv / 4, ls);
    const bool texel = r.texel() && kv.k_view && kv.v_view;
    const vk::Pipeline* p =
        TDM_TRY(r.pipe(texel ? "attention_tex" : "attention_buf", {ls, G, kv.f16 ? 1u : 0u, dv4}));
    const TensorId pos = n.positions, seq = n.seq_ids;
    const uint32_t n_tok = uint32_t(q.ne[2] * q.ne[3]);
    struct {
        uint32_t n_tokens, n_head, n_kv_head, dk, dv, q_off, q_stride, o_off, o_stride, pos_off, seq_off, block_size,
            max_blocks, window;
        float scale, softcap;
    } pc{n_tok, n_head, kv.n_kv_head, kv.dk, kv.dv, r.off(d.in[0]), n_head * kv.dk, r.off(n.out),
         r.stride(n.out), r.off(pos), r.off(seq), kv.block_size, kv.max_blocks, uint32_t(d.i[0]),
         d.f[0] != 0 ? d.f[0] : 1.0f / std::sqrt(float(kv.dk)), d.f[1]};
    const vk::Binding kb = texel ? vk::Binding::texel(kv.k_view) : vk::Binding::storage(kv.k);
    const vk::Binding vb = texel ? vk::Binding::texel(kv.v_view) : vk::Binding::storage(kv.v);
    r.dispatch(*p,
               {r.sb(d.in[0]), kb, vb, r.sb(pos), r.sb(seq), vk::Binding::storage(kv.block_table), r.sb(n.out)}, pc,
               kv.n_kv_head, n_tok, label);
    return {};
}

}  // namespace

Status record_node(RecordContext& ctx, const Node& node) {
    Rec r{ctx};
    const OpDesc& d = node.desc;
    // TANDEM_PROFILE_DETAIL=1 (with profiling on): one profile line per op name and shape
    static const bool detail = [] {
        const char* e = std::getenv("TANDEM_PROFILE_DETAIL");
        return e && std::string_view(e) == "1";
    }();
    std::string label = op_name(d.op);
    if (detail) {
        const Tensor& in0 = r.T(d.in[0]);
        label = fmt::format("{} {} [{}x{}] -> [{}x{}]", label, d.name, in0.cols(), in0.rows(), r.T(node.out).cols(),
                            r.T(node.out).rows());
    }
    switch (d.op) {
        case TDM_OP_GET_ROWS: return record_get_rows(r, node, label);
        case TDM_OP_MATMUL:
            return record_matmul(r, node, detail ? label : fmt::format("matmul_{}", dtype_name(r.T(d.in[0]).type)));
        case TDM_OP_ADD: return record_elementwise(r, kEwAdd, d.in[0], d.in[1], node.out, 0, 0, label);
        case TDM_OP_MUL: return record_elementwise(r, kEwMul, d.in[0], d.in[1], node.out, 0, 0, label);
        case TDM_OP_SUB: return record_elementwise(r, kEwSub, d.in[0], d.in[1], node.out, 0, 0, label);
        case TDM_OP_SCALE: return record_elementwise(r, kEwScale, d.in[0], kNoTensor, node.out, 0, d.f[0], label);
        case TDM_OP_UNARY:
            return record_elementwise(r, unary_to_ew(d.i[0]), d.in[0], kNoTensor, node.out, 0, d.f[0],
                                      fmt::format("unary_{}", d.i[0]));
        case TDM_OP_GLU:
            return record_elementwise(r, d.i[0] == TDM_GLU_GEGLU ? kEwGeglu : kEwSwiglu, d.in[0], d.in[1], node.out,
                                      0, 0, label);
        case TDM_OP_COPY: return record_elementwise(r, kEwCopy, d.in[0], kNoTensor, node.out, 0, 0, label);
        case TDM_OP_CAST: {
            const uint32_t op = d.i[0] == TDM_DTYPE_F16 ? kEwRoundF16 : d.i[0] == TDM_DTYPE_BF16 ? kEwRoundBf16 : kEwCopy;
            return record_elementwise(r, op, d.in[0], kNoTensor, node.out, 0, 0, label);
        }
        case TDM_OP_CONCAT:
            TDM_TRY(record_elementwise(r, kEwCopy, d.in[0], kNoTensor, node.out, 0, 0, label));
            return record_elementwise(r, kEwCopy, d.in[1], kNoTensor, node.out, uint32_t(r.T(d.in[0]).cols()), 0,
                                      label);
        case TDM_OP_RMS_NORM:
        case TDM_OP_L2_NORM:
        case TDM_OP_GATED_RMS_NORM: return record_norm(r, node, label);
        case TDM_OP_SOFTMAX: return record_softmax(r, node, label);
        case TDM_OP_ARGMAX: return record_argmax(r, node, label);
        case TDM_OP_TOP_K: return record_topk(r, node, label);
        case TDM_OP_SELECT_ROWS: return record_select_rows(r, node, label);
        case TDM_OP_ROPE: return record_rope(r, node, label);
        case TDM_OP_KV_STORE: return record_kv_store(r, node, label);
        case TDM_OP_ATTENTION: return record_attention(r, node, label);
        case TDM_OP_CONV1D_CAUSAL: return record_conv1d_causal(ctx, node);
        case TDM_OP_GATED_DELTA_RULE: return record_gated_delta_rule(ctx, node);
        case TDM_OP_MATMUL_ID: return record_matmul_id(ctx, node);
        case TDM_OP_MOE_SUM: return record_moe_sum(ctx, node);
        default: return Error::format("no kernel for op {}", op_name(d.op));
    }
}

}  // namespace tdm
