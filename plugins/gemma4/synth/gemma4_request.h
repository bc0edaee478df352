/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/synth/gemma4_request.h: one request to the gemma4 synthesizer, in C++: the options
// of `tandem synth` (sdk/include/tandem/synth.h, section 2) checked and turned into a Gemma 4 shape
// (arch gemma4) or the shape of the assistant drafter of a Gemma 4 preset (arch
// gemma4-assistant) and options, the model written, a one-line summary returned. The C entry
// point (synthesizer.cpp) wraps it; tests call it directly.
//
//   std::string summary = TDM_TRY(synthesize_gemma4_request("gemma4", dir + "/x.gguf",
//                                                           {{"preset", "tiny-e2b"}}));
//   // and the assistant that drafts for it:
//   TDM_TRY(synthesize_gemma4_request("gemma4-assistant", dir + "/a.gguf", {{"preset", "tiny-e2b"}}));
//
// Options and defaults:
//   preset   tiny-e2b (default), tiny-31b, tiny-26b, e2b, e4b, 26b-a4b, 31b; for
//            gemma4-assistant the target's preset, whose assistant it writes
//   type     f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K; default q8_0 for a gemma4
//            GGUF, bf16 for hf and for gemma4-assistant (the dtype of the released checkpoints)
//   format   gguf (default) or hf
//   seed     seed of the weights (1)
// The other options of `tandem synth` (tied, mtp, layers, draft-of-seed, perturbation, repeating,
// repeat-period, residual-decay) are refused: Gemma 4 is always tied, its layer pattern and KV
// sharing do not survive cutting layers, and it has no repeating mode (gemma4_synth.h); the
// assistant is tied too, has fixed layers and is itself the drafter.
#pragma once

#include "common/error.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

// The architectures this synthesizer writes (GGUF general.architecture): the target, and its
// assistant drafter (which the plugin registers as a draft head's file architecture).
inline constexpr std::string_view kGemma4SynthArch = "gemma4";
inline constexpr std::string_view kGemma4AssistantSynthArch = "gemma4-assistant";

// Writes the model and returns "wrote PATH: gemma4 PRESET, N layers (S S F ..), n_embd N, vocab N,
// TYPE" (an assistant: "wrote PATH: gemma4-assistant PRESET, 4 layers (S S S F), n_embd N for a
// target of n_embd N, vocab N, HEAD, TYPE"). Errors name the option as --name: an unknown or
// refused name, a repeated one, a value that does not parse.
Result<std::string> synthesize_gemma4_request(std::string_view arch, const std::string& output,
                                              const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace tdm::synth
