// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/synth/synth_request.cpp: options -> shape and options -> model file (see
// synth_request.h). The checks and messages are those `tandem synth` had when it wrote Qwen models
// itself, in the same order, so that its output did not change when it moved here.
#include "qwen-nextn/synth/synth_request.h"

#include "common/dtype.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <variant>

namespace tdm::synth {
namespace {

enum class Kind { text, integer, number, boolean };

struct OptionInfo {
    std::string_view name;
    Kind kind;
};

constexpr OptionInfo kOptions[] = {
    {"preset", Kind::text},           {"type", Kind::text},          {"format", Kind::text},
    {"seed", Kind::integer},          {"tied", Kind::boolean},       {"mtp", Kind::boolean},
    {"layers", Kind::integer},        {"draft-of-seed", Kind::integer}, {"perturbation", Kind::number},
    {"repeating", Kind::boolean},     {"repeat-period", Kind::integer}, {"residual-decay", Kind::number},
};

using Value = std::variant<std::string, int64_t, double, bool>;

Result<Value> parse_value(const OptionInfo& o, const std::string& text) {
    switch (o.kind) {
        case Kind::text: return Value(text);
        case Kind::integer: {
            int64_t v = 0;
            const char* end = text.data() + text.size();
            auto [p, ec] = std::from_chars(text.data(), end, v);
            if (ec != std::errc() || p != end || text.empty())
                return Error::format("synth: --{}: '{}' is not an integer", o.name, text);
            return Value(v);
        }
        case Kind::number: {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
                return Error::format("synth: --{}: '{}' is not a number", o.name, text);
            return Value(v);
        }
        case Kind::boolean:
            if (text == "true") return Value(true);
            if (text == "false") return Value(false);
            return Error::format("synth: --{}: '{}' is not a boolean (true or false)", o.name, text);
    }
    return Error("synth: unreachable option kind");
}

// The request's options, parsed; absent ones read as std::nullopt.
class Options {
public:
    static Result<Options> parse(const std::vector<std::pair<std::string, std::string>>& in) {
        Options out;
        for (const auto& [name, text] : in) {
            const OptionInfo* info = nullptr;
            for (const OptionInfo& o : kOptions)
                if (o.name == name) info = &o;
            if (!info) return Error::format("synth: the qwen-nextn synthesizer has no option --{}", name);
            Value v = TDM_TRY(parse_value(*info, text));
            if (!out.values_.emplace(name, std::move(v)).second)
                return Error::format("synth: --{} is given twice", name);
        }
        return out;
    }

