// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/synth/synthesizer.cpp: the dflash plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-dflash-synth.so around
// synthesize_dflash_request(). Built as its own shared object next to the plugin (synth/ under
// the plugin directory), never into tandem-dflash.so: the plugin runs heads, this writes them.
#include <tandem/synth.h>

#include "dflash/synth/dflash_synth.h"
#include "synth/synth_entry.h"

namespace {

// The head is a draft head's file architecture in the plugin, not a model architecture; the
// CLI finds this synthesizer for it through the plugin that registers the head.
constexpr const char* kArchs[] = {tdm::synth::kDflashSynthArch.data(), nullptr};

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    return tdm::synth::run_synth_request(request, message, message_size, tdm::synth::synthesize_dflash_request);
}

const tdm_synthesizer_api kApi = {
    sizeof(tdm_synthesizer_api),
    "dflash",
    "synthetic DFlash draft heads shaped for a given target, in z-lab's HF layout or llama.cpp's GGUF",
    kArchs,
    synthesize,
};

}  // namespace

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, 1, TDM_SYNTH_VERSION);
}
