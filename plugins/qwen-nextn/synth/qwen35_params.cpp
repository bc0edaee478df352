// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/synth/qwen35_params.cpp: the Qwen3.5 parameter table (GGUF names and ne as
// llama.cpp's converter writes them, HF names and shapes as the released checkpoints have them) and
// the value recipes in both layouts (see qwen35_params.h, qwen35_synth.h).
//
// GGUF names: gguf-py constants.py TENSOR_NAMES (ATTN_POST_NORM = post_attention_norm, SSM_A =
// ssm_a without suffix, SSM_DT = ssm_dt with ".bias", NEXTN_* = nextn.*). HF names: the
// Qwen3.6-27B tensor list quoted in docs/models/qwen35.md §3 plus transformers' Qwen3.5 MoE modules.
#include "qwen-nextn/synth/qwen35_params.h"

#include "common/fp16.h"
#include "common/quant.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "synth/synth_files.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace tdm::synth {
namespace {

constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;    // "+1" norm deviations u lie in [-0.2, 0.2]
constexpr float kNormGrid = 1024.0f;   // u is a multiple of 1 / kNormGrid: exact in f16 and bf16
constexpr float kALogMid = 0.75f, kALogHalf = 0.75f;  // A_log in [0, 1.5]
constexpr float kDtMid = -1.0f, kDtHalf = 1.5f;       // dt_bias in [-2.5, 0.5]
constexpr float kConvSigma = 0.5f;                    // kaiming-like for fan_in 4
constexpr float kMtpHiddenGain = 0.25f;               // repeating: weight of the hidden half of eh_proj
// Correlation of a GDN key head's projection and conv taps with its query head's. With
// independent random q and k, q.k of a head is a cancelling sum, and the gated RMSNorm that
// normalises o = S^T q then amplifies every rounding difference: measured on a 24-layer,
// 256-wide shape, BF16 weights move the logits by nmse 1.6e-2 with independent q/k and 1.1e-3
// with 0.8 (tiny Q8_0: 2.5e-3 -> 1.8e-3). Trained models' q and k align too. The layout is
// untouched: only values change.
constexpr float kQkCorrelation = 0.8f;
constexpr int64_t kRowsPerBatch = 64;

class TableBuilder {
public:
    TableBuilder(const Qwen35Shape& s, const Qwen35SynthOptions& o) : s_(s), o_(o) {}

    // One GGUF tensor that is also one HF tensor (all rows, in order).
    size_t add(std::string gguf, std::vector<int64_t> ne, Q35Recipe recipe, float sigma, std::string hf,
               std::vector<int64_t> hf_shape) {
        Qwen35Param p;
        p.gguf_name = std::move(gguf);
        p.cols = ne[0];
        for (size_t i = 1; i < ne.size(); ++i) p.rows *= ne[i];
        p.ne = std::move(ne);
        p.recipe = recipe;
        p.sigma = sigma;
        // The converter: 1-D tensors and *_norm.weight F32, and names not ending in ".weight".
        p.force_f32 = p.ne.size() == 1 || recipe == Q35Recipe::norm_one_plus || recipe == Q35Recipe::norm_plain;
        t_.params.push_back(std::move(p));
        const size_t idx = t_.params.size() - 1;
        if (!hf.empty()) t_.hf.push_back({std::move(hf), std::move(hf_shape), {{idx, 0, t_.params[idx].rows}}});
        return idx;
    }
    Qwen35Param& last() { return t_.params.back(); }
    void permute(Q35Perm perm, int64_t offset, int64_t head_dim) {
        last().perm = perm;
        last().perm_offset = offset;
        last().perm_head_dim = head_dim;
    }

    void attention(const std::string& g, const std::string& h) {
        const int64_t E = s_.n_embd, D = s_.head_dim, q = int64_t(s_.n_head) * D, kv = int64_t(s_.n_head_kv) * D;
        const float sd = 1.0f / std::sqrt(float(E));
        // q_proj holds q and the output gate per head: [q_h0 | g_h0 | q_h1 | g_h1 | ...].
        add(g + "attn_q.weight", {E, 2 * q}, Q35Recipe::matrix, sd, h + "self_attn.q_proj.weight", {2 * q, E});
        add(g + "attn_q_norm.weight", {D}, Q35Recipe::norm_one_plus, 0, h + "self_attn.q_norm.weight", {D});
        add(g + "attn_k.weight", {E, kv}, Q35Recipe::matrix, sd, h + "self_attn.k_proj.weight", {kv, E});
        add(g + "attn_k_norm.weight", {D}, Q35Recipe::norm_one_plus, 0, h + "self_attn.k_norm.weight", {D});
        add(g + "attn_v.weight", {E, kv}, Q35Recipe::matrix, sd, h + "self_attn.v_proj.weight", {kv, E});
        add(g + "attn_output.weight", {q, E}, Q35Recipe::residual_out, 1.0f / std::sqrt(float(q)),
            h + "self_attn.o_proj.weight", {E, q});
    }

