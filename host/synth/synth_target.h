/* SPDX-License-Identifier: Apache-2.0 */
// host/synth/synth_target.h: the few hyper-parameters of a target model that the
// synthesizers of draft heads (plugins/eagle3/synth, plugins/dflash/synth) shape a head
// after, read from a GGUF file's "<arch>.*" keys or an HF config.json (flat, or under
// text_config).
// Not here: what a head makes of them (each synthesizer's shape).
#pragma once

#include "common/error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tdm::synth {

struct SynthTargetShape {
    int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
    double rope_theta = 10000.0, rms_eps = 1e-6;
};

// The target at `path`; `who` ("eagle3 synth") starts every message.
Result<SynthTargetShape> read_synth_target(const std::string& path, std::string_view who);

}  // namespace tdm::synth
