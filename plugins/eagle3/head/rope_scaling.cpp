// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/head/rope_scaling.cpp: llama3 rope scaling of an HF head (config.json
// rope_scaling of type llama3, as Llama 3.1/3.3 heads carry): its parameters, the divisor of
// each rotated pair as llama.cpp's converter computes the rope_freqs tensor of a GGUF (so that
// both layouts rotate alike), and those divisors as graph rows (an HF directory has no tensor
// to load them from). Not here: the step that feeds them to RoPE (step.cpp).
#include <cmath>
#include <cstring>
#include <string>

#include "eagle3.h"

namespace eagle3 {

tdm_status read_llama3_scaling(const tdm::sdk::HparamReader& r, float rope_theta, uint32_t head_dim,
                               std::vector<float>* divisors) {
    const char* p = "rope_scaling.";
    const std::string factor_key = std::string(p) + "factor", low_key = std::string(p) + "low_freq_factor",
                      high_key = std::string(p) + "high_freq_factor",
                      original_key = std::string(p) + "original_max_position_embeddings";
    float factor = 8.0f, low = 1.0f, high = 4.0f;
    uint32_t original = 8192;
    TDM_SDK_TRY(r.f32_or(factor_key.c_str(), 1.0, 1e6, 8.0f, &factor));
    TDM_SDK_TRY(r.f32_or(low_key.c_str(), 1e-6, 1e6, 1.0f, &low));
    TDM_SDK_TRY(r.f32_or(high_key.c_str(), 1e-6, 1e6, 4.0f, &high));
    TDM_SDK_TRY(r.u32_or(original_key.c_str(), 1, 1u << 24, 8192, &original));
    if (!(high > low))
        return r.err().fail(TDM_ERR_BAD_MODEL, "%s: rope_scaling high_freq_factor %g must exceed low_freq_factor %g",
                            r.path(), double(high), double(low));
    const double two_pi = 6.283185307179586;
    const double low_wavelen = double(original) / low, high_wavelen = double(original) / high;
    divisors->assign(head_dim / 2, 1.0f);
    for (uint32_t i = 0; i < head_dim / 2; ++i) {
        // the converter's base frequency is a float32 computation
        const float freq = 1.0f / std::pow(rope_theta, float(2 * i) / float(head_dim));
        const double wavelen = two_pi / double(freq);
        if (wavelen > low_wavelen) {
            (*divisors)[i] = factor;
        } else if (wavelen >= high_wavelen) {
            const double smooth = (double(original) / wavelen - low) / (double(high) - low);
            (*divisors)[i] = float(1.0 / ((1.0 - smooth) / factor + smooth));
        }
    }
    return TDM_OK;
}

// Every row of the result holds the divisors (RoPE reads the first head_dim/2 columns): zeros
// made from the rows of `like` (x - x), each run of equal divisors added as a scalar, the runs
// concatenated. Exact (0 + c = c), and few ops: a run per distinct divisor.
tdm_tensor rope_divisor_rows(tdm_builder* b, const std::vector<float>& d, tdm_tensor like) {
    const int32_t half = int32_t(d.size());
    const tdm_tensor cols = tdm_view_cols(b, like, 0, half, "rope_divisor_src");
    const tdm_tensor in[2] = {cols, cols};
    const tdm_tensor zeros = tdm_emit(b, TDM_OP_SUB, in, 2, NULL, 0, NULL, 0, "rope_divisor_zero");
    tdm_tensor rows{};
    for (int32_t s = 0; s < half;) {
        int32_t e = s + 1;
        while (e < half && d[size_t(e)] == d[size_t(s)]) ++e;
        const tdm_tensor run = tdm_unary_op(b, TDM_UNARY_ADD_SCALAR, tdm_view_cols(b, zeros, s, e - s, "rope_divisor_run"),
                                            d[size_t(s)], "rope_divisors");
        rows = s == 0 ? run : tdm_concat(b, rows, run, "rope_divisors");
        s = e;
    }
    return rows;
}

}  // namespace eagle3
