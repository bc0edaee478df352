// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_ocr.cpp: `tandem ocr`: document OCR with a model that has an image encoder
// (GLM-OCR). Every page of the inputs (PNG, JPEG, each page of a PDF) becomes one prompt: the
// page's image rows and the task's prompt (docs/models/glm-ocr.md §4) in the model's chat template,
// decoded greedily unless --temp is given, plain or speculative. Pages come out as they are
// done, in markdown, text or one JSON document with per-page timings and speculative
// statistics. A page that fails (a corrupt file, a broken PDF page) is reported and the
// others still run; the exit status is then 1.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/image_prompt.h"
#include "cli/interrupt.h"
#include "cli/memory_plan.h"
#include "cli/warmup_option.h"
#include "engine/generate.h"
#include "serve/generation_settings.h"
#include "serve/make_drafters.h"

namespace tdm::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The official task prompts (docs/models/glm-ocr.md §4).
Result<std::string> task_prompt(const OcrConfig& o) {
    if (o.task == "text") return std::string("Text Recognition:");
    if (o.task == "formula") return std::string("Formula Recognition:");
    if (o.task == "table") return std::string("Table Recognition:");
    if (o.schema.empty())
        return Error("--task json needs --schema: a JSON template of the fields to fill, e.g. "
                     "'{\"name\": \"\", \"date\": \"\"}' ([ocr] schema)");
    if (!nlohmann::json::accept(o.schema)) return Error("--schema is not valid JSON");
    return "请按下列JSON格式输出图中信息:\n" + o.schema;
}

struct PageResult {
    PageRef ref;
    std::string error;
    std::string text;
    std::vector<int32_t> tokens;
    StopReason stop_reason = StopReason::length;
    uint32_t width = 0, height = 0, image_tokens = 0, n_prompt = 0;
    double render_ms = 0, preprocess_ms = 0, encode_ms = 0, prefill_ms = 0, decode_ms = 0;
    std::optional<SpecStats> spec;

    double decode_tps() const { return decode_ms > 0 ? double(tokens.size()) / (decode_ms / 1e3) : 0.0; }
    nlohmann::json json() const {
        nlohmann::json j = {{"file", ref.file}, {"page", ref.page}, {"pages", ref.n_pages}};
        if (!error.empty()) {
            j["error"] = error;
            return j;
        }
        j["text"] = text;
        j["tokens"] = tokens;
        j["stop_reason"] = to_string(stop_reason);
        j["image"] = {{"width", width}, {"height", height}, {"tokens", image_tokens}};
        j["n_prompt"] = n_prompt;
        j["timings"] = {{"render_ms", render_ms},   {"preprocess_ms", preprocess_ms}, {"encode_ms", encode_ms},
                        {"prefill_ms", prefill_ms}, {"decode_ms", decode_ms},         {"decode_tokens_per_s", decode_tps()}};
        if (spec) j["speculative"] = spec->json();
        return j;
    }
};

class Output {
public:
    explicit Output(std::FILE* f) : f_(f) {}
    void write(const std::string& s) {
        std::fwrite(s.data(), 1, s.size(), f_);
        std::fflush(f_);
    }
    bool ok() const { return !std::ferror(f_); }

private:
    std::FILE* f_;
};

}  // namespace

