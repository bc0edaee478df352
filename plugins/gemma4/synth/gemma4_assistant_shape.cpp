// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_assistant_shape.cpp: presets, checks, the tensor table, the seed
// and the token ordering of the synthetic Gemma 4 assistants (gemma4_assistant.h). Names follow
// docs/models/gemma4.md §3.2.
#include "gemma4/synth/gemma4_assistant.h"

#include <algorithm>
#include <cmath>

namespace tdm::synth {
namespace {

using LT = Gemma4LayerType;

constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;        // norm weights: 1 +- 0.2
constexpr float kLayerScaleSpread = 0.5f;  // layer_output_scale: 1 +- 0.5
// XORed into the seed: the assistant's tensors share GGUF names with the target's
// (token_embd.weight, blk.0.attn_q.weight, ...), and with the same seed they would start with
// the same values.
constexpr uint64_t kAssistantSalt = 0x61737369'7374616eULL;  // "assistan"
// The plugin's limits (plugins/gemma4/assistant/hparams.cpp): it reads the layer count in
// [1, 64], groups of at most 16 query heads per KV head, a top-k of at most 256 clusters.
constexpr int32_t kMaxLayers = 64;
constexpr int32_t kMaxHeadsPerKv = 16;
constexpr int32_t kMaxTopK = 256;

float inv_sqrt(int64_t n) { return 1.0f / std::sqrt(float(n)); }

struct Own {
    int32_t n_embd, n_head, n_ff;
    bool ordered;
    int32_t n_centroids, top_k;
    float softcap;
};

// The assistant's own fields per target preset. The tiny ones are the tests' writer's
// (tests/models/gemma4/gemma4_tiny_assistant.cpp), so files of either are interchangeable; the released
// ones are docs/models/gemma4.md §3.1's, with 26B's head count and the 26B/31B softcap (unknown there)
// as the development tool this replaces (gemma4-write-assistant) chose them for the benchmarks.
Result<Own> own_fields(std::string_view target) {
    if (target == "tiny-e2b") return Own{32, 4, 64, true, 32, 4, 0.0f};
    if (target == "tiny-31b" || target == "tiny-26b") return Own{32, 4, 64, false, 0, 0, 30.0f};
    if (target == "e2b" || target == "e4b") return Own{256, 4, 2048, true, 2048, 32, 0.0f};
    if (target == "26b-a4b") return Own{1024, 16, 8192, false, 0, 0, 30.0f};
    if (target == "31b") return Own{1024, 32, 8192, false, 0, 0, 30.0f};
    std::string known;
    for (std::string_view n : gemma4_preset_names()) known += (known.empty() ? "" : ", ") + std::string(n);
    return Error::format("unknown gemma4-assistant preset '{}' (known: {}, the target presets)", target, known);
}

class Table {
public:
    explicit Table(std::vector<Gemma4Param>& out) : out_(out) {}

