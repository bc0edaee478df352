// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_demo.cpp: `tandem demo`: the README's first command. Writes a
// small synthetic model to the cache directory once (with the qwen3
// synthesizer, as `tandem synth` would), then times plain and speculative
// decoding (an n-gram drafter) on the same prompt in steady state, and checks
// that both give the same tokens.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/bench_common.h"
#include "cli/commands.h"
#include "cli/prompt.h"
#include "cli/synthesizers.h"
#include "engine/generate.h"
#include "speculative/plugin_drafter.h"
#include "vk/pipeline.h"

namespace tdm::cli {

namespace {

// The demo's model. Repeating weights: a token's greedy successor is a fixed
// function of it and ids cycle in groups of kRepeatPeriod, so the model's
// answer can be found in text it has seen, as a real model's is when it
// repeats a listing or edits code. The same file by hand:
//   tandem synth --preset small --type q8_0 --seed 1 --repeating --repeat-period 16 -o target.gguf
// (the file name says what is in it: a cache written by an older demo, with
// other weights, is never read as this one)
constexpr int kRepeatPeriod = 16;
constexpr const char* kModelFile = "qwen3-small-rep16-q8_0.v3.gguf";
// The drafter: ngram-simple, keyed on the last 4 tokens, drafting up to 16 (the goodput
// controller's limit).
constexpr const char* kDrafterType = "ngram-simple";
constexpr int kNgramN = 4, kNgramM = 16, kDraftMax = 16;
constexpr int kTimedRuns = 5;

// Writes a synthetic model once (write to .tmp, then rename: an interrupted
// run never leaves half a file behind).
Status synth_once(const Synthesizer& synth, const std::string& path, const SynthOptions& opt, const char* what) {
    if (std::filesystem::exists(path)) return {};
    std::fprintf(stderr, "writing %s (random weights) to %s\n", what, path.c_str());
    TDM_TRY(synth.synthesize("qwen3", path + ".tmp", opt));
    std::filesystem::rename(path + ".tmp", path);
    return {};
}

}  // namespace

Status cmd_demo(App& app) {
    const bool json = app.args().flag("json");
    const int64_t n_predict = app.args().get_int("n-predict").value_or(64);
    // fewer tokens make the tokens/s figures meaningless: a few drafting rounds are needed
    if (n_predict < 16 || n_predict > 1024) return Error("--n-predict: give 16 to 1024 tokens");
    const std::string cache = vk::user_cache_dir();
    if (cache.empty()) return Error("no cache directory ($XDG_CACHE_HOME or $HOME must be set)");
    const std::string dir = cache + "/demo";
    std::filesystem::create_directories(dir);
    const SynthOptions target_opt = {{"preset", "small"},
                                     {"type", "q8_0"},
                                     {"seed", "1"},
                                     {"repeating", "true"},
                                     {"repeat-period", std::to_string(kRepeatPeriod)}};
    Registry* reg = TDM_TRY(app.registry());
    auto synth = TDM_TRY(find_synthesizer(*reg, "qwen3"));
    const std::string target = dir + "/" + kModelFile;
    TDM_TRY(synth_once(*synth, target, target_opt, "a synthetic Qwen3 model"));

    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    auto model = TDM_TRY(app.load_model(target));
    const DrafterEntry* ngram = reg->find_drafter(kDrafterType);
    if (!ngram) return Error::format("the {} drafter is not loaded (plugin ngram): see `tandem plugins`", kDrafterType);
    if (!json) {
        std::printf("device:  %s (%s)\n", dev->caps().name.c_str(), dev->caps().type_name.c_str());
        std::printf("model:   %s: %s via plugin %s, %zu weights, %s\n", target.c_str(), model->arch().desc->name,
                    model->arch().plugin->name.c_str(), model->weight_count(),
                    human_bytes(model->weight_bytes()).c_str());
        std::printf("note:    the weights are random (built so that the model's output repeats), so the text is\n"
                    "         meaningless: this shows the runtime and speculative decoding working.\n");
    }

    auto kv = TDM_TRY(app.make_kv(*model, true));
    Runner runner(*model, *kv, *dev, *pm);
    Config cfg = app.config();
    cfg.model.chat = true;
    const ChatTemplate tmpl = TDM_TRY(chat_template_for(cfg, *model));
    const std::string text = TDM_TRY(tmpl.apply({{"user", "Repeat this list after me."}}, true));
    const std::vector<int32_t> question = model->tokenizer()->encode(text, true);
    const int seq = TDM_TRY(kv->add_sequence());

    GenerateParams gp;
    gp.max_tokens = int32_t(n_predict);
    gp.sampling.temperature = 0;  // exactness is defined for greedy decoding
    gp.ignore_eog = true;

    // The prompt: the question Q, the model's own answer A to it, Q again; the
    // model answers A again, which the n-gram drafter finds in the prompt. A
    // comes from an untimed plain run, which also compiles the shaders and
    // builds the plain decoding graphs.
    if (!json) std::printf("warm-up: the first run compiles shaders and builds graphs; it is not timed\n");
    const GenerateResult answer = TDM_TRY(generate(runner, nullptr, seq, question, gp, {}));
    std::vector<int32_t> prompt = question;
    prompt.insert(prompt.end(), answer.tokens.begin(), answer.tokens.end());
    prompt.insert(prompt.end(), question.begin(), question.end());

    const std::map<std::string, std::string> options = {
        {"draft_max", std::to_string(kDraftMax)},   {"draft_min", "0"},
        {"ngram_size_n", std::to_string(kNgramN)},  {"ngram_size_m", std::to_string(kNgramM)},
        {"ngram_min_hits", "1"},                    {"n_vocab", std::to_string(model->info().n_vocab)}};
    SpecParams sp;
    sp.draft_max = kDraftMax;
    sp.auto_k = true;  // what a user gets: the goodput controller within draft_max
    // One speculative run: a fresh drafter each time, so no run learns from another.
    auto speculative = [&]() -> Result<SpecResult> {
        TDM_TRY(kv->truncate(seq, 0));
        auto drafter = TDM_TRY(PluginDrafter::create(*ngram, options));
        Drafter* chain[] = {drafter.get()};
        return generate_speculative(runner, nullptr, seq, prompt, gp, chain, sp, {});
    };
    auto plain_run = [&]() -> Result<GenerateResult> {
        TDM_TRY(kv->truncate(seq, 0));
        return generate(runner, nullptr, seq, prompt, gp, {});
    };
    // warm-up on this prompt: each path once, untimed (the verify widths the
    // drafter uses are the same in every run: greedy decoding is deterministic)
    TDM_TRY(plain_run());
    TDM_TRY(speculative());

    std::vector<double> plain_tps, spec_tps;
    std::vector<int32_t> plain_tokens;
    bool same = true;
    SpecStats stats;
    for (int i = 0; i < kTimedRuns; ++i) {
        const GenerateResult p = TDM_TRY(plain_run());
        const SpecResult s = TDM_TRY(speculative());
        if (i == 0) plain_tokens = p.tokens;
        same = same && p.tokens == plain_tokens && s.gen.tokens == plain_tokens;
        plain_tps.push_back(p.stats.decode_tps());
        spec_tps.push_back(s.gen.stats.decode_tps());
        stats = s.stats;  // the same in every run (deterministic drafts); the last one's
    }
    const double plain = median(plain_tps), spec = median(spec_tps);
    const double speedup = plain > 0 ? spec / plain : 0;

    if (json) {
        nlohmann::json j;
        j["device"] = dev->caps().name;
        j["model"] = target;
        j["random_weights"] = true;
        j["drafter"] = kDrafterType;
        j["draft_max"] = kDraftMax;
        j["prompt_tokens"] = prompt.size();
        j["generated_tokens"] = plain_tokens.size();
        j["timed_runs"] = kTimedRuns;
        j["plain_tokens_per_s"] = plain;
        j["spec_tokens_per_s"] = spec;
        j["speedup"] = speedup;
        j["acceptance_rate"] = stats.acceptance_rate();
        j["tokens_per_target_pass"] = stats.tokens_per_target_pass();
        j["same_tokens"] = same;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("prompt:  %zu tokens: a question, the model's own answer to it, the question again\n"
                    "         (like asking to repeat a listing); %zu tokens generated, greedy\n",
                    prompt.size(), plain_tokens.size());
        std::printf("drafter: %s (drafts up to %d tokens it finds after the last %d in the text so far)\n",
                    kDrafterType, kDraftMax, kNgramN);
        std::printf("timing:  decoding only (prompt processing excluded), median of %d runs after the warm-up\n\n",
                    kTimedRuns);
        std::printf("plain decoding:        %.1f tok/s\n", plain);
        std::printf("speculative decoding:  %.1f tok/s\n", spec);
        std::printf("speedup:               %.2fx\n", speedup);
        std::printf("acceptance:            %.0f%% of drafted tokens\n", 100.0 * stats.acceptance_rate());
        std::printf("tokens per target pass: %.2f\n", stats.tokens_per_target_pass());
        std::printf("same tokens as plain decoding: %s\n", same ? "yes" : "NO");
    }
    if (!same) return Error("speculative decoding produced different tokens than plain decoding: please report this");
    return {};
}

}  // namespace tdm::cli
