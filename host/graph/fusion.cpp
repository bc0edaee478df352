// SPDX-License-Identifier: Apache-2.0
// host/graph/fusion.cpp: the fusion pass of fusion.h. It reads the node list once to
// count every tensor's readers, matches chains that end in a kv_store or a rope, and
// writes the new node list: a fused node takes the place of its chain's last node
// (every input of the chain is produced before that, and everything that reads the
// chain's results comes after it).
#include "graph/fusion.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "graph/fusion_uses.h"
#include "graph/weight.h"
#include "ops/norm_rope.h"

namespace tdm {
namespace {

bool is_weight(const Graph& g, TensorId t) { return g.tensor(t).kind == TensorKind::weight; }

// A head chain: rope(x) of rows of head_dim, with x an rms_norm's result folded in
// when that norm's result is read by the rope alone.
struct HeadChain {
    int rope = -1, norm = -1;  // node indices
    TensorId src = kNoTensor;  // rows the fused op reads (the norm's input, or the rope's)
    int32_t norm_mode = kNormRopeNone;
    TensorId norm_weight = kNoTensor;
    float eps = 0;
};

// rms_norm node n can be folded into a fused op: its weight (if any) is a weight tensor.
bool foldable_norm(const Graph& g, const Node& n) {
    if (n.desc.op != TDM_OP_RMS_NORM) return false;
    if (n.desc.n_in == 2 && !is_weight(g, n.desc.in[1])) return false;
    return g.tensor(n.desc.in[0]).type == DType::F32;
}

bool match_head_chain(const Graph& g, const FusionUses& u, int rope, HeadChain* c) {
    const Node& r = g.nodes()[size_t(rope)];
    if (r.desc.op != TDM_OP_ROPE) return false;
    if (r.desc.n_in == 3 && !is_weight(g, r.desc.in[2])) return false;
    const Tensor& x = g.tensor(r.desc.in[0]);
    if (x.cols() > kNormRopeMaxDim) return false;
    c->rope = rope;
    c->src = r.desc.in[0];
    c->norm = -1;
    c->norm_mode = kNormRopeNone;
    c->norm_weight = kNoTensor;
    const int n = u.producer(r.desc.in[0]);
    if (n >= 0 && foldable_norm(g, g.nodes()[size_t(n)]) && u.read_only_by(r.desc.in[0], r)) {
        const Node& nn = g.nodes()[size_t(n)];
        c->norm = n;
        c->src = nn.desc.in[0];
        c->norm_mode = 1 + nn.desc.i[0];
        c->norm_weight = nn.desc.n_in == 2 ? nn.desc.in[1] : kNoTensor;
        c->eps = nn.desc.f[0];
    }
    return true;
}

// Two ropes rotate alike (one kernel launch can serve both).
bool same_rope(const Node& a, const Node& b) {
    for (int k = 0; k <= 6; ++k)
        if (a.desc.i[k] != b.desc.i[k]) return false;
    if (a.desc.f[0] != b.desc.f[0] || a.desc.f[1] != b.desc.f[1] || a.desc.in[1] != b.desc.in[1]) return false;
    return a.desc.n_in == b.desc.n_in && (a.desc.n_in < 3 || a.desc.in[2] == b.desc.in[2]);
}

// The norms of a fused node share one eps: true when at most one eps is in play.
bool one_eps(std::initializer_list<const HeadChain*> chains, bool v_norm, float v_eps, float* eps) {
    bool any = false;
    for (const HeadChain* c : chains) {
        if (!c || c->norm < 0) continue;
        if (any && c->eps != *eps) return false;
        *eps = c->eps;
        any = true;
    }
    if (v_norm) {
        if (any && v_eps != *eps) return false;
        *eps = v_eps;
    }
    return true;
}

class Fuser {
public:
    explicit Fuser(Graph& g) : g_(g), u_(g), removed_(g.nodes().size(), false), replaced_(g.nodes().size()) {}

