/* SPDX-License-Identifier: Apache-2.0 */
// plugins/eagle3/synth/eagle3_request.h: one request to the eagle3 synthesizer: the options of
// `tandem synth --arch eagle3` checked, the head for the given target written, a one-line
// summary returned. The C entry point (synthesizer.cpp) wraps it; tests call it.
//
// Options:
//   target   the target model (GGUF file or HF directory) whose shapes the head follows (required)
//   format   gguf (default: llama.cpp's eagle3) or hf (the EAGLE authors' LlamaForCausalLMEagle3)
//   type     f32, f16, bf16 (default for hf), q8_0 (default for gguf), q4_0, ...
//   seed     seed of the weights and of the draft vocabulary (1)
//   rope-scaling  llama3 rope scaling as Llama 3.1 heads have it (rope_freqs.weight /
//            rope_scaling) (false)
//   draft-vocab  rows of the draft vocabulary (lm_head, d2t): a multiple of 4 up to the
//            target's vocabulary (half the target's, rounded down to a multiple of 4)
#pragma once

#include "common/error.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

inline constexpr std::string_view kEagle3SynthArch = "eagle3";

Result<std::string> synthesize_eagle3_request(std::string_view arch, const std::string& output,
                                              const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace tdm::synth
