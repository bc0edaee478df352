// host/cli/cmd_synth.cpp: `tandem synth`: synthetic models in real layouts.
#include <cstdio>

#include "cli/commands.h"
#include "synth/qwen3_synth.h"

namespace tdm::cli {

Status cmd_synth(App& app) {
    const ParsedArgs& a = app.args();
    const std::string arch = a.get_string("arch").value_or("qwen3");
    if (arch != "qwen3") return Error::format("synth: unknown architecture '{}' (available: qwen3)", arch);
    synth::Qwen3Shape shape = TDM_TRY(synth::qwen3_preset(a.get_string("preset").value_or("tiny")));
    synth::Qwen3SynthOptions opt;
    const std::string tname = a.get_string("type").value_or("q8_0");
    if (!parse_dtype(tname, &opt.weight_type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K)", tname);
    opt.seed = uint64_t(a.get_int("seed").value_or(1));
    if (auto t = a.get_bool("tied")) opt.tied = *t;
    if (auto l = a.get_int("layers")) {
        if (*l < 1 || *l > 1024) return Error("synth: --layers must be in 1..1024");
        shape.n_layer = int32_t(*l);
    }
    opt.repeating = a.flag("repeating");
    if (a.has("repeat-period")) {
        const int64_t period = *a.get_int("repeat-period");
        if (!opt.repeating) return Error("synth: --repeat-period needs --repeating");
        if (period < 1 || period > (1 << 20)) return Error::format("synth: --repeat-period must be in 1..{}", 1 << 20);
        opt.repeat_period = int32_t(period);
    }
    if (auto base = a.get_int("draft-of-seed")) {
        synth::Qwen3SynthOptions target = opt;
        target.seed = uint64_t(*base);
        opt = synth::qwen3_draft_options(target, float(a.get_number("perturbation").value_or(0.02)), opt.seed);
    }
    const std::string out = *a.get_string("output");
    const std::string format = a.get_string("format").value_or("gguf");
    if (format == "gguf")
        TDM_TRY(synth::synth_qwen3_gguf(out, shape, opt));
    else if (format == "hf")
        TDM_TRY(synth::synth_qwen3_hf(out, shape, opt));
    else
        return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    std::fprintf(stderr, "wrote %s: qwen3 %s, %d layers, n_embd %d, vocab %d, %s\n", out.c_str(),
                 a.get_string("preset").value_or("tiny").c_str(), shape.n_layer, shape.n_embd, shape.n_vocab,
                 tname.c_str());
    return {};
}

}  // namespace tdm::cli