    uint32_t run() {
        const auto& nodes = g_.nodes();
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].desc.op == TDM_OP_KV_STORE) fuse_store(int(i));
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].desc.op == TDM_OP_ROPE && !removed_[i] && !replaced_[i]) fuse_query_rows(int(i));
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].desc.op == TDM_OP_MATMUL && !removed_[i] && !replaced_[i]) group_matmuls(int(i));
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].desc.op == TDM_OP_ADD && !removed_[i] && !replaced_[i]) fuse_norm_add(int(i));
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].desc.op == TDM_OP_MUL && !removed_[i] && !replaced_[i]) fuse_geglu(int(i));
        std::vector<Node> out;
        uint32_t dropped = 0;
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (replaced_[i]) out.push_back(*replaced_[i]);
            else if (!removed_[i]) out.push_back(nodes[i]);
            else ++dropped;
        }
        g_.replace_nodes(std::move(out));
        return dropped;
    }

private:
    // The rope of the queries that attend the KV layer kv_store node s writes: the first
    // attention after s reading that layer, its queries from a rope before s.
    int query_rope_for(int s) {
        const auto& nodes = g_.nodes();
        const TensorId layer = nodes[size_t(s)].out;
        for (size_t i = size_t(s) + 1; i < nodes.size(); ++i) {
            const OpDesc& d = nodes[i].desc;
            if (d.op != TDM_OP_ATTENTION || d.n_in < 2 || d.in[1] != layer) continue;
            const int r = u_.producer(d.in[0]);
            if (r < 0 || r >= s || removed_[size_t(r)] || nodes[size_t(r)].out != d.in[0]) return -1;
            // the fused node computes the queries at s: nothing between may read them
            for (int j = r + 1; j < s; ++j)
                for (int k = 0; k < nodes[size_t(j)].desc.n_in; ++k)
                    if (g_.tensor(nodes[size_t(j)].desc.in[k]).base == d.in[0]) return -1;
            return r;
        }
        return -1;
    }

    void fuse_store(int s) {
        const auto& nodes = g_.nodes();
        const Node& st = nodes[size_t(s)];
        // a tree batch stores each row at the slot its tree row names (ops/kv_tree.h), which
        // the fused kernel does not read: such a store stays on its own
        if (st.kv_tree != kNoTensor) return;
        const TensorId k = st.desc.in[1], v = st.desc.in[2];
        const int kr = u_.producer(k);
        if (kr < 0 || removed_[size_t(kr)] || !u_.read_only_by(k, st) || nodes[size_t(kr)].out != k) return;
        HeadChain kc;
        if (!match_head_chain(g_, u_, kr, &kc)) return;
        const Node& rope = nodes[size_t(kr)];
        const KvLayerBinding* kv = g_.tensor(st.desc.in[0]).kv;
        const Tensor& ks = g_.tensor(kc.src);
        // the kernel reads K rows of (token, head) and the store slot from the rope's positions
        if (rope.desc.i[2] != TDM_ROPE_SECTIONS_NONE || rope.desc.in[1] != st.positions) return;
        if (ks.cols() != int64_t(kv->dk) || ks.ne[1] != int64_t(kv->n_kv_head) || kv->dv > kNormRopeMaxDim) return;
        // V: RMS-normed without a weight (its norm folded in) or stored as it is
        TensorId vsrc = v;
        int vn = -1;
        float v_eps = 0;
        const int vp = u_.producer(v);
        if (vp >= 0 && !removed_[size_t(vp)] && nodes[size_t(vp)].desc.op == TDM_OP_RMS_NORM &&
            nodes[size_t(vp)].desc.n_in == 1 && nodes[size_t(vp)].desc.i[0] == TDM_NORM_NO_WEIGHT &&
            u_.read_only_by(v, st)) {
            const Tensor& raw = g_.tensor(nodes[size_t(vp)].desc.in[0]);
            if (raw.cols() == int64_t(kv->dv) && raw.type == DType::F32) {
                vn = vp;
                vsrc = nodes[size_t(vp)].desc.in[0];
                v_eps = nodes[size_t(vp)].desc.f[0];
            }
        }
        HeadChain qc;
        const int qr = query_rope_for(s);
        const bool with_q = qr >= 0 && match_head_chain(g_, u_, qr, &qc) && same_rope(nodes[size_t(qr)], rope) &&
                            g_.tensor(qc.src).cols() == ks.cols();
        float eps = 0;
        const bool eps_ok = one_eps({&kc, with_q ? &qc : nullptr}, vn >= 0, v_eps, &eps);
        if (!eps_ok) return;

        Node f;
        f.desc.op = kOpInternalNormRopeStore;
        f.desc.name = st.desc.name;
        f.positions = st.positions;
        f.seq_ids = st.seq_ids;
        f.state_io = st.state_io;
        f.out = st.out;
        f.desc.in[0] = st.desc.in[0];
        f.desc.in[1] = rope.desc.in[1];
        f.desc.n_in = 2;
        set_rope_params(rope, eps, &f.desc);
        set_slot(&f.desc, kNormRopeK, kc.src);
        set_slot(&f.desc, kNormRopeV, vsrc);
        set_slot(&f.desc, kNormRopeKWeight, kc.norm_weight);
        if (rope.desc.n_in == 3) set_slot(&f.desc, kNormRopeFreqFactors, rope.desc.in[2]);
        f.desc.i[kNormRopeNormK] = kc.norm_mode;
        f.desc.i[kNormRopeNormV] = vn >= 0 ? 1 : kNormRopeNone;
        remove(kr);
        if (kc.norm >= 0) remove(kc.norm);
        if (vn >= 0) remove(vn);
        if (with_q) {
            set_slot(&f.desc, kNormRopeQ, qc.src);
            set_slot(&f.desc, kNormRopeQWeight, qc.norm_weight);
            f.desc.i[kNormRopeNormQ] = qc.norm_mode;
            f.out2 = nodes[size_t(qr)].out;
            remove(qr);
            if (qc.norm >= 0) remove(qc.norm);
        }
        replaced_[size_t(s)] = std::move(f);
    }

    // A rope of query rows whose norm folds in: norm_rope writing the rope's result.
    void fuse_query_rows(int r) {
        HeadChain qc;
        if (!match_head_chain(g_, u_, r, &qc) || qc.norm < 0 || removed_[size_t(qc.norm)]) return;
        const Node& rope = g_.nodes()[size_t(r)];
        Node f;
        f.desc.op = kOpInternalNormRope;
        f.desc.name = rope.desc.name;
        f.positions = rope.positions;
        f.seq_ids = rope.seq_ids;
        f.state_io = rope.state_io;
        f.out = rope.out;
        f.desc.in[0] = qc.src;
        f.desc.in[1] = rope.desc.in[1];
        f.desc.n_in = 2;
        set_rope_params(rope, qc.eps, &f.desc);
        set_slot(&f.desc, kNormRopeQ, qc.src);
        set_slot(&f.desc, kNormRopeQWeight, qc.norm_weight);
        if (rope.desc.n_in == 3) set_slot(&f.desc, kNormRopeFreqFactors, rope.desc.in[2]);
        f.desc.i[kNormRopeNormQ] = qc.norm_mode;
        remove(qc.norm);
        replaced_[size_t(r)] = std::move(f);
    }

    // Plain matmuls of one weight type and width that read node m's input, m the first:
    // one matmul_group at m's place (x is ready there; their results are read later).
    void group_matmuls(int m) {
        const auto& nodes = g_.nodes();
        auto plain = [&](const Node& n) {
            if (n.desc.op != TDM_OP_MATMUL || n.desc.n_in != 2) return false;
            const Tensor& w = g_.tensor(n.desc.in[0]);
            return w.weight && w.weight->chunks().size() == 1;
        };
        const Node& first = nodes[size_t(m)];
        if (!plain(first)) return;
        const Tensor& w0 = g_.tensor(first.desc.in[0]);
        std::vector<int> members = {m};
        for (size_t i = size_t(m) + 1; i < nodes.size() && members.size() < 3; ++i) {
            const Node& n = nodes[i];
            if (removed_[i] || replaced_[i] || !plain(n) || n.desc.in[1] != first.desc.in[1]) continue;
            const Tensor& w = g_.tensor(n.desc.in[0]);
            if (w.type == w0.type && w.cols() == w0.cols()) members.push_back(int(i));
        }
        if (members.size() < 2) return;
        Node f;
        f.desc.op = kOpInternalMatmulGroup;
        f.desc.name = first.desc.name;
        f.positions = first.positions;
        f.seq_ids = first.seq_ids;
        f.state_io = first.state_io;
        f.desc.in[0] = first.desc.in[1];
        f.desc.n_in = 1;
        TensorId* outs[3] = {&f.out, &f.out2, &f.out3};
        for (size_t j = 0; j < members.size(); ++j) {
            const Node& n = nodes[size_t(members[j])];
            f.desc.in[f.desc.n_in++] = n.desc.in[0];
            *outs[j] = n.out;
            if (j) remove(members[j]);
        }
        replaced_[size_t(m)] = std::move(f);
    }

    // add(x, rms_norm(f)) [-> mul by a one-element weight] [-> the first rms_norm of the
    // sum]: one norm_add at the place of the add (or the mul). The later norm moves up to
    // it: it reads only the sum and a weight, and its readers come after it.
    void fuse_norm_add(int a) {
        const auto& nodes = g_.nodes();
        const Node& add = nodes[size_t(a)];
        int nf = -1, xin = -1;
        for (int k : {1, 0}) {
            const int n = u_.producer(add.desc.in[k]);
            if (n < 0 || removed_[size_t(n)] || replaced_[size_t(n)] || !foldable_norm(g_, nodes[size_t(n)]) ||
                nodes[size_t(n)].out != add.desc.in[k] || !u_.read_only_by(add.desc.in[k], add))
                continue;
            nf = n;
            xin = 1 - k;
            break;
        }
        if (nf < 0) return;
        const Tensor& ft = g_.tensor(nodes[size_t(nf)].desc.in[0]);
        const Tensor& xt = g_.tensor(add.desc.in[xin]);
        if (xt.cols() != ft.cols() || xt.rows() != ft.rows() || xt.type != DType::F32 ||
            xt.kind == TensorKind::weight)
            return;
        int last = a;
        TensorId scale = kNoTensor;
        for (size_t i = size_t(a) + 1; i < nodes.size(); ++i) {  // the sum's first reader: a scaling?
            const Node& m = nodes[i];
            const bool reads = std::any_of(m.desc.in, m.desc.in + m.desc.n_in,
                                           [&](TensorId t) { return g_.tensor(t).base == add.out; });
            if (!reads) continue;
            if (m.desc.op == TDM_OP_MUL && !removed_[i] && !replaced_[i] && u_.read_only_by(add.out, m))
                for (int k : {0, 1}) {
                    const TensorId other = m.desc.in[1 - k];
                    if (m.desc.in[k] == add.out && is_weight(g_, other) && g_.tensor(other).elements() == 1) {
                        last = int(i);
                        scale = other;
                    }
                }
            break;
        }
        const TensorId sum = nodes[size_t(last)].out;
        int n2 = -1;
        for (size_t i = size_t(last) + 1; i < nodes.size(); ++i) {
            const Node& n = nodes[i];
            if (n.desc.op == TDM_OP_RMS_NORM && !removed_[i] && !replaced_[i] && n.desc.in[0] == sum &&
                foldable_norm(g_, n)) {
                n2 = int(i);
                break;
            }
        }
        const Node& norm = nodes[size_t(nf)];
        Node f;
        f.desc.op = kOpInternalNormAdd;
        f.desc.name = nodes[size_t(last)].desc.name;
        f.positions = add.positions;
        f.seq_ids = add.seq_ids;
        f.state_io = add.state_io;
        f.out = sum;
        f.desc.in[0] = norm.desc.in[0];
        f.desc.in[1] = add.desc.in[xin];
        f.desc.n_in = 2;
        for (int k = 3; k <= 5; ++k) f.desc.i[k] = -1;
        auto put = [&](int slot, TensorId t) {
            f.desc.i[slot] = f.desc.n_in;
            f.desc.in[f.desc.n_in++] = t;
        };
        f.desc.i[0] = norm.desc.i[0];
        f.desc.f[0] = norm.desc.f[0];
        if (norm.desc.n_in == 2) put(3, norm.desc.in[1]);
        if (scale) {
            f.desc.i[1] = 1;
            put(4, scale);
        }
        if (n2 >= 0) {
            const Node& nn = nodes[size_t(n2)];
            f.desc.i[2] = 1 + nn.desc.i[0];
            f.desc.f[1] = nn.desc.f[0];
            if (nn.desc.n_in == 2) put(5, nn.desc.in[1]);
            f.out2 = nn.out;
            remove(n2);
        }
        remove(nf);
        if (last != a) remove(a);
        replaced_[size_t(last)] = std::move(f);
    }

    // mul(unary gelu_tanh(a), b) of one shape is glu geglu(a, b): elementwise.comp computes
    // gelu_tanh(a) * b with the same function in f32 either way.
    void fuse_geglu(int m) {
        const auto& nodes = g_.nodes();
        const Node& mul = nodes[size_t(m)];
        for (int k : {0, 1}) {
            const int gi = u_.producer(mul.desc.in[k]);
            if (gi < 0 || removed_[size_t(gi)] || replaced_[size_t(gi)]) continue;
            const Node& gelu = nodes[size_t(gi)];
            if (gelu.desc.op != TDM_OP_UNARY || gelu.desc.i[0] != TDM_UNARY_GELU_TANH || gelu.out != mul.desc.in[k] ||
                !u_.read_only_by(gelu.out, mul))
                continue;
            const Tensor& a = g_.tensor(gelu.desc.in[0]);
            const Tensor& b = g_.tensor(mul.desc.in[1 - k]);
            if (b.kind == TensorKind::weight || b.type != DType::F32 || a.cols() != b.cols() || a.rows() != b.rows())
                continue;
            Node f = mul;
            f.desc.op = TDM_OP_GLU;
            f.desc.in[0] = gelu.desc.in[0];
            f.desc.in[1] = mul.desc.in[1 - k];
            f.desc.n_in = 2;
            f.desc.i[0] = TDM_GLU_GEGLU;
            remove(gi);
            replaced_[size_t(m)] = std::move(f);
            return;
        }
    }

    static void set_rope_params(const Node& rope, float eps, OpDesc* d) {
        for (int k = 0; k <= 6; ++k) d->i[k] = rope.desc.i[k];
        for (int k = kNormRopeSlot0; k < 16; ++k) d->i[k] = -1;
        d->f[0] = rope.desc.f[0];
        d->f[1] = rope.desc.f[1];
        d->f[2] = eps;
    }

    // Puts t among d's inputs (once) and records its index in slot `which`.
    static void set_slot(OpDesc* d, int which, TensorId t) {
        if (t == kNoTensor) return;
        int k = 0;
        while (k < d->n_in && d->in[k] != t) ++k;
        if (k == d->n_in) d->in[d->n_in++] = t;
        d->i[kNormRopeSlot0 + which] = k;
    }

    void remove(int i) { removed_[size_t(i)] = true; }

    Graph& g_;
    FusionUses u_;
    std::vector<bool> removed_;
    std::vector<std::optional<Node>> replaced_;
};

}  // namespace

bool fusion_enabled(const vk::DeviceCaps& caps) {
    const char* e = std::getenv("TANDEM_FUSE");  // read at every compile: tests compare both ways
    if (e && *e) return std::string_view(e) != "0";
    return !caps.is_cpu();
}

uint32_t fuse_graph(Graph& g) { return Fuser(g).run(); }

}  // namespace tdm
