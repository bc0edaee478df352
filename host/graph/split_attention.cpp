// SPDX-License-Identifier: Apache-2.0
// host/graph/split_attention.cpp: attention nodes in the split layout become their two
// passes (graph/split_attention.h).
#include "graph/split_attention.h"

#include <algorithm>
#include <vector>

#include "ops/attention_layout.h"
#include "ops/op_def.h"

namespace tdm {

Result<uint32_t> split_attention(Graph& g, const vk::DeviceCaps& caps) {
    std::vector<Node> out;
    uint32_t rewritten = 0;
    for (const Node& n : g.nodes()) {
        const KvLayerBinding* kv = n.desc.op == TDM_OP_ATTENTION ? g.tensor(n.desc.in[1]).kv : nullptr;
        if (!kv || attention_layout(caps, *kv) != AttentionLayout::key_splits) {
            out.push_back(n);
            continue;
        }
        const Tensor& q = g.tensor(n.desc.in[0]);
        const uint32_t n_head = uint32_t(q.ne[1]), n_tok = uint32_t(q.ne[2] * q.ne[3]);
        const uint32_t max_splits = attention_max_splits(*kv, uint32_t(n.desc.i[0]));
        const uint32_t run = attention_split_tokens(n_tok, n_head, kv->dv, max_splits);
        for (uint32_t t0 = 0; t0 < n_tok; t0 += run) {
            const int64_t count = std::min(run, n_tok - t0);
            const TensorId part = TDM_TRY(g.rewrite_activation(
                DType::F32, {int64_t(kv->dv) + 2, max_splits, n_head, count}, n.desc.name + ".partials"));
            Node partials = n;
            partials.desc.op = kOpInternalAttentionPartials;
            partials.desc.i[1] = int32_t(t0);
            partials.desc.name = n.desc.name + ".partials";
            partials.out = part;
            out.push_back(partials);
            Node combine = n;
            combine.desc.op = kOpInternalAttentionCombine;
            combine.desc.in[0] = part;
            combine.desc.in[1] = kNoTensor;
            combine.desc.n_in = 1;
            combine.desc.i[1] = int32_t(t0);
            out.push_back(combine);
        }
        ++rewritten;
    }
    if (rewritten) g.replace_nodes(std::move(out));
    return rewritten;
}

}  // namespace tdm