    bool has(std::string_view name) const { return values_.find(name) != values_.end(); }
    std::optional<std::string> text(std::string_view name) const { return get<std::string>(name); }
    std::optional<int64_t> integer(std::string_view name) const { return get<int64_t>(name); }
    std::optional<double> number(std::string_view name) const { return get<double>(name); }
    std::optional<bool> boolean(std::string_view name) const { return get<bool>(name); }

private:
    template <class T>
    std::optional<T> get(std::string_view name) const {
        auto it = values_.find(name);
        if (it == values_.end()) return std::nullopt;
        return std::get<T>(it->second);  // kinds are fixed per name (kOptions)
    }
    std::map<std::string, Value, std::less<>> values_;
};

Result<std::string> synth_qwen35(const Options& a, const SynthRequest& r, DType type, const std::string& tname) {
    const std::string& arch = r.arch;
    std::string preset = a.text("preset").value_or("");
    if (preset.empty()) preset = arch == "qwen35moe" ? "tiny-moe" : "tiny";
    Qwen35Shape shape = TDM_TRY(qwen35_preset(preset));
    if (shape.is_moe() != (arch == "qwen35moe"))
        return Error::format("synth: preset '{}' is {}, not {}", preset, shape.is_moe() ? "qwen35moe" : "qwen35", arch);
    Qwen35SynthOptions opt;
    opt.weight_type = type;
    opt.seed = uint64_t(a.integer("seed").value_or(1));
    if (auto t = a.boolean("tied")) opt.tied = *t;
    if (auto m = a.boolean("mtp")) opt.mtp = *m;
    if (auto l = a.integer("layers")) {
        if (*l < 1 || *l > 1024) return Error("synth: --layers must be in 1..1024");
        shape.n_layer = int32_t(*l);
    }
    opt.repeating = a.boolean("repeating").value_or(false);
    if (auto p = a.integer("repeat-period")) opt.repeat_period = int32_t(*p);
    if (a.has("draft-of-seed")) return Error("synth: --draft-of-seed is for qwen3 (qwen35 drafts with its MTP head)");
    if (a.has("residual-decay")) return Error("synth: --residual-decay is for qwen3");
    const std::string format = a.text("format").value_or("gguf");
    if (format == "gguf")
        TDM_TRY(synth_qwen35_gguf(r.output, shape, opt));
    else if (format == "hf")
        TDM_TRY(synth_qwen35_hf(r.output, shape, opt));
    else
        return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    return fmt::format("wrote {}: {} {}, {} layers, n_embd {}, vocab {}, {}{}", r.output, arch, preset, shape.n_layer,
                       shape.n_embd, shape.n_vocab, tname, qwen35_has_mtp(shape, opt) ? ", with MTP head" : "");
}

Result<std::string> synth_qwen3(const Options& a, const SynthRequest& r, DType type, const std::string& tname) {
    if (a.has("mtp")) return Error("synth: --mtp is for qwen35 and qwen35moe");
    std::string preset = a.text("preset").value_or("");
    if (preset.empty()) preset = "tiny";
    Qwen3Shape shape = TDM_TRY(qwen3_preset(preset));
    Qwen3SynthOptions opt;
    opt.weight_type = type;
    opt.seed = uint64_t(a.integer("seed").value_or(1));
    if (auto t = a.boolean("tied")) opt.tied = *t;
    if (auto l = a.integer("layers")) {
        if (*l < 1 || *l > 1024) return Error("synth: --layers must be in 1..1024");
        shape.n_layer = int32_t(*l);
    }
    opt.repeating = a.boolean("repeating").value_or(false);
    if (auto p = a.integer("repeat-period")) opt.repeat_period = int32_t(*p);
    if (auto d = a.number("residual-decay")) opt.residual_decay = float(*d);
    if (auto base = a.integer("draft-of-seed")) {
        Qwen3SynthOptions target = opt;
        target.seed = uint64_t(*base);
        opt = qwen3_draft_options(target, float(a.number("perturbation").value_or(0.02)), opt.seed);
    }
    const std::string format = a.text("format").value_or("gguf");
    if (format == "gguf")
        TDM_TRY(synth_qwen3_gguf(r.output, shape, opt));
    else if (format == "hf")
        TDM_TRY(synth_qwen3_hf(r.output, shape, opt));
    else
        return Error::format("synth: unknown format '{}' (gguf, hf)", format);
    return fmt::format("wrote {}: qwen3 {}, {} layers, n_embd {}, vocab {}, {}", r.output, preset, shape.n_layer,
                       shape.n_embd, shape.n_vocab, tname);
}

}  // namespace

Result<std::string> synthesize_request(const SynthRequest& r) {
    bool known = false;
    for (std::string_view a : kQwenSynthArchs) known = known || a == r.arch;
    if (!known) return Error::format("synth: unknown architecture '{}' (available: qwen3, qwen35, qwen35moe)", r.arch);
    if (r.output.empty()) return Error("synth: no output path");
    const Options a = TDM_TRY(Options::parse(r.options));
    DType type = DType::Q8_0;
    const std::string tname = a.text("type").value_or("q8_0");
    if (!parse_dtype(tname, &type))
        return Error::format("synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K)", tname);
    if (auto period = a.integer("repeat-period")) {
        if (!a.boolean("repeating").value_or(false)) return Error("synth: --repeat-period needs --repeating");
        if (*period < 1 || *period > (1 << 20))
            return Error::format("synth: --repeat-period must be in 1..{}", 1 << 20);
    }
    if (r.arch != "qwen3") return synth_qwen35(a, r, type, tname);
    return synth_qwen3(a, r, type, tname);
}

}  // namespace tdm::synth
