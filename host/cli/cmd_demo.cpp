// host/cli/cmd_demo.cpp: `tandem demo`: the README's first command. Writes a
// small synthetic model to the cache directory once, then generates from it.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/prompt.h"
#include "engine/generate.h"
#include "synth/qwen3_synth.h"
#include "vk/pipeline.h"

namespace tdm::cli {

Status cmd_demo(App& app) {
    const std::string cache = vk::user_cache_dir();
    if (cache.empty()) return Error("no cache directory ($XDG_CACHE_HOME or $HOME must be set)");
    const std::string dir = cache + "/demo";
    std::filesystem::create_directories(dir);
    const std::string target = dir + "/qwen3-small-q8_0.gguf";
    synth::Qwen3SynthOptions opt;
    opt.weight_type = DType::Q8_0;
    opt.seed = 1;
    const synth::Qwen3Shape shape = TDM_TRY(synth::qwen3_preset("small"));
    if (!std::filesystem::exists(target)) {
        std::fprintf(stderr, "writing a synthetic Qwen3 model (random weights) to %s\n", target.c_str());
        TDM_TRY(synth::synth_qwen3_gguf(target + ".tmp", shape, opt));
        std::filesystem::rename(target + ".tmp", target);
    }
    vk::Device* dev = TDM_TRY(app.device());
    std::printf("device: %s (%s)\n", dev->caps().name.c_str(), dev->caps().type_name.c_str());
    auto model = TDM_TRY(app.load_model(target));
    std::printf("model:  %s: %s via plugin %s, %zu weights, %s\n", target.c_str(), model->arch().desc->name,
                model->arch().plugin->name.c_str(), model->weight_count(), human_bytes(model->weight_bytes()).c_str());
    std::printf("note:   the weights are random, so the text is meaningless: this shows the runtime working.\n\n");

    auto kv = TDM_TRY(app.make_kv(*model, true));
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    Runner runner(*model, *kv, *dev, *pm);
    Config cfg = app.config();
    cfg.model.chat = true;
    const ChatTemplate tmpl = TDM_TRY(chat_template_for(cfg, *model));
    const std::string text = TDM_TRY(tmpl.apply({{"user", "Write a haiku about speculative decoding."}}, true));
    const std::vector<int32_t> prompt = model->tokenizer()->encode(text, true);

    GenerateParams gp;
    gp.max_tokens = int32_t(app.args().get_int("n-predict").value_or(48));
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    std::printf("prompt: %s\n", text.c_str());
    std::printf("output: ");
    auto r = TDM_TRY(generate(runner, model->tokenizer(), TDM_TRY(kv->add_sequence()), prompt, gp,
                              [](const std::string& s) {
                                  std::fwrite(s.data(), 1, s.size(), stdout);
                                  std::fflush(stdout);
                              }));
    std::printf("\n\nplain decoding: %u prompt tokens at %.1f tok/s, %u generated at %.1f tok/s\n", r.stats.n_prompt,
                r.stats.prefill_tps(), r.stats.n_generated, r.stats.decode_tps());
    return {};
}

}  // namespace tdm::cli
