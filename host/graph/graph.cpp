// SPDX-License-Identifier: Apache-2.0
// host/graph/graph.cpp: graph building. Each op's validation and shape
// inference is its OpDef's (host/ops/); Graph::op looks the op up, checks what
// every op shares (input count, valid tensors, parameters) and appends the node.
#include "graph/graph.h"

#include <algorithm>

#include "graph/weight.h"
#include "ops/op_def.h"

namespace tdm {

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

void Graph::attach_kv_tree(TensorId positions, TensorId tree) {
    for (Node& n : nodes_)
        if (n.positions == positions) n.kv_tree = tree;
}

void Graph::bound_attention(TensorId positions, TensorId bound) {
    for (Node& n : nodes_)
        if (n.desc.op == TDM_OP_ATTENTION && n.positions == positions) n.positions = bound;
}

Result<TensorId> Graph::add_activation(DType type, std::vector<int64_t> ne, int producer, std::string name) {
    Tensor t;
    t.type = type;
    for (size_t k = 0; k < ne.size() && k < 4; ++k) t.ne[k] = ne[k];
    for (int k = 0; k < 4; ++k)
        if (t.ne[k] <= 0)
            return Error::coded(TDM_ERR_SHAPE, "{}: empty output shape", name.empty() ? "op" : name);
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

void Graph::replace_nodes(std::vector<Node> nodes) {
    nodes_ = std::move(nodes);
    for (Tensor& t : tensors_)
        if (t.kind != TensorKind::view) t.producer = -1;
    for (size_t i = 0; i < nodes_.size(); ++i)
        for (TensorId o : nodes_[i].results())
            if (o != kNoTensor) tensors_[o].producer = int(i);
    for (Tensor& t : tensors_)
        if (t.kind == TensorKind::view) t.producer = tensors_[t.base].producer;
}

Status Graph::mark_output(TensorId t) {
    if (t == kNoTensor || t >= tensors_.size())
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "mark_output: invalid tensor");
    const Tensor& x = tensors_[t];
    if (x.kind != TensorKind::activation)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "mark_output: {} is not an op result (copy it first)",
                            describe(t));
    if (x.bound)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "mark_output: {} lives in memory bound by the caller",
                            describe(t));
    outputs_.push_back(t);
    return {};
}

Status Graph::bind_storage(TensorId t, vk::BufferSlice slice) {
    if (t == kNoTensor || t >= tensors_.size() || !slice)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "bind_storage: invalid tensor or slice");
    Tensor& x = tensors_[t];
    if (x.kind != TensorKind::activation || !x.contiguous() || x.off != 0)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "bind_storage: {} is not a whole op result", describe(t));
    if (std::find(outputs_.begin(), outputs_.end(), t) != outputs_.end())
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "bind_storage: {} is already a host-readable output",
                            describe(t));
    x.bound = slice;
    return {};
}

Result<TensorId> Graph::int8_matmul_op(const OpDesc& d) {
    if (d.n_in < 2 || d.n_in > 3 || d.in[0] >= tensors_.size() || d.in[1] >= tensors_.size()) return kNoTensor;
    const Tensor& w = tensors_[d.in[0]];
    const Tensor& x = tensors_[d.in[1]];
    if (w.kind != TensorKind::weight || w.type != DType::Q8_0 || !w.weight || !w.weight->layout().texel_rows ||
        x.type != DType::F32 || x.kind == TensorKind::weight || x.cols() != w.cols() || x.cols() % 32 ||
        x.off % 4 || x.row_stride % 4)
        return kNoTensor;
    if (d.n_in == 3) {  // a bad add: the plain matmul's error, with no orphan quantize left behind
        if (d.in[2] >= tensors_.size()) return kNoTensor;
        const Tensor& add = tensors_[d.in[2]];
        const bool f32_activation = add.type == DType::F32 && add.kind != TensorKind::weight &&
                                    add.kind != TensorKind::kv && add.kind != TensorKind::state;
        if (!f32_activation || add.cols() != w.rows() || add.rows() != x.rows()) return kNoTensor;
    }
    TensorId xq = kNoTensor;
    for (const auto& [src, q] : quantized_)
        if (src == d.in[1]) xq = q;
    if (!xq) {
        OpDesc qd;
        qd.op = kOpInternalQuantizeQ8;
        qd.in[0] = d.in[1];
        qd.n_in = 1;
        qd.name = tensors_[d.in[1]].name + ".q8";
        xq = TDM_TRY(op(qd));
        quantized_.emplace_back(d.in[1], xq);
    }
    OpDesc md = d;
    md.op = kOpInternalMatmulQ8;
    md.in[1] = xq;
    return op(md);
}

Result<TensorId> Graph::op(const OpDesc& d) {
    if (int8_matmul_ && d.op == TDM_OP_MATMUL)
        if (const TensorId t = TDM_TRY(int8_matmul_op(d))) return t;
    const OpDef* def = find_op(d.op);
    if (!def) return unknown_op(d.op);
    if (d.n_in < def->min_inputs || d.n_in > def->max_inputs)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: expects {}..{} inputs, got {}", def->name,
                            def->min_inputs, def->max_inputs, d.n_in);
    for (int k = 0; k < d.n_in; ++k)
        if (d.in[k] == kNoTensor || d.in[k] >= tensors_.size())
            return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: input {} is not a valid tensor", def->name, k);
    if (def->check_params) TDM_TRY(def->check_params(d));
    if (d.op == TDM_OP_ARGMAX) return argmax_op(d);
    return add_node(*def, d);
}

Result<TensorId> Graph::argmax_op(const OpDesc& d) {
    OpDesc slices;
    slices.op = kOpInternalArgmaxSlices;
    slices.in[0] = d.in[0];
    slices.n_in = 1;
    slices.name = (d.name.empty() ? std::string("argmax") : d.name) + ".slices";
    OpDesc combine = d;
    combine.in[1] = TDM_TRY(op(slices));
    combine.n_in = 2;
    return add_node(*find_op(TDM_OP_ARGMAX), combine);
}

Result<TensorId> Graph::add_node(const OpDef& def, const OpDesc& d) {
    const int node = int(nodes_.size());
    std::string name = d.name.empty() ? def.name : d.name;
    OpContext c(*this, d, def, node, name);
    TDM_TRY(def.validate(c));

    Node n;
    n.desc = d;
    n.desc.name = std::move(name);
    n.out = c.out;
    n.out2 = c.out2;
    n.positions = positions_;
    n.seq_ids = seq_ids_;
    n.state_io = state_io_;
    nodes_.push_back(std::move(n));
    return c.out;
}

}  // namespace tdm
