// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/synth/eagle3_request.cpp: options -> head shape and options -> head file (see
// eagle3_request.h).
#include "eagle3/synth/eagle3_request.h"

#include "common/dtype.h"
#include "eagle3/synth/eagle3_synth.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <map>
#include <optional>

namespace tdm::synth {
namespace {

constexpr std::string_view kKnown[] = {"target", "format", "type", "seed", "rope-scaling", "draft-vocab"};

using Options = std::map<std::string, std::string, std::less<>>;

Result<Options> parse_options(const std::vector<std::pair<std::string, std::string>>& options) {
    Options out;
    for (const auto& [name, value] : options) {
        bool known = false;
        for (std::string_view k : kKnown) known = known || k == name;
        if (!known)
            return Error::format("synth: the eagle3 synthesizer has no option --{} (its shapes follow --target)", name);
        if (!out.emplace(name, value).second) return Error::format("synth: --{} is given twice", name);
    }
    return out;
}

}  // namespace

Result<std::string> synthesize_eagle3_request(std::string_view arch, const std::string& output,
                                              const std::vector<std::pair<std::string, std::string>>& options) {
    if (arch != kEagle3SynthArch)
        return Error::format("synth: unknown architecture '{}' (available: {})", arch, kEagle3SynthArch);
    if (output.empty()) return Error("synth: no output path");
    const Options opts = TDM_TRY(parse_options(options));
    auto get = [&](std::string_view name, std::string dflt) {
        auto it = opts.find(name);
        return it == opts.end() ? dflt : it->second;
    };
    const std::string format = get("format", "gguf");
    if (format != "gguf" && format != "hf") return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    Eagle3SynthOptions o;
    const std::string tname = get("type", format == "hf" ? "bf16" : "q8_0");
    if (!parse_dtype(tname, &o.weight_type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K)",
                             tname);
    const std::string seed = get("seed", "1");
    auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), o.seed);
    if (ec != std::errc() || end != seed.data() + seed.size() || seed.empty())
        return Error::format("synth: --seed: '{}' is not an integer", seed);
    std::optional<int64_t> n_vocab_draft;  // default: half the target's
    if (auto it = opts.find("draft-vocab"); it != opts.end()) {
        const std::string& text = it->second;
        int64_t v = 0;
        auto [vend, vec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (vec != std::errc() || vend != text.data() + text.size() || text.empty())
            return Error::format("synth: --draft-vocab: '{}' is not an integer", text);
        n_vocab_draft = v;
    }
    Eagle3Shape s = TDM_TRY(eagle3_shape_for_target(get("target", ""), n_vocab_draft));
    const std::string scaling = get("rope-scaling", "false");
    if (scaling != "true" && scaling != "false")
        return Error::format("synth: --rope-scaling: '{}' is not a boolean (true or false)", scaling);
    if (scaling == "true") s.rope_scaling = Eagle3RopeScaling{};
    if (format == "gguf")
        TDM_TRY(synth_eagle3_gguf(output, s, o));
    else
        TDM_TRY(synth_eagle3_hf(output, s, o));
    return fmt::format("wrote {}: eagle3 head for {} (n_embd {}, target layers {}), draft vocabulary {} of {}, {}",
                       output, get("target", ""), s.n_embd, fmt::join(s.target_layers, ","), s.n_vocab_draft,
                       s.n_vocab, tname);
}

}  // namespace tdm::synth
