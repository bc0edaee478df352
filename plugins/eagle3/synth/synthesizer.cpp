// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/synth/synthesizer.cpp: the eagle3 plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-eagle3-synth.so around
// synthesize_eagle3_request(). Built as its own shared object next to the plugin (synth/ under
// the plugin directory), never into tandem-eagle3.so: the plugin runs heads, this writes them.
#include <tandem/synth.h>

#include "eagle3/synth/eagle3_request.h"
#include "synth/synth_entry.h"

namespace {

// The head is a draft head's file architecture in the plugin, not a model architecture; the
// CLI finds this synthesizer for it through the plugin that registers the head.
constexpr const char* kArchs[] = {tdm::synth::kEagle3SynthArch.data(), nullptr};

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    return tdm::synth::run_synth_request(request, message, message_size, tdm::synth::synthesize_eagle3_request);
}

const tdm_synthesizer_api kApi = {
    sizeof(tdm_synthesizer_api),
    "eagle3",
    "synthetic EAGLE-3 draft heads shaped for a given target, in llama.cpp's eagle3 GGUF and the EAGLE authors' "
    "HF layout",
    kArchs,
    synthesize,
};

}  // namespace

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, 1, TDM_SYNTH_VERSION);
}
