// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/synth/synthesizer.cpp: the qwen-nextn plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-qwen-nextn-synth.so around
// synthesize_request(). Built as its own shared object next to the plugin (synth/ under the plugin
// directory), never into tandem-qwen-nextn.so: the plugin runs models, this writes them.
#include <tandem/synth.h>

#include "qwen-nextn/synth/synth_request.h"
#include "synth/synth_entry.h"

#include <iterator>
#include <string>

namespace {

using tdm::synth::kQwenSynthArchs;

constexpr const char* kArchs[] = {kQwenSynthArchs[0].data(), kQwenSynthArchs[1].data(), kQwenSynthArchs[2].data(),
                                  nullptr};
static_assert(std::size(kArchs) == std::size(kQwenSynthArchs) + 1);

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    auto write = [](std::string_view arch, const std::string& output, const tdm::synth::SynthOptions& options) {
        return tdm::synth::synthesize_request({std::string(arch), output, options});
    };
    return tdm::synth::run_synth_request(request, message, message_size, write);
}

const tdm_synthesizer_api kApi = {
    sizeof(tdm_synthesizer_api),
    "qwen-nextn",
    "synthetic Qwen3 dense and Qwen3.5/3.6 (dense, MoE, MTP head) models in GGUF and HF layouts",
    kArchs,
    synthesize,
};

}  // namespace

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, 1, TDM_SYNTH_VERSION);
}
