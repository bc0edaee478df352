/* SPDX-License-Identifier: Apache-2.0 */
// plugins/llama/synth/llama_request.h: one request to the llama synthesizer: the options of
// `tandem synth --arch llama` checked and turned into a Llama shape and options, the model
// written, a one-line summary returned. The C entry point (synthesizer.cpp) wraps it; tests
// call it.
//
// Options (the `tandem synth --help` text says the same):
//   preset          tiny (default), 1b (Llama 3.2 1B), 8b (Llama 3.1 8B)
//   type            f32, f16, bf16, q8_0 (default for GGUF; HF takes f32, f16 or bf16, default bf16),
//                   q4_0, q5_0, q5_1, q4_K, q5_K, q6_K
//   format          gguf (default) or hf
//   seed            seed of the weights (1)
//   tied            share the embedding as LM head (the preset's: 1b true, others false)
//   rope-scaling    llama3 rope scaling (rope_freqs.weight / rope_scaling) (true)
//   layers          1..1024
//   repeating       the repeating model; repeat-period (1..2^20, default 5) needs it
#pragma once

#include "common/error.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

inline constexpr std::string_view kLlamaSynthArch = "llama";

Result<std::string> synthesize_llama_request(std::string_view arch, const std::string& output,
                                             const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace tdm::synth
