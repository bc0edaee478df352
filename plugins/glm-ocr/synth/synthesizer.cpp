// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/synth/synthesizer.cpp: the glm-ocr plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-glm-ocr-synth.so around
// synthesize_glm_request(). Built as its own shared object next to the plugin (synth/ under the
// plugin directory), never into tandem-glm-ocr.so: the plugin runs models, this writes them.
#include <tandem/synth.h>

#include "glm-ocr/synth/glm_request.h"
#include "synth/synth_entry.h"

namespace {

constexpr const char* kArchs[] = {tdm::synth::kGlmSynthArch.data(), nullptr};

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    return tdm::synth::run_synth_request(request, message, message_size, tdm::synth::synthesize_glm_request);
}

const tdm_synthesizer_api kApi = {
    sizeof(tdm_synthesizer_api),
    "glm-ocr",
    "synthetic GLM-OCR text decoders with their NextN/MTP layer, in GGUF (llama.cpp's NeoX-permuted q/k) and HF "
    "layouts",
    kArchs,
    synthesize,
};

}  // namespace

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, 1, TDM_SYNTH_VERSION);
}
