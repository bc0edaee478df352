// SPDX-License-Identifier: Apache-2.0
// host/serve/make_drafters.cpp
#include "serve/make_drafters.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"
#include "model/logits_check.h"
#include "serve/generation_settings.h"
#include "speculative/draft_head.h"
#include "speculative/draft_model.h"
#include "speculative/plugin_drafter.h"

namespace tdm {

Result<bool> draft_head_available(DrafterHost& host, const Model& target) {
    Registry* reg = TDM_TRY(host.registry());
    for (const DraftHeadEntry& h : reg->draft_heads())
        if (carried_by(h, target.arch().desc->name)) return true;
    return false;
}

namespace {

// A plugin's draft head reading the target's file (or --mtp-head FILE, or `source`: a file
// that holds the head alone, such as a Gemma 4 assistant passed with -md).
Result<std::unique_ptr<DraftHeadDrafter>> make_draft_head(DrafterHost& host, const DraftHeadEntry& h, const std::string& type,
                                                          const Model& target, const KvPool& target_kv,
                                                          const std::map<std::string, std::string>& options,
                                                          uint32_t sequences,
                                                          std::shared_ptr<const ModelSource> source = nullptr) {
    const Config& cfg = host.config();
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
    vk::Device* dev = TDM_TRY(host.device());
    vk::PipelineManager* pm = TDM_TRY(host.pipelines());
    return DraftHeadDrafter::create(h, type, src, target, target_kv, *dev, *pm, o);
}

// A draft head joins the chain with a factory: each further sequence gets a drafter of
// its own on the same head (weights, graphs and KV pool shared). A server's request picks
// it by any of its spec types, and by "draft" when it came from -md (`from_md`).
void add_head(DrafterChain& chain, std::unique_ptr<DraftHeadDrafter> head, const DraftHeadEntry& h,
              bool from_md = false) {
    DraftHeadDrafter* proto = head.get();
    chain.owned.push_back(std::move(head));
    chain.order.push_back(proto);
    chain.fresh.resize(chain.order.size() - 1);
    chain.fresh.push_back([proto]() -> Result<std::unique_ptr<Drafter>> { return std::unique_ptr<Drafter>(proto->another()); });
    chain.types.resize(chain.order.size() - 1);
    chain.types.push_back(h.spec_types);
    if (from_md) chain.types.back().push_back("draft");
}

// One target pass computes one hidden output (the Runner's hidden point): heads that read
// different target states (an MTP head's hidden state, an EAGLE-3 head's taps) cannot
// both draft, so such a chain is refused here rather than one of them never drafting.
Status check_one_hidden_point(const DrafterChain& chain) {
    const Drafter* first = nullptr;
    for (const Drafter* d : chain.order) {
        if (d->hidden_point() == TDM_HIDDEN_NONE) continue;
        if (!first) first = d;
        else if (d->hidden_point() != first->hidden_point())
            return Error::format("the draft heads {} and {} read different target states, and a target pass computes "
                                 "one: load one of them (with n-gram drafters beside it if you like)",
                                 spec_type_key(first->name()), spec_type_key(d->name()));
    }
    return {};
}

}  // namespace

Result<DrafterChain> make_drafters(DrafterHost& host, const Model& target, const KvPool& target_kv,
                                   bool carried_head_by_default, uint32_t sequences) {
    const Config& cfg = host.config();
    const uint32_t n_vocab = target.info().n_vocab;
    const std::optional<int64_t> draft_vocab = draft_vocab_count(cfg.speculative.draft_vocab);  // nullopt: auto
    if (draft_vocab && uint64_t(*draft_vocab) > n_vocab)
        return Error::format("--draft-vocab ([speculative] draft_vocab): {} is larger than the model's vocabulary of {} "
                             "tokens (allowed: auto, all, 0 = all, or 1 to {})",
                             *draft_vocab, n_vocab, n_vocab);
    DrafterChain chain;
    Registry* reg = TDM_TRY(host.registry());
    const std::map<std::string, std::string> options = {
        {"draft_max", std::to_string(cfg.speculative.draft_max)},
        {"draft_min", std::to_string(cfg.speculative.draft_min)},
        {"ngram_size_n", std::to_string(cfg.speculative.ngram_size_n)},
        {"ngram_size_m", std::to_string(cfg.speculative.ngram_size_m)},
        {"ngram_min_hits", std::to_string(cfg.speculative.ngram_min_hits)},
        {"ngram_cache", cfg.speculative.ngram_cache},
        {"n_vocab", std::to_string(target.info().n_vocab)},
        // the default taps of a head that names none (EAGLE-3's {2, L/2, L-3})
        {"target_n_layer", std::to_string(target.info().n_attention_layers)},
        {"mtp_hidden", cfg.speculative.mtp_hidden},
        {"draft_vocab", std::to_string(draft_vocab.value_or(0))},
    };
    for (const std::string& type : spec_types(cfg)) {
        if (type == "draft") {
            if (cfg.model.draft_path.empty())
                return Error("speculative type 'draft' needs a draft model: -md FILE (--model-draft)");
            // a file that holds a draft head alone (a Gemma 4 assistant) drafts as that head
            std::shared_ptr<const ModelSource> md(TDM_TRY_CTX(ModelSource::open(cfg.model.draft_path), "-md"));
            if (const DraftHeadEntry* h = reg->find_draft_head_source(md->architecture_names(), target.arch().desc->name)) {
                const std::string head_type = h->spec_types.empty() ? h->desc->name : h->spec_types[0];
                add_head(chain, TDM_TRY_CTX(make_draft_head(host, *h, head_type, target, target_kv, options, sequences, md),
                                            fmt::format("-md {}", cfg.model.draft_path)),
                         *h, true);
                continue;
            }
            for (const std::string& name : md->architecture_names())
                if (const DraftHeadEntry* other = reg->find_draft_head_source(name))
                    return Error::format("-md {}: a {} head ('{}') drafts for {}, not for this model's architecture "
                                         "({})",
                                         cfg.model.draft_path, other->desc->name, name,
                                         fmt::join(other->target_archs, ", "), target.arch().desc->name);
            md.reset();
            auto dm = TDM_TRY_CTX(host.load_model(cfg.model.draft_path), "loading the draft model");
            if (target.tokenizer() && dm->tokenizer())
                TDM_TRY(check_vocab_compatible(*target.tokenizer(), *dm->tokenizer()));
            else if (dm->info().n_vocab > target.info().n_vocab)
                return Error::format("the draft model's vocabulary ({}) is larger than the target's ({})",
                                     dm->info().n_vocab, target.info().n_vocab);
            auto kv = TDM_TRY(host.make_kv(*dm, true));
            vk::Device* dev = TDM_TRY(host.device());
            vk::PipelineManager* pm = TDM_TRY(host.pipelines());
            chain.owned.push_back(std::make_unique<DraftModelDrafter>(std::move(dm), std::move(kv), *dev, *pm));
            chain.types.resize(chain.order.size());
            chain.types.push_back({"draft"});
        } else if (const DraftHeadEntry* h = reg->find_draft_head(type, target.arch().desc->name)) {
            // a head that lives in a file of its own (source_archs) reads it from -md FILE: an
            // EAGLE-3 head's HF directory says model_type "llama", so only its type selects it
            std::shared_ptr<const ModelSource> md;
            if (!h->source_archs.empty() && !cfg.model.draft_path.empty())
                md = TDM_TRY_CTX(ModelSource::open(cfg.model.draft_path), "-md");
            if (md)
                add_head(chain, TDM_TRY_CTX(make_draft_head(host, *h, type, target, target_kv, options, sequences, md),
                                            fmt::format("-md {}", cfg.model.draft_path)),
                         *h, true);
            else
                add_head(chain, TDM_TRY(make_draft_head(host, *h, type, target, target_kv, options, sequences)), *h);
            continue;
        } else if (const DrafterEntry* e = reg->find_drafter(type)) {
            chain.owned.push_back(TDM_TRY(PluginDrafter::create(*e, options)));
            chain.types.resize(chain.order.size());
            chain.types.push_back(e->spec_types);
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
            if (!carried_by(h, target.arch().desc->name)) continue;
            auto d = make_draft_head(host, h, h.spec_types.empty() ? h.desc->name : h.spec_types[0], target,
                                     target_kv, options, sequences);
            if (!d.ok()) {
                TDM_LOG_INFO("spec", "no {} head: {}", h.desc->name, d.error().message());
                continue;
            }
            add_head(chain, std::move(d).value(), h);
            break;
        }
    }
    chain.fresh.resize(chain.order.size());
    chain.types.resize(chain.order.size());
    TDM_TRY(check_one_hidden_point(chain));
    return chain;
}

}  // namespace tdm
