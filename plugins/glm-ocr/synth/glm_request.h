/* SPDX-License-Identifier: Apache-2.0 */
// plugins/glm-ocr/synth/glm_request.h: one request to the glm-ocr synthesizer: the options of
// `tandem synth --arch glm4` checked and turned into a GLM shape and options, the model written,
// a one-line summary returned. The C entry point (synthesizer.cpp) wraps it; tests call it.
//
// Options (the `tandem synth --help` text says the same):
//   preset          tiny (default), small, glm-ocr (the real text shape)
//   type            f32, f16, bf16, q8_0 (default for GGUF; HF takes f32, f16 or bf16, default bf16),
//                   q4_0, q5_0, q5_1, q4_K, q5_K, q6_K
//   format          gguf (default) or hf
//   seed            seed of the weights (1)
//   mtp             write the NextN/MTP layer (true)
//   layers          trunk layers, 1..1024
//   repeating       the repeating model; repeat-period (1..2^20, default 5) needs it
//   vision          HF only: the vision tower at the preset's size (false; glm_vision_synth.h)
//   bias            q/k/v attention biases, as GLM-4-0414 and GLM-4 chat files have (false)
#pragma once

#include "common/error.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

inline constexpr std::string_view kGlmSynthArch = "glm4";

Result<std::string> synthesize_glm_request(std::string_view arch, const std::string& output,
                                           const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace tdm::synth
