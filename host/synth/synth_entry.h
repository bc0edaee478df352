/* SPDX-License-Identifier: Apache-2.0 */
// host/synth/synth_entry.h: the body every synthesizer's tdm_synthesizer_api.synthesize shares
// (sdk/include/tandem/synth.h): the C request checked and copied, its options turned into
// (name, value) pairs, the synthesizer's own C++ function called, and its result or exception
// turned into a status and a message. Each synthesizer module keeps only its tables:
//
//   tdm_status synthesize(const tdm_synth_request* r, char* msg, size_t size) {
//       return tdm::synth::run_synth_request(r, msg, size, synthesize_glm_request);
//   }
#pragma once

#include "common/error.h"

#include <tandem/synth.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

using SynthOptions = std::vector<std::pair<std::string, std::string>>;
using SynthWrite = std::function<Result<std::string>(std::string_view arch, const std::string& output,
                                                     const SynthOptions& options)>;

// TDM_OK with write's summary in `message`, or the error status with its message: a bad
// request (INVALID_ARGUMENT), write's error (INVALID_ARGUMENT), bad_alloc (OUT_OF_MEMORY),
// any other exception (INTERNAL). Never throws.
tdm_status run_synth_request(const tdm_synth_request* request, char* message, size_t message_size,
                             const SynthWrite& write);

}  // namespace tdm::synth
