// SPDX-License-Identifier: Apache-2.0
// tests/support/glm_vision_reference.cpp: the GLM-OCR vision encoder reference (see the header).
// Each step names the HF code it reproduces; the element orders of every HF view/permute are
// spelled out where they are consumed. Activations are kept in double throughout.
#include "support/glm_vision_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tdm::ref {
namespace {

using Dbl = std::vector<double>;

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// nn.Linear: y[r][o] = b[o] + sum_i W[o][i] x[r][i], W row-major [out][in]; b may be null.
Dbl linear(const Dbl& x, int64_t in, const Floats& w, int64_t out, const Floats* b) {
    const int64_t n = int64_t(x.size()) / in;
    Dbl y(size_t(n * out));
    for (int64_t r = 0; r < n; ++r) {
        const double* xr = x.data() + r * in;
        for (int64_t o = 0; o < out; ++o) {
            const float* wr = w.data() + o * in;
            double acc = b ? double((*b)[size_t(o)]) : 0.0;
            for (int64_t i = 0; i < in; ++i) acc += double(wr[i]) * xr[i];
            y[size_t(r * out + o)] = acc;
        }
    }
    return y;
}

// GlmOcrRMSNorm over each run of `cols` values: x / sqrt(mean(x^2) + eps) * w.
void rms_norm_rows(Dbl& x, int64_t cols, const Floats& w, double eps) {
    for (size_t r = 0; r < x.size(); r += size_t(cols)) {
        double ss = 0.0;
        for (int64_t i = 0; i < cols; ++i) ss += x[r + size_t(i)] * x[r + size_t(i)];
        const double inv = 1.0 / std::sqrt(ss / double(cols) + eps);
        for (int64_t i = 0; i < cols; ++i) x[r + size_t(i)] = x[r + size_t(i)] * inv * double(w[size_t(i)]);
    }
}

// torch.nn.LayerNorm (biased variance): (x - mean) / sqrt(var + eps) * w + b.
void layer_norm_rows(Dbl& x, int64_t cols, const Floats& w, const Floats& b, double eps) {
    for (size_t r = 0; r < x.size(); r += size_t(cols)) {
        double mean = 0.0;
        for (int64_t i = 0; i < cols; ++i) mean += x[r + size_t(i)];
        mean /= double(cols);
        double var = 0.0;
        for (int64_t i = 0; i < cols; ++i) var += (x[r + size_t(i)] - mean) * (x[r + size_t(i)] - mean);
        const double inv = 1.0 / std::sqrt(var / double(cols) + eps);
        for (int64_t i = 0; i < cols; ++i)
            x[r + size_t(i)] = (x[r + size_t(i)] - mean) * inv * double(w[size_t(i)]) + double(b[size_t(i)]);
    }
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }
// nn.GELU() with its default approximate="none".
double gelu_erf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

// down(silu(gate(x)) * up(x)): GlmOcrVisionMlp (biased) and the merger's tail (no biases).
struct SwiGlu {
    const Floats& gate_w;
    const Floats* gate_b;
    const Floats& up_w;
    const Floats* up_b;
    const Floats& down_w;
    const Floats* down_b;
};

Dbl swiglu(const Dbl& x, int64_t in, int64_t mid, const SwiGlu& m) {
    Dbl g = linear(x, in, m.gate_w, mid, m.gate_b);
    const Dbl u = linear(x, in, m.up_w, mid, m.up_b);
    for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
    return linear(g, mid, m.down_w, in, m.down_b);
}

Floats to_float(const Dbl& x) { return Floats(x.begin(), x.end()); }

// Splitmix64: a tiny, well-mixed generator so synthetic weights need no <random> distribution,
// whose output differs between standard libraries.
struct SplitMix {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return double(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }  // [-1, 1)
};

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void check_config(const GlmVisionConfig& cfg) {
    if (cfg.depth < 0 || cfg.hidden <= 0 || cfg.heads <= 0 || cfg.intermediate <= 0 || cfg.out_hidden <= 0 ||
        cfg.in_channels <= 0 || cfg.patch <= 0 || cfg.temporal_patch <= 0 || cfg.merge <= 0)
        throw std::invalid_argument("glm vision config: sizes must be positive");
    if (cfg.hidden % cfg.heads != 0) throw std::invalid_argument("glm vision config: hidden is not a multiple of heads");
    // VisionRotaryEmbedding(head_dim / 2) makes head_dim / 4 frequencies per axis; cat(freqs, freqs)
    // only covers the head when head_dim is a multiple of 4.
    if (cfg.head_dim() % 4 != 0) throw std::invalid_argument("glm vision config: head_dim is not a multiple of 4");
}

// ===== weights ==================================================================================

std::vector<VisionTensorSpec> glm_vision_tensors(const GlmVisionConfig& cfg) {
    check_config(cfg);
    const int64_t D = cfg.hidden, I = cfg.intermediate, O = cfg.out_hidden, MI = cfg.merger_intermediate();
    const int64_t hd = cfg.head_dim(), m = cfg.merge, ps = cfg.patch;
    const std::string p = kGlmVisionPrefix;
    // GlmOcrVisionModel registers patch_embed, rotary_pos_emb (no saved tensors), blocks, merger,
    // downsample, post_layernorm in this order: the state_dict order.
    std::vector<VisionTensorSpec> t = {
        {p + "patch_embed.proj.weight", {D, cfg.in_channels, cfg.temporal_patch, ps, ps}},
        {p + "patch_embed.proj.bias", {D}},  // nn.Conv3d's default bias=True
    };
    for (int i = 0; i < cfg.depth; ++i) {
        const std::string b = p + "blocks." + std::to_string(i) + ".";
        const std::vector<VisionTensorSpec> block = {
            {b + "norm1.weight", {D}},
            {b + "norm2.weight", {D}},
            {b + "attn.qkv.weight", {3 * D, D}},  // attention_bias = true
            {b + "attn.qkv.bias", {3 * D}},
            {b + "attn.proj.weight", {D, D}},
            {b + "attn.proj.bias", {D}},
            {b + "attn.q_norm.weight", {hd}},
            {b + "attn.k_norm.weight", {hd}},
            {b + "mlp.gate_proj.weight", {I, D}},  // GlmOcrVisionMlp(bias=attention_bias)
            {b + "mlp.gate_proj.bias", {I}},
            {b + "mlp.up_proj.weight", {I, D}},
            {b + "mlp.up_proj.bias", {I}},
            {b + "mlp.down_proj.weight", {D, I}},
            {b + "mlp.down_proj.bias", {D}},
        };
        t.insert(t.end(), block.begin(), block.end());
    }
    const std::vector<VisionTensorSpec> tail = {
        {p + "merger.proj.weight", {O, O}},  // GlmOcrVisionPatchMerger: bias=False throughout
        {p + "merger.post_projection_norm.weight", {O}},
        {p + "merger.post_projection_norm.bias", {O}},  // a LayerNorm: it has a bias
        {p + "merger.gate_proj.weight", {MI, O}},
        {p + "merger.up_proj.weight", {MI, O}},
        {p + "merger.down_proj.weight", {O, MI}},
        {p + "downsample.weight", {O, D, m, m}},
        {p + "downsample.bias", {O}},  // nn.Conv2d's default bias=True
        {p + "post_layernorm.weight", {D}},
    };
    t.insert(t.end(), tail.begin(), tail.end());
    return t;
}

void MapVisionWeights::set(const std::string& hf_name, std::vector<int64_t> shape, Floats values) {
    if (int64_t(values.size()) != numel(shape))
        throw std::invalid_argument(hf_name + ": " + std::to_string(values.size()) + " values for shape " +
                                    shape_text(shape));
    tensors_[hf_name] = Tensor{std::move(shape), std::move(values)};
}

const Floats& MapVisionWeights::get(const std::string& hf_name, const std::vector<int64_t>& shape) const {
    const auto it = tensors_.find(hf_name);
    if (it == tensors_.end()) throw std::out_of_range("vision weight missing: " + hf_name);
    if (it->second.shape != shape)
        throw std::invalid_argument(hf_name + " has shape " + shape_text(it->second.shape) + ", the encoder needs " +
                                    shape_text(shape));
    read_.insert(hf_name);
    return it->second.values;
}

Floats& MapVisionWeights::mutable_values(const std::string& hf_name) {
    const auto it = tensors_.find(hf_name);
    if (it == tensors_.end()) throw std::out_of_range("vision weight missing: " + hf_name);
    return it->second.values;
}

MapVisionWeights MapVisionWeights::synthetic(const GlmVisionConfig& cfg, uint64_t seed) {
    MapVisionWeights w;
    for (const VisionTensorSpec& spec : glm_vision_tensors(cfg)) {
        SplitMix rng{seed ^ fnv1a(spec.name)};
        Floats v(size_t(numel(spec.shape)));
        if (ends_with(spec.name, ".bias")) {
            for (float& x : v) x = float(0.1 * rng.uniform());
        } else if (spec.shape.size() == 1) {  // a norm's weight: near 1, so norms keep the scale
            for (float& x : v) x = float(1.0 + 0.1 * rng.uniform());
        } else {  // fan_in = everything but the output dimension, for Linear and conv kernels alike
            const double fan_in = double(numel(std::vector<int64_t>(spec.shape.begin() + 1, spec.shape.end())));
            const double s = 1.0 / std::sqrt(fan_in);
            for (float& x : v) x = float(s * rng.uniform());
        }
        w.set(spec.name, spec.shape, std::move(v));
    }
    return w;
}

// ===== pieces ===================================================================================

std::vector<std::array<int, 2>> glm_vision_positions(int grid_h, int grid_w, int merge) {
    // get_vision_position_ids: arange grids reshaped (h/m, m, w/m, m), transpose(1, 2), flatten:
    // the order (block row, block col, row in block, col in block), which is the processor's.
    const int blocks_w = grid_w / merge;
    std::vector<std::array<int, 2>> pos;
    pos.reserve(size_t(grid_h) * size_t(grid_w));
    for (int n = 0; n < grid_h * grid_w; ++n) {
        const int block = n / (merge * merge), in_block = n % (merge * merge);
        pos.push_back({(block / blocks_w) * merge + in_block / merge, (block % blocks_w) * merge + in_block % merge});
    }
    return pos;
}

Floats glm_vision_patch_embed(const GlmVisionConfig& cfg, const VisionWeights& w, std::span<const float> patches) {
    check_config(cfg);
    const int64_t P = cfg.patch_values(), D = cfg.hidden;
    if (patches.size() % size_t(P) != 0) throw std::invalid_argument("patches: not a whole number of patches");
    // GlmOcrVisionPatchEmbed: view(-1, C, T, ps, ps), Conv3d with kernel = stride = (T, ps, ps)
    // produces one output per patch: the dot product of the patch with each output channel's kernel,
    // both flattened row-major over (channel, temporal, py, px). view(-1, hidden) then gives [N][D].
    const Floats& kernel = w.get(std::string(kGlmVisionPrefix) + "patch_embed.proj.weight",
                                 {D, cfg.in_channels, cfg.temporal_patch, cfg.patch, cfg.patch});
    const Floats& bias = w.get(std::string(kGlmVisionPrefix) + "patch_embed.proj.bias", {D});
    const Dbl x(patches.begin(), patches.end());
    return to_float(linear(x, P, kernel, D, &bias));
}

void glm_vision_rope(const GlmVisionConfig& cfg, int row, int col, std::span<double> head) {
    const int hd = cfg.head_dim(), half = hd / 2, quarter = hd / 4;
    if (int(head.size()) != hd) throw std::invalid_argument("glm_vision_rope: head has the wrong size");
    // GlmOcrVisionRotaryEmbedding(dim = hd/2): inv_freq = 1 / theta^(arange(0, dim, 2) / dim), i.e.
    // quarter frequencies. forward((row, col)) = [row * inv_freq, col * inv_freq] flattened: half
    // angles. emb = cat(angles, angles) pairs dim d with d + half under rotate_half.
    for (int d = 0; d < half; ++d) {
        const int j = d % quarter;
        const double freq = 1.0 / std::pow(cfg.rope_theta, double(2 * j) / double(half));
        const double angle = double(d < quarter ? row : col) * freq;
        const double c = std::cos(angle), s = std::sin(angle);
        const double x1 = head[size_t(d)], x2 = head[size_t(d + half)];
        head[size_t(d)] = x1 * c - x2 * s;         // q * cos + (-q[d + half]) * sin
        head[size_t(d + half)] = x2 * c + x1 * s;  // q * cos + q[d] * sin
    }
}

// ===== the forward ==============================================================================

namespace {

struct BlockWeights {
    const Floats &norm1, &norm2, &qkv_w, &qkv_b, &proj_w, &proj_b, &q_norm, &k_norm;
    const Floats &gate_w, &gate_b, &up_w, &up_b, &down_w, &down_b;
};

BlockWeights block_weights(const GlmVisionConfig& cfg, const VisionWeights& w, int layer) {
    const int64_t D = cfg.hidden, I = cfg.intermediate, hd = cfg.head_dim();
    const std::string b = std::string(kGlmVisionPrefix) + "blocks." + std::to_string(layer) + ".";
    return BlockWeights{
        w.get(b + "norm1.weight", {D}),         w.get(b + "norm2.weight", {D}),
        w.get(b + "attn.qkv.weight", {3 * D, D}), w.get(b + "attn.qkv.bias", {3 * D}),
        w.get(b + "attn.proj.weight", {D, D}),  w.get(b + "attn.proj.bias", {D}),
        w.get(b + "attn.q_norm.weight", {hd}),  w.get(b + "attn.k_norm.weight", {hd}),
        w.get(b + "mlp.gate_proj.weight", {I, D}), w.get(b + "mlp.gate_proj.bias", {I}),
        w.get(b + "mlp.up_proj.weight", {I, D}), w.get(b + "mlp.up_proj.bias", {I}),
        w.get(b + "mlp.down_proj.weight", {D, I}), w.get(b + "mlp.down_proj.bias", {D}),
    };
}

// GlmOcrVisionAttention over all N patches of the image (rows of a [N][D]); returns proj(...).
Dbl attention(const GlmVisionConfig& cfg, const BlockWeights& L, const Dbl& a,
              const std::vector<std::array<int, 2>>& pos) {
    const int64_t D = cfg.hidden, H = cfg.heads, hd = cfg.head_dim(), N = int64_t(pos.size());
    // qkv(x).reshape(N, 3, H, hd): output column c of qkv is (which = c / D, head, dim). permute and
    // unbind give q, k, v as [N][H][hd], i.e. column j < D of each part is head j / hd, dim j % hd.
    const Dbl qkv = linear(a, D, L.qkv_w, 3 * D, &L.qkv_b);
    Dbl q(size_t(N * D)), k(size_t(N * D)), v(size_t(N * D));
    for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < D; ++j) {
            q[size_t(n * D + j)] = qkv[size_t(n * 3 * D + j)];
            k[size_t(n * D + j)] = qkv[size_t(n * 3 * D + D + j)];
            v[size_t(n * D + j)] = qkv[size_t(n * 3 * D + 2 * D + j)];
        }
    // q_norm / k_norm: RMSNorm over each head's hd values, BEFORE the rope.
    rms_norm_rows(q, hd, L.q_norm, cfg.rms_eps);
    rms_norm_rows(k, hd, L.k_norm, cfg.rms_eps);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h) {
            const auto [row, col] = pos[size_t(n)];
            glm_vision_rope(cfg, row, col, std::span<double>(q.data() + (n * H + h) * hd, size_t(hd)));
            glm_vision_rope(cfg, row, col, std::span<double>(k.data() + (n * H + h) * hd, size_t(hd)));
        }
    // Full (non-causal) softmax attention per head, scale hd^-0.5. The output [N][H][hd] is
    // reshaped to [N][D] with column h * hd + d, the layout proj reads.
    const double scale = 1.0 / std::sqrt(double(hd));
    Dbl o(size_t(N * D), 0.0), p(static_cast<size_t>(N));
    for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < N; ++i) {
            const double* qi = q.data() + (i * H + h) * hd;
            double mx = -INFINITY;
            for (int64_t j = 0; j < N; ++j) {
                const double* kj = k.data() + (j * H + h) * hd;
                double dot = 0.0;
                for (int64_t d = 0; d < hd; ++d) dot += qi[d] * kj[d];
                p[size_t(j)] = dot * scale;
                mx = std::max(mx, p[size_t(j)]);
            }
            double sum = 0.0;
            for (double& s : p) sum += (s = std::exp(s - mx));
            double* oi = o.data() + (i * H + h) * hd;
            for (int64_t j = 0; j < N; ++j) {
                const double* vj = v.data() + (j * H + h) * hd;
                for (int64_t d = 0; d < hd; ++d) oi[d] += p[size_t(j)] / sum * vj[d];
            }
        }
    return linear(o, D, L.proj_w, D, &L.proj_b);
}

}  // namespace

