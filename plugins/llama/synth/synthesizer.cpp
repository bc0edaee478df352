// SPDX-License-Identifier: Apache-2.0
// plugins/llama/synth/synthesizer.cpp: the llama plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-llama-synth.so around
// synthesize_llama_request(). Built as its own shared object next to the plugin (synth/ under the
// plugin directory), never into tandem-llama.so: the plugin runs models, this writes them.
#include <tandem/synth.h>

#include "llama/synth/llama_request.h"
#include "synth/synth_entry.h"

namespace {

constexpr const char* kArchs[] = {tdm::synth::kLlamaSynthArch.data(), nullptr};

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    return tdm::synth::run_synth_request(request, message, message_size, tdm::synth::synthesize_llama_request);
}

const tdm_synthesizer_api kApi = {
    sizeof(tdm_synthesizer_api),
    "llama",
    "synthetic Llama 3.x dense models in GGUF (llama.cpp's permuted q/k, rope_freqs) and HF layouts",
    kArchs,
    synthesize,
};

}  // namespace

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, 1, TDM_SYNTH_VERSION);
}
