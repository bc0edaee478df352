// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_request.cpp: options -> shape and options -> model file (see
// gemma4_request.h).
#include "gemma4/synth/gemma4_request.h"

#include "common/dtype.h"
#include "gemma4/synth/gemma4_assistant.h"
#include "gemma4/synth/gemma4_synth.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

namespace tdm::synth {
namespace {

constexpr std::string_view kKnown[] = {"preset", "type", "format", "seed"};

// Options of `tandem synth` that other synthesizers take and this one refuses, with the reason
// for a target and for an assistant.
struct Refused {
    std::string_view name, target_why, assistant_why;
};
constexpr Refused kRefused[] = {
    {"tied", "gemma4 always ties its LM head to token_embd",
     "the assistant always ties its draft head to its own token_embd"},
    {"mtp", "gemma4 drafts with a separate assistant model, not an MTP head",
     "the assistant is itself the drafter of a gemma4 target"},
    {"layers", "gemma4 presets fix the layer pattern and KV sharing",
     "the assistant has the 4 layers (S S S F) that read its target's K/V"},
    {"draft-of-seed", "gemma4 has no perturbed-draft mode", "the assistant has no perturbed-draft mode"},
    {"perturbation", "gemma4 has no perturbed-draft mode", "the assistant has no perturbed-draft mode"},
    {"repeating", "gemma4 has no repeating mode (tied LM head)", "the assistant has no repeating mode"},
    {"repeat-period", "gemma4 has no repeating mode (tied LM head)", "the assistant has no repeating mode"},
    {"residual-decay", "gemma4 has no residual-decay option", "the assistant has no residual-decay option"},
};

using Options = std::map<std::string, std::string, std::less<>>;

Result<Options> parse_options(std::string_view arch, const std::vector<std::pair<std::string, std::string>>& options) {
    const bool assistant = arch == kGemma4AssistantSynthArch;
    Options out;
    for (const auto& [name, value] : options) {
        for (const Refused& r : kRefused)
            if (name == r.name)
                return Error::format("synth: --{} does not apply to {}: {}", name, arch,
                                     assistant ? r.assistant_why : r.target_why);
        bool known = false;
        for (std::string_view k : kKnown) known = known || k == name;
        if (!known) return Error::format("synth: the gemma4 synthesizer has no option --{}", name);
        if (!out.emplace(name, value).second) return Error::format("synth: --{} is given twice", name);
    }
    return out;
}

}  // namespace

Result<std::string> synthesize_gemma4_request(std::string_view arch, const std::string& output,
                                              const std::vector<std::pair<std::string, std::string>>& options) {
    const bool assistant = arch == kGemma4AssistantSynthArch;
    if (arch != kGemma4SynthArch && !assistant)
        return Error::format("synth: unknown architecture '{}' (available: {}, {})", arch, kGemma4SynthArch,
                             kGemma4AssistantSynthArch);
    if (output.empty()) return Error("synth: no output path");
    const Options opts = TDM_TRY(parse_options(arch, options));
    auto get = [&](std::string_view name, std::string dflt) {
        auto it = opts.find(name);
        return it == opts.end() ? dflt : it->second;
    };

    const std::string format = get("format", "gguf");
    if (format != "gguf" && format != "hf") return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    const std::string preset = get("preset", "tiny-e2b");

    Gemma4SynthOptions o;
    // The released assistants ship BF16 in both layouts; a target's GGUF defaults to llama.cpp's
    // usual Q8_0.
    const std::string tname = get("type", format == "hf" || assistant ? "bf16" : "q8_0");
    if (!parse_dtype(tname, &o.weight_type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K)",
                             tname);
    const std::string seed = get("seed", "1");
    auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), o.seed);
    if (ec != std::errc() || end != seed.data() + seed.size() || seed.empty())
        return Error::format("synth: --seed: '{}' is not an integer", seed);

    if (assistant) {
        const Gemma4AssistantShape shape = TDM_TRY(gemma4_assistant_preset(preset));
        if (format == "gguf")
            TDM_TRY(synth_gemma4_assistant_gguf(output, shape, o));
        else
            TDM_TRY(synth_gemma4_assistant_hf(output, shape, o));
        const std::string head =
            shape.ordered ? fmt::format("centroid-masked head ({} clusters, top {})", shape.n_centroids,
                                        shape.n_centroids_top_k)
                          : std::string("full tied head");
        return fmt::format("wrote {}: gemma4-assistant {}, {} layers ({}), n_embd {} for a target of n_embd {}, "
                           "vocab {}, {}, {}",
                           output, preset, shape.n_layer(), gemma4_assistant_layer_pattern(shape), shape.n_embd,
                           shape.n_embd_backbone(), shape.n_vocab(), head, tname);
    }
    const Gemma4Shape shape = TDM_TRY(gemma4_preset(preset));
    if (format == "gguf")
        TDM_TRY(synth_gemma4_gguf(output, shape, o));
    else
        TDM_TRY(synth_gemma4_hf(output, shape, o));
    return fmt::format("wrote {}: gemma4 {}, {} layers ({}), n_embd {}, vocab {}, {}", output, preset, shape.n_layer,
                       gemma4_layer_pattern(shape), shape.n_embd, shape.n_vocab, tname);
}

}  // namespace tdm::synth
