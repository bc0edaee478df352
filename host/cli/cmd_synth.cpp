// host/cli/cmd_synth.cpp: `tandem synth`: synthetic models in real layouts.
#include <cstdio>

#include "cli/commands.h"
#include "synth/qwen35_synth.h"
#include "synth/qwen3_synth.h"

namespace tdm::cli {

namespace {

Status synth_qwen35(const ParsedArgs& a, const std::string& arch, DType type, const std::string& tname) {
    std::string preset = a.get_string("preset").value_or("");
    if (preset.empty()) preset = arch == "qwen35moe" ? "tiny-moe" : "tiny";
    synth::Qwen35Shape shape = TDM_TRY(synth::qwen35_preset(preset));
    if (shape.is_moe() != (arch == "qwen35moe"))
        return Error::format("synth: preset '{}' is {}, not {}", preset, shape.is_moe() ? "qwen35moe" : "qwen35", arch);
    synth::Qwen35SynthOptions opt;
    opt.weight_type = type;
    opt.seed = uint64_t(a.get_int("seed").value_or(1));
    if (auto t = a.get_bool("tied")) opt.tied = *t;
    if (auto m = a.get_bool("mtp")) opt.mtp = *m;
    if (auto l = a.get_int("layers")) {
        if (*l < 1 || *l > 1024) return Error("synth: --layers must be in 1..1024");
        shape.n_layer = int32_t(*l);
    }
    opt.repeating = a.flag("repeating");
    if (a.has("repeat-period")) opt.repeat_period = int32_t(*a.get_int("repeat-period"));
    if (a.has("draft-of-seed")) return Error("synth: --draft-of-seed is for qwen3 (qwen35 drafts with its MTP head)");
    const std::string out = *a.get_string("output");
    const std::string format = a.get_string("format").value_or("gguf");
    if (format == "gguf")
        TDM_TRY(synth::synth_qwen35_gguf(out, shape, opt));
    else if (format == "hf")
        TDM_TRY(synth::synth_qwen35_hf(out, shape, opt));
    else
        return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    std::fprintf(stderr, "wrote %s: %s %s, %d layers, n_embd %d, vocab %d, %s%s\n", out.c_str(), arch.c_str(),
                 preset.c_str(), shape.n_layer, shape.n_embd, shape.n_vocab, tname.c_str(),
                 synth::qwen35_has_mtp(shape, opt) ? ", with MTP head" : "");
    return {};
}

}  // namespace

Status cmd_synth(App& app) {
    const ParsedArgs& a = app.args();
    const std::string arch = a.get_string("arch").value_or("qwen3");
    if (arch != "qwen3" && arch != "qwen35" && arch != "qwen35moe")
        return Error::format("synth: unknown architecture '{}' (available: qwen3, qwen35, qwen35moe)", arch);
    DType type = DType::Q8_0;
    const std::string tname = a.get_string("type").value_or("q8_0");
    if (!parse_dtype(tname, &type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K)", tname);
    if (a.has("repeat-period")) {
        const int64_t period = *a.get_int("repeat-period");
        if (!a.flag("repeating")) return Error("synth: --repeat-period needs --repeating");
        if (period < 1 || period > (1 << 20)) return Error::format("synth: --repeat-period must be in 1..{}", 1 << 20);
    }
    if (arch != "qwen3") return synth_qwen35(a, arch, type, tname);
    if (a.has("mtp")) return Error("synth: --mtp is for qwen35 and qwen35moe");
    std::string preset = a.get_string("preset").value_or("");
    if (preset.empty()) preset = "tiny";
    synth::Qwen3Shape shape = TDM_TRY(synth::qwen3_preset(preset));
    synth::Qwen3SynthOptions opt;
    opt.weight_type = type;
    opt.seed = uint64_t(a.get_int("seed").value_or(1));
    if (auto t = a.get_bool("tied")) opt.tied = *t;
    if (auto l = a.get_int("layers")) {
        if (*l < 1 || *l > 1024) return Error("synth: --layers must be in 1..1024");
        shape.n_layer = int32_t(*l);
    }
    opt.repeating = a.flag("repeating");
    if (a.has("repeat-period")) opt.repeat_period = int32_t(*a.get_int("repeat-period"));
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
                 preset.c_str(), shape.n_layer, shape.n_embd, shape.n_vocab,
                 tname.c_str());
    return {};
}

}  // namespace tdm::cli