Status cmd_ocr(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();
    const std::vector<std::string> files(a.positionals().begin(), a.positionals().end());
    if (files.empty()) return Error("ocr: give one or more PNG, JPEG or PDF files");
    const std::string prompt_text = TDM_TRY(task_prompt(cfg.ocr));
    const std::string& format = cfg.ocr.output_format;

    // a page's image alone is up to 6,144 tokens for GLM-OCR: [ocr] n_ctx unless -c is given
    if (!a.has("ctx-size") && cfg.model.kv_memory == 0) app.config().model.n_ctx = cfg.ocr.n_ctx;
    const bool speculative = !spec_types(cfg).empty() || cfg.speculative.auto_select;
    TDM_TRY(check_memory_fits(app, cfg.model.path, speculative));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    auto encoder = TDM_TRY(load_encoder(app, *model));
    const PatchProcessorConfig processor = TDM_TRY(processor_for(*encoder, cfg.model.path));
    auto kv = TDM_TRY(app.make_kv(*model, speculative));
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    DrafterChain chain = TDM_TRY(make_drafters(app, *model, *kv));
    Runner runner(*model, *kv, *dev, *pm);
    SamplerParams sampling = sampler_params(cfg);
    if (!a.has("temp")) sampling.temperature = 0.0f;  // GLM-OCR decodes greedily
    // the text decode step and the drafters' first round (a page's image rows are its own)
    const std::optional<WarmupReport> warmup = TDM_TRY(warm_up_if_on(app, runner, chain.order, sampling));
    const int seq = TDM_TRY(kv->add_sequence());

    std::FILE* out_file = stdout;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(nullptr, std::fclose);
    if (auto path = a.get_string("output")) {
        owned.reset(std::fopen(path->c_str(), "wb"));
        if (!owned) return Error::format("cannot write {}", *path);
        out_file = owned.get();
    }
    Output out(out_file);

    GenerateParams base;
    base.max_tokens = int32_t(a.get_int("n-predict").value_or(-1));
    base.sampling = sampling;
    base.n_batch = uint32_t(cfg.model.n_batch);
    base.ignore_eog = a.flag("ignore-eos");
    InterruptScope interrupt;
    base.cancel = interrupt.flag();

    PageSource source(cfg.ocr.pdf_dpi);
    const std::vector<PageRef> pages = source.pages(files);
    const bool progress = isatty(2) && pages.size() > 1;
    std::vector<PageResult> results;
    bool cancelled = false, wrote = false;
    for (size_t i = 0; i < pages.size() && !cancelled; ++i) {
        PageResult r;
        r.ref = pages[i];
        const std::string where = r.ref.n_pages > 1 || r.ref.pdf ? fmt::format("{}, page {}", r.ref.file, r.ref.page)
                                                                : r.ref.file;
        if (progress) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, pages.size(), where.c_str());
        auto run_page = [&]() -> Status {
            auto t0 = std::chrono::steady_clock::now();
            const Image image = TDM_TRY(source.render(r.ref));
            r.render_ms = ms_since(t0);
            r.width = image.width;
            r.height = image.height;
            EncodedImage enc = TDM_TRY(encode_page(*encoder, processor, image, &r.preprocess_ms));
            r.encode_ms = enc.encode_ms;
            r.image_tokens = enc.n_rows;
            std::vector<EncodedImage> one;
            one.push_back(std::move(enc));
            const ImagePrompt prompt = TDM_TRY(build_image_prompt(cfg, *model, *encoder, std::move(one), prompt_text));
            r.n_prompt = uint32_t(prompt.tokens.size());
            TDM_TRY(kv->truncate(seq, 0));
            GenerateParams gp = base;
            gp.images = prompt.images;
            GenerateResult g;
            if (chain.empty()) {
                g = TDM_TRY(generate(runner, model->tokenizer(), seq, prompt.tokens, gp, {}));
            } else {
                SpecResult s = TDM_TRY(generate_speculative(runner, model->tokenizer(), seq, prompt.tokens, gp,
                                                            chain.order, spec_params(cfg), {}));
                g = std::move(s.gen);
                r.spec = std::move(s.stats);
            }
            r.text = std::move(g.text);
            r.tokens = std::move(g.tokens);
            r.stop_reason = g.stop_reason;
            r.prefill_ms = g.stats.prefill_ms;
            r.decode_ms = g.stats.decode_ms;
            if (g.stop_reason == StopReason::cancelled) cancelled = true;
            return {};
        };
        if (Status st = run_page(); !st.ok()) {
            r.error = st.error().message();
            if (progress) std::fprintf(stderr, "\r\033[K");
            // image and PDF errors name their file; say which page when they do not
            const bool named = r.error.find(r.ref.file) != std::string::npos && (!r.ref.pdf || r.ref.n_pages == 1);
            std::fprintf(stderr, "tandem ocr: %s%s\n", named ? "" : (where + ": ").c_str(), r.error.c_str());
        }
        if (format == "markdown" && r.error.empty()) {
            const bool heading = pages.size() > 1;
            out.write((heading ? fmt::format("{}## {}\n\n", wrote ? "\n" : "", where) : std::string()) + r.text + "\n");
            wrote = true;
        } else if (format == "text" && r.error.empty()) {
            out.write((wrote ? "\f" : "") + r.text + "\n");
            wrote = true;
        }
        results.push_back(std::move(r));
    }
    if (progress) std::fprintf(stderr, "\r\033[K");
    size_t failed = 0;
    for (const PageResult& r : results) failed += r.error.empty() ? 0 : 1;
    if (format == "json") {
        nlohmann::json j;
        j["model"] = cfg.model.path;
        j["encoder"] = encoder->name();
        j["task"] = cfg.ocr.task;
        j["prompt"] = prompt_text;
        j["pages"] = nlohmann::json::array();
        for (const PageResult& r : results) j["pages"].push_back(r.json());
        j["failed"] = failed;
        j["warmup_ms"] = warmup_ms(warmup);
        out.write(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    } else {
        std::fprintf(stderr, "%s\n", warmup_line(warmup).c_str());
        for (const PageResult& r : results) {
            if (!r.error.empty()) continue;
            std::fprintf(stderr,
                         "%s page %d: %ux%u -> %u image tokens | encode %.1f ms | prefill %u tokens %.1f ms | %zu "
                         "tokens %.1f ms (%.2f tok/s)%s\n",
                         r.ref.file.c_str(), r.ref.page, r.width, r.height, r.image_tokens, r.encode_ms, r.n_prompt,
                         r.prefill_ms, r.tokens.size(), r.decode_ms, r.decode_tps(),
                         r.spec ? fmt::format(" | accepted {}/{}", r.spec->accepted, r.spec->drafted).c_str() : "");
        }
    }
    if (!out.ok()) return Error("writing the output failed");
    if (cancelled) app.set_exit_code(kInterruptedExitCode);
    if (failed)
        return Error::format("{} of {} pages failed (the others are in the output)", failed, results.size());
    return {};
}

}  // namespace tdm::cli