    void gated_delta_net(const std::string& g, const std::string& h) {
        const int64_t E = s_.n_embd, Nv = s_.linear_n_v_heads, dv = s_.linear_d_v;
        const int64_t kd = s_.linear_key_dim(), vd = s_.linear_value_dim(), cd = s_.linear_conv_dim();
        const int64_t K = s_.linear_conv_kernel;
        const float sd = 1.0f / std::sqrt(float(E));
        const std::string a = h + "linear_attn.";
        add(g + "attn_qkv.weight", {E, cd}, Q35Recipe::matrix, sd, a + "in_proj_qkv.weight", {cd, E});
        permute(Q35Perm::rows, 2 * kd, dv);  // only the V rows move
        last().qk_rows = kd;
        add(g + "attn_gate.weight", {E, vd}, Q35Recipe::matrix, sd, a + "in_proj_z.weight", {vd, E});
        permute(Q35Perm::rows, 0, dv);
        add(g + "ssm_beta.weight", {E, Nv}, Q35Recipe::matrix, sd, a + "in_proj_b.weight", {Nv, E});
        permute(Q35Perm::rows, 0, 1);
        add(g + "ssm_alpha.weight", {E, Nv}, Q35Recipe::matrix, sd, a + "in_proj_a.weight", {Nv, E});
        permute(Q35Perm::rows, 0, 1);
        add(g + "ssm_a", {Nv}, Q35Recipe::a_log, 0, a + "A_log", {Nv});
        permute(Q35Perm::cols, 0, 1);
        add(g + "ssm_dt.bias", {Nv}, Q35Recipe::dt_bias, 0, a + "dt_bias", {Nv});
        permute(Q35Perm::cols, 0, 1);
        // HF conv1d [conv_dim, 1, K]; the converter squeezes it to GGUF {K, conv_dim}, F32.
        add(g + "ssm_conv1d.weight", {K, cd}, Q35Recipe::matrix, kConvSigma, a + "conv1d.weight", {cd, 1, K});
        permute(Q35Perm::rows, 2 * kd, dv);
        last().qk_rows = kd;
        last().force_f32 = true;
        add(g + "ssm_norm.weight", {dv}, Q35Recipe::norm_plain, 0, a + "norm.weight", {dv});
        add(g + "ssm_out.weight", {vd, E}, Q35Recipe::residual_out, 1.0f / std::sqrt(float(vd)),
            a + "out_proj.weight", {E, vd});
        permute(Q35Perm::cols, 0, dv);
    }

    void dense_ffn(const std::string& g, const std::string& h) {
        const int64_t E = s_.n_embd, F = s_.n_ff;
        const float sd = 1.0f / std::sqrt(float(E));
        add(g + "ffn_gate.weight", {E, F}, Q35Recipe::matrix, sd, h + "mlp.gate_proj.weight", {F, E});
        add(g + "ffn_up.weight", {E, F}, Q35Recipe::matrix, sd, h + "mlp.up_proj.weight", {F, E});
        add(g + "ffn_down.weight", {F, E}, Q35Recipe::residual_out, 1.0f / std::sqrt(float(F)),
            h + "mlp.down_proj.weight", {E, F});
    }

