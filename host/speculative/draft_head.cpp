// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_head.cpp: the shared head (the plugin's head object, its
// weights, KV pool and compiled draft graphs) and the submission of one draft graph for
// one or several sequences. What each sequence keeps is draft_head_seq.cpp.
#include "speculative/draft_head.h"

#include <algorithm>
#include <cstring>

#include <tandem/ext/batched_draft.h>
#include <tandem/ext/block_draft.h>

#include "common/log.h"
#include "graph/op_location.h"
#include "model/feature_taps.h"
#include "plugin/abi_structs.h"
#include "plugin/block_draft_ext.h"
#include "speculative/draft_head_shared.h"

namespace tdm {
uint32_t block_drafted_rows(uint32_t k, uint32_t block_size) {
    uint32_t n = 1;
    while (n < k) n = n < 4 ? n + 1 : (n & (n - 1)) == 0 ? n + n / 2 : n / 3 * 4;
    return std::min(n, block_size - 1);
}

DraftHead::~DraftHead() {
    for (auto& [key, c] : chains)
        if (c->cg) (void)c->cg->wait();
    chains.clear();
    levels.clear();
    if (head) entry->desc->destroy(head);
}

Result<std::unique_ptr<DraftHeadDrafter>> DraftHeadDrafter::create(const DraftHeadEntry& entry, std::string spec_type,
                                                                   std::shared_ptr<const ModelSource> source,
                                                                   const Model& target, const KvPool& target_kv,
                                                                   vk::Device& device, vk::PipelineManager& pipelines,
                                                                   const DraftHeadOptions& opt) {
    auto h = std::make_shared<DraftHead>();
    h->name = std::move(spec_type);
    h->entry = &entry;
    h->source = std::move(source);
    h->src_handle.src = h->source.get();
    h->options.values = opt.options;
    h->opt = opt;
    h->target_kv = &target_kv;
    h->n_embd_target = target.info().n_embd;
    h->n_vocab = target.info().n_vocab;
    h->device = &device;
    h->pipelines = &pipelines;
    h->info.struct_size = sizeof(tdm_draft_head_info);
    void* target_obj = target.arch().plugin == entry.plugin ? target.plugin_model() : nullptr;
    char err[1024] = {0};
    DeclaredBlock block;
    {
        HeadCreateScope taps(&h->info);     // what it asks of tdm.target_features
        BlockCreateScope blocks(&h->info);  // what it declares to tdm.block_draft
        if (entry.desc->create(host_api(*entry.plugin), &h->src_handle, target_obj, &h->options, &h->info, &h->head,
                               err, sizeof err) != TDM_OK ||
            !h->head)
            return Error::format("{}", plugin_message(err, sizeof err, "the draft head refused the model"));
        h->taps = std::move(taps.taps);
        block = blocks.result;
    }
    if (entry.plugin->abi < 3) h->info.flags = 0;  // padding before ABI 3: never read
    const uint32_t flags = h->info.flags;
    if (bool(flags & TDM_DRAFT_HEAD_CONSTANT_POSITION) != bool(flags & TDM_DRAFT_HEAD_STATELESS))
        return Error::format("draft head {}: this host runs the constant-position and stateless flags together only "
                             "(one-row rounds at one position, no KV of its own); the head sets one of them",
                             entry.desc->name);
    if ((flags & TDM_DRAFT_HEAD_STATELESS) && h->info.n_own_layers)
        return Error::format("draft head {}: stateless, yet it declares {} attention layers of its own",
                             entry.desc->name, h->info.n_own_layers);
    constexpr uint32_t kKnown = TDM_DRAFT_HEAD_CONSTANT_POSITION | TDM_DRAFT_HEAD_STATELESS | TDM_DRAFT_HEAD_BATCHED |
                                TDM_DRAFT_HEAD_BLOCK;
    if (flags & ~kKnown) return Error::format("draft head {}: unknown flags {:#x}", entry.desc->name, flags);
    if (bool(flags & TDM_DRAFT_HEAD_BLOCK) != block.declared)
        return Error::format("draft head {}: the block flag and tdm.block_draft declare() go together; it set {}",
                             entry.desc->name, block.declared ? "only declare()" : "only the flag");
    if (block.declared) {
        if (flags & ~TDM_DRAFT_HEAD_BLOCK)
            return Error::format("draft head {}: a block head cannot be constant-position, stateless or batched "
                                 "(flags {:#x})",
                                 entry.desc->name, flags);
        if (!h->info.n_own_layers)
            return Error::format("draft head {}: a block head keeps its context in a KV of its own; it declares none",
                                 entry.desc->name);
        if (uint32_t(block.mask_token) >= h->n_vocab)
            return Error::format("draft head {}: mask token {} is outside the target's vocabulary of {}",
                                 entry.desc->name, block.mask_token, h->n_vocab);
        h->block_size = block.size;
        h->mask_token = block.mask_token;
        h->drafted_rows = block.drafted_rows;
    }
    h->batched = (flags & TDM_DRAFT_HEAD_BATCHED) && opt.batch;
    if (!h->taps.empty()) {
        if (h->info.hidden != TDM_HIDDEN_NONE)
            return Error::format("draft head {}: it requests target taps (tdm.target_features) and a hidden state as "
                                 "well; a head with taps reads them alone (its info->hidden must be TDM_HIDDEN_NONE)",
                                 entry.desc->name);
        TDM_TRY(check_taps_provided(h->taps, entry.desc->name, target.provided_taps(), target.arch().desc->name));
        h->tap_point = hidden_point_for_taps(h->taps);
        h->n_embd_target = uint32_t(h->taps.size()) * target.info().n_embd;  // the concatenation's rows
    }
    h->own_layers = TDM_TRY(read_abi_array(h->info.own_layers, h->info.n_own_layers, entry.plugin->abi,
                                           fmt::format("draft head {}: own attention layers", entry.desc->name)));
    h->info.own_layers = h->own_layers.data();
    if (h->info.n_target_kv_layers && !h->info.target_kv_layers)
        return Error::format("draft head {}: {} target KV layers declared without a list", entry.desc->name,
                             h->info.n_target_kv_layers);
    for (uint32_t i = 0; i < h->info.n_target_kv_layers; ++i)
        if (h->info.target_kv_layers[i] >= target_kv.n_layers())
            return Error::format("draft head {}: reads target KV layer {}, the target has {}", entry.desc->name,
                                 h->info.target_kv_layers[i], target_kv.n_layers());
    h->weights = std::make_unique<WeightStore>(device, h->source->path() + " (draft head)", 64ull << 20);
    h->weights->set_check_weights(opt.check_weights);
    tdm_loader loader{h->weights.get(), h->source.get(), &target.weight_store()};
    if (entry.desc->load(h->head, &loader, err, sizeof err) != TDM_OK)
        return Error::format("loading draft head {}: {}", entry.desc->name, plugin_message(err, sizeof err, "failed"));
    if (!h->stateless()) {
        // A block's rows sit at p .. p + b - 1 whatever p is: the block's length is the head's
        // (tdm.block_draft), so near the end of the context it cannot be cut short. Room for
        // one block past the context lets the head draft up to the last token instead of
        // failing its reservation there (and being turned off).
        KvPoolConfig kv_config = opt.kv;
        kv_config.n_ctx += h->block_size;
        h->kv = TDM_TRY(KvPool::create(
            device, std::span<const tdm_attention_layer>(h->info.own_layers, h->info.n_own_layers), kv_config,
            "draft head KV"));
    }
    return std::unique_ptr<DraftHeadDrafter>(new DraftHeadDrafter(std::move(h)));
}

std::unique_ptr<DraftHeadDrafter> DraftHeadDrafter::another() const {
    return std::unique_ptr<DraftHeadDrafter>(new DraftHeadDrafter(head_));
}

const std::string& DraftHeadDrafter::name() const { return head_->name; }
tdm_hidden_point DraftHeadDrafter::hidden_point() const {
    return head_->taps.empty() ? head_->info.hidden : head_->tap_point;
}
bool DraftHeadDrafter::stateless() const { return head_->stateless(); }
uint64_t DraftHeadDrafter::weight_bytes() const { return head_->weights ? head_->weights->device_bytes() : 0; }
uint64_t DraftHeadDrafter::rows_read_on_device() const { return head_->rows_on_device; }
uint64_t DraftHeadDrafter::rows_read_from_host() const { return head_->rows_from_host; }
uint64_t DraftHeadDrafter::kv_bytes() const { return head_->kv ? head_->kv->device_bytes() : 0; }
uint64_t DraftHeadDrafter::batched_graphs() const { return head_->batched_graphs; }
size_t DraftHeadDrafter::cached_graphs() const { return head_->chains.size(); }
bool DraftHeadDrafter::graph_per_draft_count() const { return head_->block_size && head_->drafted_rows; }
std::map<uint32_t, uint64_t> DraftHeadDrafter::rounds_by_vocab() const { return head_->rounds_by_vocab; }
bool DraftHeadDrafter::asks_vocab() const { return head_->opt.auto_vocab && !head_->ignores_vocab; }
DraftBatcher* DraftHeadDrafter::batcher() { return head_->batched ? head_.get() : nullptr; }

std::unique_ptr<tdm_graph> DraftHead::step_graph(const tdm_batch_desc& b) const {
    auto g = std::make_unique<tdm_graph>();
    init_graph_inputs(*g, b, false);
    g->plugin_abi = entry->plugin->abi;
    g->plugin_abi_minor = entry->plugin->abi_minor;
    g->n_embd_target = n_embd_target;
    g->taps.head_requested = !taps.empty();
    if (kv)
        for (uint32_t i = 0; i < kv->n_layers(); ++i) g->kv.push_back(kv->layer(i));
    g->target_kv.assign(target_kv->n_layers(), nullptr);
    for (uint32_t i = 0; i < info.n_target_kv_layers; ++i)
        g->target_kv[info.target_kv_layers[i]] = target_kv->layer(info.target_kv_layers[i]);
    return g;
}

Result<TensorId> DraftHead::gather_target_rows(tdm_graph& g, const DeviceWeight* device_rows, uint32_t n,
                                               TensorId& index) const {
    index = g.graph.input(DType::I32, {n}, "target_hidden_rows");
    OpDesc gr;
    gr.op = TDM_OP_GET_ROWS;
    gr.in[0] = g.graph.weight(device_rows);
    gr.in[1] = index;
    gr.n_in = 2;
    gr.name = "target_hidden";
    return g.graph.op(gr);
}

// The graph of one round for n_seq sequences: a catch-up of n_rows rows (each sequence's
// run of rows, consecutive; output row i = the last row of sequence i), then k - 1 chained
// steps of one row per sequence.
Result<DraftHead::Chain*> DraftHead::chain(uint32_t n_rows, uint32_t n_seq, uint32_t k,
                                           const DeviceWeight* device_rows, uint32_t vocab) {
    const auto key = std::make_tuple(n_rows, n_seq, k, device_rows, vocab);
    if (auto it = chains.find(key); it != chains.end()) {
        it->second->last_used = ++chain_uses;
        return it->second.get();
    }
    while (chains.size() >= std::max<size_t>(opt.graph_limit, 1)) {
        auto lru = chains.end();
        for (auto it = chains.begin(); it != chains.end(); ++it)
            if (!busy(*it->second) && (lru == chains.end() || it->second->last_used < lru->second->last_used)) lru = it;
        if (lru == chains.end()) break;  // all in flight: one more for now
        chains.erase(lru);
    }
    if (block_size) {
        auto b = TDM_TRY(block_chain(n_rows, k, device_rows, vocab));
        Chain* out = b.get();
        out->last_used = ++chain_uses;
        chains.emplace(key, std::move(b));
        return out;
    }
    auto c = std::make_unique<Chain>();
    c->n_rows = n_rows;
    c->n_seq = n_seq;
    c->k = k;
    c->vocab = vocab;
    auto g = step_graph(tdm_batch_desc{sizeof(tdm_batch_desc), n_rows, n_seq, vocab});
    c->tokens0 = g->tokens;
    c->pos0 = g->positions;
    c->seq0 = g->seq_ids;
    c->rows0 = g->output_rows;
    const bool constant = (info.flags & TDM_DRAFT_HEAD_CONSTANT_POSITION) != 0;
    if (constant) {
        // RoPE at p, attention over the target's committed positions < p
        c->attn_pos = g->graph.input(DType::I32, {n_rows}, "attn_pos");
        g->graph.set_batch(c->attn_pos, c->seq0);
    }
    if (device_rows) g->target_hidden = TDM_TRY(gather_target_rows(*g, device_rows, n_rows, c->hidden_index));
    char err[1024] = {0};
    TensorId prev_hidden = kNoTensor;
    uint32_t width = 0;
    for (uint32_t j = 0; j < k; ++j) {
        tdm_batch_desc b{sizeof(tdm_batch_desc), j == 0 ? n_rows : n_seq, n_seq, vocab};
        if (j > 0 && !prev_hidden)
            return Error::format("draft head {} sets no TDM_OUTPUT_HIDDEN_DRAFT, so it cannot chain {} steps",
                                 entry->desc->name, k);
        if (j > 0 && constant) {
            // every step at the round's positions (one row per sequence), over the same
            // committed target KV
            g->tokens = c->ids.back();
            g->positions = c->pos0;
            g->seq_ids = c->seq0;
            g->output_rows = c->rows0;
            g->target_hidden = prev_hidden;
            g->batch = b;
        } else if (j > 0) {
            if (!c->seq1) {
                c->seq1 = g->graph.input(DType::I32, {n_seq}, "seq1");
                c->rows1 = g->graph.input(DType::I32, {n_seq}, "rows1");
            }
            const TensorId pos = g->graph.input(DType::I32, {n_seq}, fmt::format("pos{}", j));
            c->pos_j.push_back(pos);
            g->tokens = c->ids.back();
            g->positions = pos;
            g->seq_ids = c->seq1;
            g->output_rows = c->rows1;
            g->target_hidden = prev_hidden;
            g->graph.set_batch(pos, c->seq1);
            g->batch = b;
        }
        g->positions4 = kNoTensor;
        g->taps.target_step = j == 0;  // features(): the target's rows, or NOT_FOUND
        for (TensorId& o : g->outputs) o = kNoTensor;
        if (entry->desc->build_step(head, g.get(), &b, err, sizeof err) != TDM_OK)
            return Error::format("building draft head {} step {}: {}", entry->desc->name, j,
                                 plugin_message(err, sizeof err, "failed"));
        // a draft step's tokens come from the device (the previous step's pick), so rows of a
        // table in host memory could not be read for them
        if (!g->host_rows.empty())
            return Error::format("draft head {}: it reads {} by token rows, which lives in host memory "
                                 "(tdm.host_rows); a draft head can read only tables in device memory",
                                 entry->desc->name, g->host_rows.front().second->name());
        if (j == 0 && !device_rows) c->hidden0 = g->target_hidden;
        c->pos4.push_back(g->positions4);
        if (const TensorId chosen = g->outputs[TDM_OUTPUT_DRAFT_TOKENS]) {
            // the head picks its tokens itself (a centroid-masked head's argmax)
            if (g->graph.tensor(chosen).elements() != int64_t(n_seq))
                return Error::format("draft head {}: TDM_OUTPUT_DRAFT_TOKENS must hold one token id per sequence "
                                     "and step ({} here)",
                                     entry->desc->name, n_seq);
            c->ids.push_back(chosen);
            width = 0;
            picks_tokens = true;
        } else {
            const TensorId logits = g->outputs[TDM_OUTPUT_LOGITS];
            if (!logits || g->graph.tensor(logits).cols() > int64_t(n_vocab) ||
                g->graph.tensor(logits).rows() != int64_t(n_seq))
                return Error::format("draft head {}: step logits must be [n <= {}, {}]", entry->desc->name, n_vocab,
                                     n_seq);
            const auto cols = uint32_t(g->graph.tensor(logits).cols());
            width = cols == n_vocab ? 0 : cols;
            OpDesc am;
            am.op = TDM_OP_ARGMAX;
            am.in[0] = logits;
            am.n_in = 1;
            am.name = fmt::format("draft{}", j);
            c->ids.push_back(TDM_TRY(g->graph.op(am)));
        }
        prev_hidden = g->outputs[TDM_OUTPUT_HIDDEN_DRAFT];
    }
    c->width = width;
    if (vocab > 1 && width != vocab) ignores_vocab = true;
    for (TensorId id : c->ids) TDM_TRY(g->graph.mark_output(id));
    CompileOptions co;
    co.probe_non_finite = opt.nan_debug;
    c->cg = TDM_TRY(CompiledGraph::compile(*device, *pipelines, std::move(g->graph), co));
    Chain* out = c.get();
    out->last_used = ++chain_uses;
    chains.emplace(key, std::move(c));
    return out;
}

Result<DraftHead::Chain*> DraftHead::chain_for(uint32_t n_rows, uint32_t n_seq, uint32_t k,
                                               const DeviceWeight* device_rows, uint32_t vocab) {
    if (device_rows) {
        if (device_table && device_rows != device_table) {
            // another runner's table (the chains that read one are bound to it): compile anew
            for (auto it = chains.begin(); it != chains.end();)
                if (std::get<3>(it->first) && !busy(*it->second))
                    it = chains.erase(it);
                else
                    ++it;
        }
        device_table = device_rows;
        auto c = chain(n_rows, n_seq, k, device_rows, vocab);
        if (c.ok()) return c;
        // a head whose step refuses a gathered hidden input still drafts from host copies
        TDM_LOG_DEBUG("spec", "draft head {}: rows on the device refused ({}); reading host copies", entry->desc->name,
                      c.error().message());
    }
    return chain(n_rows, n_seq, k, nullptr, vocab);
}

uint32_t DraftHead::round_vocab(std::span<const DraftRequest> reqs) const {
    if (!opt.auto_vocab || ignores_vocab) return 0;
    uint32_t widest = 0;
    for (const DraftRequest& r : reqs) {
        const uint32_t v = choose_draft_vocab(r.history, n_vocab, opt.vocab_policy);
        if (v == 0) return 0;  // one sequence needs them all
        widest = std::max(widest, v);
    }
    return widest;
}

bool DraftHead::busy(const Chain& c) const { return c.last && !c.last->settled; }

void DraftHead::settle(DraftHeadDrafter::Run& r) {
    if (r.settled) return;
    r.settled = true;
    Chain& c = *r.chain;
    r.chain = nullptr;  // no longer needed: the chain may go once idle
    r.status = c.cg->wait();
    if (r.status.ok()) r.status = check_finite(c);
    if (!r.status.ok()) return;
    if (c.block) {  // the picks of block rows 1 .. k (row 0's is the known token)
        const int32_t* ids = c.cg->output_as<int32_t>(c.ids[0]);
        const uint32_t skip = c.drafted_rows ? 0 : 1;  // outputs for the drafted rows only, or every row
        r.tokens.assign(ids + skip, ids + skip + c.k);
        return;
    }
    r.tokens.resize(size_t(c.k) * c.n_seq);
    for (uint32_t j = 0; j < c.k; ++j)
        std::memcpy(r.tokens.data() + size_t(j) * c.n_seq, c.cg->output_as<int32_t>(c.ids[j]), size_t(c.n_seq) * 4);
}

Status DraftHead::check_finite(const Chain& c) const { return check_finite(*c.cg); }

Status DraftHead::check_finite(const CompiledGraph& cg) const {
    const std::optional<ProbedTensor> first = cg.first_non_finite();
    if (!first) return {};
    return Error::format("draft head {}: a draft produced a NaN or infinity (TANDEM_CHECK_NAN=1); first non-finite "
                         "value in {}",
                         entry->desc->name, describe_op_location(cg.graph(), first->node, first->tensor));
}

Status DraftHead::catch_up(DraftHeadDrafter& d, std::span<const int32_t> history, uint32_t until) {
    while (until - d.n_past_ > opt.catch_up_chunk) {
        // only the chunk's KV entries are kept: its one logits row would be dropped, so
        // it asks for the narrowest the head will give
        Chain* c = TDM_TRY(chain(opt.catch_up_chunk, 1, 1, nullptr, 1));
        if (busy(*c)) settle(*c->last);
        const uint32_t n = opt.catch_up_chunk;
        // a block head's chunk carries a block after it, whose K/V the next round overwrites
        TDM_TRY(kv->reserve(d.seq_, d.n_past_ + n + block_size));
        CompiledGraph& cg = *c->cg;
        int32_t* tok = cg.input_as<int32_t>(c->tokens0);
        int32_t* pos = cg.input_as<int32_t>(c->pos0);
        int32_t* seq = cg.input_as<int32_t>(c->seq0);
        for (uint32_t i = 0; i < n; ++i) {
            tok[i] = history[d.n_past_ + i + 1];  // pair (h_j, x_{j+1}) at head position j
            pos[i] = int32_t(d.n_past_ + i);
            seq[i] = d.seq_;
        }
        cg.input_as<int32_t>(c->rows0)[0] = int32_t(n - 1);
        std::memcpy(cg.input_data(c->hidden0), d.hidden_.data() + size_t(d.n_past_ - d.hidden_first_) * n_embd_target,
                    size_t(n) * n_embd_target * 4);
        rows_from_host += n;
        if (c->block) {
            fill_block(*c, history, d.n_past_, d.n_past_ + n, d.seq_);
        } else if (c->pos4[0]) {
            int32_t* p4 = cg.input_as<int32_t>(c->pos4[0]);
            for (uint32_t i = 0; i < n; ++i) {
                p4[4 * i] = p4[4 * i + 1] = p4[4 * i + 2] = pos[i];
                p4[4 * i + 3] = 0;
            }
        }
        TDM_TRY(cg.run());
        TDM_TRY(check_finite(*c));
        d.n_past_ += n;
    }
    return {};
}

Result<std::shared_ptr<DraftHeadDrafter::Run>> DraftHead::submit(std::span<DraftHeadDrafter* const> ds,
                                                                 std::span<const DraftRequest> reqs) {
    const uint32_t n_seq = uint32_t(ds.size());
    const bool st = stateless();
    uint32_t k = 1, n_rows = 0;
    std::vector<uint32_t> first(n_seq), count(n_seq);  // each sequence's catch-up: target positions
    bool on_device = opt.rows_on_device;
    const DeviceWeight* table = nullptr;
    for (uint32_t s = 0; s < n_seq; ++s) {
        const DraftHeadDrafter& d = *ds[s];
        const uint32_t p = reqs[s].pos;
        k = std::max(k, std::max<uint32_t>(1, reqs[s].max));
        first[s] = st ? p - 1 : d.n_past_;
        count[s] = st ? 1 : p - d.n_past_;
        n_rows += count[s];
        uint32_t row = 0;
        on_device = on_device && d.device_rows_ && (!table || d.device_rows_ == table) && d.row_on_device(first[s], &row) &&
                    d.row_on_device(first[s] + count[s] - 1, &row);
        table = d.device_rows_;
    }
    // a block drafts b - 1 whatever the request's count, or (drafted_rows) about as many as
    // the request asks, up to b - 1, through a graph of its own
    if (block_size) k = drafted_rows ? block_drafted_rows(k, block_size) : block_size;
    Chain* c = TDM_TRY(chain_for(n_rows, n_seq, k, on_device ? table : nullptr, round_vocab(reqs)));
    ++rounds_by_vocab[c->width];
    if (busy(*c)) settle(*c->last);  // its drafters take their tokens from the run's copy
    if (!st)
        for (uint32_t s = 0; s < n_seq; ++s)
            TDM_TRY(kv->reserve(ds[s]->seq_, block_size ? reqs[s].pos + block_size : reqs[s].pos + k - 1));
    CompiledGraph& cg = *c->cg;
    int32_t* tok = cg.input_as<int32_t>(c->tokens0);
    int32_t* pos = cg.input_as<int32_t>(c->pos0);
    int32_t* seq = cg.input_as<int32_t>(c->seq0);
    int32_t* rows = cg.input_as<int32_t>(c->rows0);
    for (uint32_t s = 0, row = 0; s < n_seq; ++s) {
        const DraftHeadDrafter& d = *ds[s];
        const DraftRequest& req = reqs[s];
        for (uint32_t i = 0; i < count[s]; ++i) {
            // a stateless head: the newest token x_p at p, after the target row of p - 1; a
            // head with a KV: the pairs (h_j, x_{j+1}) at head positions j
            tok[row + i] = st ? req.history[req.pos] : req.history[first[s] + i + 1];
            pos[row + i] = int32_t(st ? req.pos : first[s] + i);
            seq[row + i] = st ? req.target_seq : d.seq_;
            if (c->attn_pos) cg.input_as<int32_t>(c->attn_pos)[row + i] = int32_t(req.pos - 1);
            if (c->hidden_index) {
                uint32_t at = 0;
                d.row_on_device(first[s] + i, &at);
                cg.input_as<int32_t>(c->hidden_index)[row + i] = int32_t(at);
            } else if (c->hidden0) {
                std::memcpy(cg.input_as<float>(c->hidden0) + size_t(row + i) * n_embd_target,
                            d.hidden_.data() + size_t(first[s] + i - d.hidden_first_) * n_embd_target,
                            size_t(n_embd_target) * 4);
            }
        }
        (c->hidden_index ? rows_on_device : rows_from_host) += count[s];
        rows[s] = int32_t(row + count[s] - 1);
        if (c->seq1) {
            cg.input_as<int32_t>(c->seq1)[s] = d.seq_;
            cg.input_as<int32_t>(c->rows1)[s] = int32_t(s);
        }
        for (uint32_t j = 1; j < k && !st && !c->block; ++j)
            cg.input_as<int32_t>(c->pos_j[j - 1])[s] = int32_t(req.pos - 1 + j);
        // M-RoPE positions, when the head asked for them: each row's own position
        for (uint32_t j = 0; j < c->pos4.size(); ++j) {
            if (!c->pos4[j]) continue;
            int32_t* p4 = cg.input_as<int32_t>(c->pos4[j]);
            const uint32_t n = j == 0 ? count[s] : 1, at = j == 0 ? row : s;
            for (uint32_t i = 0; i < n; ++i) {
                const int32_t ps = j == 0 ? pos[row + i] : int32_t(st ? req.pos : req.pos - 1 + j);
                int32_t* e = p4 + 4 * size_t(at + i);
                e[0] = e[1] = e[2] = ps;
                e[3] = 0;
            }
        }
        row += count[s];
    }
    // a block head drafts one sequence: its rows (and the context rows' tokens) anew
    if (c->block) fill_block(*c, reqs[0].history, first[0], reqs[0].pos, ds[0]->seq_);
    TDM_TRY(cg.submit());
    auto run = std::make_shared<DraftHeadDrafter::Run>();
    run->chain = c;
    run->n_seq = c->n_seq;
    run->k = c->k;
    c->last = run;
    if (n_seq > 1) ++batched_graphs;
    return run;
}

}  // namespace tdm
