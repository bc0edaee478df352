// SPDX-License-Identifier: Apache-2.0
// host/engine/solo.cpp
#include "engine/solo.h"

#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/batch_engine.h"

namespace tdm {

Result<SpecResult> run_solo(Runner& runner, const Tokenizer* tokenizer, int seq, std::span<const int32_t> prompt,
                            const GenerateParams& params, std::span<Drafter* const> drafters, const SpecParams& spec,
                            const std::function<void(const std::string&)>& on_text, const LogitsSink& sink,
                            bool logits_all) {
    const uint32_t capacity = runner.kv().capacity_tokens();
    if (prompt.empty()) return Error("the prompt is empty: at least one token is needed");
    if (prompt.size() >= capacity)
        return Error::format("the prompt has {} tokens but the context holds {} (raise -c/--ctx-size)", prompt.size(),
                             capacity);
    if (params.n_cached >= prompt.size())
        return Error::format("prefill: {} of the prompt's {} tokens are cached; at least the last one must be run",
                             params.n_cached, prompt.size());
    if (params.images && params.n_cached > params.images->first_row())
        return Error("prefill: the cached prefix reaches into an image, whose rows are not cached");
    if (params.images && params.on_prefix)
        return Error("a prompt cache keeps token ids, not image rows: it cannot save a prompt with images");
    TDM_TRY(Sampler::create(params.sampling));  // a bad setting is refused before any work
    std::ofstream trace;
    if (!spec.trace_path.empty()) {
        trace.open(spec.trace_path, std::ios::trunc);
        if (!trace) return Error::format("cannot write the speculative trace {}", spec.trace_path);
    }

    BatchEngineOptions options;
    options.n_batch = params.n_batch;
    options.max_batch_rows = std::max<uint32_t>(params.n_batch, 1);
    options.seqs = {seq};
    auto engine = TDM_TRY(
        BatchEngine::create(runner, tokenizer, options, std::vector<Drafter*>(drafters.begin(), drafters.end())));
    engine->assume_slot_holds(seq, prompt.first(params.n_cached));

    SpecResult out;
    GenerateResult& gen = out.gen;
    std::optional<SessionResult> done;
    SessionRequest r;
    r.prompt.assign(prompt.begin(), prompt.end());
    r.params = params;
    r.images = params.images;
    r.spec = spec;
    for (Drafter* d : drafters) r.drafters.push_back(DrafterSlot{nullptr, d});
    if (params.cancel)  // the caller owns the flag and outlives the call
        r.cancel = std::shared_ptr<const std::atomic<bool>>(std::shared_ptr<const void>(), params.cancel);
    r.logits_sink = sink;
    r.logits_all = logits_all;
    r.on_progress = params.on_progress;
    r.on_prefix = params.on_prefix;
    r.on_token = [&](int32_t, std::string_view piece, const TokenLogprobs*) {
        if (piece.empty()) return true;
        gen.text += piece;
        if (on_text) on_text(std::string(piece));
        return true;
    };
    if (trace.is_open())
        r.on_round = [&](const RoundRecord& rr) {
            nlohmann::json j = {{"round", rr.round},       {"pos", rr.pos},
                                {"drafter", rr.drafter},   {"k", rr.k},
                                {"drafted", rr.drafted},   {"accepted", rr.accepted},
                                {"next", rr.next},         {"t_draft_ms", rr.draft_ms},
                                {"t_verify_ms", rr.verify_ms}, {"t_accept_ms", rr.accept_ms}};
            if (!rr.parents.empty()) j["parents"] = rr.parents;  // a tree: each draft's parent node
            if (!rr.tree_choice.empty()) j["tree_choice"] = rr.tree_choice;
            if (rr.controller)  // what the goodput controller thinks after the round
                j["controller"] = {{"off", rr.drafting_off}, {"estimated_speedup", rr.estimated_speedup}};
            trace << j.dump() << '\n';
        };
    r.on_done = [&](const SessionResult& res) { done = res; };
    engine->add(std::move(r));
    while (!done)
        if (!engine->step() && !done) return Error("the engine stopped without finishing the request");

    if (done->stop_reason == StopReason::error) return Error(done->error);
    gen.tokens = std::move(done->tokens);
    gen.stop_reason = done->stop_reason;
    gen.stats.n_prompt = uint32_t(prompt.size());
    gen.stats.n_generated = uint32_t(gen.tokens.size());
    gen.stats.n_cached = params.n_cached;
    gen.stats.n_prefilled = done->n_prompt_done - std::min(done->n_prompt_done, params.n_cached);
    gen.stats.prefill_ms = done->prefill_ms;
    gen.stats.decode_ms = done->decode_ms;
    // a request cancelled before its first pass left the KV as it was
    gen.n_kv = done->admitted ? done->n_kv : params.n_cached;
    if (!drafters.empty()) out.stats = std::move(done->spec);
    return out;
}

}  // namespace tdm
