// SPDX-License-Identifier: Apache-2.0
// plugins/llama/text/rope_factors.cpp: the llama3 rope-scaling divisors of an HF
// checkpoint, one per rotated pair, as llama.cpp's converter computes the rope_freqs
// tensor it writes into a GGUF (docs/models/llama.md §4), so that both layouts rotate alike.
// Not here: how the forward pass feeds them to RoPE (forward.cpp).
#include <cmath>

#include "arch.h"

namespace llama {

std::vector<float> llama3_rope_factors(const LlamaHparams& hp) {
    const Llama3RopeScaling& s = hp.scaling;
    const double two_pi = 2.0 * 3.14159265358979323846;
    const double low_freq_wavelen = double(s.original_context) / s.low_freq_factor;
    const double high_freq_wavelen = double(s.original_context) / s.high_freq_factor;
    std::vector<float> factors(hp.n_rot / 2);
    for (uint32_t i = 0; i < hp.n_rot / 2; ++i) {
        // the converter's base frequency is computed in float32
        const float exponent = float(2 * i) / float(hp.n_rot);
        const float freq = 1.0f / std::pow(hp.rope_theta, exponent);
        const double wavelen = two_pi / double(freq);
        if (wavelen < high_freq_wavelen) {
            factors[i] = 1.0f;
        } else if (wavelen > low_freq_wavelen) {
            factors[i] = s.factor;
        } else {
            const double smooth = (double(s.original_context) / wavelen - s.low_freq_factor) /
                                  (double(s.high_freq_factor) - s.low_freq_factor);
            factors[i] = float(1.0 / ((1.0 - smooth) / s.factor + smooth));
        }
    }
    return factors;
}

}  // namespace llama