GlmVisionStages glm_vision_forward_stages(const GlmVisionConfig& cfg, const VisionWeights& w,
                                          std::span<const float> patches, int grid_h, int grid_w) {
    check_config(cfg);
    const int64_t m = cfg.merge, D = cfg.hidden, O = cfg.out_hidden, I = cfg.intermediate;
    if (grid_h <= 0 || grid_w <= 0 || grid_h % m != 0 || grid_w % m != 0)
        throw std::invalid_argument("glm vision: grid sides must be positive multiples of the merge size");
    const int64_t N = int64_t(grid_h) * grid_w;
    if (int64_t(patches.size()) != N * cfg.patch_values())
        throw std::invalid_argument("glm vision: " + std::to_string(patches.size()) + " values for " +
                                    std::to_string(N) + " patches of " + std::to_string(cfg.patch_values()));
    const std::string p = kGlmVisionPrefix;
    GlmVisionStages out;

    out.embedded = glm_vision_patch_embed(cfg, w, patches);
    Dbl x(out.embedded.begin(), out.embedded.end());
    const std::vector<std::array<int, 2>> pos = glm_vision_positions(grid_h, grid_w, int(m));

    for (int layer = 0; layer < cfg.depth; ++layer) {
        const BlockWeights L = block_weights(cfg, w, layer);
        Dbl a = x;
        rms_norm_rows(a, D, L.norm1, cfg.rms_eps);
        const Dbl att = attention(cfg, L, a, pos);
        for (size_t i = 0; i < x.size(); ++i) x[i] += att[i];
        Dbl mh = x;
        rms_norm_rows(mh, D, L.norm2, cfg.rms_eps);
        const Dbl f = swiglu(mh, D, I, {L.gate_w, &L.gate_b, L.up_w, &L.up_b, L.down_w, &L.down_b});
        for (size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    }
    rms_norm_rows(x, D, w.get(p + "post_layernorm.weight", {D}), cfg.rms_eps);
    out.post_norm = to_float(x);

    // view(-1, m, m, D).permute(0, 3, 1, 2): block b's input image is [D][m][m] with pixel (i, j)
    // = patch b*m*m + i*m + j (the block's patches are consecutive, row-major inside the block).
    // Conv2d with kernel = stride = m gives one output per block: sum over (c, i, j) of
    // W[o][c][i][j] * that pixel, plus bias. view(-1, O) gives [N/m^2][O] in block order.
    const Floats& dw = w.get(p + "downsample.weight", {O, D, m, m});
    const Floats& db = w.get(p + "downsample.bias", {O});
    const int64_t B = N / (m * m);
    Dbl y(size_t(B * O));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t o = 0; o < O; ++o) {
            double acc = double(db[size_t(o)]);
            for (int64_t c = 0; c < D; ++c)
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < m; ++j)
                        acc += double(dw[size_t(((o * D + c) * m + i) * m + j)]) *
                               x[size_t((b * m * m + i * m + j) * D + c)];
            y[size_t(b * O + o)] = acc;
        }
    out.downsampled = to_float(y);

    // GlmOcrVisionPatchMerger: proj -> LayerNorm -> GELU(erf) -> down(silu(gate) * up), no biases
    // except the LayerNorm's.
    const int64_t MI = cfg.merger_intermediate();
    Dbl h = linear(y, O, w.get(p + "merger.proj.weight", {O, O}), O, nullptr);
    layer_norm_rows(h, O, w.get(p + "merger.post_projection_norm.weight", {O}),
                    w.get(p + "merger.post_projection_norm.bias", {O}), cfg.ln_eps);
    for (double& v : h) v = gelu_erf(v);
    out.merged = to_float(swiglu(h, O, MI,
                                 {w.get(p + "merger.gate_proj.weight", {MI, O}), nullptr,
                                  w.get(p + "merger.up_proj.weight", {MI, O}), nullptr,
                                  w.get(p + "merger.down_proj.weight", {O, MI}), nullptr}));
    return out;
}

Floats glm_vision_forward(const GlmVisionConfig& cfg, const VisionWeights& w, std::span<const float> patches,
                          int grid_h, int grid_w) {
    return glm_vision_forward_stages(cfg, w, patches, grid_h, grid_w).merged;
}

}  // namespace tdm::ref
