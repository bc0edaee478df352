// SPDX-License-Identifier: Apache-2.0
// host/synth/synth_weights.cpp: the value recipes (see synth_weights.h).
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
#include <thread>

namespace tdm::synth {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr float kSqrt3 = 1.7320508075688772f;
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

uint64_t value_key(const WeightRecipe& r, const SynthParam& p) { return mix64(r.seed ^ fnv1a(p.gguf_name)); }
uint64_t noise_key(const WeightRecipe& r, const SynthParam& p) {
    return mix64(r.perturbation_seed ^ fnv1a(p.gguf_name) ^ 0x6e6f697365ULL);
}
uint64_t code_key(const WeightRecipe& r) { return mix64(r.seed ^ fnv1a("repeat-code")); }

}  // namespace

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

void fill_rows(const SynthParam& p, const WeightRecipe& r, int64_t r0, int64_t r1, float* dst) {
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

void encode_param(const SynthParam& p, const WeightRecipe& r, DType t, uint8_t* dst) {
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

}  // namespace tdm::synth
