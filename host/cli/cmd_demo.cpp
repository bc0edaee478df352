// host/cli/cmd_demo.cpp: `tandem demo`: the README's first command. Writes a
// small synthetic model and a draft model to the cache directory once (with the
// qwen3 synthesizer, as `tandem synth` would), then generates from it plainly and
// speculatively and checks both give the same tokens.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/prompt.h"
#include "cli/synthesizers.h"
#include "engine/generate.h"
#include "speculative/draft_model.h"
#include "speculative/scheduler.h"
#include "vk/pipeline.h"

namespace tdm::cli {

namespace {

// Writes a synthetic model once (write to .tmp, then rename: an interrupted
// run never leaves half a file behind).
Status synth_once(const Synthesizer& synth, const std::string& path, const SynthOptions& opt, const char* what) {
    if (std::filesystem::exists(path)) return {};
    std::fprintf(stderr, "writing %s (random weights) to %s\n", what, path.c_str());
    TDM_TRY(synth.synthesize("qwen3", path + ".tmp", opt));
    std::filesystem::rename(path + ".tmp", path);
    return {};
}

void print_stream(const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

Status cmd_demo(App& app) {
    const std::string cache = vk::user_cache_dir();
    if (cache.empty()) return Error("no cache directory ($XDG_CACHE_HOME or $HOME must be set)");
    const std::string dir = cache + "/demo";
    std::filesystem::create_directories(dir);
    // The target's later layers change the residual stream less (residual
    // decay), so a draft made of its first layers agrees with it often. The draft
    // is the target's first 2 layers plus noise of 0.01, seeded with 0xd4af7 (the
    // noise seed these files have always had). The same files by hand:
    //   tandem synth --preset small --residual-decay 0.5 -o target.gguf
    //   tandem synth --preset small --residual-decay 0.5 --layers 2 --draft-of-seed 1
    //                --perturbation 0.01 --seed 871159 -o draft.gguf
    const SynthOptions target_opt = {{"preset", "small"}, {"type", "q8_0"}, {"seed", "1"}, {"residual-decay", "0.5"}};
    const SynthOptions draft_opt = {{"preset", "small"},      {"type", "q8_0"},         {"residual-decay", "0.5"},
                                    {"layers", "2"},          {"draft-of-seed", "1"},   {"perturbation", "0.01"},
                                    {"seed", std::to_string(0xd4af7)}};
    Registry* reg = TDM_TRY(app.registry());
    auto synth = TDM_TRY(find_synthesizer(*reg, "qwen3"));
    const std::string target = dir + "/qwen3-small-q8_0.v2.gguf", draft = dir + "/qwen3-small-draft2-q8_0.v2.gguf";
    TDM_TRY(synth_once(*synth, target, target_opt, "a synthetic Qwen3 model"));
    TDM_TRY(synth_once(*synth, draft, draft_opt, "its 2-layer draft model"));

    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    std::printf("device: %s (%s)\n", dev->caps().name.c_str(), dev->caps().type_name.c_str());
    auto model = TDM_TRY(app.load_model(target));
    std::printf("model:  %s: %s via plugin %s, %zu weights, %s\n", target.c_str(), model->arch().desc->name,
                model->arch().plugin->name.c_str(), model->weight_count(), human_bytes(model->weight_bytes()).c_str());
    std::printf("draft:  %s\n", draft.c_str());
    std::printf("note:   the weights are random, so the text is meaningless: this shows the runtime working.\n\n");

    auto kv = TDM_TRY(app.make_kv(*model, true));
    Runner runner(*model, *kv, *dev, *pm);
    Config cfg = app.config();
    cfg.model.chat = true;
    const ChatTemplate tmpl = TDM_TRY(chat_template_for(cfg, *model));
    const std::string text = TDM_TRY(tmpl.apply({{"user", "Write a haiku about speculative decoding."}}, true));
    const std::vector<int32_t> prompt = model->tokenizer()->encode(text, true);
    const int seq = TDM_TRY(kv->add_sequence());

    GenerateParams gp;
    gp.max_tokens = int32_t(app.args().get_int("n-predict").value_or(48));
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    std::printf("prompt: %s\n", text.c_str());
    std::printf("plain decoding:\n  ");
    const GenerateResult plain = TDM_TRY(generate(runner, model->tokenizer(), seq, prompt, gp, print_stream));
    std::printf("\n  %u prompt tokens at %.1f tok/s, %u generated at %.1f tok/s\n\n", plain.stats.n_prompt,
                plain.stats.prefill_tps(), plain.stats.n_generated, plain.stats.decode_tps());

    // the same prompt again, speculatively: the draft model proposes, the target verifies
    TDM_TRY(kv->truncate(seq, 0));
    auto dm = TDM_TRY(app.load_model(draft));
    auto dkv = TDM_TRY(app.make_kv(*dm, true));
    DraftModelDrafter drafter(std::move(dm), std::move(dkv), *dev, *pm);
    Drafter* chain[] = {&drafter};
    SpecParams sp;
    sp.draft_max = 4;
    std::printf("speculative decoding (draft model, --draft-max 4):\n  ");
    const SpecResult spec =
        TDM_TRY(generate_speculative(runner, model->tokenizer(), seq, prompt, gp, chain, sp, print_stream));
    // A model this small is all per-pass overhead on a CPU device, and this
    // first run also builds the speculative graphs: the speed is not the point
    // here (docs/BENCHMARKS.md has measured speedups), the identical tokens are.
    std::printf("\n  %u generated at %.1f tok/s (first run, graphs built on the way), draft acceptance %.0f%%, "
                "%.2f tokens per target pass\n",
                spec.gen.stats.n_generated, spec.gen.stats.decode_tps(), 100.0 * spec.stats.acceptance_rate(),
                spec.stats.tokens_per_target_pass());
    const bool same = spec.gen.tokens == plain.tokens;
    std::printf("\nsame tokens as plain decoding: %s\n", same ? "yes" : "NO");
    if (!same) return Error("speculative decoding produced different tokens than plain decoding: please report this");
    return {};
}

}  // namespace tdm::cli
