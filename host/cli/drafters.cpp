// SPDX-License-Identifier: Apache-2.0
// host/cli/drafters.cpp
#include "cli/drafters.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"
#include "model/logits_check.h"
#include "speculative/draft_head.h"
#include "speculative/draft_model.h"
#include "speculative/plugin_drafter.h"

namespace tdm::cli {

std::vector<std::string> spec_types(const Config& c) {
    std::vector<std::string> t = c.speculative.type;
    t.erase(std::remove(t.begin(), t.end(), "none"), t.end());
    if (t.empty() && !c.model.draft_path.empty()) t.push_back("draft");
    return t;
}

bool speculation_off(const Config& c) {
    return std::find(c.speculative.type.begin(), c.speculative.type.end(), "none") != c.speculative.type.end();
}

Result<bool> draft_head_available(App& app, const Model& target) {
    Registry* reg = TDM_TRY(app.registry());
    for (const DraftHeadEntry& h : reg->draft_heads())
        if (std::find(h.target_archs.begin(), h.target_archs.end(), target.arch().desc->name) != h.target_archs.end())
            return true;
    return false;
}

std::vector<Drafter*> shared_drafters(std::span<Drafter* const> order, std::span<const DrafterFactory> fresh) {
    std::vector<Drafter*> out;
    for (size_t i = 0; i < order.size(); ++i)
        if (i >= fresh.size() || !fresh[i]) out.push_back(order[i]);
    return out;
}

Result<std::vector<DrafterSlot>> request_drafters(std::span<Drafter* const> order,
                                                  std::span<const DrafterFactory> fresh, std::string_view only) {
    std::vector<DrafterSlot> out;
    for (size_t i = 0; i < order.size(); ++i) {
        if (!only.empty() && order[i]->name() != only) continue;
        DrafterSlot ds;
        if (i < fresh.size() && fresh[i])
            ds.owned = TDM_TRY(fresh[i]());
        else
            ds.shared = order[i];
        out.push_back(std::move(ds));
    }
    return out;
}

tdm_hidden_point chain_hidden_point(std::span<Drafter* const> order) {
    for (Drafter* d : order)
        if (d->hidden_point() != TDM_HIDDEN_NONE) return d->hidden_point();
    return TDM_HIDDEN_NONE;
}

SpecParams spec_params(const Config& c) {
    SpecParams p;
    p.draft_max = c.speculative.draft_max;
    p.draft_min = c.speculative.draft_min;
    p.skip_streak = c.speculative.skip_streak;
    p.auto_k = c.speculative.auto_select;
    p.trace_path = c.speculative.trace;
    return p;
}

SamplerParams sampler_params(const Config& c) {
    SamplerParams s;
    s.temperature = c.sampling.temperature;
    s.top_k = c.sampling.top_k;
    s.top_p = c.sampling.top_p;
    s.min_p = c.sampling.min_p;
    s.repeat_penalty = c.sampling.repeat_penalty;
    s.repeat_last_n = c.sampling.repeat_last_n;
    if (c.sampling.seed >= 0) s.seed = uint64_t(c.sampling.seed);
    return s;
}

namespace {

// A plugin's draft head reading the target's file (or --mtp-head FILE, or `source`: a file
// that holds the head alone, such as a Gemma 4 assistant passed with -md).
Result<std::unique_ptr<DraftHeadDrafter>> make_draft_head(App& app, const DraftHeadEntry& h, const std::string& type,
                                                          const Model& target, const KvPool& target_kv,
                                                          const std::map<std::string, std::string>& options,
                                                          uint32_t sequences,
                                                          std::shared_ptr<const ModelSource> source = nullptr) {
    const Config& cfg = app.config();
    std::shared_ptr<const ModelSource> src = source ? source : target.shared_source();
    if (!source && !cfg.model.mtp_head_path.empty())
        src = std::shared_ptr<const ModelSource>(TDM_TRY_CTX(ModelSource::open(cfg.model.mtp_head_path), "--mtp-head"));
    DraftHeadOptions o;
    o.options = options;
    o.kv.n_ctx = cfg.model.n_ctx > 0 ? uint32_t(cfg.model.n_ctx) : target.info().n_ctx_train;
    o.kv.f16 = cfg.model.kv_type != "f32";
    o.kv.rows_max = ring_rows_max(uint32_t(cfg.model.n_batch), uint32_t(cfg.speculative.draft_max + 1));
    o.kv.n_seq_max = std::max(1u, sequences);
    o.check_weights = cfg.model.check_weights;  // --no-check-weights covers the head too
    o.nan_debug = full_logits_check();          // TANDEM_CHECK_NAN=1, as for the target
    o.auto_vocab = !draft_vocab_count(cfg.speculative.draft_vocab);
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    return DraftHeadDrafter::create(h, type, src, target, target_kv, *dev, *pm, o);
}

// A draft head joins the chain with a factory: each further sequence gets a drafter of
// its own on the same head (weights, graphs and KV pool shared).
void add_head(DrafterChain& chain, std::unique_ptr<DraftHeadDrafter> head) {
    DraftHeadDrafter* proto = head.get();
    chain.owned.push_back(std::move(head));
    chain.order.push_back(proto);
    chain.fresh.resize(chain.order.size() - 1);
    chain.fresh.push_back([proto]() -> Result<std::unique_ptr<Drafter>> { return std::unique_ptr<Drafter>(proto->another()); });
}

}  // namespace

Result<DrafterChain> make_drafters(App& app, const Model& target, const KvPool& target_kv,
                                   bool carried_head_by_default, uint32_t sequences) {
    const Config& cfg = app.config();
    const uint32_t n_vocab = target.info().n_vocab;
    const std::optional<int64_t> draft_vocab = draft_vocab_count(cfg.speculative.draft_vocab);  // nullopt: auto
    if (draft_vocab && uint64_t(*draft_vocab) > n_vocab)
        return Error::format("--draft-vocab ([speculative] draft_vocab): {} is larger than the model's vocabulary of {} "
                             "tokens (allowed: auto, all, 0 = all, or 1 to {})",
                             *draft_vocab, n_vocab, n_vocab);
    DrafterChain chain;
    Registry* reg = TDM_TRY(app.registry());
    const std::map<std::string, std::string> options = {
        {"draft_max", std::to_string(cfg.speculative.draft_max)},
        {"draft_min", std::to_string(cfg.speculative.draft_min)},
        {"ngram_size_n", std::to_string(cfg.speculative.ngram_size_n)},
        {"ngram_size_m", std::to_string(cfg.speculative.ngram_size_m)},
        {"ngram_min_hits", std::to_string(cfg.speculative.ngram_min_hits)},
        {"ngram_cache", cfg.speculative.ngram_cache},
        {"n_vocab", std::to_string(target.info().n_vocab)},
        {"mtp_hidden", cfg.speculative.mtp_hidden},
        {"draft_vocab", std::to_string(draft_vocab.value_or(0))},
    };
    for (const std::string& type : spec_types(cfg)) {
        if (type == "draft") {
            if (cfg.model.draft_path.empty())
                return Error("speculative type 'draft' needs a draft model: -md FILE (--model-draft)");
            // a file that holds a draft head alone (a Gemma 4 assistant) drafts as that head
            std::shared_ptr<const ModelSource> md(TDM_TRY_CTX(ModelSource::open(cfg.model.draft_path), "-md"));
            const std::string& md_arch = md->architecture();
            if (const DraftHeadEntry* h = reg->find_draft_head_source(md_arch, target.arch().desc->name)) {
                const std::string head_type = h->spec_types.empty() ? h->desc->name : h->spec_types[0];
                add_head(chain, TDM_TRY_CTX(make_draft_head(app, *h, head_type, target, target_kv, options, sequences, md),
                                            fmt::format("-md {}", cfg.model.draft_path)));
                continue;
            }
            if (reg->is_draft_head_source(md_arch))
                return Error::format("-md {}: a {} drafts for other architectures than this model's ({})",
                                     cfg.model.draft_path, md_arch, target.arch().desc->name);
            md.reset();
            auto dm = TDM_TRY_CTX(app.load_model(cfg.model.draft_path), "loading the draft model");
            if (target.tokenizer() && dm->tokenizer())
                TDM_TRY(check_vocab_compatible(*target.tokenizer(), *dm->tokenizer()));
            else if (dm->info().n_vocab > target.info().n_vocab)
                return Error::format("the draft model's vocabulary ({}) is larger than the target's ({})",
                                     dm->info().n_vocab, target.info().n_vocab);
            auto kv = TDM_TRY(app.make_kv(*dm, true));
            vk::Device* dev = TDM_TRY(app.device());
            vk::PipelineManager* pm = TDM_TRY(app.pipelines());
            chain.owned.push_back(std::make_unique<DraftModelDrafter>(std::move(dm), std::move(kv), *dev, *pm));
        } else if (const DraftHeadEntry* h = reg->find_draft_head(type, target.arch().desc->name)) {
            add_head(chain, TDM_TRY(make_draft_head(app, *h, type, target, target_kv, options, sequences)));
            continue;
        } else if (const DrafterEntry* e = reg->find_drafter(type)) {
            chain.owned.push_back(TDM_TRY(PluginDrafter::create(*e, options)));
            chain.fresh.resize(chain.order.size());
            chain.fresh.push_back([e, options]() -> Result<std::unique_ptr<Drafter>> {
                return std::unique_ptr<Drafter>(TDM_TRY(PluginDrafter::create(*e, options)));
            });
        } else {
            for (const DraftHeadEntry& other : reg->draft_heads())
                if (std::find(other.spec_types.begin(), other.spec_types.end(), type) != other.spec_types.end())
                    return Error::format("--spec-type {}: the draft head {} drafts for {} models; this model is {}",
                                         type, other.desc->name, fmt::join(other.target_archs, ", "),
                                         target.arch().desc->name);
            auto known = reg->spec_types();
            known.insert(known.begin(), "draft");
            return Error::format("unknown speculative type '{}'; available: {}", type, fmt::join(known, ", "));
        }
        chain.order.push_back(chain.owned.back().get());
        chain.fresh.resize(chain.order.size());
    }
    // --spec-auto (or the chat's default) without a type: the head the model carries, if it has one
    const bool carried = cfg.speculative.auto_select || (carried_head_by_default && !speculation_off(cfg));
    if (chain.empty() && spec_types(cfg).empty() && carried) {
        for (const DraftHeadEntry& h : reg->draft_heads()) {
            const auto& archs = h.target_archs;
            if (std::find(archs.begin(), archs.end(), target.arch().desc->name) == archs.end()) continue;
            auto d = make_draft_head(app, h, h.spec_types.empty() ? h.desc->name : h.spec_types[0], target,
                                     target_kv, options, sequences);
            if (!d.ok()) {
                TDM_LOG_INFO("spec", "no {} head: {}", h.desc->name, d.error().message());
                continue;
            }
            add_head(chain, std::move(d).value());
            break;
        }
    }
    chain.fresh.resize(chain.order.size());
    return chain;
}

}  // namespace tdm::cli