    // A 2-D matrix: HF [rows, cols], GGUF ne {cols, rows}.
    void matrix(std::string gguf, std::string hf, int64_t rows, int64_t cols, ParamRole role, float sigma) {
        add(std::move(gguf), std::move(hf), rows, cols, role, sigma).hf_shape = {rows, cols};
    }
    // A 1-D vector around 1 (norms, scales), F32 in GGUF.
    void vector(std::string gguf, std::string hf, int64_t n, float spread = kNormSpread) {
        Gemma4Param& p = add(std::move(gguf), std::move(hf), 1, n, ParamRole::norm, spread / kSqrt3);
        p.param.is_vector = true;
        p.gguf_f32 = true;
        p.gguf_ne = {n};
        p.hf_shape = {n};
    }

private:
    Gemma4Param& add(std::string gguf, std::string hf, int64_t rows, int64_t cols, ParamRole role, float sigma) {
        Gemma4Param p;
        p.param.gguf_name = std::move(gguf);
        p.param.hf_name = std::move(hf);
        p.param.rows = rows;
        p.param.cols = cols;
        p.param.role = role;
        p.param.sigma = sigma;
        p.gguf_ne = {cols, rows};
        out_.push_back(std::move(p));
        return out_.back();
    }
    std::vector<Gemma4Param>& out_;
};

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

Result<Gemma4AssistantShape> gemma4_assistant_preset(std::string_view target_preset) {
    const Own own = TDM_TRY(own_fields(target_preset));
    Gemma4AssistantShape a;
    a.target = TDM_TRY(gemma4_preset(target_preset));
    a.n_embd = own.n_embd;
    a.n_head = own.n_head;
    a.n_ff = own.n_ff;
    a.layer_types = {LT::sliding, LT::sliding, LT::sliding, LT::full};
    a.ordered = own.ordered;
    a.n_centroids = own.n_centroids;
    a.n_centroids_top_k = own.top_k;
    a.final_logit_softcapping = own.softcap;
    return a;
}

Status validate_gemma4_assistant(const Gemma4AssistantShape& a, const Gemma4SynthOptions& o) {
    TDM_TRY_CTX(validate_gemma4(a.target, o), "gemma4-assistant: its target");
    for (auto [field, v] : {std::pair{"n_embd", a.n_embd}, std::pair{"n_head", a.n_head}, std::pair{"n_ff", a.n_ff}})
        if (v <= 0) return Error::format("gemma4-assistant shape: {} must be positive, got {}", field, v);
    if (a.n_layer() < 1 || a.n_layer() > kMaxLayers)
        return Error::format("gemma4-assistant shape: {} layers, must be 1 to {}", a.n_layer(), kMaxLayers);
    for (int il = 0; il < a.n_layer(); ++il) {
        const int32_t kv = a.n_head_kv(il);
        if (a.n_head % kv != 0 || a.n_head / kv > kMaxHeadsPerKv)
            return Error::format("gemma4-assistant shape: {} heads cannot share the target's {} KV heads of {} "
                                 "layers (groups of at most {})",
                                 a.n_head, kv, a.is_swa(il) ? "sliding" : "full", kMaxHeadsPerKv);
    }
    if (!(a.final_logit_softcapping >= 0.0f) || !std::isfinite(a.final_logit_softcapping))
        return Error::format("gemma4-assistant shape: final_logit_softcapping must be >= 0, got {}",
                             a.final_logit_softcapping);
    if (a.ordered) {
        // the plugin's masked head reads clusters in rows of a multiple of 4 tokens
        if (a.n_centroids <= 0 || a.n_vocab() % a.n_centroids != 0 || (a.n_vocab() / a.n_centroids) % 4 != 0)
            return Error::format("gemma4-assistant shape: {} centroids must divide the {}-token vocabulary in "
                                 "clusters of a multiple of 4 tokens",
                                 a.n_centroids, a.n_vocab());
        if (a.n_centroids_top_k < 1 || a.n_centroids_top_k > std::min(a.n_centroids, kMaxTopK))
            return Error::format("gemma4-assistant shape: top {} of {} centroids (1 to {})", a.n_centroids_top_k,
                                 a.n_centroids, std::min(a.n_centroids, kMaxTopK));
    } else if (a.n_centroids != 0 || a.n_centroids_top_k != 0) {
        return Error::format("gemma4-assistant shape: {} centroids (top {}) without the ordered head", a.n_centroids,
                             a.n_centroids_top_k);
    }
    return {};
}

std::vector<Gemma4Param> gemma4_assistant_params(const Gemma4AssistantShape& a) {
    std::vector<Gemma4Param> ps;
    Table t(ps);
    const int64_t Ha = a.n_embd, Hb = a.n_embd_backbone();
    const float sd = inv_sqrt(Ha);
    // The tied draft head: std 2/sqrt(Ha) over a normed row gives logits of std ~2.
    t.matrix("token_embd.weight", "model.embed_tokens.weight", a.n_vocab(), Ha, ParamRole::token_embd, 2.0f * sd);
    for (int il = 0; il < a.n_layer(); ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = "model.layers." + std::to_string(il) + ".";
        const int64_t D = a.head_dim(il), q_rows = int64_t(a.n_head) * D;
        // Q only: K and V are the target's cache entries.
        t.vector(g + "attn_norm.weight", h + "input_layernorm.weight", Ha);
        t.matrix(g + "attn_q.weight", h + "self_attn.q_proj.weight", q_rows, Ha, ParamRole::matrix, sd);
        t.vector(g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", D);
        t.matrix(g + "attn_output.weight", h + "self_attn.o_proj.weight", Ha, q_rows, ParamRole::residual_out,
                 inv_sqrt(q_rows));
        t.vector(g + "post_attention_norm.weight", h + "post_attention_layernorm.weight", Ha);
        t.vector(g + "ffn_norm.weight", h + "pre_feedforward_layernorm.weight", Ha);
        t.matrix(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", a.n_ff, Ha, ParamRole::matrix, sd);
        t.matrix(g + "ffn_up.weight", h + "mlp.up_proj.weight", a.n_ff, Ha, ParamRole::matrix, sd);
        t.matrix(g + "ffn_down.weight", h + "mlp.down_proj.weight", Ha, a.n_ff, ParamRole::residual_out,
                 inv_sqrt(a.n_ff));
        t.vector(g + "post_ffw_norm.weight", h + "post_feedforward_layernorm.weight", Ha);
        // A buffer, not a parameter: no ".weight" in HF.
        t.vector(g + "layer_output_scale.weight", h + "layer_scalar", 1, kLayerScaleSpread);
    }
    t.vector("output_norm.weight", "model.norm.weight", Ha);
    // Its input is [target embedding * sqrt(Hb) (rms ~2), target post-norm hidden (rms ~1)].
    t.matrix("nextn.pre_projection.weight", "pre_projection.weight", Ha, 2 * Hb, ParamRole::matrix,
             inv_sqrt(2 * Hb));
    t.matrix("nextn.post_projection.weight", "post_projection.weight", Hb, Ha, ParamRole::matrix, sd);
    if (a.ordered)
        t.matrix("masked_embd_centroids.weight", "masked_embedding.centroids.weight", a.n_centroids, Ha,
                 ParamRole::matrix, 2.0f * sd);
    return ps;
}

WeightRecipe gemma4_assistant_recipe(const Gemma4SynthOptions& opts) {
    WeightRecipe r = gemma4_recipe(opts);
    r.seed = opts.seed ^ kAssistantSalt;
    return r;
}

std::vector<int64_t> gemma4_assistant_ordering(const Gemma4AssistantShape& a, uint64_t seed) {
    // Fisher-Yates driven by splitmix64 over a stream of its own (the modulo bias, < 2^-40 for
    // a 2^24 vocabulary, is irrelevant here).
    const uint64_t key = mix64(seed ^ kAssistantSalt ^ 0x6f72646572696e67ULL);  // "ordering"
    std::vector<int64_t> ids(size_t(a.n_vocab()));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i);
    for (size_t i = ids.size(); i > 1; --i) {
        const uint64_t r = mix64(key + uint64_t(i) * 0x9e3779b97f4a7c15ULL);
        std::swap(ids[i - 1], ids[size_t(r % i)]);
    }
    return ids;
}

std::string gemma4_assistant_layer_pattern(const Gemma4AssistantShape& a) {
    std::string out;
    for (int il = 0; il < a.n_layer(); ++il) {
        if (!out.empty()) out += ' ';
        out += a.is_swa(il) ? 'S' : 'F';
    }
    return out;
}

}  // namespace tdm::synth
