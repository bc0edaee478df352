// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/synth/qwen3_params.cpp: the Qwen3 parameter table (see qwen3_params.h).
#include "qwen-nextn/synth/qwen3_params.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace tdm::synth {
namespace {

constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;  // norm weights are 1 +- kNormSpread

}  // namespace

std::vector<SynthParam> qwen3_params(const Qwen3Shape& s, bool tied, float residual_decay) {
    const float sd_embd = 1.0f / std::sqrt(float(s.n_embd));
    const float sd_attn_out = 1.0f / std::sqrt(float(s.n_head * s.head_dim));
    const float sd_ff = 1.0f / std::sqrt(float(s.n_ff));
    const float sd_norm = kNormSpread / kSqrt3;
    const int64_t q_rows = int64_t(s.n_head) * s.head_dim;
    const int64_t kv_rows = int64_t(s.n_head_kv) * s.head_dim;

    std::vector<SynthParam> ps;
    ps.push_back(synth_param("token_embd.weight", "model.embed_tokens.weight", s.n_vocab, s.n_embd, ParamRole::token_embd,
                             2.0f * sd_embd));
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = "model.layers." + std::to_string(il) + ".";
        const float decay = std::pow(residual_decay, float(il));
        ps.push_back(synth_param(g + "attn_norm.weight", h + "input_layernorm.weight", 1, s.n_embd, ParamRole::norm, sd_norm));
        ps.push_back(synth_param(g + "attn_q.weight", h + "self_attn.q_proj.weight", q_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", 1, s.head_dim, ParamRole::norm, sd_norm));
        ps.push_back(synth_param(g + "attn_k.weight", h + "self_attn.k_proj.weight", kv_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", 1, s.head_dim, ParamRole::norm, sd_norm));
        ps.push_back(synth_param(g + "attn_v.weight", h + "self_attn.v_proj.weight", kv_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "attn_output.weight", h + "self_attn.o_proj.weight", s.n_embd, q_rows,
                                 ParamRole::residual_out, sd_attn_out * decay));
        ps.push_back(synth_param(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", 1, s.n_embd, ParamRole::norm,
                                 sd_norm));
        ps.push_back(synth_param(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", s.n_ff, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "ffn_up.weight", h + "mlp.up_proj.weight", s.n_ff, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "ffn_down.weight", h + "mlp.down_proj.weight", s.n_embd, s.n_ff, ParamRole::residual_out,
                                 sd_ff * decay));
    }
    ps.push_back(synth_param("output_norm.weight", "model.norm.weight", 1, s.n_embd, ParamRole::norm, sd_norm));
    if (!tied)
        ps.push_back(synth_param("output.weight", "lm_head.weight", s.n_vocab, s.n_embd, ParamRole::output, 2.0f * sd_embd));
    return ps;
}

WeightRecipe qwen3_recipe(const Qwen3SynthOptions& opts, int32_t n_text) {
    WeightRecipe r;
    r.n_text = n_text;
    r.seed = opts.seed;
    r.repeating = opts.repeating;
    r.repeat_period = opts.repeat_period;
    r.perturbation = opts.perturbation;
    r.perturbation_seed = opts.perturbation_seed;
    r.round_to = (opts.weight_type == DType::F16 || opts.weight_type == DType::BF16) ? opts.weight_type : DType::F32;
    r.n_threads = opts.n_threads > 0 ? opts.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return r;
}

}  // namespace tdm::synth
