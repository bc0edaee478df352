// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_params.cpp: the Gemma 4 parameter table (see gemma4_params.h). Names
// follow docs/models/gemma4.md §2.1; sizes of the values follow gemma4_synth.h's file comment.
#include "gemma4/synth/gemma4_params.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace tdm::synth {
namespace {

constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;         // norm weights and router scales: 1 +- 0.2
constexpr float kLayerScaleSpread = 0.5f;   // layer_output_scale: 1 +- 0.5

float inv_sqrt(int64_t n) { return 1.0f / std::sqrt(float(n)); }

class Table {
public:
    explicit Table(std::vector<Gemma4Param>& out) : out_(out) {}

    // A 2-D matrix: HF [rows, cols], GGUF ne {cols, rows}.
    Gemma4Param& matrix(std::string gguf, std::string hf, int64_t rows, int64_t cols, ParamRole role, float sigma) {
        return add(std::move(gguf), std::move(hf), rows, cols, role, sigma, {cols, rows}, {rows, cols});
    }
    // A 1-D vector around 1 (norms, scales): uniform 1 +- spread.
    Gemma4Param& vector(std::string gguf, std::string hf, int64_t n, float spread = kNormSpread) {
        Gemma4Param& p = add(std::move(gguf), std::move(hf), 1, n, ParamRole::norm, spread / kSqrt3, {n}, {n});
        p.param.is_vector = true;
        p.gguf_f32 = true;
        return p;
    }
    // Experts stacked: HF [n_expert, rows, cols], GGUF ne {cols, rows, n_expert}.
    Gemma4Param& experts(std::string gguf, std::string hf, int64_t n_expert, int64_t rows, int64_t cols,
                         ParamRole role, float sigma) {
        return add(std::move(gguf), std::move(hf), n_expert * rows, cols, role, sigma, {cols, rows, n_expert},
                   {n_expert, rows, cols});
    }

private:
    Gemma4Param& add(std::string gguf, std::string hf, int64_t rows, int64_t cols, ParamRole role, float sigma,
                     std::vector<int64_t> ne, std::vector<int64_t> shape) {
        Gemma4Param p;
        p.param.gguf_name = std::move(gguf);
        p.param.hf_name = std::string(kGemma4HfPrefix) + hf;
        p.param.rows = rows;
        p.param.cols = cols;
        p.param.role = role;
        p.param.sigma = sigma;
        p.gguf_ne = std::move(ne);
        p.hf_shape = std::move(shape);
        out_.push_back(std::move(p));
        return out_.back();
    }
    std::vector<Gemma4Param>& out_;
};

}  // namespace