    void moe_ffn(const std::string& g, const std::string& h, bool fused) {
        const int64_t E = s_.n_embd, X = s_.n_expert, I = s_.n_ff_exp, S = s_.n_ff_shexp;
        const float sd = 1.0f / std::sqrt(float(E));
        add(g + "ffn_gate_inp.weight", {E, X}, Q35Recipe::matrix, sd, h + "mlp.gate.weight", {X, E});
        last().force_f32 = true;
        // Experts: one 3-D GGUF tensor each, [X][I][E] row-major; HF per expert or fused.
        const size_t gate = add(g + "ffn_gate_exps.weight", {E, I, X}, Q35Recipe::matrix, sd, "", {});
        const size_t up = add(g + "ffn_up_exps.weight", {E, I, X}, Q35Recipe::matrix, sd, "", {});
        const size_t down = add(g + "ffn_down_exps.weight", {I, E, X}, Q35Recipe::residual_out,
                                1.0f / std::sqrt(float(I)), "", {});
        if (fused) {
            Qwen35HfTensor gu{h + "mlp.experts.gate_up_proj", {X, 2 * I, E}, {}};
            for (int64_t e = 0; e < X; ++e) {  // gate first, then up, per expert
                gu.segments.push_back({gate, e * I, (e + 1) * I});
                gu.segments.push_back({up, e * I, (e + 1) * I});
            }
            t_.hf.push_back(std::move(gu));
            t_.hf.push_back({h + "mlp.experts.down_proj", {X, E, I}, {{down, 0, X * E}}});
        } else {
            for (int64_t e = 0; e < X; ++e) {
                const std::string x = h + "mlp.experts." + std::to_string(e) + ".";
                t_.hf.push_back({x + "gate_proj.weight", {I, E}, {{gate, e * I, (e + 1) * I}}});
                t_.hf.push_back({x + "up_proj.weight", {I, E}, {{up, e * I, (e + 1) * I}}});
                t_.hf.push_back({x + "down_proj.weight", {E, I}, {{down, e * E, (e + 1) * E}}});
            }
        }
        add(g + "ffn_gate_shexp.weight", {E, S}, Q35Recipe::matrix, sd, h + "mlp.shared_expert.gate_proj.weight", {S, E});
        add(g + "ffn_up_shexp.weight", {E, S}, Q35Recipe::matrix, sd, h + "mlp.shared_expert.up_proj.weight", {S, E});
        add(g + "ffn_down_shexp.weight", {S, E}, Q35Recipe::residual_out, 1.0f / std::sqrt(float(S)),
            h + "mlp.shared_expert.down_proj.weight", {E, S});
        // [1, H] in HF; the converter keeps the 2-D shape ({H, 1}) and forces F32.
        add(g + "ffn_gate_inp_shexp.weight", {E, 1}, Q35Recipe::matrix, sd, h + "mlp.shared_expert_gate.weight", {1, E});
        last().force_f32 = true;
    }

    void ffn(const std::string& g, const std::string& h, bool fused) {
        if (s_.is_moe())
            moe_ffn(g, h, fused);
        else
            dense_ffn(g, h);
    }

