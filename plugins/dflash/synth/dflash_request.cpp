// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/synth/dflash_request.cpp: the options of `tandem synth --arch dflash`
// checked, the head for the given target written, a one-line summary returned
// (dflash_synth.h).
#include "dflash/synth/dflash_synth.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <map>

namespace tdm::synth {
namespace {

constexpr std::string_view kKnown[] = {"target", "format", "type", "seed", "layers", "block-size"};

template <typename T>
Result<T> parse_number(std::string_view name, const std::string& text) {
    T v{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        return Error::format("synth: --{}: '{}' is not an integer", name, text);
    return v;
}

}  // namespace

Result<std::string> synthesize_dflash_request(std::string_view arch, const std::string& output,
                                              const std::vector<std::pair<std::string, std::string>>& options) {
    if (arch != kDflashSynthArch)
        return Error::format("synth: unknown architecture '{}' (available: {})", arch, kDflashSynthArch);
    if (output.empty()) return Error("synth: no output path");
    std::map<std::string, std::string, std::less<>> opts;
    for (const auto& [name, value] : options) {
        bool known = false;
        for (std::string_view k : kKnown) known = known || k == name;
        if (!known)
            return Error::format("synth: the dflash synthesizer has no option --{} (its shapes follow --target)", name);
        if (!opts.emplace(name, value).second) return Error::format("synth: --{} is given twice", name);
    }
    auto get = [&](std::string_view name, std::string dflt) {
        auto it = opts.find(name);
        return it == opts.end() ? dflt : it->second;
    };
    const std::string format = get("format", "hf");
    if (format != "gguf" && format != "hf") return Error::format("synth: unknown format '{}' (hf, gguf)", format);
    DflashSynthOptions o;
    const std::string tname = get("type", format == "hf" ? "bf16" : "q8_0");
    if (!parse_dtype(tname, &o.weight_type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K)",
                             tname);
    if (format == "hf" && !(o.weight_type == DType::F32 || o.weight_type == DType::F16 || o.weight_type == DType::BF16))
        return Error::format("synth: --type '{}': an HF head holds f32, f16 or bf16 weights (--format gguf for {})",
                             tname, tname);
    o.seed = TDM_TRY(parse_number<uint64_t>("seed", get("seed", "1")));
    const int32_t layers = TDM_TRY(parse_number<int32_t>("layers", get("layers", "2")));
    const int32_t block = TDM_TRY(parse_number<int32_t>("block-size", get("block-size", "16")));
    const DflashShape s = TDM_TRY(dflash_shape_for_target(get("target", ""), layers, block));
    if (format == "gguf")
        TDM_TRY(synth_dflash_gguf(output, s, o));
    else
        TDM_TRY(synth_dflash_hf(output, s, o));
    return fmt::format("wrote {}: dflash head for {} ({} layers, n_embd {}, target layers {}, block {}, mask token {}), {}",
                       output, get("target", ""), s.n_layer, s.n_embd, fmt::join(s.target_layers, ","), s.block_size,
                       s.mask_token, tname);
}

}  // namespace tdm::synth
