// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_run.cpp: `tandem run`: generate from a prompt, plain or
// speculative; text or JSON output; --dump-logits; --prompt-cache; --image FILE (a model
// with an image encoder: the images before the prompt text in one chat turn); --grammar and
// --json-schema (the output constraint, built by serve/constraint_factory.h); the warm-up at
// load (cli/warmup_option.h; --no-warmup), timed apart from load_ms (warmup_ms).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/constraint_option.h"
#include "cli/image_prompt.h"
#include "cli/interrupt.h"
#include "cli/memory_plan.h"
#include "cli/progress.h"
#include "cli/prompt.h"
#include "cli/prompt_cache.h"
#include "cli/warmup_option.h"
#include "engine/generate.h"
#include "serve/constraint_factory.h"
#include "serve/generation_settings.h"
#include "serve/make_drafters.h"

namespace tdm::cli {
namespace {

// --image FILE...: the images (PNG or JPEG) before the -p/-f text in one user turn, always in
// the chat template (the image tokens belong in a turn), after --system-prompt if given.
Result<ImagePrompt> image_prompt(App& app, const Model& model, const std::vector<std::string>& files) {
    const ParsedArgs& a = app.args();
    if (a.has("prompt-tokens")) return Error("--image needs a text prompt (-p or -f), not --prompt-tokens");
    if (a.get_string("prompt-cache"))
        return Error("--prompt-cache keeps no image rows: drop --prompt-cache or --image");
    if (a.get_string("dump-logits")) return Error("--dump-logits is for text prompts: drop it or --image");
    const std::string text = TDM_TRY(prompt_text(a));
    auto encoder = TDM_TRY(load_encoder(app, model));
    const PatchProcessorConfig processor = TDM_TRY(processor_for(*encoder, app.config().model.path));
    std::vector<EncodedImage> encoded;
    for (const std::string& f : files) {
        auto image = load_image(f);
        if (!image.ok() && image.error().message().find("PDF") != std::string::npos)
            return Error::format("{} (`tandem ocr` reads PDFs, page by page)", image.error().message());
        if (!image.ok()) return image.error();
        encoded.push_back(TDM_TRY_CTX(encode_page(*encoder, processor, *image), f));
    }
    return build_image_prompt(app.config(), model, *encoder, std::move(encoded), text,
                              a.get_string("system-prompt").value_or(""));
}

}  // namespace

Status cmd_run(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();
    const bool json = json_output(a);
    const ConstraintSpec constraint = TDM_TRY(constraint_option(a));  // its mistakes before the model loads
    const auto t_load = std::chrono::steady_clock::now();
    const bool speculative = !spec_types(app.config()).empty() || app.config().speculative.auto_select;
    TDM_TRY(check_memory_fits(app, cfg.model.path, speculative));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    auto kv = TDM_TRY(app.make_kv(*model, speculative));
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();

    GenerateParams gp;
    std::vector<int32_t> prompt;
    if (const std::vector<std::string> images = a.get_strings("image"); !images.empty()) {
        ImagePrompt ip = TDM_TRY(image_prompt(app, *model, images));
        prompt = std::move(ip.tokens);
        gp.images = std::move(ip.images);
    } else {
        prompt = TDM_TRY(prompt_tokens(a, cfg, *model));
    }
    Runner runner(*model, *kv, *dev, *pm);

    gp.max_tokens = int32_t(a.get_int("n-predict").value_or(128));
    gp.sampling = sampler_params(cfg);
    gp.n_batch = uint32_t(cfg.model.n_batch);
    gp.ignore_eog = a.flag("ignore-eos");
    if (constraint.any()) {
        if (!model->tokenizer()) return Error::format("{} needs a model with a tokenizer", constraint.origin);
        gp.constraint = TDM_TRY_CTX(constraint_factory(*model->tokenizer())(constraint), constraint.origin);
    }
    InterruptScope interrupt;
    gp.cancel = interrupt.flag();
    gp.on_progress = prefill_progress();

    std::ofstream dump;
    LogitsSink sink;
    if (auto path = a.get_string("dump-logits")) {
        dump.open(*path, std::ios::binary | std::ios::trunc);
        if (!dump) return Error::format("cannot write logits to {}", *path);
        sink = [&dump](const float* row, uint32_t n) { dump.write(reinterpret_cast<const char*>(row), std::streamsize(n) * 4); };
    }
    auto on_text = [json](const std::string& s) {
        if (json) return;
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
    };
    DrafterChain chain = TDM_TRY(make_drafters(app, *model, *kv));
    // before the run takes its sequence: the warm-up's is freed again
    const std::optional<WarmupReport> warmup = TDM_TRY(warm_up_if_on(app, runner, chain.order, gp.sampling));
    const int seq = TDM_TRY(kv->add_sequence());
    std::optional<PromptCache> cache;
    if (auto path = a.get_string("prompt-cache")) {
        cache.emplace(*path, a.flag("prompt-cache-ro"));
        gp.n_cached = cache->restore(*model, *kv, seq, prompt, chain.order);
        gp.on_prefix = cache->save_hook(*model, *kv, seq, prompt, chain.order);
    } else if (a.flag("prompt-cache-ro")) {
        return Error("--prompt-cache-ro needs --prompt-cache FILE");
    }
    GenerateResult r;
    std::optional<SpecStats> spec;
    if (chain.empty()) {
        r = TDM_TRY(generate(runner, model->tokenizer(), seq, prompt, gp, on_text, sink, a.flag("logits-all")));
    } else {
        if (sink) return Error("--dump-logits works with plain decoding only (drop the speculative options)");
        SpecResult sr = TDM_TRY(generate_speculative(runner, model->tokenizer(), seq, prompt, gp, chain.order,
                                                     spec_params(cfg), on_text));
        r = std::move(sr.gen);
        spec = std::move(sr.stats);
    }
    if (dump.is_open() && !dump) return Error("writing the logits file failed");

    if (json) {
        nlohmann::json j;
        j["model"] = cfg.model.path;
        j["n_prompt"] = r.stats.n_prompt;
        j["n_prefilled"] = r.stats.n_prefilled;
        j["prompt_tokens"] = prompt;
        j["tokens"] = r.tokens;
        j["text"] = r.text;
        j["stop_reason"] = to_string(r.stop_reason);
        j["timings"] = {{"load_ms", load_ms},
                        {"warmup_ms", warmup_ms(warmup)},
                        {"prefill_ms", r.stats.prefill_ms},
                        {"decode_ms", r.stats.decode_ms},
                        {"prefill_tokens_per_s", r.stats.prefill_tps()},
                        {"decode_tokens_per_s", r.stats.decode_tps()}};
        if (spec) j["speculative"] = spec->json();
        if (cache) j["prompt_cache"] = cache->report().json();
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::printf("\n");
        // a cancelled prefill reports what it ran, not the prompt it was given
        const std::string prompt_done =
            r.stats.prefill_interrupted()
                ? fmt::format("interrupted after {} of {} tokens", r.stats.n_cached + r.stats.n_prefilled,
                              r.stats.n_prompt)
                : fmt::format("{} tokens", r.stats.n_prompt);
        std::fprintf(stderr,
                     "\nprompt: %s in %.1f ms (%.2f tok/s) | generated: %u tokens in %.1f ms (%.2f tok/s) | "
                     "stop: %s\n",
                     prompt_done.c_str(), r.stats.prefill_ms, r.stats.prefill_tps(), r.stats.n_generated,
                     r.stats.decode_ms, r.stats.decode_tps(), std::string(to_string(r.stop_reason)).c_str());
        if (spec) std::fprintf(stderr, "%s", spec->report().c_str());
        if (cache) std::fprintf(stderr, "%s", cache->report().summary().c_str());
        std::fprintf(stderr, "%s\n", warmup_line(warmup).c_str());
    }
    if (r.stop_reason == StopReason::cancelled) app.set_exit_code(kInterruptedExitCode);
    return {};
}

}  // namespace tdm::cli