    Qwen35Table build() {
        const int64_t E = s_.n_embd, V = s_.n_vocab;
        const float sd_embd = 2.0f / std::sqrt(float(E));
        const std::string lm = "model.language_model.";
        add("token_embd.weight", {E, V}, Q35Recipe::embed, sd_embd, lm + "embed_tokens.weight", {V, E});
        for (int il = 0; il < s_.n_layer; ++il) {
            const std::string g = "blk." + std::to_string(il) + ".";
            const std::string h = lm + "layers." + std::to_string(il) + ".";
            add(g + "attn_norm.weight", {E}, Q35Recipe::norm_one_plus, 0, h + "input_layernorm.weight", {E});
            if (s_.is_full_attention(il))
                attention(g, h);
            else
                gated_delta_net(g, h);
            // post_attention_layernorm is the pre-FFN norm; llama.cpp calls it post_attention_norm.
            add(g + "post_attention_norm.weight", {E}, Q35Recipe::norm_one_plus, 0,
                h + "post_attention_layernorm.weight", {E});
            ffn(g, h, o_.hf_fused_experts);
        }
        if (qwen35_has_mtp(s_, o_)) {
            const int il = s_.n_layer;
            const std::string g = "blk." + std::to_string(il) + ".";
            const std::string h = "mtp.layers.0.";
            add(g + "nextn.eh_proj.weight", {2 * E, E}, Q35Recipe::mtp_fc, 1.0f / std::sqrt(float(2 * E)), "mtp.fc.weight",
                {E, 2 * E});
            add(g + "nextn.enorm.weight", {E}, Q35Recipe::norm_one_plus, 0, "mtp.pre_fc_norm_embedding.weight", {E});
            add(g + "nextn.hnorm.weight", {E}, Q35Recipe::norm_one_plus, 0, "mtp.pre_fc_norm_hidden.weight", {E});
            add(g + "attn_norm.weight", {E}, Q35Recipe::norm_one_plus, 0, h + "input_layernorm.weight", {E});
            attention(g, h);
            add(g + "post_attention_norm.weight", {E}, Q35Recipe::norm_one_plus, 0, h + "post_attention_layernorm.weight",
                {E});
            ffn(g, h, /*fused=*/false);  // released MoE checkpoints keep the MTP experts per expert
            add(g + "nextn.shared_head_norm.weight", {E}, Q35Recipe::norm_one_plus, 0, "mtp.norm.weight", {E});
        }
        add("output_norm.weight", {E}, Q35Recipe::norm_one_plus, 0, lm + "norm.weight", {E});
        if (!qwen35_is_tied(s_, o_)) add("output.weight", {E, V}, Q35Recipe::output, sd_embd, "lm_head.weight", {V, E});
        return std::move(t_);
    }

private:
    const Qwen35Shape& s_;
    const Qwen35SynthOptions& o_;
    Qwen35Table t_;
};

// Index of the HF element that GGUF position i holds along a permuted axis.
int64_t source_index(const Qwen35Param& p, const Qwen35Shape& s, int64_t i) {
    if (i < p.perm_offset) return i;
    const int64_t k = i - p.perm_offset;
    const int64_t head = k / p.perm_head_dim, within = k % p.perm_head_dim;
    const int32_t src = qwen35_tiled_to_grouped(int32_t(head), s.linear_n_k_heads, s.linear_n_v_heads);
    return p.perm_offset + int64_t(src) * p.perm_head_dim + within;
}

SynthParam as_synth_param(const Qwen35Param& p, ParamRole role, float sigma) {
    SynthParam q;
    q.gguf_name = p.gguf_name;
    q.rows = p.rows;
    q.cols = p.cols;
    q.role = role;
    q.sigma = sigma;
    return q;
}

float round_to(float v, DType t) {
    if (t == DType::F16) return round_f16(v);
    if (t == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
    return v;
}

// k rows = c * (the q row qk_rows above) + sqrt(1 - c^2) * (their own values), then rounded.
void correlated_qk_rows(const Qwen35Param& p, const Qwen35Gen& g, int64_t r0, int64_t r1, float* dst) {
    WeightRecipe unrounded = g.recipe;
    unrounded.round_to = DType::F32;
    const SynthParam q = as_synth_param(p, ParamRole::matrix, p.sigma);
    fill_rows(q, unrounded, r0, r1, dst);
    const float c = kQkCorrelation, c_own = std::sqrt(1.0f - c * c);
    std::vector<float> qrow(static_cast<size_t>(p.cols));
    for (int64_t r = std::max(r0, p.qk_rows); r < std::min(r1, 2 * p.qk_rows); ++r) {
        fill_rows(q, unrounded, r - p.qk_rows, r - p.qk_rows + 1, qrow.data());
        float* d = dst + (r - r0) * p.cols;
        for (int64_t col = 0; col < p.cols; ++col) d[col] = c * qrow[size_t(col)] + c_own * d[col];
    }
    const int64_t n = (r1 - r0) * p.cols;
    for (int64_t i = 0; i < n; ++i) dst[i] = round_to(dst[i], g.recipe.round_to);
}

}  // namespace

Qwen35Table qwen35_table(const Qwen35Shape& s, const Qwen35SynthOptions& o) { return TableBuilder(s, o).build(); }

void qwen35_hf_rows(const Qwen35Param& p, const Qwen35Gen& g, int64_t r0, int64_t r1, float* dst) {
    const int64_t n = (r1 - r0) * p.cols;
    WeightRecipe unrounded = g.recipe;
    unrounded.round_to = DType::F32;
    auto uniform = [&](float sigma) { fill_rows(as_synth_param(p, ParamRole::matrix, sigma), unrounded, r0, r1, dst); };
    switch (p.recipe) {
        case Q35Recipe::embed: fill_rows(as_synth_param(p, ParamRole::token_embd, p.sigma), g.recipe, r0, r1, dst); return;
        case Q35Recipe::output: fill_rows(as_synth_param(p, ParamRole::output, p.sigma), g.recipe, r0, r1, dst); return;
        case Q35Recipe::matrix:
            if (p.qk_rows > 0) {
                correlated_qk_rows(p, g, r0, r1, dst);
                return;
            }
            fill_rows(as_synth_param(p, ParamRole::matrix, p.sigma), g.recipe, r0, r1, dst);
            return;
        case Q35Recipe::residual_out:
            fill_rows(as_synth_param(p, ParamRole::residual_out, p.sigma), g.recipe, r0, r1, dst);
            return;
        case Q35Recipe::norm_one_plus:
        case Q35Recipe::norm_plain:
            uniform(kNormSpread / kSqrt3);  // uniform in [-0.2, 0.2]
            for (int64_t i = 0; i < n; ++i) {
                const float u = std::nearbyint(dst[i] * kNormGrid) / kNormGrid;
                // u and 1 + u are exact in every float type; the plain weight is stored as 1 + u.
                dst[i] = p.recipe == Q35Recipe::norm_plain ? round_to(1.0f + u, g.recipe.round_to) : u;
            }
            return;
        case Q35Recipe::a_log:
            uniform(1.0f / kSqrt3);  // uniform in [-1, 1]
            for (int64_t i = 0; i < n; ++i) dst[i] = round_to(kALogMid + kALogHalf * dst[i], g.recipe.round_to);
            return;
        case Q35Recipe::dt_bias:
            uniform(1.0f / kSqrt3);
            for (int64_t i = 0; i < n; ++i) dst[i] = round_to(kDtMid + kDtHalf * dst[i], g.recipe.round_to);
            return;
        case Q35Recipe::mtp_fc:
            if (!g.recipe.repeating) {
                fill_rows(as_synth_param(p, ParamRole::matrix, p.sigma), g.recipe, r0, r1, dst);
                return;
            }
            // [I | I/4]: z = enorm(embed(t)) + hnorm(h) / 4 (see Qwen35SynthOptions::repeating).
            std::fill(dst, dst + n, 0.0f);
            for (int64_t r = r0; r < r1; ++r) {
                float* row = dst + (r - r0) * p.cols;
                row[r] = 1.0f;
                row[r + p.cols / 2] = kMtpHiddenGain;
            }
            return;
    }
}

void qwen35_gguf_rows(const Qwen35Param& p, const Qwen35Gen& g, int64_t r0, int64_t r1, float* dst) {
    const int64_t cols = p.cols;
    if (p.perm == Q35Perm::rows) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t src = source_index(p, *g.shape, r);
            qwen35_hf_rows(p, g, src, src + 1, dst + (r - r0) * cols);
        }
    } else {
        qwen35_hf_rows(p, g, r0, r1, dst);
    }
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
        float* d = dst + (r - r0) * cols;
        if (p.perm == Q35Perm::cols) {
            std::copy(d, d + cols, row.begin());
            for (int64_t c = 0; c < cols; ++c) d[c] = row[size_t(source_index(p, *g.shape, c))];
        }
        if (p.recipe == Q35Recipe::norm_one_plus)
            for (int64_t c = 0; c < cols; ++c) d[c] = 1.0f + d[c];  // the converter's norm shift
        if (p.recipe == Q35Recipe::a_log)
            for (int64_t c = 0; c < cols; ++c) d[c] = -std::exp(d[c]);  // computed in f32, as the converter
    }
}

