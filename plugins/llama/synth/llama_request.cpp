// SPDX-License-Identifier: Apache-2.0
// plugins/llama/synth/llama_request.cpp: options -> shape and options -> model file (see
// llama_request.h).
#include "llama/synth/llama_request.h"

#include "common/dtype.h"
#include "llama/synth/llama_synth.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

namespace tdm::synth {
namespace {

constexpr std::string_view kKnown[] = {"preset", "type",   "format",    "seed",         "tied",
                                       "rope-scaling", "layers", "repeating", "repeat-period"};

using Options = std::map<std::string, std::string, std::less<>>;

Result<Options> parse_options(const std::vector<std::pair<std::string, std::string>>& options) {
    Options out;
    for (const auto& [name, value] : options) {
        bool known = false;
        for (std::string_view k : kKnown) known = known || k == name;
        if (!known) return Error::format("synth: the llama synthesizer has no option --{}", name);
        if (!out.emplace(name, value).second) return Error::format("synth: --{} is given twice", name);
    }
    return out;
}

Result<int64_t> integer(std::string_view name, const std::string& text, int64_t lo, int64_t hi) {
    int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end || text.empty()) return Error::format("synth: --{}: '{}' is not an integer", name, text);
    if (v < lo || v > hi) return Error::format("synth: --{} must be in {}..{}, got {}", name, lo, hi, v);
    return v;
}

Result<bool> boolean(std::string_view name, const std::string& text) {
    if (text == "true") return true;
    if (text == "false") return false;
    return Error::format("synth: --{}: '{}' is not a boolean (true or false)", name, text);
}

}  // namespace

Result<std::string> synthesize_llama_request(std::string_view arch, const std::string& output,
                                             const std::vector<std::pair<std::string, std::string>>& options) {
    if (arch != kLlamaSynthArch)
        return Error::format("synth: unknown architecture '{}' (available: {})", arch, kLlamaSynthArch);
    if (output.empty()) return Error("synth: no output path");
    const Options opts = TDM_TRY(parse_options(options));
    auto get = [&](std::string_view name) -> const std::string* {
        auto it = opts.find(name);
        return it == opts.end() ? nullptr : &it->second;
    };
    const std::string format = get("format") ? *get("format") : "gguf";
    if (format != "gguf" && format != "hf") return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    const std::string preset = get("preset") ? *get("preset") : "tiny";
    LlamaShape shape = TDM_TRY(llama_preset(preset));
    LlamaSynthOptions o;
    const std::string tname = get("type") ? *get("type") : (format == "hf" ? "bf16" : "q8_0");
    if (!parse_dtype(tname, &o.weight_type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K)", tname);
    if (const std::string* s = get("seed")) o.seed = uint64_t(TDM_TRY(integer("seed", *s, 0, INT64_MAX)));
    if (const std::string* t = get("tied")) o.tied = TDM_TRY(boolean("tied", *t));
    if (const std::string* r = get("rope-scaling"); r && !TDM_TRY(boolean("rope-scaling", *r)))
        shape.rope_scaling.reset();
    if (const std::string* l = get("layers")) shape.n_layer = int32_t(TDM_TRY(integer("layers", *l, 1, 1024)));
    if (const std::string* r = get("repeating")) o.repeating = TDM_TRY(boolean("repeating", *r));
    if (const std::string* p = get("repeat-period")) {
        if (!o.repeating) return Error("synth: --repeat-period needs --repeating");
        o.repeat_period = int32_t(TDM_TRY(integer("repeat-period", *p, 1, 1 << 20)));
    }
    if (format == "gguf")
        TDM_TRY(synth_llama_gguf(output, shape, o));
    else
        TDM_TRY(synth_llama_hf(output, shape, o));
    return fmt::format("wrote {}: llama {}, {} layers, n_embd {}, vocab {}, {}{}{}", output, preset, shape.n_layer,
                       shape.n_embd, shape.n_vocab, tname, llama_is_tied(shape, o) ? ", tied" : "",
                       shape.rope_scaling ? ", llama3 rope scaling" : "");
}

}  // namespace tdm::synth
