// SPDX-License-Identifier: Apache-2.0
// host/synth/synth_entry.cpp: see synth_entry.h.
#include "synth/synth_entry.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

namespace tdm::synth {
namespace {

tdm_status finish(tdm_status st, const std::string& text, char* message, size_t message_size) {
    if (message && message_size > 0) std::snprintf(message, message_size, "%s", text.c_str());
    return st;
}

}  // namespace

tdm_status run_synth_request(const tdm_synth_request* request, char* message, size_t message_size,
                             const SynthWrite& write) {
    try {
        tdm_synth_request req{};
        if (!request || request->struct_size < TDM_SYNTH_V1_SIZEOF_REQUEST)
            return finish(TDM_ERR_INVALID_ARGUMENT, "synth: request struct is missing or too small", message,
                          message_size);
        std::memcpy(&req, request, std::min<size_t>(request->struct_size, sizeof req));
        if (!req.arch || !req.output || (req.n_options > 0 && (!req.option_names || !req.option_values)))
            return finish(TDM_ERR_INVALID_ARGUMENT, "synth: request without arch, output or options", message,
                          message_size);
        SynthOptions options;
        for (uint32_t i = 0; i < req.n_options; ++i) {
            if (!req.option_names[i] || !req.option_values[i])
                return finish(TDM_ERR_INVALID_ARGUMENT, "synth: option without a name or a value", message,
                              message_size);
            options.emplace_back(req.option_names[i], req.option_values[i]);
        }
        auto summary = write(req.arch, req.output, options);
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

}  // namespace tdm::synth