DType qwen35_gguf_type(const Qwen35Param& p, DType weight_type) {
    if (p.force_f32) return DType::F32;
    return gguf_row_type(weight_type, p.cols);
}

void qwen35_encode_rows(int64_t rows, int64_t cols, DType t, int n_threads, uint8_t* dst, const Qwen35RowFn& fill) {
    const uint64_t rb = row_bytes(t, uint64_t(cols));
    auto work = [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(static_cast<size_t>(std::min(kRowsPerBatch, r1 - r0) * cols));
        for (int64_t b = r0; b < r1; b += kRowsPerBatch) {
            const int64_t e = std::min(r1, b + kRowsPerBatch);
            fill(b, e, buf.data());
            for (int64_t r = b; r < e; ++r) quantize_row(t, buf.data() + (r - b) * cols, dst + uint64_t(r) * rb, cols);
        }
    };
    const int64_t n_workers = std::clamp<int64_t>(n_threads, 1, std::max<int64_t>(1, rows / kRowsPerBatch));
    if (n_workers == 1) {
        work(0, rows);
        return;
    }
    std::vector<std::thread> threads;
    const int64_t per = (rows + n_workers - 1) / n_workers;
    for (int64_t w = 0; w < n_workers; ++w) {
        const int64_t r0 = w * per, r1 = std::min(rows, r0 + per);
        if (r0 < r1) threads.emplace_back(work, r0, r1);
    }
    for (std::thread& th : threads) th.join();
}

}  // namespace tdm::synth
