// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_serve.cpp: `tandem serve`: the model behind an OpenAI-compatible HTTP API
// (serve/http_server.h) until SIGTERM or SIGINT, which drain the admitted requests first.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <atomic>
#include <thread>

#include "cli/commands.h"
#include "cli/image_prompt.h"
#include "cli/memory_plan.h"
#include "cli/prompt.h"
#include "cli/warmup_option.h"
#include "serve/generation_settings.h"
#include "serve/http_server.h"
#include "serve/make_drafters.h"
#include "serve/serve_backend.h"

namespace tdm::cli {

namespace {

// The name clients send as "model": --alias, else the model file's name without .gguf.
std::string model_id(const std::string& alias, const std::string& path) {
    if (!alias.empty()) return alias;
    std::filesystem::path p(path);
    if (p.filename().empty()) p = p.parent_path();  // "dir/" of an HF directory
    std::string name = p.filename().string();
    if (name.ends_with(".gguf")) name.resize(name.size() - 5);
    return name.empty() ? "tandem" : name;
}

}  // namespace

Status cmd_serve(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();

    // SIGTERM and SIGINT go to one thread that drains the server. Blocked before any other
    // thread exists (the Vulkan driver's, the HTTP handlers), so that all inherit the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    server::ServerOptions opts;
    opts.host = cfg.server.host;
    opts.port = cfg.server.port;
    opts.api_key = cfg.server.api_key;
    opts.queue = uint32_t(cfg.server.queue);
    opts.queue_timeout_s = uint32_t(cfg.server.timeout);
    opts.generation_timeout_s = uint32_t(cfg.server.request_timeout);
    opts.max_body_bytes = size_t(cfg.server.max_body);
    opts.shutdown_timeout_s = uint32_t(cfg.server.shutdown_timeout);
    opts.max_connections = uint32_t(cfg.server.max_connections);
    opts.max_connections_per_client = uint32_t(cfg.server.max_connections_per_client);
    opts.limits.max_prompt_bytes = std::min(opts.limits.max_prompt_bytes, opts.max_body_bytes);
    opts.limits.max_images = size_t(cfg.server.max_images);
    opts.limits.max_image_bytes = size_t(cfg.server.max_image_bytes);
    opts.limits.pdf_dpi = cfg.ocr.pdf_dpi;  // a file part's pages, as `tandem ocr` renders them

    const uint32_t parallel = uint32_t(cfg.server.parallel);
    // every slot's KV, and a draft head's per request, before anything large is allocated
    TDM_TRY(check_memory_fits(app, cfg.model.path,
                              RunShape{.speculative = !speculation_off(cfg),
                                       .sequences = parallel,
                                       .head_sequences = parallel + 1,
                                       .carried_head = true}));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    if (!model->tokenizer())
        return Error::format("serve needs the model's tokenizer, which is not usable: {}", model->tokenizer_error());
    std::optional<ChatTemplate> tmpl;
    if (auto t = chat_template_for(cfg, *model); t.ok()) {
        tmpl = std::move(*t);
    } else if (a.get_string("chat-template")) {
        return t.error();
    } else {
        std::fprintf(stderr, "serve: no chat template (%s): /v1/chat/completions is refused\n",
                     t.error().message().c_str());
    }
    const bool default_head = spec_types(cfg).empty() && !cfg.speculative.auto_select && !speculation_off(cfg) &&
                              TDM_TRY(draft_head_available(app, *model));
    const bool speculative = !spec_types(cfg).empty() || cfg.speculative.auto_select || default_head;
    auto kv = TDM_TRY(app.make_kv(*model, speculative, parallel));
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    Runner runner(*model, *kv, *dev, *pm);
    // a draft head keeps a sequence of its KV per request that drafts with it
    DrafterChain chain = TDM_TRY(make_drafters(app, *model, *kv, /*carried_head_by_default=*/true, parallel + 1));
    // before the backend takes the KV's sequences and before the server listens, so that the
    // first requests do not compile what every request runs
    const std::optional<WarmupReport> warmup = TDM_TRY(warm_up_if_on(app, runner, chain.order, sampler_params(cfg)));
    // image_url parts need the model's image encoder (GLM-OCR's tower, or --mmproj); a model
    // without one serves text, and a request with images is told why
    std::unique_ptr<Encoder> encoder;
    server::ImageSupport images;
    if (auto e = load_encoder(app, *model); e.ok()) {
        encoder = std::move(*e);
        images.encoder = encoder.get();
        images.processor = TDM_TRY(processor_for(*encoder, cfg.model.path));
    } else if (!cfg.model.mmproj_path.empty()) {
        return e.error();
    } else {
        images.missing = e.error().message();
    }

    server::ServeBackend::Setup setup;
    setup.model_id = model_id(cfg.server.alias, cfg.model.path);
    setup.runner = &runner;
    setup.tokenizer = model->tokenizer();
    setup.chat_template = std::move(tmpl);
    setup.drafters = chain.order;
    setup.per_request = chain.fresh;
    setup.drafter_types = chain.types;
    setup.spec = spec_params(cfg);
    setup.defaults.max_tokens = a.has("n-predict") ? int32_t(*a.get_int("n-predict")) : -1;
    setup.defaults.sampling = sampler_params(cfg);
    setup.defaults.n_batch = uint32_t(cfg.model.n_batch);
    setup.defaults.ignore_eog = a.flag("ignore-eos");
    setup.images = std::move(images);
    setup.constraints = constraint_factory(*model->tokenizer());
    auto backend = TDM_TRY(server::ServeBackend::create(std::move(setup)));

    server::HttpServer http(*backend, opts);
    TDM_TRY(http.bind());

    std::atomic<bool> drained{false};
    std::thread drainer([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        if (drained) return;  // woken below: serve() has already returned
        drained = true;
        std::fprintf(stderr, "serve: %s: finishing the requests in progress, then stopping\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
        http.drain();
    });

    std::string names;
    for (Drafter* d : chain.order) names += (names.empty() ? "" : ", ") + d->name();
    const std::string image_note = encoder ? fmt::format(", images: {}", encoder->name()) : "";
    std::fprintf(stderr, "serve: model '%s', %u slots of %u tokens, speculative decoding: %s%s%s; %s\n",
                 backend->model_id().c_str(), backend->parallel(), backend->context_tokens(),
                 names.empty() ? "off" : names.c_str(), image_note.c_str(),
                 opts.api_key.empty() ? "" : ", API key required", warmup_line(warmup).c_str());
    std::printf("listening on http://%s:%d\n", opts.host.c_str(), http.port());
    std::fflush(stdout);

    Status served = http.serve();
    // serve() returns after drain(); if it returned on its own, wake the drainer.
    if (!drained.exchange(true)) pthread_kill(drainer.native_handle(), SIGTERM);
    drainer.join();
    return served;
}

}  // namespace tdm::cli
