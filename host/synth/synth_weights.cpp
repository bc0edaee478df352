// host/synth/synth_weights.cpp: the Qwen3 parameter table and the value recipes
// (see synth_weights.h and qwen3_synth.h).
//
// Values come from splitmix64 used as a counter-based generator: element i of a tensor is a
// hash of (stream key, i), where the key hashes the seed and the tensor's GGUF name. One 64-bit
// hash gives two uniform values. This is ~1 ns per element, parallel without coordination, and
// makes every value independent of thread count and of which other tensors exist. Uniform
// rather than normal values: the runtime only needs plausible magnitudes, and a per-element
// Box-Muller or std::normal_distribution would dominate the 0.6b build time.
#include "synth/synth_weights.h"

#include "common/fp16.h"
#include "common/quant.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace tdm::synth {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;     // norm weights are 1 +- kNormSpread
constexpr float kRepeatLogit = 16.0f;   // repeating mode: logit of the successor, about
constexpr int64_t kRowsPerBatch = 64;   // rows generated per step of a worker

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    return h;
}

// The n-th output of splitmix64 started at `key`.
uint64_t stream_at(uint64_t key, uint64_t n) { return mix64(key + (n + 1) * kGolden); }

float to_unit(uint32_t bits) { return float(int32_t(bits)) * (1.0f / 2147483648.0f); }  // [-1, 1]

// Uniform values of elements [i0, i0 + n) of stream `key`: element i is half (i & 1) of output i/2.
void uniform_range(uint64_t key, uint64_t i0, int64_t n, float* out) {
    uint64_t i = i0;
    int64_t k = 0;
    auto one = [&](uint64_t idx) {
        const uint64_t h = stream_at(key, idx >> 1);
        return to_unit((idx & 1) ? uint32_t(h >> 32) : uint32_t(h));
    };
    if (n > 0 && (i & 1)) out[k++] = one(i++);
    for (; k + 1 < n; k += 2, i += 2) {
        const uint64_t h = stream_at(key, i >> 1);
        out[k] = to_unit(uint32_t(h));
        out[k + 1] = to_unit(uint32_t(h >> 32));
    }
    if (k < n) out[k] = one(i);
}

// Repeating mode: the +-1 code of text token t, n values. 64 signs per hash.
void code_row(uint64_t key, int64_t t, int64_t n, float scale, float* out) {
    const uint64_t base = uint64_t(t) * uint64_t(n);
    for (int64_t c = 0; c < n; ++c) {
        const uint64_t idx = base + uint64_t(c);
        const uint64_t h = stream_at(key, idx >> 6);
        out[c] = ((h >> (idx & 63)) & 1) ? scale : -scale;
    }
}

uint64_t value_key(const WeightRecipe& r, const Qwen3Param& p) { return mix64(r.seed ^ fnv1a(p.gguf_name)); }
uint64_t noise_key(const WeightRecipe& r, const Qwen3Param& p) {
    return mix64(r.perturbation_seed ^ fnv1a(p.gguf_name) ^ 0x6e6f697365ULL);
}
uint64_t code_key(const WeightRecipe& r) { return mix64(r.seed ^ fnv1a("repeat-code")); }

Qwen3Param make(std::string gguf, std::string hf, int64_t rows, int64_t cols, ParamRole role, float sigma) {
    Qwen3Param p;
    p.gguf_name = std::move(gguf);
    p.hf_name = std::move(hf);
    p.rows = rows;
    p.cols = cols;
    p.is_vector = role == ParamRole::norm;
    p.role = role;
    p.sigma = sigma;
    return p;
}

}  // namespace

