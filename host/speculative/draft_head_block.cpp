// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_head_block.cpp: the round of a block draft head (tandem/ext/
// block_draft.h, DFlash): ONE step over the context rows the head has not seen (their
// target rows, for its KV) and a block of b rows at p .. p+b-1 (the newest token, then
// the mask token) whose attention sees the whole block; the picks of block rows 1..k
// are the drafts. Its output rows are every block row, or only block rows 1..k for a head
// that declared drafted rows (version 2): a graph per (context rows, k) then. The block's
// KV entries are dropped with the rest after the round (DraftHeadDrafter::accept
// truncates to the committed positions).
// Not here: chained heads' rounds and the submission (draft_head.cpp).
#include <algorithm>

#include "plugin/abi_structs.h"
#include "plugin/handles.h"
#include "speculative/draft_head_shared.h"

namespace tdm {
namespace {

const char* rows_meant(bool drafted_rows) {
    return drafted_rows ? "the drafted block rows, declare_drafted_rows()" : "every block row";
}

}  // namespace

Result<std::unique_ptr<DraftHead::Chain>> DraftHead::block_chain(uint32_t n_ctx, uint32_t k,
                                                                 const DeviceWeight* device_rows, uint32_t vocab) {
    const uint32_t b = block_size, n = n_ctx + b;
    auto c = std::make_unique<Chain>();
    c->n_rows = n_ctx;
    c->n_seq = 1;
    c->k = drafted_rows ? std::clamp<uint32_t>(k, 1, b - 1) : b - 1;
    c->vocab = vocab;
    c->block = b;
    c->drafted_rows = drafted_rows;
    const uint32_t n_out = drafted_rows ? c->k : b;  // the drafts only, or every block row
    tdm_batch_desc bd{sizeof(tdm_batch_desc), n, n_out, vocab};
    auto g = step_graph(bd);
    g->taps.target_step = true;  // features(): the context rows' target rows
    c->tokens0 = g->tokens;
    c->pos0 = g->positions;
    c->seq0 = g->seq_ids;
    c->rows0 = g->output_rows;
    c->key_bound = g->graph.input(DType::I32, {n}, "key_bound");
    if (device_rows) {
        g->target_hidden = TDM_TRY(gather_target_rows(*g, device_rows, n_ctx, c->hidden_index));
    } else {
        // only the context rows have target rows (features() would size them by the batch)
        g->target_hidden = g->graph.input(DType::F32, {n_embd_target, n_ctx}, "target_hidden");
        c->hidden0 = g->target_hidden;
    }
    char err[1024] = {0};
    if (entry->desc->build_step(head, g.get(), &bd, err, sizeof err) != TDM_OK)
        return Error::format("building draft head {} block step: {}", entry->desc->name,
                             plugin_message(err, sizeof err, "failed"));
    if (!g->host_rows.empty())
        return Error::format("draft head {}: it reads {} by token rows, which lives in host memory "
                             "(tdm.host_rows); a draft head can read only tables in device memory",
                             entry->desc->name, g->host_rows.front().second->name());
    c->pos4.push_back(g->positions4);
    g->graph.bound_attention(c->pos0, c->key_bound);
    if (const TensorId chosen = g->outputs[TDM_OUTPUT_DRAFT_TOKENS]) {
        if (g->graph.tensor(chosen).elements() != int64_t(n_out))
            return Error::format("draft head {}: TDM_OUTPUT_DRAFT_TOKENS must hold one token id per output row ({}: {}); "
                                 "it holds {}",
                                 entry->desc->name, n_out, rows_meant(drafted_rows),
                                 g->graph.tensor(chosen).elements());
        c->ids.push_back(chosen);
        c->width = 0;
    } else {
        const TensorId logits = g->outputs[TDM_OUTPUT_LOGITS];
        if (!logits || g->graph.tensor(logits).cols() > int64_t(n_vocab) ||
            g->graph.tensor(logits).rows() != int64_t(n_out))
            return Error::format("draft head {}: block logits must be [n <= {}, {}] (one row per output row: {}){}",
                                 entry->desc->name, n_vocab, n_out, rows_meant(drafted_rows),
                                 logits ? fmt::format("; they are [{}, {}]", g->graph.tensor(logits).cols(),
                                                      g->graph.tensor(logits).rows())
                                        : std::string("; it set none"));
        const auto cols = uint32_t(g->graph.tensor(logits).cols());
        c->width = cols == n_vocab ? 0 : cols;
        OpDesc am;
        am.op = TDM_OP_ARGMAX;
        am.in[0] = logits;
        am.n_in = 1;
        am.name = "block_drafts";
        c->ids.push_back(TDM_TRY(g->graph.op(am)));
    }
    if (vocab > 1 && c->width != vocab) ignores_vocab = true;
    TDM_TRY(g->graph.mark_output(c->ids[0]));
    CompileOptions co;
    co.probe_non_finite = opt.nan_debug;
    c->cg = TDM_TRY(CompiledGraph::compile(*device, *pipelines, std::move(g->graph), co));
    return c;
}

void DraftHead::fill_block(Chain& c, std::span<const int32_t> history, uint32_t first, uint32_t p,
                           int32_t seq) const {
    CompiledGraph& cg = *c.cg;
    const uint32_t m = c.n_rows, b = c.block;
    const uint32_t first_out = c.drafted_rows ? m + 1 : m;  // the drafts (block rows 1..k), or every block row
    const uint32_t n_out = c.drafted_rows ? c.k : b;
    int32_t* tok = cg.input_as<int32_t>(c.tokens0);
    int32_t* pos = cg.input_as<int32_t>(c.pos0);
    int32_t* sq = cg.input_as<int32_t>(c.seq0);
    int32_t* bound = cg.input_as<int32_t>(c.key_bound);
    int32_t* rows = cg.input_as<int32_t>(c.rows0);
    for (uint32_t i = 0; i < m + b; ++i) {
        const bool ctx = i < m;
        const uint32_t at = ctx ? first + i : p + (i - m);
        tok[i] = ctx ? history[at] : (i == m ? history[p] : mask_token);
        pos[i] = int32_t(at);
        sq[i] = seq;
        bound[i] = ctx ? int32_t(at) : int32_t(p + b - 1);  // a block row sees the whole block
    }
    for (uint32_t j = 0; j < n_out; ++j) rows[j] = int32_t(first_out + j);
    if (c.pos4[0]) {
        int32_t* p4 = cg.input_as<int32_t>(c.pos4[0]);
        for (uint32_t i = 0; i < m + b; ++i) {
            p4[4 * i] = p4[4 * i + 1] = p4[4 * i + 2] = pos[i];
            p4[4 * i + 3] = 0;
        }
    }
}

}  // namespace tdm
