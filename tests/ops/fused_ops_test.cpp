// SPDX-License-Identifier: Apache-2.0
// tests/ops/fused_ops_test.cpp: the ops the fusion pass (host/graph/fusion.h) forms, each
// against a double reference, against the unfused chain it replaces bit for bit (the same
// graph compiled with CompileOptions::fuse off), and batch-invariant: norm_rope (query heads
// normed and rotated), norm_rope_store (key and value heads normed, rotated and stored
// beside the queries), matmul_group (q, k and v of one input in one dispatch),
// matmul_glu (gate, up and the glu that reads them in one dispatch) and matmul_act_mul (a
// matmul and the gated product of its result with another tensor in one dispatch). The
// fused graphs must also record fewer dispatches, or the pass did not fire.
// A few shapes each: the exactness of a mechanism, not a sweep (the test time budget).
// To add a case: a row in the case lists below.
#include <gtest/gtest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <cstring>

#include "common/quant.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::randn;

bool same_bits_fused(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<uint8_t> fused_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

CompileOptions fused(bool on) {
    CompileOptions o;
    o.fuse = on;
    return o;
}

// ----------------------------------------------------------------------------- norm_rope

struct NormRopeCase {
    const char* name;
    int head_dim, n_head;
    tdm_rope_mode mode;
    int norm;       // tdm_norm_weight of the rms_norm before the rope
    int n_rot;      // 0: head_dim
    bool freq_factors;
};

class NormRope : public test::DeviceTest, public ::testing::WithParamInterface<NormRopeCase> {};

TEST_P(NormRope, query_heads_equal_rms_norm_then_rope_bit_for_bit_and_the_reference) {
    const NormRopeCase c = GetParam();
    const int64_t D = c.head_dim, H = c.n_head;
    const int64_t n_rot = c.n_rot ? c.n_rot : D;
    const float eps = 1e-6f, theta = 1e6f;
    const auto w = randn(size_t(D), 3, 0.5f);
    std::vector<float> ff(size_t(n_rot / 2));
    for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.25f * float(i % 5);
    auto run = [&](int n, const std::vector<float>& x, bool fuse, uint32_t* dispatches) {
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(static_cast<size_t>(n));
        for (int t = 0; t < n; ++t) pos[size_t(t)] = 17 + 3 * t;
        std::vector<TensorId> norm_in = {h.input_f32({D, H, n}, x, "q")};
        if (c.norm != TDM_NORM_NO_WEIGHT) norm_in.push_back(h.weight(DType::F32, D, 1, fused_bytes(w)));
        const TensorId normed = h.op(TDM_OP_RMS_NORM, norm_in, {c.norm}, {eps});
        std::vector<TensorId> rope_in = {normed, h.input_i32({n}, pos, "pos")};
        if (c.freq_factors) rope_in.push_back(h.weight(DType::F32, n_rot / 2, 1, fused_bytes(ff)));
        const TensorId y = h.op(TDM_OP_ROPE, rope_in, {c.mode, c.n_rot}, {theta, 1.0f});
        h.run({y}, fused(fuse));
        if (dispatches) *dispatches = h.compiled().dispatch_count();
        return h.f32(y);
    };
    const int n = 3;
    const auto x = randn(size_t(D * H * n), 5, 2.0f);
    uint32_t d_fused = 0, d_plain = 0;
    const auto got = run(n, x, true, &d_fused), plain = run(n, x, false, &d_plain);
    EXPECT_TRUE(same_bits_fused(got, plain)) << c.name;
    EXPECT_EQ(d_fused, 1u) << c.name;
    EXPECT_EQ(d_plain, 2u) << c.name;

    std::vector<int32_t> pos = {17, 20, 23};
    ref::RopeParams rp;
    rp.n_rot = n_rot;
    rp.theta = theta;
    rp.pairing = c.mode == TDM_ROPE_NEOX ? ref::RopePairing::NeoX : ref::RopePairing::Adjacent;
    if (c.freq_factors) rp.freq_factors = ff;
    const ref::NormWeight nw = c.norm == TDM_NORM_WEIGHT           ? ref::NormWeight::Plain
                               : c.norm == TDM_NORM_WEIGHT_PLUS_ONE ? ref::NormWeight::OnePlus
                                                                    : ref::NormWeight::None;
    const auto want = ref::rope(ref::rms_norm(x, D, eps, nw, w), n, H, D, pos, rp);
    EXPECT_LT(ref::nmse(got, want), 1e-10) << c.name;

    // each token alone gives its rows of the batch
    for (int t = 0; t < n; ++t) {
        const std::vector<float> xt(x.begin() + t * D * H, x.begin() + (t + 1) * D * H);
        OpHarness h(device(), pipelines());
        std::vector<TensorId> norm_in = {h.input_f32({D, H, 1}, xt, "q")};
        if (c.norm != TDM_NORM_NO_WEIGHT) norm_in.push_back(h.weight(DType::F32, D, 1, fused_bytes(w)));
        const TensorId normed = h.op(TDM_OP_RMS_NORM, norm_in, {c.norm}, {eps});
        std::vector<TensorId> rope_in = {normed, h.input_i32({1}, {pos[size_t(t)]}, "pos")};
        if (c.freq_factors) rope_in.push_back(h.weight(DType::F32, n_rot / 2, 1, fused_bytes(ff)));
        const TensorId y = h.op(TDM_OP_ROPE, rope_in, {c.mode, c.n_rot}, {theta, 1.0f});
        h.run({y});
        const auto alone = h.f32(y);
        EXPECT_EQ(std::memcmp(alone.data(), got.data() + t * D * H, size_t(D * H) * sizeof(float)), 0)
            << c.name << ", token " << t;
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, NormRope,
                         ::testing::Values(NormRopeCase{"qwen3_neox", 64, 4, TDM_ROPE_NEOX, TDM_NORM_WEIGHT, 0, false},
                                           NormRopeCase{"adjacent_one_plus_w", 128, 2, TDM_ROPE_ADJACENT,
                                                        TDM_NORM_WEIGHT_PLUS_ONE, 0, false},
                                           NormRopeCase{"partial_with_factors", 256, 2, TDM_ROPE_NEOX,
                                                        TDM_NORM_WEIGHT, 128, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// ----------------------------------------------------------------------------- norm_rope_store

struct StoreCase {
    const char* name;
    int n_head, n_kv_head, head_dim, dv;
    bool k_norm, v_norm;  // Qwen3: k normed, v raw; Gemma 4: both (v without weight)
    bool f16;
};

class NormRopeStore : public test::DeviceTest, public ::testing::WithParamInterface<StoreCase> {};

TEST_P(NormRopeStore, stored_keys_values_and_attention_equal_the_unfused_ops_bit_for_bit) {
    const StoreCase c = GetParam();
    const int64_t D = c.head_dim, Dv = c.dv, H = c.n_head, Hkv = c.n_kv_head;
    const float eps = 1e-6f, theta = 1e4f;
    const int block = 16, n_blocks = 8;
    const auto qw = randn(size_t(D), 31, 0.5f), kw = randn(size_t(D), 32, 0.5f);
    struct Out {
        std::vector<float> attn, k_pool, v_pool;
        uint32_t dispatches = 0;
    };
    // prefill `n` tokens of sequence 0 from position 0, then decode one more: the decode's
    // attention reads keys the prefill stored
    auto run = [&](bool fuse) {
        Out o;
        auto kv = test::make_test_kv(device(), uint32_t(Hkv), uint32_t(D), uint32_t(Dv), block, n_blocks,
                                     {{5, 2, 7, 0}}, c.f16);
        for (vk::Buffer* pool : {kv->k.get(), kv->v.get()})  // compared whole: no stale bytes
            EXPECT_TRUE(write_device(device(), {pool, 0, pool->size()}, pool->size(), 4,
                                     [](uint8_t* dst, uint64_t, uint64_t n) { std::memset(dst, 0, n); })
                            .ok());
        for (int n : {5, 1}) {
            const int p0 = n == 5 ? 0 : 5;
            OpHarness h(device(), pipelines());
            std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n), 0);
            for (int t = 0; t < n; ++t) pos[size_t(t)] = p0 + t;
            h.batch(pos, seq);
            const TensorId tpos = h.graph().batch_positions();
            const auto q = randn(size_t(D * H * n), uint32_t(40 + n), 2.0f);
            const auto k = randn(size_t(D * Hkv * n), uint32_t(50 + n), 2.0f);
            const auto v = randn(size_t(Dv * Hkv * n), uint32_t(60 + n));
            const TensorId qn = h.op(TDM_OP_RMS_NORM, {h.input_f32({D, H, n}, q, "q"),
                                                       h.weight(DType::F32, D, 1, fused_bytes(qw))},
                                     {TDM_NORM_WEIGHT}, {eps});
            const TensorId qr = h.op(TDM_OP_ROPE, {qn, tpos}, {TDM_ROPE_NEOX}, {theta, 1.0f});
            TensorId kn = h.input_f32({D, Hkv, n}, k, "k");
            if (c.k_norm)
                kn = h.op(TDM_OP_RMS_NORM, {kn, h.weight(DType::F32, D, 1, fused_bytes(kw))}, {TDM_NORM_WEIGHT}, {eps});
            const TensorId kr = h.op(TDM_OP_ROPE, {kn, tpos}, {TDM_ROPE_NEOX}, {theta, 1.0f});
            TensorId vn = h.input_f32({Dv, Hkv, n}, v, "v");
            if (c.v_norm) vn = h.op(TDM_OP_RMS_NORM, {vn}, {TDM_NORM_NO_WEIGHT}, {eps});
            const TensorId st = h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding), kr, vn});
            const TensorId a = h.op(TDM_OP_ATTENTION, {qr, st}, {0}, {0.0f, 0.0f});
            h.run({a}, fused(fuse));
            o.attn = h.f32(a);
            if (n == 1) o.dispatches = h.compiled().dispatch_count();
        }
        o.k_pool.resize(kv->k->size() / 4);
        o.v_pool.resize(kv->v->size() / 4);
        EXPECT_TRUE(read_device(device(), {kv->k.get(), 0, kv->k->size()}, o.k_pool.data(), kv->k->size()).ok());
        EXPECT_TRUE(read_device(device(), {kv->v.get(), 0, kv->v->size()}, o.v_pool.data(), kv->v->size()).ok());
        return o;
    };
    const Out f = run(true), u = run(false);
    EXPECT_TRUE(same_bits_fused(f.k_pool, u.k_pool)) << c.name << ": K pool";
    EXPECT_TRUE(same_bits_fused(f.v_pool, u.v_pool)) << c.name << ": V pool";
    EXPECT_TRUE(same_bits_fused(f.attn, u.attn)) << c.name << ": attention";
    // unfused: q norm, q rope, [k norm], k rope, [v norm], store, attention
    EXPECT_EQ(u.dispatches, 5u + (c.k_norm ? 1 : 0) + (c.v_norm ? 1 : 0)) << c.name;
    EXPECT_EQ(f.dispatches, 2u) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, NormRopeStore,
                         ::testing::Values(StoreCase{"qwen3_f16", 4, 2, 64, 64, true, false, true},
                                           StoreCase{"gemma4_v_normed_f32", 2, 1, 128, 128, true, true, false},
                                           StoreCase{"llama_no_norms_dv_differs", 4, 4, 64, 32, false, false, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// ----------------------------------------------------------------------------- matmul_group

class MatmulGroup : public test::DeviceTest,
                    public ::testing::WithParamInterface<std::tuple<DType, const char*>> {};

TEST_P(MatmulGroup, three_weights_of_one_input_equal_three_matmuls_bit_for_bit_in_one_dispatch) {
    const DType t = std::get<0>(GetParam());
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", std::get<1>(GetParam()));
    const int64_t K = 256;
    const int64_t M[3] = {128, 77, 64};  // 77: not a multiple of any workgroup's rows
    std::vector<std::vector<uint8_t>> wb;
    for (int j = 0; j < 3; ++j) {
        const auto wf = randn(size_t(K * M[j]), uint32_t(70 + j), 0.1f);
        wb.push_back(quantize_matrix(t, wf.data(), M[j], K));
    }
    const int n = 5;
    const auto x = randn(size_t(K * n), 80);
    auto run = [&](int tokens, const float* xs, bool fuse, uint32_t* dispatches) {
        OpHarness h(device(), pipelines());
        const TensorId tx = h.input_f32({K, tokens}, std::vector<float>(xs, xs + K * tokens), "x");
        std::vector<TensorId> ys;
        for (int j = 0; j < 3; ++j) ys.push_back(h.op(TDM_OP_MATMUL, {h.weight(t, K, M[j], wb[size_t(j)]), tx}));
        // the results as one graph output: each matmul's rows side by side
        const TensorId cat = h.op(TDM_OP_CONCAT, {h.op(TDM_OP_CONCAT, {ys[0], ys[1]}), ys[2]});
        h.run({cat}, fused(fuse));
        if (dispatches) *dispatches = h.compiled().dispatch_count();
        return h.f32(cat);
    };
    uint32_t d_fused = 0, d_plain = 0;
    const auto got = run(n, x.data(), true, &d_fused), plain = run(n, x.data(), false, &d_plain);
    EXPECT_TRUE(same_bits_fused(got, plain)) << dtype_name(t);
    EXPECT_EQ(d_plain, d_fused + 2) << dtype_name(t) << ": three matmuls in one dispatch";
    std::vector<float> want;
    for (int tok = 0; tok < n; ++tok)
        for (int j = 0; j < 3; ++j) {
            const auto r = ref::matmul(std::span<const float>(x.data() + tok * K, size_t(K)), t, wb[size_t(j)], M[j], K);
            want.insert(want.end(), r.begin(), r.end());
        }
    EXPECT_LT(ref::nmse(got, want), 1e-10) << dtype_name(t);
    // decode: one token alone gives its row of the batch
    const int64_t width = M[0] + M[1] + M[2];
    for (int tok : {0, n - 1}) {
        const auto one = run(1, x.data() + tok * K, true, nullptr);
        EXPECT_EQ(std::memcmp(one.data(), got.data() + tok * width, size_t(width) * sizeof(float)), 0)
            << dtype_name(t) << ", token " << tok;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulGroup,
                         ::testing::Values(std::make_tuple(DType::Q8_0, "rl"), std::make_tuple(DType::Q8_0, "ks"),
                                           std::make_tuple(DType::F16, "rl"), std::make_tuple(DType::Q4_K, "rl"),
                                           std::make_tuple(DType::Q8_0, "mv")),
                         [](const auto& p) {
                             return std::string(dtype_name(std::get<0>(p.param))) + "_" + std::get<1>(p.param);
                         });

// ----------------------------------------------------------------------------- matmul_glu

class MatmulGlu : public test::DeviceTest, public ::testing::WithParamInterface<std::tuple<DType, tdm_glu>> {};

// Gate and up matmuls of one input and the glu that reads them, in the "mv" layout (the
// GPUs', forced here): one matmul_glu dispatch whose result is the three ops' bits, for a
// batch of 5 and each token alone (batch invariance), and near the double reference.
TEST_P(MatmulGlu, gate_up_and_glu_equal_the_unfused_ops_bit_for_bit_in_one_dispatch) {
    const DType t = std::get<0>(GetParam());
    const tdm_glu kind = std::get<1>(GetParam());
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    const bool plain = t == DType::F32 || t == DType::F16 || t == DType::BF16;
    const int64_t K = plain ? 264 : 256;  // 264: the plain types' partial last unit too
    const int64_t M = 77;                 // not a multiple of any workgroup's rows
    const auto gf = randn(size_t(K * M), 71, 0.1f), uf = randn(size_t(K * M), 72, 0.1f);
    const auto wg = quantize_matrix(t, gf.data(), M, K), wu = quantize_matrix(t, uf.data(), M, K);
    const int n = 5;
    const auto x = randn(size_t(K * n), 81);
    auto run = [&](int tokens, const float* xs, bool fuse, uint32_t* dispatches) {
        OpHarness h(device(), pipelines());
        const TensorId tx = h.input_f32({K, tokens}, std::vector<float>(xs, xs + K * tokens), "x");
        const TensorId g = h.op(TDM_OP_MATMUL, {h.weight(t, K, M, wg), tx});
        const TensorId u = h.op(TDM_OP_MATMUL, {h.weight(t, K, M, wu), tx});
        const TensorId y = h.op(TDM_OP_GLU, {g, u}, {kind});
        h.run({y}, fused(fuse));
        if (dispatches) *dispatches = h.compiled().dispatch_count();
        return h.f32(y);
    };
    const std::string what = fmt::format("{} {}", dtype_name(t), kind == TDM_GLU_GEGLU ? "geglu" : "swiglu");
    uint32_t d_fused = 0, d_plain = 0;
    const auto got = run(n, x.data(), true, &d_fused), unfused = run(n, x.data(), false, &d_plain);
    EXPECT_TRUE(same_bits_fused(got, unfused)) << what;
    EXPECT_EQ(d_fused, 1u) << what;
    EXPECT_EQ(d_plain, 3u) << what;
    std::vector<float> gate, up;
    for (int tok = 0; tok < n; ++tok) {
        const std::span<const float> xt(x.data() + tok * K, size_t(K));
        const auto gr = ref::matmul(xt, t, wg, M, K), ur = ref::matmul(xt, t, wu, M, K);
        gate.insert(gate.end(), gr.begin(), gr.end());
        up.insert(up.end(), ur.begin(), ur.end());
    }
    EXPECT_LT(ref::nmse(got, kind == TDM_GLU_GEGLU ? ref::geglu(gate, up) : ref::swiglu(gate, up)), 1e-10) << what;
    for (int tok : {0, n - 1}) {
        const auto one = run(1, x.data() + tok * K, true, nullptr);
        EXPECT_EQ(std::memcmp(one.data(), got.data() + tok * M, size_t(M) * sizeof(float)), 0)
            << what << ", token " << tok;
    }
}

// Every weight type the "mv" layout has with SwiGLU (Qwen3, Qwen3.5, Llama, GLM); GeGLU
// (Gemma 4) on two of them: the epilogue differs in its function only.
INSTANTIATE_TEST_SUITE_P(
    Types, MatmulGlu,
    ::testing::Values(std::make_tuple(DType::F32, TDM_GLU_SWIGLU), std::make_tuple(DType::F16, TDM_GLU_SWIGLU),
                      std::make_tuple(DType::BF16, TDM_GLU_SWIGLU), std::make_tuple(DType::Q8_0, TDM_GLU_SWIGLU),
                      std::make_tuple(DType::Q4_0, TDM_GLU_SWIGLU), std::make_tuple(DType::Q5_0, TDM_GLU_SWIGLU),
                      std::make_tuple(DType::Q5_1, TDM_GLU_SWIGLU), std::make_tuple(DType::Q4_K, TDM_GLU_SWIGLU),
                      std::make_tuple(DType::Q5_K, TDM_GLU_SWIGLU), std::make_tuple(DType::Q6_K, TDM_GLU_SWIGLU),
                      std::make_tuple(DType::Q8_0, TDM_GLU_GEGLU), std::make_tuple(DType::Q4_K, TDM_GLU_GEGLU)),
    [](const auto& p) {
        return std::string(dtype_name(std::get<0>(p.param))) +
               (std::get<1>(p.param) == TDM_GLU_GEGLU ? "_geglu" : "_swiglu");
    });

// ----------------------------------------------------------------------------- matmul_act_mul

class MatmulActMul : public test::DeviceTest, public ::testing::WithParamInterface<std::tuple<DType, tdm_glu>> {};

// A matmul whose result only a glu reads, as its gate, the glu's other input e a view of a
// wider tensor (Gemma 4's per-layer input gate: gelu_tanh(W x) times the layer's columns of
// the per-layer embedding, written as a unary gelu and a mul, which fuse_graph makes a geglu;
// SwiGLU as a glu op), in the "mv" layout (the GPUs', forced here): one matmul_act_mul
// dispatch whose result is the unfused ops' bits, near the double reference, and for 1, 2 and
// 4 tokens the first rows of the 8-token result (every tokens-per-pass variant).
TEST_P(MatmulActMul, matmul_and_its_gated_product_equal_the_unfused_ops_bit_for_bit_in_one_dispatch) {
    const DType t = std::get<0>(GetParam());
    const tdm_glu kind = std::get<1>(GetParam());
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    const bool plain = t == DType::F32 || t == DType::F16 || t == DType::BF16;
    const int64_t K = plain ? 264 : 256;  // 264: the plain types' partial last unit too
    const int64_t M = 77;                 // not a multiple of any workgroup's rows
    const int64_t E = 3 * M;              // e is columns [M, 2M) of an [E, n] tensor
    const auto wf = randn(size_t(K * M), 61, 0.1f);
    const auto wq = quantize_matrix(t, wf.data(), M, K);
    const int n = 8;
    const auto x = randn(size_t(K * n), 62), ewide = randn(size_t(E * n), 63);
    auto run = [&](int tokens, bool fuse, uint32_t* dispatches) {
        OpHarness h(device(), pipelines());
        const TensorId tx = h.input_f32({K, tokens}, std::vector<float>(x.begin(), x.begin() + K * tokens), "x");
        const std::vector<float> ew(ewide.begin(), ewide.begin() + E * tokens);
        const TensorId te = h.op(TDM_OP_VIEW_COLS, {h.input_f32({E, tokens}, ew, "e")}, {int32_t(M), int32_t(M)});
        const TensorId g = h.op(TDM_OP_MATMUL, {h.weight(t, K, M, wq), tx});
        const TensorId y = kind == TDM_GLU_GEGLU
                               ? h.op(TDM_OP_MUL, {h.op(TDM_OP_UNARY, {g}, {TDM_UNARY_GELU_TANH}), te})
                               : h.op(TDM_OP_GLU, {g, te}, {kind});
        h.run({y}, fused(fuse));
        if (dispatches) *dispatches = h.compiled().dispatch_count();
        return h.f32(y);
    };
    const std::string what = fmt::format("{} {}", dtype_name(t), kind == TDM_GLU_GEGLU ? "gelu, mul" : "swiglu");
    uint32_t d_fused = 0, d_plain = 0;
    const auto got = run(n, true, &d_fused), unfused = run(n, false, &d_plain);
    EXPECT_TRUE(same_bits_fused(got, unfused)) << what;
    EXPECT_EQ(d_fused, 1u) << what;
    EXPECT_EQ(d_plain, kind == TDM_GLU_GEGLU ? 3u : 2u) << what;
    std::vector<float> gate, e;
    for (int tok = 0; tok < n; ++tok) {
        const auto gr = ref::matmul(std::span<const float>(x.data() + tok * K, size_t(K)), t, wq, M, K);
        gate.insert(gate.end(), gr.begin(), gr.end());
        e.insert(e.end(), ewide.begin() + tok * E + M, ewide.begin() + tok * E + 2 * M);
    }
    EXPECT_LT(ref::nmse(got, kind == TDM_GLU_GEGLU ? ref::geglu(gate, e) : ref::swiglu(gate, e)), 1e-10) << what;
    for (int tokens : {1, 2, 4}) {
        const auto fewer = run(tokens, true, nullptr);
        EXPECT_EQ(std::memcmp(fewer.data(), got.data(), fewer.size() * sizeof(float)), 0)
            << what << ", " << tokens << " tokens";
    }
}

// GeGLU (Gemma 4's per-layer input) on a plain type and the quantized unit shapes; SwiGLU on
// two: the epilogue differs in its function only.
INSTANTIATE_TEST_SUITE_P(
    Types, MatmulActMul,
    ::testing::Values(std::make_tuple(DType::F32, TDM_GLU_GEGLU), std::make_tuple(DType::BF16, TDM_GLU_GEGLU),
                      std::make_tuple(DType::Q8_0, TDM_GLU_GEGLU), std::make_tuple(DType::Q4_K, TDM_GLU_GEGLU),
                      std::make_tuple(DType::Q6_K, TDM_GLU_GEGLU), std::make_tuple(DType::F16, TDM_GLU_SWIGLU),
                      std::make_tuple(DType::Q5_0, TDM_GLU_SWIGLU)),
    [](const auto& p) {
        return std::string(dtype_name(std::get<0>(p.param))) +
               (std::get<1>(p.param) == TDM_GLU_GEGLU ? "_geglu" : "_swiglu");
    });

// ----------------------------------------------------------------------------- norm_add, geglu

class NormAdd : public test::DeviceTest {};

TEST_F(NormAdd, post_norm_residual_scale_and_next_norm_equal_the_four_ops_bit_for_bit) {
    const float eps = 1e-6f;
    for (int64_t C : {96, 1536})
    for (int64_t R : {1, 4}) {
        const auto f = randn(size_t(C * R), uint32_t(90 + C), 3.0f), x = randn(size_t(C * R), uint32_t(91 + R));
        const auto w1 = randn(size_t(C), 92, 0.5f), w2 = randn(size_t(C), 93, 0.5f);
        const std::vector<float> sc = {0.75f};
        auto run = [&](int64_t rows, const float* fs, const float* xs, bool fuse, uint32_t* dispatches) {
            OpHarness h(device(), pipelines());
            const TensorId tf = h.input_f32({C, rows}, std::vector<float>(fs, fs + C * rows), "f");
            const TensorId tx = h.input_f32({C, rows}, std::vector<float>(xs, xs + C * rows), "x");
            const TensorId nf =
                h.op(TDM_OP_RMS_NORM, {tf, h.weight(DType::F32, C, 1, fused_bytes(w1))}, {TDM_NORM_WEIGHT}, {eps});
            const TensorId sum = h.op(TDM_OP_ADD, {tx, nf});
            const TensorId scaled = h.op(TDM_OP_MUL, {sum, h.weight(DType::F32, 1, 1, fused_bytes(sc))});
            const TensorId y = h.op(TDM_OP_RMS_NORM, {scaled, h.weight(DType::F32, C, 1, fused_bytes(w2))},
                                    {TDM_NORM_WEIGHT_PLUS_ONE}, {eps});
            h.run({scaled, y}, fused(fuse));
            if (dispatches) *dispatches = h.compiled().dispatch_count();
            auto s = h.f32(scaled), yy = h.f32(y);
            s.insert(s.end(), yy.begin(), yy.end());
            return s;
        };
        uint32_t d_fused = 0, d_plain = 0;
        const auto got = run(R, f.data(), x.data(), true, &d_fused);
        const auto plain = run(R, f.data(), x.data(), false, &d_plain);
        const std::string where = fmt::format("{} x {}", C, R);
        EXPECT_TRUE(same_bits_fused(got, plain)) << where;
        EXPECT_EQ(d_fused, 1u) << where;
        EXPECT_EQ(d_plain, 4u) << where;
        // the reference in double: s = (x + rms(f) w1) sc, y = rms(s) (1 + w2)
        const auto nref = ref::rms_norm(f, C, eps, ref::NormWeight::Plain, w1);
        std::vector<float> s(size_t(C * R));
        for (size_t i = 0; i < s.size(); ++i) s[i] = float((double(x[i]) + double(nref[i])) * 0.75);
        auto want = s;
        const auto yref = ref::rms_norm(s, C, eps, ref::NormWeight::OnePlus, w2);
        want.insert(want.end(), yref.begin(), yref.end());
        EXPECT_LT(ref::nmse(got, want), 1e-10) << where;
        // the last row alone gives its row of the batch
        const auto one = run(1, f.data() + (R - 1) * C, x.data() + (R - 1) * C, true, nullptr);
        EXPECT_EQ(std::memcmp(one.data(), got.data() + (R - 1) * C, size_t(C) * sizeof(float)), 0) << where;
        EXPECT_EQ(std::memcmp(one.data() + C, got.data() + R * C + (R - 1) * C, size_t(C) * sizeof(float)), 0)
            << where;
    }
}

TEST_F(NormAdd, gelu_then_mul_runs_as_one_geglu_with_the_same_bits) {
    const int64_t C = 256, R = 3;
    const auto a = randn(size_t(C * R), 95, 2.0f), b = randn(size_t(C * R), 96);
    auto run = [&](bool fuse, uint32_t* dispatches) {
        OpHarness h(device(), pipelines());
        const TensorId g = h.op(TDM_OP_UNARY, {h.input_f32({C, R}, a, "a")}, {TDM_UNARY_GELU_TANH});
        const TensorId y = h.op(TDM_OP_MUL, {g, h.input_f32({C, R}, b, "b")});
        h.run({y}, fused(fuse));
        *dispatches = h.compiled().dispatch_count();
        return h.f32(y);
    };
    uint32_t d_fused = 0, d_plain = 0;
    const auto got = run(true, &d_fused), plain = run(false, &d_plain);
    EXPECT_TRUE(same_bits_fused(got, plain));
    EXPECT_EQ(d_fused, 1u);
    EXPECT_EQ(d_plain, 2u);
    EXPECT_LT(ref::nmse(got, ref::geglu(a, b)), 1e-10);
}

}  // namespace
}  // namespace tdm
