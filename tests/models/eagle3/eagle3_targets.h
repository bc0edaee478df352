/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/eagle3/eagle3_targets.h: the tiny targets the EAGLE-3 tests draft for (a Qwen3
// and a Llama 3.x of 4 layers, so that the head reads three distinct layers: 0, 2 and 3), and
// heads for them written by the eagle3 synthesizer in either layout.
#pragma once

#include <string>

namespace tdm::test::eagle3 {

enum class Target { qwen3, llama };

// The target's GGUF in `dir` (F16 weights); its path.
std::string write_target(Target t, const std::string& dir);
// A head for the target at `target`, in the GGUF (llama.cpp) or HF layout, F16; its path. With
// rope_scaling: llama3 scaling over an original context of 32 positions, which the first
// dozen positions already feel.
std::string write_head(const std::string& target, bool hf, const std::string& dir, unsigned seed = 3,
                       bool rope_scaling = false);

}  // namespace tdm::test::eagle3
