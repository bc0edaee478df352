// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_head.cpp
#include "speculative/draft_head.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "graph/op_location.h"
#include "plugin/abi_structs.h"

namespace tdm {

struct DraftHeadDrafter::Chain {
    std::unique_ptr<CompiledGraph> cg;
    uint32_t n_catch = 0, k = 0;
    TensorId tokens0 = 0, pos0 = 0, seq0 = 0, rows0 = 0;
    TensorId hidden0 = 0;       // the catch-up's target rows, written by the host, or
    TensorId hidden_index = 0;  // their row indices into the device table
    std::vector<TensorId> pos4;   // per step, when the head asked for M-RoPE positions (0: none)
    std::vector<TensorId> pos_j;  // steps 1..k-1
    TensorId seq1 = 0, rows1 = 0;
    std::vector<TensorId> ids;    // the argmax of each step (or the head's TDM_OUTPUT_DRAFT_TOKENS)
    TensorId attn_pos = 0;        // constant-position heads: the attention's causal bound, p - 1
};

Result<std::unique_ptr<DraftHeadDrafter>> DraftHeadDrafter::create(const DraftHeadEntry& entry, std::string spec_type,
                                                                   std::shared_ptr<const ModelSource> source,
                                                                   const Model& target, const KvPool& target_kv,
                                                                   vk::Device& device, vk::PipelineManager& pipelines,
                                                                   const DraftHeadOptions& opt) {
    std::unique_ptr<DraftHeadDrafter> d(new DraftHeadDrafter());
    d->name_ = std::move(spec_type);
    d->entry_ = &entry;
    d->source_ = std::move(source);
    d->src_handle_.src = d->source_.get();
    d->options_.values = opt.options;
    d->opt_ = opt;
    d->target_kv_ = &target_kv;
    d->n_embd_target_ = target.info().n_embd;
    d->n_vocab_ = target.info().n_vocab;
    d->device_ = &device;
    d->pipelines_ = &pipelines;
    d->info_.struct_size = sizeof(tdm_draft_head_info);
    void* target_obj = target.arch().plugin == entry.plugin ? target.plugin_model() : nullptr;
    char err[1024] = {0};
    if (entry.desc->create(host_api(entry.plugin->abi), &d->src_handle_, target_obj, &d->options_, &d->info_, &d->head_, err,
                           sizeof err) != TDM_OK ||
        !d->head_)
        return Error::format("{}", plugin_message(err, sizeof err, "the draft head refused the model"));
    if (entry.plugin->abi < 3) d->info_.flags = 0;  // padding before ABI 3: never read
    const uint32_t flags = d->info_.flags;
    if (bool(flags & TDM_DRAFT_HEAD_CONSTANT_POSITION) != bool(flags & TDM_DRAFT_HEAD_STATELESS))
        return Error::format("draft head {}: this host runs the constant-position and stateless flags together only "
                             "(one-row rounds at one position, no KV of its own); the head sets one of them",
                             entry.desc->name);
    if ((flags & TDM_DRAFT_HEAD_STATELESS) && d->info_.n_own_layers)
        return Error::format("draft head {}: stateless, yet it declares {} attention layers of its own",
                             entry.desc->name, d->info_.n_own_layers);
    if (flags & ~uint32_t(TDM_DRAFT_HEAD_CONSTANT_POSITION | TDM_DRAFT_HEAD_STATELESS))
        return Error::format("draft head {}: unknown flags {:#x}", entry.desc->name, flags);
    d->own_layers_ = TDM_TRY(read_abi_array(d->info_.own_layers, d->info_.n_own_layers, entry.plugin->abi,
                                            fmt::format("draft head {}: own attention layers", entry.desc->name)));
    d->info_.own_layers = d->own_layers_.data();
    if (d->info_.n_target_kv_layers && !d->info_.target_kv_layers)
        return Error::format("draft head {}: {} target KV layers declared without a list", entry.desc->name,
                             d->info_.n_target_kv_layers);
    for (uint32_t i = 0; i < d->info_.n_target_kv_layers; ++i)
        if (d->info_.target_kv_layers[i] >= target_kv.n_layers())
            return Error::format("draft head {}: reads target KV layer {}, the target has {}", entry.desc->name,
                                 d->info_.target_kv_layers[i], target_kv.n_layers());
    d->weights_ = std::make_unique<WeightStore>(device, d->source_->path() + " (draft head)", 64ull << 20);
    d->weights_->set_check_weights(opt.check_weights);
    tdm_loader loader{d->weights_.get(), d->source_.get(), &target.weight_store()};
    if (entry.desc->load(d->head_, &loader, err, sizeof err) != TDM_OK)
        return Error::format("loading draft head {}: {}", entry.desc->name, plugin_message(err, sizeof err, "failed"));
    if (!d->stateless())
        d->kv_ = TDM_TRY(KvPool::create(
            device, std::span<const tdm_attention_layer>(d->info_.own_layers, d->info_.n_own_layers), opt.kv,
            "draft head KV"));
    return d;
}

DraftHeadDrafter::~DraftHeadDrafter() {
    if (pending_) (void)pending_->cg->wait();
    chains_.clear();
    if (head_) entry_->desc->destroy(head_);
}

Result<DraftHeadDrafter::Chain*> DraftHeadDrafter::chain(uint32_t n_catch, uint32_t k,
                                                          const DeviceWeight* device_rows) {
    const auto key = std::make_tuple(n_catch, k, device_rows);
    if (auto it = chains_.find(key); it != chains_.end()) return it->second.get();
    auto c = std::make_unique<Chain>();
    c->n_catch = n_catch;
    c->k = k;
    auto g = std::make_unique<tdm_graph>();
    tdm_batch_desc b0{sizeof(tdm_batch_desc), n_catch, 1};
    init_graph_inputs(*g, b0, false);
    g->plugin_abi = entry_->plugin->abi;
    g->n_embd_target = n_embd_target_;
    if (kv_)
        for (uint32_t i = 0; i < kv_->n_layers(); ++i) g->kv.push_back(kv_->layer(i));
    g->target_kv.assign(target_kv_->n_layers(), nullptr);
    for (uint32_t i = 0; i < info_.n_target_kv_layers; ++i)
        g->target_kv[info_.target_kv_layers[i]] = target_kv_->layer(info_.target_kv_layers[i]);
    c->tokens0 = g->tokens;
    c->pos0 = g->positions;
    c->seq0 = g->seq_ids;
    c->rows0 = g->output_rows;
    const bool constant = (info_.flags & TDM_DRAFT_HEAD_CONSTANT_POSITION) != 0;
    if (constant) {
        // RoPE at p, attention over the target's committed positions < p
        c->attn_pos = g->graph.input(DType::I32, {n_catch}, "attn_pos");
        g->graph.set_batch(c->attn_pos, c->seq0);
    }
    if (device_rows) {
        // the target rows stay where the verify wrote them: gathered by index
        c->hidden_index = g->graph.input(DType::I32, {n_catch}, "target_hidden_rows");
        OpDesc gr;
        gr.op = TDM_OP_GET_ROWS;
        gr.in[0] = g->graph.weight(device_rows);
        gr.in[1] = c->hidden_index;
        gr.n_in = 2;
        gr.name = "target_hidden";
        g->target_hidden = TDM_TRY(g->graph.op(gr));
    }
    char err[1024] = {0};
    TensorId prev_hidden = kNoTensor;
    for (uint32_t j = 0; j < k; ++j) {
        tdm_batch_desc b{sizeof(tdm_batch_desc), j == 0 ? n_catch : 1, 1};
        if (j > 0 && constant) {
            if (!prev_hidden)
                return Error::format("draft head {} sets no TDM_OUTPUT_HIDDEN_DRAFT, so it cannot chain {} steps",
                                     entry_->desc->name, k);
            // every step at the round's one position, over the same committed target KV
            g->tokens = c->ids.back();
            g->positions = c->pos0;
            g->seq_ids = c->seq0;
            g->output_rows = c->rows0;
            g->target_hidden = prev_hidden;
            g->batch = b;
        } else if (j > 0) {
            if (!prev_hidden)
                return Error::format("draft head {} sets no TDM_OUTPUT_HIDDEN_DRAFT, so it cannot chain {} steps",
                                     entry_->desc->name, k);
            if (!c->seq1) {
                c->seq1 = g->graph.input(DType::I32, {1}, "seq1");
                c->rows1 = g->graph.input(DType::I32, {1}, "rows1");
            }
            const TensorId pos = g->graph.input(DType::I32, {1}, fmt::format("pos{}", j));
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
        for (TensorId& o : g->outputs) o = kNoTensor;
        if (entry_->desc->build_step(head_, g.get(), &b, err, sizeof err) != TDM_OK)
            return Error::format("building draft head {} step {}: {}", entry_->desc->name, j,
                                 plugin_message(err, sizeof err, "failed"));
        // a draft step's tokens come from the device (the previous step's pick), so rows of a
        // table in host memory could not be read for them
        if (!g->host_rows.empty())
            return Error::format("draft head {}: it reads {} by token rows, which lives in host memory "
                                 "(tdm.host_rows); a draft head can read only tables in device memory",
                                 entry_->desc->name, g->host_rows.front().second->name());
        if (j == 0 && !device_rows) c->hidden0 = g->target_hidden;
        c->pos4.push_back(g->positions4);
        if (const TensorId chosen = g->outputs[TDM_OUTPUT_DRAFT_TOKENS]) {
            // the head picks its token itself (a centroid-masked head's argmax)
            if (g->graph.tensor(chosen).elements() != 1)
                return Error::format("draft head {}: TDM_OUTPUT_DRAFT_TOKENS must hold one token id per step",
                                     entry_->desc->name);
            c->ids.push_back(chosen);
        } else {
            const TensorId logits = g->outputs[TDM_OUTPUT_LOGITS];
            if (!logits || g->graph.tensor(logits).cols() > int64_t(n_vocab_) || g->graph.tensor(logits).rows() != 1)
                return Error::format("draft head {}: step logits must be [n <= {}, 1]", entry_->desc->name, n_vocab_);
            OpDesc am;
            am.op = TDM_OP_ARGMAX;
            am.in[0] = logits;
            am.n_in = 1;
            am.name = fmt::format("draft{}", j);
            c->ids.push_back(TDM_TRY(g->graph.op(am)));
        }
        prev_hidden = g->outputs[TDM_OUTPUT_HIDDEN_DRAFT];
    }
    for (TensorId id : c->ids) TDM_TRY(g->graph.mark_output(id));
    CompileOptions co;
    co.probe_non_finite = opt_.nan_debug;
    c->cg = TDM_TRY(CompiledGraph::compile(*device_, *pipelines_, std::move(g->graph), co));
    Chain* out = c.get();
    chains_.emplace(key, std::move(c));
    return out;
}

Status DraftHeadDrafter::begin(std::span<const int32_t> prompt) {
    if (pending_) cancel();
    if (kv_) {
        if (seq_ >= 0) kv_->free_sequence(seq_);
        seq_ = TDM_TRY(kv_->add_sequence());
    }
    n_past_ = 0;
    hidden_first_ = 0;
    hidden_.clear();
    device_rows_ = nullptr;
    return {};
}

// Head positions [0, n_past_) pair target hidden j with token j+1; the hidden
// rows [hidden_first_, held_end) wait for their token. Resuming at n keeps the
// pairs whose token is below n, which needs the rows from n_past_ (clamped to
// n - 1) up to n - 1 still held.
bool DraftHeadDrafter::can_resume(uint32_t n_cached) const {
    if (n_cached == 0 || (stateless() && !pending_)) return true;  // a stateless head needs only the next rows
    if (seq_ < 0 || pending_) return false;
    const uint32_t held_end = hidden_first_ + uint32_t(hidden_.size() / n_embd_target_);
    return std::min(n_past_, n_cached - 1) >= hidden_first_ && n_cached <= held_end;
}

Status DraftHeadDrafter::resume(std::span<const int32_t> prompt, uint32_t n_cached) {
    if (n_cached == 0) return begin(prompt);
    device_rows_ = nullptr;  // another request's passes may have run since
    if (!can_resume(n_cached))
        return Error::format("draft head: cannot resume at {} tokens (it holds pairs up to {} and hidden rows {}..{})",
                             n_cached, n_past_, hidden_first_,
                             hidden_first_ + uint32_t(hidden_.size() / n_embd_target_));
    if (stateless()) {
        hidden_.clear();
        hidden_first_ = n_cached;  // the prefill of the rest brings the rows it drafts from
        return {};
    }
    n_past_ = std::min(n_past_, n_cached - 1);
    TDM_TRY(kv_->truncate(seq_, n_past_));
    hidden_.resize(size_t(n_cached - hidden_first_) * n_embd_target_);
    return {};
}

Status DraftHeadDrafter::observe(const TargetRows& rows) {
    if (!rows.hidden || rows.n_embd != n_embd_target_) return Error("draft head: target rows without hidden states");
    const uint32_t end = hidden_first_ + uint32_t(hidden_.size() / n_embd_target_);
    if (rows.first_pos > end || rows.first_pos < hidden_first_)
        return Error::format("draft head: target hidden rows from position {} do not continue the {} held from {}",
                             rows.first_pos, end - hidden_first_, hidden_first_);
    hidden_.resize(size_t(rows.first_pos - hidden_first_) * n_embd_target_);  // drop rolled-back rows
    hidden_.insert(hidden_.end(), rows.hidden, rows.hidden + rows.tokens.size() * n_embd_target_);
    // a stateless head drafts from the newest row only: keep a few, not the whole history
    constexpr size_t kKeepRows = 64;
    const size_t n_rows = hidden_.size() / n_embd_target_;
    if (stateless() && n_rows > 2 * kKeepRows) {
        hidden_.erase(hidden_.begin(), hidden_.begin() + std::ptrdiff_t((n_rows - kKeepRows) * n_embd_target_));
        hidden_first_ += uint32_t(n_rows - kKeepRows);
    }
    if (!opt_.rows_on_device) return {};
    if (rows.hidden_on_device && device_table_ && rows.hidden_on_device != device_table_ && !pending_) {
        // another runner's table (the chains that read one are bound to it): compile anew
        std::erase_if(chains_, [](const auto& kv) { return std::get<2>(kv.first) != nullptr; });
    }
    if (rows.hidden_on_device) device_table_ = rows.hidden_on_device;
    device_rows_ = rows.hidden_on_device;
    device_first_ = rows.first_pos;
    device_n_ = uint32_t(rows.tokens.size());
    return {};
}

Result<DraftHeadDrafter::Chain*> DraftHeadDrafter::chain_for(uint32_t n_catch, uint32_t k, bool on_device) {
    if (on_device) {
        auto c = chain(n_catch, k, device_rows_);
        if (c.ok()) return c;
        // a head whose step refuses a gathered hidden input still drafts from host copies
        TDM_LOG_DEBUG("spec", "draft head {}: rows on the device refused ({}); reading host copies",
                      entry_->desc->name, c.error().message());
        device_rows_ = nullptr;
    }
    return chain(n_catch, k, nullptr);
}

void DraftHeadDrafter::set_catch_up_rows(Chain& c, uint32_t first, uint32_t n) {
    CompiledGraph& cg = *c.cg;
    if (c.hidden_index) {
        int32_t* idx = cg.input_as<int32_t>(c.hidden_index);
        for (uint32_t i = 0; i < n; ++i) idx[i] = int32_t(first + i - device_first_);
        rows_on_device_ += n;
    } else if (c.hidden0) {
        std::memcpy(cg.input_data(c.hidden0), hidden_.data() + size_t(first - hidden_first_) * n_embd_target_,
                    size_t(n) * n_embd_target_ * 4);
        rows_from_host_ += n;
    }
}

// One round of a stateless, constant-position head: the newest token x_p, the
// target hidden of position p - 1 (the row that produced it), all k steps at p.
Status DraftHeadDrafter::submit_stateless(const DraftRequest& req) {
    const uint32_t p = req.pos, k = std::max<uint32_t>(1, req.max);
    if (p == 0 || req.history.size() != size_t(p) + 1)
        return Error::format("draft head: request at position {} with {} tokens of history", p, req.history.size());
    if (req.target_seq < 0) return Error("draft head: a head that reads the target's KV needs the target's sequence");
    const bool on_device = device_rows_ && p - 1 >= device_first_ && p - 1 < device_first_ + device_n_;
    Chain* c = TDM_TRY(chain_for(1, k, on_device));
    CompiledGraph& cg = *c->cg;
    cg.input_as<int32_t>(c->tokens0)[0] = req.history[p];
    cg.input_as<int32_t>(c->pos0)[0] = int32_t(p);
    cg.input_as<int32_t>(c->seq0)[0] = req.target_seq;
    cg.input_as<int32_t>(c->rows0)[0] = 0;
    if (c->attn_pos) cg.input_as<int32_t>(c->attn_pos)[0] = int32_t(p - 1);
    for (TensorId p4id : c->pos4) {  // every step asks for its own M-RoPE positions: all at p
        if (!p4id) continue;
        int32_t* p4 = cg.input_as<int32_t>(p4id);
        p4[0] = p4[1] = p4[2] = int32_t(p);
        p4[3] = 0;
    }
    set_catch_up_rows(*c, p - 1, 1);
    TDM_TRY(cg.submit());
    pending_ = c;
    pending_pos_ = p;
    pending_k_ = k;
    return {};
}

Status DraftHeadDrafter::check_finite(const Chain& c) const {
    const std::optional<ProbedTensor> first = c.cg->first_non_finite();
    if (!first) return {};
    return Error::format("draft head {}: a draft produced a NaN or infinity (TANDEM_CHECK_NAN=1); first non-finite "
                         "value in {}",
                         entry_->desc->name, describe_op_location(c.cg->graph(), first->node, first->tensor));
}

bool DraftHeadDrafter::holds_row(uint32_t pos) const {
    return pos >= hidden_first_ && pos < hidden_first_ + uint32_t(hidden_.size() / n_embd_target_);
}

Status DraftHeadDrafter::submit(const DraftRequest& req) {
    if (stateless()) return submit_stateless(req);
    const uint32_t p = req.pos, k = std::max<uint32_t>(1, req.max);
    if (p < n_past_ + 1 || req.history.size() != size_t(p) + 1)
        return Error::format("draft head: request at position {} while {} positions are committed", p, n_past_);
    const uint32_t held_end = hidden_first_ + uint32_t(hidden_.size() / n_embd_target_);
    if (hidden_first_ > n_past_ || held_end < p)
        return Error::format("draft head: target hidden rows for positions {}..{} are missing", n_past_, p - 1);
    // long catch-ups (the prompt): leading chunks first, synchronously
    while (p - n_past_ > opt_.catch_up_chunk) {
        Chain* c = TDM_TRY(chain(opt_.catch_up_chunk, 1, nullptr));
        TDM_TRY(kv_->reserve(seq_, n_past_ + opt_.catch_up_chunk));
        CompiledGraph& cg = *c->cg;
        const uint32_t n = opt_.catch_up_chunk;
        int32_t* tok = cg.input_as<int32_t>(c->tokens0);
        int32_t* pos = cg.input_as<int32_t>(c->pos0);
        int32_t* seq = cg.input_as<int32_t>(c->seq0);
        for (uint32_t i = 0; i < n; ++i) {
            tok[i] = req.history[n_past_ + i + 1];  // pair (h_j, x_{j+1}) at head position j
            pos[i] = int32_t(n_past_ + i);
            seq[i] = seq_;
        }
        cg.input_as<int32_t>(c->rows0)[0] = int32_t(n - 1);
        set_catch_up_rows(*c, n_past_, n);
        if (c->pos4[0]) {
            int32_t* p4 = cg.input_as<int32_t>(c->pos4[0]);
            for (uint32_t i = 0; i < n; ++i) {
                p4[4 * i] = p4[4 * i + 1] = p4[4 * i + 2] = pos[i];
                p4[4 * i + 3] = 0;
            }
        }
        TDM_TRY(cg.run());
        TDM_TRY(check_finite(*c));
        n_past_ += n;
    }
    const uint32_t n = p - n_past_;
    const bool on_device = device_rows_ && n_past_ >= device_first_ && p <= device_first_ + device_n_;
    Chain* c = TDM_TRY(chain_for(n, k, on_device));
    TDM_TRY(kv_->reserve(seq_, p + k - 1));
    CompiledGraph& cg = *c->cg;
    int32_t* tok = cg.input_as<int32_t>(c->tokens0);
    int32_t* pos = cg.input_as<int32_t>(c->pos0);
    int32_t* seq = cg.input_as<int32_t>(c->seq0);
    for (uint32_t i = 0; i < n; ++i) {
        tok[i] = req.history[n_past_ + i + 1];
        pos[i] = int32_t(n_past_ + i);
        seq[i] = seq_;
    }
    cg.input_as<int32_t>(c->rows0)[0] = int32_t(n - 1);
    set_catch_up_rows(*c, n_past_, n);
    if (c->seq1) {
        cg.input_as<int32_t>(c->seq1)[0] = seq_;
        cg.input_as<int32_t>(c->rows1)[0] = 0;
    }
    for (uint32_t j = 1; j < k; ++j) cg.input_as<int32_t>(c->pos_j[j - 1])[0] = int32_t(p - 1 + j);
    for (uint32_t j = 0; j < k; ++j) {
        if (!c->pos4[j]) continue;
        int32_t* p4 = cg.input_as<int32_t>(c->pos4[j]);
        const uint32_t rows = j == 0 ? n : 1;
        for (uint32_t i = 0; i < rows; ++i) {
            const int32_t ps = j == 0 ? pos[i] : int32_t(p - 1 + j);
            p4[4 * i] = p4[4 * i + 1] = p4[4 * i + 2] = ps;
            p4[4 * i + 3] = 0;
        }
    }
    TDM_TRY(cg.submit());
    pending_ = c;
    pending_pos_ = p;
    pending_k_ = k;
    return {};
}

Status DraftHeadDrafter::prepare(const DraftRequest& req) {
    TDM_ASSERT(!pending_);
    if (stateless() && (req.pos == 0 || !holds_row(req.pos - 1))) return {};  // draft() proposes nothing
    return submit(req);
}

Result<std::vector<int32_t>> DraftHeadDrafter::draft(const DraftRequest& req) {
    if (!pending_ || pending_pos_ != req.pos || pending_k_ != std::max<uint32_t>(1, req.max)) {
        const DeviceWeight* rows = device_rows_;  // still the last pass's: no pass ran since
        if (pending_) cancel();
        device_rows_ = rows;
        // after a restored prompt cache a stateless head may lack the row it needs: no proposal
        if (stateless() && (req.pos == 0 || !holds_row(req.pos - 1))) return std::vector<int32_t>{};
        TDM_TRY(submit(req));
    }
    Chain* c = pending_;
    pending_ = nullptr;
    device_rows_ = nullptr;  // read; the target's next pass overwrites them
    TDM_TRY(c->cg->wait());
    TDM_TRY(check_finite(*c));
    // the catch-up rows are committed pairs: keep them
    if (!stateless()) n_past_ = pending_pos_;
    std::vector<int32_t> out;
    for (TensorId id : c->ids) out.push_back(c->cg->output_as<int32_t>(id)[0]);
    out.resize(std::min<size_t>(out.size(), req.max));
    return out;
}

Status DraftHeadDrafter::accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) {
    if (stateless()) return {};  // nothing of its own to roll back
    // entries the chain wrote beyond the committed pairs came from draft hiddens
    TDM_TRY(kv_->truncate(seq_, n_past_));
    // hidden rows before n_past_ have been paired; drop them
    if (n_past_ > hidden_first_) {
        const size_t drop = std::min(hidden_.size(), size_t(n_past_ - hidden_first_) * n_embd_target_);
        hidden_.erase(hidden_.begin(), hidden_.begin() + std::ptrdiff_t(drop));
        hidden_first_ = n_past_;
    }
    return {};
}

void DraftHeadDrafter::cancel() {
    device_rows_ = nullptr;
    if (!pending_) return;
    Chain* c = pending_;
    pending_ = nullptr;
    const bool ok = c->cg->wait().ok();
    if (stateless()) return;
    if (ok) n_past_ = pending_pos_;  // the catch-up part is valid
    if (auto st = kv_->truncate(seq_, n_past_); !st.ok()) TDM_LOG_WARN("spec", "{}", st.error().message());
}

}  // namespace tdm
