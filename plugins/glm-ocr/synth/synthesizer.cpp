// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/synth/synthesizer.cpp: the glm-ocr plugin's synthesizer
// (sdk/include/tandem/synth.h): the C entry point of tandem-glm-ocr-synth.so around
// synthesize_glm_request(). Built as its own shared object next to the plugin (synth/ under the
// plugin directory), never into tandem-glm-ocr.so: the plugin runs models, this writes them.
#include <tandem/synth.h>

#include "glm-ocr/synth/glm_request.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr const char* kArchs[] = {tdm::synth::kGlmSynthArch.data(), nullptr};

tdm_status finish(tdm_status st, const std::string& text, char* message, size_t message_size) {
    if (message && message_size > 0) std::snprintf(message, message_size, "%s", text.c_str());
    return st;
}

tdm_status synthesize(const tdm_synth_request* request, char* message, size_t message_size) {
    try {
        tdm_synth_request req{};
        if (!request || request->struct_size < TDM_SYNTH_V1_SIZEOF_REQUEST)
            return finish(TDM_ERR_INVALID_ARGUMENT, "synth: request struct is missing or too small", message,
                          message_size);
        std::memcpy(&req, request, std::min<size_t>(request->struct_size, sizeof req));
        if (!req.arch || !req.output || (req.n_options > 0 && (!req.option_names || !req.option_values)))
            return finish(TDM_ERR_INVALID_ARGUMENT, "synth: request without arch, output or options", message,
                          message_size);
        std::vector<std::pair<std::string, std::string>> options;
        for (uint32_t i = 0; i < req.n_options; ++i) {
            if (!req.option_names[i] || !req.option_values[i])
                return finish(TDM_ERR_INVALID_ARGUMENT, "synth: option without a name or a value", message,
                              message_size);
            options.emplace_back(req.option_names[i], req.option_values[i]);
        }
        auto summary = tdm::synth::synthesize_glm_request(req.arch, req.output, options);
        if (!summary.ok()) return finish(TDM_ERR_INVALID_ARGUMENT, summary.error().message(), message, message_size);
        return finish(TDM_OK, *summary, message, message_size);
    } catch (const std::bad_alloc&) {
        return finish(TDM_ERR_OUT_OF_MEMORY, "synth: out of memory", message, message_size);
    } catch (const std::exception& e) {
        return finish(TDM_ERR_INTERNAL, std::string("synth: ") + e.what(), message, message_size);
    } catch (...) {
        return finish(TDM_ERR_INTERNAL, "synth: unknown exception", message, message_size);
    }
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