std::vector<Gemma4Param> gemma4_params(const Gemma4Shape& s) {
    std::vector<Gemma4Param> ps;
    Table t(ps);
    const int64_t H = s.n_embd, P = s.n_embd_per_layer, L = s.n_layer;
    const float sd_embd = inv_sqrt(H);

    // token_embd is also the LM head (tied): std 2/sqrt(H) gives logits of std ~2.
    t.matrix("token_embd.weight", "embed_tokens.weight", s.n_vocab, H, ParamRole::token_embd, 2.0f * sd_embd);
    if (P > 0) {
        // Scaled by sqrt(P) at lookup: std 1/sqrt(P) makes it unit-size.
        t.matrix("per_layer_token_embd.weight", "embed_tokens_per_layer.weight", s.n_vocab_per_layer, L * P,
                 ParamRole::matrix, inv_sqrt(P));
        t.matrix("per_layer_model_proj.weight", "per_layer_model_projection.weight", L * P, H, ParamRole::matrix,
                 sd_embd);
        t.vector("per_layer_proj_norm.weight", "per_layer_projection_norm.weight", P);
    }
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = "layers." + std::to_string(il) + ".";
        const int64_t D = s.head_dim(il), q_rows = int64_t(s.n_head) * D, kv_rows = int64_t(s.n_head_kv(il)) * D;
        const int64_t n_ff = s.n_ff_at(il);
        // HF checkpoints keep K/V projections on KV-shared layers (HF ignores them); llama.cpp's
        // converter drops them.
        const bool kv_in_gguf = !s.is_kv_shared(il);

        t.vector(g + "attn_norm.weight", h + "input_layernorm.weight", H);
        t.matrix(g + "attn_q.weight", h + "self_attn.q_proj.weight", q_rows, H, ParamRole::matrix, sd_embd);
        t.matrix(g + "attn_k.weight", h + "self_attn.k_proj.weight", kv_rows, H, ParamRole::matrix, sd_embd).in_gguf =
            kv_in_gguf;
        if (s.has_v(il))
            t.matrix(g + "attn_v.weight", h + "self_attn.v_proj.weight", kv_rows, H, ParamRole::matrix, sd_embd)
                .in_gguf = kv_in_gguf;
        t.matrix(g + "attn_output.weight", h + "self_attn.o_proj.weight", H, q_rows, ParamRole::residual_out,
                 inv_sqrt(q_rows));
        t.vector(g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", D);
        t.vector(g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", D);
        t.vector(g + "post_attention_norm.weight", h + "post_attention_layernorm.weight", H);

        t.vector(g + "ffn_norm.weight", h + "pre_feedforward_layernorm.weight", H);
        t.matrix(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", n_ff, H, ParamRole::matrix, sd_embd);
        t.matrix(g + "ffn_up.weight", h + "mlp.up_proj.weight", n_ff, H, ParamRole::matrix, sd_embd);
        t.matrix(g + "ffn_down.weight", h + "mlp.down_proj.weight", H, n_ff, ParamRole::residual_out, inv_sqrt(n_ff));
        t.vector(g + "post_ffw_norm.weight", h + "post_feedforward_layernorm.weight", H);

        if (s.is_moe()) {
            const int64_t E = s.n_expert, Ie = s.n_ff_expert;
            // The router matrix stays F32, as the converter writes FFN_GATE_INP.
            t.matrix(g + "ffn_gate_inp.weight", h + "router.proj.weight", E, H, ParamRole::matrix, sd_embd).gguf_f32 =
                true;
            t.vector(g + "ffn_gate_inp.scale", h + "router.scale", H);
            t.vector(g + "ffn_down_exps.scale", h + "router.per_expert_scale", E);
            // gate rows [0, Ie) of each expert, then up rows [Ie, 2 Ie).
            t.experts(g + "ffn_gate_up_exps.weight", h + "experts.gate_up_proj", E, 2 * Ie, H, ParamRole::matrix,
                      sd_embd);
            t.experts(g + "ffn_down_exps.weight", h + "experts.down_proj", E, H, Ie, ParamRole::residual_out,
                      inv_sqrt(Ie));
            t.vector(g + "pre_ffw_norm_2.weight", h + "pre_feedforward_layernorm_2.weight", H);
            t.vector(g + "post_ffw_norm_1.weight", h + "post_feedforward_layernorm_1.weight", H);
            t.vector(g + "post_ffw_norm_2.weight", h + "post_feedforward_layernorm_2.weight", H);
        }
        if (P > 0) {
            t.matrix(g + "inp_gate.weight", h + "per_layer_input_gate.weight", P, H, ParamRole::matrix, sd_embd);
            t.matrix(g + "proj.weight", h + "per_layer_projection.weight", H, P, ParamRole::residual_out, inv_sqrt(P));
            t.vector(g + "post_norm.weight", h + "post_per_layer_input_norm.weight", H);
        }
        // A buffer, not a parameter: no ".weight" in HF.
        t.vector(g + "layer_output_scale.weight", h + "layer_scalar", 1, kLayerScaleSpread);
    }
    t.vector("output_norm.weight", "norm.weight", H);
    return ps;
}

WeightRecipe gemma4_recipe(const Gemma4SynthOptions& opts) {
    WeightRecipe r;
    r.seed = opts.seed;
    r.round_to = (opts.weight_type == DType::F16 || opts.weight_type == DType::BF16) ? opts.weight_type : DType::F32;
    r.n_threads = opts.n_threads > 0 ? opts.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return r;
}

}  // namespace tdm::synth
