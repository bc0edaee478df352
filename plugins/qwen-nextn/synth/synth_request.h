/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/synth/synth_request.h: one request to the qwen-nextn synthesizer, in C++: the
// options of `tandem synth` (sdk/include/tandem/synth.h, section 2) checked and turned into a Qwen3
// or Qwen3.5 shape and options, the model written, a one-line summary returned. The C entry point
// (synthesizer.cpp) wraps it; tests call it directly.
//
//   SynthRequest r{"qwen35", dir + "/tiny.gguf", {{"type", "f16"}, {"mtp", "false"}}};
//   std::string summary = TDM_TRY(synthesize_request(r));  // "wrote .../tiny.gguf: qwen35 tiny, ..."
//
// Options and defaults (the `tandem synth --help` text says the same):
//   preset          qwen3: tiny (default), small, 0.6b; qwen35: tiny (default), 0.8b;
//                   qwen35moe: tiny-moe (default)
//   type            f32, f16, bf16, q8_0 (default), q4_0, q5_0, q5_1, q4_K, q5_K, q6_K
//   format          gguf (default) or hf
//   seed            seed of the weights (1)
//   tied, mtp       booleans overriding the preset's (mtp: qwen35 and qwen35moe only)
//   layers          1..1024
//   repeating       the repeating model; repeat-period (1..2^20, default 5) needs it
//   draft-of-seed   qwen3: write the draft of the target of this seed, noise `perturbation` (0.02),
//                   noise seed `seed`
//   residual-decay  qwen3: Qwen3SynthOptions::residual_decay (1)
#pragma once

#include "common/error.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

// The architectures this synthesizer writes (GGUF general.architecture), in the order listed.
inline constexpr std::string_view kQwenSynthArchs[] = {"qwen3", "qwen35", "qwen35moe"};

struct SynthRequest {
    std::string arch;    // one of kQwenSynthArchs
    std::string output;  // the GGUF file, or the HF directory with format=hf
    std::vector<std::pair<std::string, std::string>> options;  // name without "--", value as text
};

// Writes the model and returns "wrote PATH: ARCH PRESET, N layers, n_embd N, vocab N, TYPE[, with MTP
// head]". Errors name the option as --name: an unknown name, a repeated one, a value that does not
// parse, an option of another architecture, a value out of range.
Result<std::string> synthesize_request(const SynthRequest& r);

}  // namespace tdm::synth