std::vector<Qwen3Param> qwen3_params(const Qwen3Shape& s, bool tied, float residual_decay) {
    const float sd_embd = 1.0f / std::sqrt(float(s.n_embd));
    const float sd_attn_out = 1.0f / std::sqrt(float(s.n_head * s.head_dim));
    const float sd_ff = 1.0f / std::sqrt(float(s.n_ff));
    const float sd_norm = kNormSpread / kSqrt3;
    const int64_t q_rows = int64_t(s.n_head) * s.head_dim;
    const int64_t kv_rows = int64_t(s.n_head_kv) * s.head_dim;

    std::vector<Qwen3Param> ps;
    ps.push_back(make("token_embd.weight", "model.embed_tokens.weight", s.n_vocab, s.n_embd, ParamRole::token_embd,
                      2.0f * sd_embd));
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = "model.layers." + std::to_string(il) + ".";
        const float decay = std::pow(residual_decay, float(il));
        ps.push_back(make(g + "attn_norm.weight", h + "input_layernorm.weight", 1, s.n_embd, ParamRole::norm, sd_norm));
        ps.push_back(make(g + "attn_q.weight", h + "self_attn.q_proj.weight", q_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(make(g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", 1, s.head_dim, ParamRole::norm, sd_norm));
        ps.push_back(make(g + "attn_k.weight", h + "self_attn.k_proj.weight", kv_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(make(g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", 1, s.head_dim, ParamRole::norm, sd_norm));
        ps.push_back(make(g + "attn_v.weight", h + "self_attn.v_proj.weight", kv_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(make(g + "attn_output.weight", h + "self_attn.o_proj.weight", s.n_embd, q_rows,
                          ParamRole::residual_out, sd_attn_out * decay));
        ps.push_back(make(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", 1, s.n_embd, ParamRole::norm,
                          sd_norm));
        ps.push_back(make(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", s.n_ff, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(make(g + "ffn_up.weight", h + "mlp.up_proj.weight", s.n_ff, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(make(g + "ffn_down.weight", h + "mlp.down_proj.weight", s.n_embd, s.n_ff, ParamRole::residual_out,
                          sd_ff * decay));
    }
    ps.push_back(make("output_norm.weight", "model.norm.weight", 1, s.n_embd, ParamRole::norm, sd_norm));
    if (!tied)
        ps.push_back(make("output.weight", "lm_head.weight", s.n_vocab, s.n_embd, ParamRole::output, 2.0f * sd_embd));
    return ps;
}

int32_t repeat_successor(int32_t t, int32_t n_text, int32_t period) {
    const int32_t g = t / period * period;
    const int32_t len = std::min(period, n_text - g);
    return g + (t - g + 1) % len;
}

int32_t repeat_predecessor(int32_t t, int32_t n_text, int32_t period) {
    const int32_t g = t / period * period;
    const int32_t len = std::min(period, n_text - g);
    return g + (t - g + len - 1) % len;
}

void fill_rows(const Qwen3Param& p, const WeightRecipe& r, int64_t r0, int64_t r1, float* dst) {
    const int64_t n = p.cols;
    const uint64_t key = value_key(r, p);
    const float amp = kSqrt3 * p.sigma;  // uniform on [-amp, amp] has std sigma
    const float repeat_scale = kRepeatLogit / float(n);

    // Noise is relative to the tensor's typical magnitude; a zero tensor stays zero, so a
    // repeating draft's residual stream is the embedding too.
    float noise_sd = r.perturbation * p.sigma;
    if (p.role == ParamRole::norm) noise_sd = r.perturbation;
    if (r.repeating && p.role == ParamRole::residual_out) noise_sd = 0.0f;
    if (r.repeating && p.role == ParamRole::token_embd) noise_sd = r.perturbation;
    if (r.repeating && p.role == ParamRole::output) noise_sd = r.perturbation * repeat_scale;
    std::vector<float> noise(noise_sd > 0.0f ? static_cast<size_t>(n) : 0);

    for (int64_t row = r0; row < r1; ++row) {
        float* out = dst + (row - r0) * n;
        const uint64_t first = uint64_t(row) * uint64_t(n);
        if (p.role == ParamRole::norm) {
            uniform_range(key, first, n, out);
            for (int64_t c = 0; c < n; ++c) out[c] = 1.0f + amp * out[c];
        } else if (r.repeating && p.role == ParamRole::residual_out) {
            std::fill(out, out + n, 0.0f);
        } else if (r.repeating && p.role == ParamRole::token_embd) {
            code_row(code_key(r), row % r.n_text, n, 1.0f, out);
        } else if (r.repeating && p.role == ParamRole::output) {
            if (row < r.n_text)
                code_row(code_key(r), repeat_predecessor(int32_t(row), r.n_text, r.repeat_period), n, repeat_scale, out);
            else
                std::fill(out, out + n, 0.0f);
        } else {
            uniform_range(key, first, n, out);
            for (int64_t c = 0; c < n; ++c) out[c] *= amp;
        }
        if (noise_sd > 0.0f) {
            uniform_range(noise_key(r, p), first, n, noise.data());
            for (int64_t c = 0; c < n; ++c) out[c] += kSqrt3 * noise_sd * noise[size_t(c)];
        }
        if (r.round_to == DType::F16)
            for (int64_t c = 0; c < n; ++c) out[c] = round_f16(out[c]);
        else if (r.round_to == DType::BF16)
            for (int64_t c = 0; c < n; ++c) out[c] = bf16_to_f32(f32_to_bf16(out[c]));
    }
}

void encode_param(const Qwen3Param& p, const WeightRecipe& r, DType t, uint8_t* dst) {
    const uint64_t rb = row_bytes(t, uint64_t(p.cols));
    auto work = [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(static_cast<size_t>(std::min(kRowsPerBatch, r1 - r0) * p.cols));
        for (int64_t b = r0; b < r1; b += kRowsPerBatch) {
            const int64_t e = std::min(r1, b + kRowsPerBatch);
            fill_rows(p, r, b, e, buf.data());
            for (int64_t row = b; row < e; ++row)
                quantize_row(t, buf.data() + (row - b) * p.cols, dst + uint64_t(row) * rb, p.cols);
        }
    };
    const int64_t n_workers = std::clamp<int64_t>(r.n_threads, 1, std::max<int64_t>(1, p.rows / kRowsPerBatch));
    if (n_workers == 1) {
        work(0, p.rows);
        return;
    }
    std::vector<std::thread> threads;
    const int64_t per = (p.rows + n_workers - 1) / n_workers;
    for (int64_t w = 0; w < n_workers; ++w) {
        const int64_t r0 = w * per, r1 = std::min(p.rows, r0 + per);
        if (r0 < r1) threads.emplace_back(work, r0, r1);
    }
    for (std::thread& th : threads) th.join();
}

WeightRecipe make_recipe(const Qwen3SynthOptions& opts, int32_t n_text) {
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
