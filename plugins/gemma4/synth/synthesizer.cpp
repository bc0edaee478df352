// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/synthesizer.cpp: the gemma4 plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-gemma4-synth.so around
// synthesize_gemma4_request(). Built as its own shared object next to the plugin (synth/ under the
// plugin directory), never into tandem-gemma4.so: the plugin runs models, this writes them.
#include <tandem/synth.h>

#include "gemma4/synth/gemma4_request.h"
#include "synth/synth_entry.h"

namespace {

// The assistant is a draft head's file architecture in the plugin, not a model architecture;
// the CLI finds this synthesizer for it through the plugin that registers the head.
constexpr const char* kArchs[] = {tdm::synth::kGemma4SynthArch.data(), tdm::synth::kGemma4AssistantSynthArch.data(),
                                  nullptr};

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    return tdm::synth::run_synth_request(request, message, message_size, tdm::synth::synthesize_gemma4_request);
}

const tdm_synthesizer_api kApi = {
    sizeof(tdm_synthesizer_api),
    "gemma4",
    "synthetic Gemma 4 text decoders (E2B/E4B with per-layer embeddings and KV sharing, 31B dense, 26B-A4B "
    "MoE) and their gemma4-assistant drafters, in GGUF and HF layouts",
    kArchs,
    synthesize,
};

}  // namespace

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, 1, TDM_SYNTH_VERSION);
}
