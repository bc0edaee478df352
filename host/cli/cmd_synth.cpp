// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_synth.cpp: `tandem synth`: synthetic models in real layouts, written by the
// synthesizer of the plugin that registers the architecture (cli/synthesizers.h).
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/synthesizers.h"

namespace tdm::cli {

namespace {

// The synth options the user gave, as synth.h passes them: every option of the command but
// --arch and --output (request fields), with its last value as text.
SynthOptions synth_options(const ParsedArgs& a) {
    SynthOptions out;
    for (const CommandSpec& c : program_spec().commands) {
        if (c.name != "synth") continue;
        for (const OptionGroup& g : c.groups) {
            for (const OptionSpec& o : g.options) {
                const std::string id = option_id(o);
                if (id == "arch" || id == "output" || !a.has(id)) continue;
                const Value v = a.values(id).back();
                std::string text;
                if (const bool* b = std::get_if<bool>(&v))
                    text = *b ? "true" : "false";
                else if (const int64_t* i = std::get_if<int64_t>(&v))
                    text = std::to_string(*i);
                else if (const double* d = std::get_if<double>(&v))
                    text = fmt::format("{:.17g}", *d);
                else if (const std::string* s = std::get_if<std::string>(&v))
                    text = *s;
                else if (const auto* list = std::get_if<std::vector<int64_t>>(&v))
                    text = fmt::format("{}", fmt::join(*list, ","));  // as typed: "1,2,3"
                out.emplace_back(id, std::move(text));
            }
        }
    }
    return out;
}

}  // namespace

Status cmd_synth(App& app) {
    const ParsedArgs& a = app.args();
    const std::string arch = a.get_string("arch").value_or("qwen3");
    Registry* reg = TDM_TRY(app.registry());
    auto synth = TDM_TRY(find_synthesizer(*reg, arch));
    const std::string summary = TDM_TRY(synth->synthesize(arch, *a.get_string("output"), synth_options(a)));
    std::fprintf(stderr, "%s\n", summary.c_str());
    return {};
}

}  // namespace tdm::cli
