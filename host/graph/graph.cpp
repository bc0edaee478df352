// host/graph/graph.cpp: graph building and per-op shape validation.
#include "graph/graph.h"

#include <algorithm>

#include "graph/weight.h"

namespace tdm {

const char* op_name(tdm_op op) {
    switch (op) {
        case TDM_OP_GET_ROWS: return "get_rows";
        case TDM_OP_MATMUL: return "matmul";
        case TDM_OP_ADD: return "add";
        case TDM_OP_MUL: return "mul";
        case TDM_OP_SUB: return "sub";
        case TDM_OP_SCALE: return "scale";
        case TDM_OP_UNARY: return "unary";
        case TDM_OP_GLU: return "glu";
        case TDM_OP_RMS_NORM: return "rms_norm";
        case TDM_OP_L2_NORM: return "l2_norm";
        case TDM_OP_GATED_RMS_NORM: return "gated_rms_norm";
        case TDM_OP_ROPE: return "rope";
        case TDM_OP_SOFTMAX: return "softmax";
        case TDM_OP_KV_STORE: return "kv_store";
        case TDM_OP_ATTENTION: return "attention";
        case TDM_OP_CONCAT: return "concat";
        case TDM_OP_COPY: return "copy";
        case TDM_OP_CAST: return "cast";
        case TDM_OP_ARGMAX: return "argmax";
        case TDM_OP_TOP_K: return "top_k";
        case TDM_OP_VIEW_COLS: return "view_cols";
        case TDM_OP_RESHAPE: return "reshape";
        case TDM_OP_SELECT_ROWS: return "select_rows";
        case TDM_OP_CONV1D_CAUSAL: return "conv1d_causal";
        case TDM_OP_GATED_DELTA_RULE: return "gated_delta_rule";
        case TDM_OP_MATMUL_ID: return "matmul_id";
        case TDM_OP_MOE_SUM: return "moe_sum";
        default: return "unknown";
    }
}

Graph::Graph() { tensors_.emplace_back(); }  // id 0 = no tensor

TensorId Graph::add_tensor(Tensor t) {
    const TensorId id = TensorId(tensors_.size());
    if (t.base == kNoTensor) t.base = id;
    tensors_.push_back(std::move(t));
    return id;
}

TensorId Graph::input(DType type, std::vector<int64_t> ne, std::string name) {
    Tensor t;
    t.type = type;
    for (size_t k = 0; k < ne.size() && k < 4; ++k) t.ne[k] = ne[k];
    t.kind = TensorKind::input;
    t.row_stride = uint64_t(t.ne[0]);
    t.name = std::move(name);
    const TensorId id = add_tensor(std::move(t));
    inputs_.push_back(id);
    return id;
}

TensorId Graph::weight(const DeviceWeight* w) {
    Tensor t;
    t.type = w->type();
    for (int k = 0; k < 4; ++k) t.ne[k] = w->ne()[k];
    t.kind = TensorKind::weight;
    t.weight = w;
    t.row_stride = uint64_t(t.ne[0]);
    t.name = w->name();
    return add_tensor(std::move(t));
}

TensorId Graph::owned_weight(std::shared_ptr<const DeviceWeight> w) {
    const TensorId id = weight(w.get());
    owned_weights_.push_back(std::move(w));
    return id;
}

TensorId Graph::kv(const KvLayerBinding* layer) {
    Tensor t;
    t.kind = TensorKind::kv;
    t.kv = layer;
    t.name = layer->name;
    return add_tensor(std::move(t));
}

TensorId Graph::state(const StateBinding* st) {
    Tensor t;
    t.kind = TensorKind::state;
    t.state = st;
    t.name = st->name;
    return add_tensor(std::move(t));
}

void Graph::set_batch(TensorId positions, TensorId seq_ids) {
    positions_ = positions;
    seq_ids_ = seq_ids;
}

Result<TensorId> Graph::add_activation(DType type, std::vector<int64_t> ne, int producer, std::string name) {
    Tensor t;
    t.type = type;
    for (size_t k = 0; k < ne.size() && k < 4; ++k) t.ne[k] = ne[k];
    for (int k = 0; k < 4; ++k)
        if (t.ne[k] <= 0) return Error::format("{}: empty output shape", name.empty() ? "op" : name);
    t.kind = TensorKind::activation;
    t.row_stride = uint64_t(t.ne[0]);
    t.producer = producer;
    t.name = std::move(name);
    return add_tensor(std::move(t));
}

Result<TensorId> Graph::add_view(TensorId base, std::vector<int64_t> ne, uint64_t off, uint64_t row_stride,
                                 std::string name) {
    const Tensor& b = tensors_[base];
    Tensor t;
    t.type = b.type;
    for (size_t k = 0; k < ne.size() && k < 4; ++k) t.ne[k] = ne[k];
    t.kind = TensorKind::view;
    t.base = b.base;
    t.off = off;
    t.row_stride = row_stride;
    t.producer = b.producer;
    t.name = name.empty() ? b.name : std::move(name);
    return add_tensor(std::move(t));
}

std::string Graph::describe(TensorId id) const {
    if (id == kNoTensor || id >= tensors_.size()) return "(none)";
    const Tensor& t = tensors_[id];
    if (t.kind == TensorKind::kv) return fmt::format("kv layer '{}'", t.name);
    std::string s = fmt::format("'{}' {} [{}", t.name, dtype_name(t.type), t.ne[0]);
    for (int k = 1; k < 4; ++k)
        if (t.ne[k] != 1 || k == 1) s += fmt::format(", {}", t.ne[k]);
    return s + "]";
}

TensorId Graph::find(std::string_view name) const {
    for (size_t i = tensors_.size(); i-- > 1;)
        if (tensors_[i].name == name) return TensorId(i);
    return kNoTensor;
}

TensorId Graph::second_output(TensorId out) const {
    for (const Node& n : nodes_)
        if (n.out == out) return n.out2;
    return kNoTensor;
}

Status Graph::mark_output(TensorId t) {
    if (t == kNoTensor || t >= tensors_.size()) return Error("mark_output: invalid tensor");
    const Tensor& x = tensors_[t];
    if (x.kind != TensorKind::activation)
        return Error::format("mark_output: {} is not an op result (copy it first)", describe(t));
    outputs_.push_back(t);
    return {};
}

Status Graph::check_f32(const OpDesc& d, int idx) const {
    const Tensor& t = tensors_[d.in[idx]];
    if (t.kind == TensorKind::weight || t.kind == TensorKind::kv || t.type != DType::F32)
        return Error::format("{}: input {} must be an f32 activation, got {}", op_name(d.op), idx, describe(d.in[idx]));
    return {};
}

Status Graph::check_f32_or_weight(const OpDesc& d, int idx) const {
    const Tensor& t = tensors_[d.in[idx]];
    if (t.kind == TensorKind::weight) {
        if (t.type != DType::F32 || t.weight->chunks().size() != 1)
            return Error::format("{}: weight input {} must be a small f32 weight, got {}", op_name(d.op), idx,
                                 describe(d.in[idx]));
        return {};
    }
    return check_f32(d, idx);
}

Status Graph::check_state_inputs(const OpDesc& d, int64_t n) const {
    if (state_io_ == kNoTensor || seq_ids_ == kNoTensor)
        return Error::format("{}: the graph has no recurrent-state inputs", op_name(d.op));
    // The kernels read state_io[0 .. n] and seq_ids[0].
    const Tensor& io = tensors_[state_io_];
    if (io.type != DType::I32 || !io.contiguous() || io.elements() != n + 1)
        return Error::format("{}: state_io {} must be i32 [{}] (read checkpoint, then one per row)", op_name(d.op),
                             describe(state_io_), n + 1);
    if (tensors_[seq_ids_].type != DType::I32) return Error::format("{}: seq_ids must be i32", op_name(d.op));
    return {};
}

Result<TensorId> Graph::op(const OpDesc& d) {
    const char* on = op_name(d.op);
    for (int k = 0; k < d.n_in; ++k)
        if (d.in[k] == kNoTensor || d.in[k] >= tensors_.size())
            return Error::format("{}: input {} is not a valid tensor", on, k);
    auto need = [&](int n_min, int n_max) -> Status {
        if (d.n_in < n_min || d.n_in > n_max)
            return Error::format("{}: expects {}..{} inputs, got {}", on, n_min, n_max, d.n_in);
        return {};
    };
    auto T = [&](int k) -> const Tensor& { return tensors_[d.in[k]]; };
    const int node = int(nodes_.size());
    std::string name = d.name.empty() ? on : d.name;
    TensorId out = kNoTensor, out2 = kNoTensor;

    switch (d.op) {
        case TDM_OP_GET_ROWS: {
            TDM_TRY(need(2, 2));
            if (T(0).kind != TensorKind::weight) return Error::format("get_rows: input 0 must be a weight");
            if (T(1).type != DType::I32) return Error::format("get_rows: ids must be i32, got {}", describe(d.in[1]));
            if (T(0).cols() % 4) return Error::format("get_rows: row width {} is not a multiple of 4", T(0).cols());
            out = TDM_TRY(add_activation(DType::F32, {T(0).cols(), T(1).elements()}, node, name));
            break;
        }
        case TDM_OP_MATMUL: {
            TDM_TRY(need(2, 3));
            if (T(0).kind != TensorKind::weight) return Error::format("matmul: input 0 must be a weight");
            TDM_TRY(check_f32(d, 1));
            const Tensor& w = T(0);
            const Tensor& x = T(1);
            if (x.cols() != w.cols())
                return Error::format("matmul: {} has {} columns but weight {} expects {}", describe(d.in[1]), x.cols(),
                                     describe(d.in[0]), w.cols());
            if (!w.weight->layout().texel_rows)
                return Error::format("matmul: weight {} rows are not 16-byte multiples", describe(d.in[0]));
            if (x.off % 4 || x.row_stride % 4)
                return Error::format("matmul: input {} must be 4-element aligned (copy it first)", describe(d.in[1]));
            std::vector<int64_t> ne = {w.rows(), x.ne[1], x.ne[2], x.ne[3]};
            if (d.n_in == 3) {
                TDM_TRY(check_f32(d, 2));
                if (T(2).cols() != w.rows() || T(2).rows() != x.rows())
                    return Error::format("matmul: add input {} does not match the output [{}, {}]", describe(d.in[2]),
                                         w.rows(), x.rows());
            }
            out = TDM_TRY(add_activation(DType::F32, ne, node, name));
            break;
        }
        case TDM_OP_ADD:
        case TDM_OP_MUL:
        case TDM_OP_SUB:
        case TDM_OP_GLU: {
            TDM_TRY(need(2, 2));
            TDM_TRY(check_f32(d, 0));
            TDM_TRY(d.op == TDM_OP_GLU ? check_f32(d, 1) : check_f32_or_weight(d, 1));
            const Tensor& a = T(0);
            const Tensor& b = T(1);
            const bool same = a.cols() == b.cols() && a.rows() == b.rows();
            const bool row_bcast = d.op != TDM_OP_GLU && a.cols() == b.cols() && b.rows() == 1;
            const bool col_bcast = d.op != TDM_OP_GLU && b.cols() == 1 && b.rows() == a.rows();
            if (!same && !row_bcast && !col_bcast)
                return Error::format("{}: shapes differ: {} vs {}", on, describe(d.in[0]), describe(d.in[1]));
            out = TDM_TRY(add_activation(DType::F32, {T(0).ne[0], T(0).ne[1], T(0).ne[2], T(0).ne[3]}, node, name));
            break;
        }
        case TDM_OP_SCALE:
        case TDM_OP_UNARY:
        case TDM_OP_SOFTMAX:
        case TDM_OP_L2_NORM:
        case TDM_OP_COPY: {
            TDM_TRY(need(1, 1));
            TDM_TRY(check_f32(d, 0));
            if (d.op == TDM_OP_UNARY && (d.i[0] < 0 || d.i[0] > TDM_UNARY_ADD_SCALAR))
                return Error::format("unary: unknown kind {}", d.i[0]);
            if (d.op == TDM_OP_UNARY && d.i[0] == TDM_UNARY_SOFTCAP && d.f[0] <= 0)
                return Error("unary softcap: f[0] (the cap) must be > 0");
            out = TDM_TRY(add_activation(DType::F32, {T(0).ne[0], T(0).ne[1], T(0).ne[2], T(0).ne[3]}, node, name));
            break;
        }
        case TDM_OP_CAST: {
            TDM_TRY(need(1, 1));
            TDM_TRY(check_f32(d, 0));
            if (d.i[0] != TDM_DTYPE_F32 && d.i[0] != TDM_DTYPE_F16 && d.i[0] != TDM_DTYPE_BF16)
                return Error::format("cast: unsupported target type {}", d.i[0]);
            out = TDM_TRY(add_activation(DType::F32, {T(0).ne[0], T(0).ne[1], T(0).ne[2], T(0).ne[3]}, node, name));
            break;
        }
        case TDM_OP_RMS_NORM:
        case TDM_OP_GATED_RMS_NORM: {
            const bool gated = d.op == TDM_OP_GATED_RMS_NORM;
            TDM_TRY(gated ? need(3, 3) : need(1, 2));
            TDM_TRY(check_f32(d, 0));
            const int wmode = gated ? TDM_NORM_WEIGHT : d.i[0];
            if (wmode < 0 || wmode > 2) return Error::format("{}: unknown weight mode {}", on, wmode);
            if ((wmode != 0) != (d.n_in >= 2))
                return Error::format("{}: weight mode {} {} a weight input", on, wmode, wmode ? "needs" : "takes no");
            if (d.n_in >= 2) {
                const Tensor& w = T(1);
                if (w.type != DType::F32 || w.elements() != T(0).cols())
                    return Error::format("{}: weight {} must be f32 with {} elements", on, describe(d.in[1]), T(0).cols());
            }
            if (gated) {
                TDM_TRY(check_f32(d, 2));
                if (T(2).cols() != T(0).cols() || T(2).rows() != T(0).rows())
                    return Error::format("gated_rms_norm: gate {} does not match {}", describe(d.in[2]), describe(d.in[0]));
            }
            if (d.f[0] < 0) return Error::format("{}: negative eps", on);
            out = TDM_TRY(add_activation(DType::F32, {T(0).ne[0], T(0).ne[1], T(0).ne[2], T(0).ne[3]}, node, name));
            break;
        }
        case TDM_OP_ROPE: {
            TDM_TRY(need(2, 3));
            TDM_TRY(check_f32(d, 0));
            const Tensor& x = T(0);
            const int64_t hd = x.ne[0], n_tok = x.ne[2] * x.ne[3];
            const int64_t n_rot = d.i[1] ? d.i[1] : hd;
            if (d.i[0] != TDM_ROPE_NEOX && d.i[0] != TDM_ROPE_ADJACENT) return Error::format("rope: unknown mode {}", d.i[0]);
            if (n_rot <= 0 || n_rot > hd || n_rot % 2 || hd % 2)
                return Error::format("rope: n_rot {} invalid for head_dim {}", n_rot, hd);
            if (d.i[2] < 0 || d.i[2] > 2) return Error::format("rope: unknown sections kind {}", d.i[2]);
            const int64_t streams = d.i[2] ? 4 : 1;
            const Tensor& pos = T(1);
            if (pos.type != DType::I32 || pos.elements() < n_tok * streams)
                return Error::format("rope: positions {} must be i32 with {} per token for {} tokens", describe(d.in[1]),
                                     streams, n_tok);
            if (d.n_in == 3 && (T(2).type != DType::F32 || T(2).elements() < n_rot / 2))
                return Error::format("rope: frequency factors {} must be f32 with {} entries", describe(d.in[2]), n_rot / 2);
            if (d.f[0] <= 0) return Error("rope: theta (f[0]) must be > 0");
            out = TDM_TRY(add_activation(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]}, node, name));
            break;
        }
        case TDM_OP_KV_STORE: {
            TDM_TRY(need(3, 3));
            if (T(0).kind != TensorKind::kv) return Error("kv_store: input 0 must be a KV layer");
            TDM_TRY(check_f32(d, 1));
            TDM_TRY(check_f32(d, 2));
            const KvLayerBinding* kv = T(0).kv;
            const Tensor& k = T(1);
            const Tensor& v = T(2);
            if (positions_ == kNoTensor) return Error("kv_store: the graph has no batch positions");
            const int64_t n = tensors_[positions_].elements();
            if (!k.contiguous() || !v.contiguous()) return Error("kv_store: k and v must be contiguous");
            if (k.elements() != n * kv->n_kv_head * kv->dk || v.elements() != n * kv->n_kv_head * kv->dv)
                return Error::format("kv_store: k {} / v {} do not hold {} tokens of {} heads x {}/{} for {}", describe(d.in[1]),
                                     describe(d.in[2]), n, kv->n_kv_head, kv->dk, kv->dv, kv->name);
            Tensor t = T(0);
            t.producer = node;
            t.name = name;
            out = add_tensor(std::move(t));
            break;
        }
        case TDM_OP_ATTENTION: {
            TDM_TRY(need(2, 2));
            TDM_TRY(check_f32(d, 0));
            if (T(1).kind != TensorKind::kv) return Error("attention: input 1 must be a KV layer");
            const KvLayerBinding* kv = T(1).kv;
            const Tensor& q = T(0);
            if (!q.contiguous()) return Error("attention: q must be contiguous");
            if (q.ne[0] != kv->dk)
                return Error::format("attention: q head dim {} differs from {}'s {}", q.ne[0], kv->name, kv->dk);
            const int64_t n_head = q.ne[1];
            if (n_head % kv->n_kv_head)
                return Error::format("attention: {} query heads are not a multiple of {} kv heads", n_head, kv->n_kv_head);
            if (n_head / kv->n_kv_head > 16) return Error("attention: more than 16 query heads per kv head");
            if (positions_ == kNoTensor) return Error("attention: the graph has no batch positions");
            const int64_t n = q.ne[2] * q.ne[3];
            if (n != tensors_[positions_].elements())
                return Error::format("attention: q has {} tokens, the batch {}", n, tensors_[positions_].elements());
            if (d.i[0] < 0) return Error("attention: negative window");
            out = TDM_TRY(add_activation(DType::F32, {kv->dv * n_head, n}, node, name));
            break;
        }
        case TDM_OP_CONCAT: {
            TDM_TRY(need(2, 2));
            TDM_TRY(check_f32(d, 0));
            TDM_TRY(check_f32(d, 1));
            if (T(0).rows() != T(1).rows())
                return Error::format("concat: row counts differ: {} vs {}", describe(d.in[0]), describe(d.in[1]));
            out = TDM_TRY(add_activation(DType::F32, {T(0).cols() + T(1).cols(), T(0).ne[1], T(0).ne[2], T(0).ne[3]},
                                         node, name));
            break;
        }
        case TDM_OP_ARGMAX: {
            TDM_TRY(need(1, 1));
            TDM_TRY(check_f32(d, 0));
            out = TDM_TRY(add_activation(DType::I32, {T(0).rows()}, node, name));
            break;
        }
        case TDM_OP_TOP_K: {
            TDM_TRY(need(1, 1));
            TDM_TRY(check_f32(d, 0));
            if (d.i[0] < 1 || d.i[0] > 256 || d.i[0] > T(0).cols())
                return Error::format("top_k: k = {} out of range 1..min(256, {})", d.i[0], T(0).cols());
            out = TDM_TRY(add_activation(DType::I32, {d.i[0], T(0).rows()}, node, name));
            out2 = TDM_TRY(add_activation(DType::F32, {d.i[0], T(0).rows()}, node, name + ".values"));
            break;
        }
        case TDM_OP_VIEW_COLS: {
            TDM_TRY(need(1, 1));
            TDM_TRY(check_f32(d, 0));
            const Tensor& a = T(0);
            if (d.i[0] < 0 || d.i[1] <= 0 || d.i[0] + d.i[1] > a.cols())
                return Error::format("view_cols: columns [{}, {}) outside {}", d.i[0], d.i[0] + d.i[1], describe(d.in[0]));
            out = TDM_TRY(add_view(d.in[0], {d.i[1], a.ne[1], a.ne[2], a.ne[3]}, a.off + uint64_t(d.i[0]), a.row_stride,
                                   d.name));
            break;
        }
        case TDM_OP_RESHAPE: {
            TDM_TRY(need(1, 1));
            const Tensor& a = T(0);
            if (a.kind == TensorKind::weight || a.kind == TensorKind::kv) return Error("reshape: not an activation");
            if (!a.contiguous()) return Error::format("reshape: {} is not contiguous (copy it first)", describe(d.in[0]));
            int64_t n = 1;
            std::vector<int64_t> ne(4, 1);
            for (int k = 0; k < 4; ++k) {
                ne[k] = d.i[k] ? d.i[k] : 1;
                if (ne[k] < 0) return Error("reshape: negative dimension");
                n *= ne[k];
            }
            if (n != a.elements())
                return Error::format("reshape: {} elements cannot become [{}, {}, {}, {}]", a.elements(), ne[0], ne[1],
                                     ne[2], ne[3]);
            out = TDM_TRY(add_view(d.in[0], ne, a.off, uint64_t(ne[0]), d.name));
            break;
        }
        case TDM_OP_SELECT_ROWS: {
            TDM_TRY(need(2, 2));
            TDM_TRY(check_f32(d, 0));
            if (T(1).type != DType::I32) return Error::format("select_rows: ids must be i32, got {}", describe(d.in[1]));
            out = TDM_TRY(add_activation(DType::F32, {T(0).cols(), T(1).elements()}, node, name));
            break;
        }
        case TDM_OP_CONV1D_CAUSAL: {
            TDM_TRY(need(3, 3));
            TDM_TRY(check_f32(d, 0));
            const Tensor& x = T(0);
            const Tensor& w = T(1);
            if (w.kind != TensorKind::weight || w.type != DType::F32 || w.weight->chunks().size() != 1)
                return Error::format("conv1d_causal: weights {} must be a small f32 weight", describe(d.in[1]));
            const int64_t K = w.ne[0], C = w.elements() / std::max<int64_t>(1, K);
            if (K < 2 || C != x.cols())
                return Error::format("conv1d_causal: weights {} do not match {} channels", describe(d.in[1]), x.cols());
            if (T(2).kind != TensorKind::state || T(2).state->n_f32 != uint64_t(C * (K - 1)))
                return Error::format("conv1d_causal: input 2 must be a recurrent state of {} floats", C * (K - 1));
            if (d.i[0] != 0 && d.i[0] != 1) return Error::format("conv1d_causal: i[0] (SiLU) must be 0 or 1, got {}", d.i[0]);
            TDM_TRY(check_state_inputs(d, x.rows()));
            out = TDM_TRY(add_activation(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]}, node, name));
            break;
        }
        case TDM_OP_GATED_DELTA_RULE: {
            TDM_TRY(need(4, 4));
            for (int k = 0; k < 3; ++k) TDM_TRY(check_f32(d, k));
            const int64_t Nk = d.i[0], Nv = d.i[1], dk = d.i[2], dv = d.i[3];
            if (Nk <= 0 || Nv <= 0 || dk <= 0 || dv <= 0 || Nv % Nk || dk % 4 || dv % 4 || dk > 256 || dv > 256)
                return Error::format("gated_delta_rule: invalid heads Nk {} Nv {} dk {} dv {} (Nv a multiple of Nk, "
                                     "dims multiples of 4 up to 256)",
                                     Nk, Nv, dk, dv);
            if (d.i[4] != TDM_HEAD_MAP_TILED && d.i[4] != TDM_HEAD_MAP_GROUPED)
                return Error::format("gated_delta_rule: unknown head map {}", d.i[4]);
            const int64_t n = T(0).rows();
            if (T(0).cols() != 2 * Nk * dk + Nv * dv)
                return Error::format("gated_delta_rule: qkv {} must have {} columns", describe(d.in[0]),
                                     2 * Nk * dk + Nv * dv);
            if (T(1).elements() != Nv * n || T(2).elements() != Nv * n || !T(1).contiguous() || !T(2).contiguous())
                return Error::format("gated_delta_rule: g {} and beta {} must be contiguous [{}, {}]", describe(d.in[1]),
                                     describe(d.in[2]), Nv, n);
            if (T(3).kind != TensorKind::state || T(3).state->n_f32 != uint64_t(Nv * dk * dv))
                return Error::format("gated_delta_rule: input 3 must be a recurrent state of {} floats", Nv * dk * dv);
            if (d.i[5] < 0 || d.i[5] > kMaxDeltaRuleChunk)
                return Error::format("gated_delta_rule: chunk size i[5] must be 0 (recurrent) to {}, got {}",
                                     kMaxDeltaRuleChunk, d.i[5]);
            TDM_TRY(check_state_inputs(d, n));
            out = TDM_TRY(add_activation(DType::F32, {dv, Nv, n}, node, name));
            break;
        }
        case TDM_OP_MATMUL_ID: {
            TDM_TRY(need(3, 3));
            const Tensor& w = T(0);
            if (w.kind != TensorKind::weight) return Error("matmul_id: input 0 must be a weight");
            TDM_TRY(check_f32(d, 1));
            const Tensor& x = T(1);
            const Tensor& ids = T(2);
            if (ids.type != DType::I32) return Error::format("matmul_id: ids must be i32, got {}", describe(d.in[2]));
            const int64_t K = w.ne[0], M = w.ne[1], n_used = ids.ne[0], n = ids.rows();
            if (w.ne[2] < 1 || w.ne[3] != 1) return Error::format("matmul_id: weight {} must be [K, M, E]", describe(d.in[0]));
            if (x.cols() != K || (x.rows() != n && x.rows() != n * n_used))
                return Error::format("matmul_id: x {} does not match weight {} and ids {}", describe(d.in[1]),
                                     describe(d.in[0]), describe(d.in[2]));
            if (x.off % 4 || x.row_stride % 4) return Error("matmul_id: x must be 4-element aligned");
            if (!w.weight->layout().texel_rows) return Error("matmul_id: weight rows are not 16-byte multiples");
            out = TDM_TRY(add_activation(DType::F32, {M, n_used, n}, node, name));
            break;
        }
        case TDM_OP_MOE_SUM: {
            TDM_TRY(need(2, 2));
            TDM_TRY(check_f32(d, 0));
            TDM_TRY(check_f32(d, 1));
            const Tensor& y = T(0);
            const Tensor& w = T(1);
            if (!y.contiguous() || !w.contiguous() || w.ne[0] != y.ne[1] || w.rows() != y.ne[2] * y.ne[3])
                return Error::format("moe_sum: y {} and weights {} do not match", describe(d.in[0]), describe(d.in[1]));
            out = TDM_TRY(add_activation(DType::F32, {y.ne[0], y.ne[2] * y.ne[3]}, node, name));
            break;
        }
        default:
            return Error::format("unknown op code {}", int(d.op));
    }

    Node n;
    n.desc = d;
    n.desc.name = name;
    n.out = out;
    n.out2 = out2;
    n.positions = positions_;
    n.seq_ids = seq_ids_;
    n.state_io = state_io_;
    nodes_.push_back(std::move(n));
    return out;
}

}  // namespace tdm
