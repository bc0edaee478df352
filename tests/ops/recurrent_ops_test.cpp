// SPDX-License-Identifier: Apache-2.0
// tests/ops/recurrent_ops_test.cpp: the recurrent-state ops against the plain-C++
// reference (tests/support/reference_recurrent.h): conv1d_causal, the gated delta
// rule in recurrent and chunked form, their checkpoint semantics (which checkpoint
// is read, which are written, nothing else touched) and batch invariance (a token's
// outputs and checkpoints are bit-identical alone or as row i of a batch of 1..17).
//
// To add a case: allocate a TestState, write the checkpoint to read, build the op
// with OpHarness (batch() gives the sequence id, state_io() the checkpoints), run,
// compare outputs with nmse and checkpoints read back with TestState::read.
// Tolerances: nmse 1e-10 against the double reference (f32 arithmetic and device
// exp / inversesqrt, which are a few ulp off; the state carries rounding across
// tokens); conv states are copies of inputs and compare exactly; invariance is
// bit equality.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "support/device_fixture.h"
#include "support/op_harness.h"
#include "support/reference_recurrent.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

bool same_bits_recurrent_ops(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

std::vector<float> rows(const std::vector<float>& v, size_t row_len, size_t first, size_t count) {
    return std::vector<float>(v.begin() + first * row_len, v.begin() + (first + count) * row_len);
}

std::vector<int32_t> iota(int n, int first = 0) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) v[size_t(i)] = first + i;
    return v;
}

// Inputs of the gated delta rule for n tokens: qkv ~ N(0, 1), log decay g in
// (-1.5, 0) (g = -softplus(.) * 0.5, as the model's -exp(A) softplus(a + dt)),
// beta = sigmoid(.) in (0, 1).
struct DeltaInputs {
    std::vector<float> qkv, g, beta;
};
DeltaInputs delta_inputs(const ref::DeltaRuleParams& p, int n, uint32_t seed) {
    DeltaInputs in;
    const int64_t cols = 2 * p.n_k_heads * p.dk + p.n_v_heads * p.dv;
    in.qkv = randn(size_t(cols * n), seed);
    in.g = randn(size_t(p.n_v_heads * n), seed + 1);
    in.beta = randn(size_t(p.n_v_heads * n), seed + 2);
    for (float& g : in.g) g = -0.5f * std::log1p(std::exp(g));
    for (float& b : in.beta) b = 1.0f / (1.0f + std::exp(-b));
    return in;
}

int64_t qkv_cols(const ref::DeltaRuleParams& p) { return 2 * p.n_k_heads * p.dk + p.n_v_heads * p.dv; }
uint64_t state_floats(const ref::DeltaRuleParams& p) { return uint64_t(p.n_v_heads * p.dk * p.dv); }

// Adds a gated_delta_rule node reading the given inputs.
TensorId delta_rule(OpHarness& h, const ref::DeltaRuleParams& p, TensorId qkv, const DeltaInputs& in, int n,
                    const StateBinding& st, int chunk, std::vector<float> f = {}) {
    const TensorId g = h.input_f32({p.n_v_heads, n}, in.g, "g");
    const TensorId beta = h.input_f32({p.n_v_heads, n}, in.beta, "beta");
    return h.op(TDM_OP_GATED_DELTA_RULE, {qkv, g, beta, h.graph().state(&st)},
                {int32_t(p.n_k_heads), int32_t(p.n_v_heads), int32_t(p.dk), int32_t(p.dv),
                 p.grouped ? TDM_HEAD_MAP_GROUPED : TDM_HEAD_MAP_TILED, chunk},
                f);
}

class Conv1d : public test::DeviceTest {};
class RecurrentState : public test::DeviceTest {};

// ----------------------------------------------------------------------------- conv1d

TEST_F(Conv1d, matches_reference_from_a_saved_state_with_and_without_silu) {
    const int64_t C = 100, n = 6, pad = 8;  // C: not a multiple of the workgroup size
    for (int64_t K : {4, 2})
        for (bool silu : {false, true}) {
            const auto w = randn(size_t(C * K), 1 + uint32_t(K), 0.5f);
            const auto init = randn(size_t(C * (K - 1)), 3);
            const auto xw = randn(size_t((C + pad) * n), 4);  // x is a column view of a wider tensor
            std::vector<float> x;
            for (int64_t t = 0; t < n; ++t) x.insert(x.end(), xw.begin() + t * (C + pad) + 5, xw.begin() + t * (C + pad) + 5 + C);
            auto st = test::make_test_state(device(), uint64_t(C * (K - 1)), 8, 2);
            st->write(1, 2, init);
            OpHarness h(device(), pipelines());
            h.batch(iota(int(n)), std::vector<int32_t>(size_t(n), 1));
            h.state_io({2, 3, 4, 5, 6, 7, 0});
            const TensorId xv = h.op(TDM_OP_VIEW_COLS, {h.input_f32({C + pad, n}, xw)}, {5, int32_t(C)});
            const TensorId y = h.op(TDM_OP_CONV1D_CAUSAL,
                                    {xv, h.weight(DType::F32, K, C, bytes_of(w)), h.graph().state(&st->binding)},
                                    {silu ? 1 : 0});
            h.run({y});
            const auto ref = ref::conv1d_causal(x, C, w, K, init, silu);
            // SiLU uses the device's exp
            EXPECT_LT(ref::nmse(h.f32(y), ref.y), silu ? 1e-11 : 1e-13) << "K=" << K << " silu=" << silu;
            const int written[] = {3, 4, 5, 6, 7, 0};
            for (int i = 0; i < n; ++i)
                EXPECT_EQ(st->read(1, written[i]), ref.state[size_t(i)]) << "state after row " << i << " K=" << K;
        }
}

// ----------------------------------------------------------------------------- gated delta rule

struct DeltaCase {
    const char* name;
    int Nk, Nv, dk, dv;
    bool grouped;
    float eps, scale;  // 0: the op's defaults
};

class DeltaRule : public test::DeviceTest, public ::testing::WithParamInterface<DeltaCase> {};

TEST_P(DeltaRule, recurrent_form_matches_reference_outputs_and_every_checkpoint) {
    const DeltaCase c = GetParam();
    ref::DeltaRuleParams p{c.Nk, c.Nv, c.dk, c.dv, c.grouped, c.eps ? c.eps : 1e-6, c.scale};
    const int n = 9, n_ckpt = 11;
    const auto in = delta_inputs(p, n, 10);
    const auto init = randn(state_floats(p), 11, 0.3f);
    auto st = test::make_test_state(device(), state_floats(p), n_ckpt, 2);
    st->write(1, 3, init);
    OpHarness h(device(), pipelines());
    h.batch(iota(n), std::vector<int32_t>(n, 1));
    std::vector<int32_t> io = {3};
    for (int i = 0; i < n; ++i) io.push_back((4 + i) % n_ckpt);  // 4..10, 0, 1
    h.state_io(io);
    const TensorId o = delta_rule(h, p, h.input_f32({qkv_cols(p), n}, in.qkv, "qkv"), in, n, st->binding, 0,
                                  {c.eps, c.scale});
    h.run({o});
    const auto ref = ref::gated_delta_rule(in.qkv, in.g, in.beta, init, p);
    EXPECT_LT(ref::nmse(h.f32(o), ref.out), 1e-10) << c.name;
    for (int i = 0; i < n; ++i)
        EXPECT_LT(ref::nmse(st->read(1, io[size_t(1 + i)]), ref.state[size_t(i)]), 1e-10)
            << c.name << ": state after row " << i;
}

INSTANTIATE_TEST_SUITE_P(HeadMaps, DeltaRule,
                         ::testing::Values(DeltaCase{"tiled_r2", 2, 4, 32, 16, false, 0, 0},
                                           DeltaCase{"grouped_r2", 2, 4, 32, 16, true, 0, 0},
                                           DeltaCase{"grouped_r3_dk_lt_dv", 2, 6, 16, 32, true, 0, 0},
                                           DeltaCase{"tiled_r3_dk_gt_dv", 2, 6, 32, 8, false, 0, 0},
                                           DeltaCase{"eps_and_scale_given", 3, 3, 32, 32, true, 1e-3f, 0.5f},
                                           DeltaCase{"qwen35_head_dims", 1, 2, 128, 128, true, 0, 0}),
                         [](const auto& p) { return std::string(p.param.name); });

struct ChunkCase {
    const char* name;
    int chunk, n;
    bool grouped;
};

class DeltaRuleChunked : public test::DeviceTest, public ::testing::WithParamInterface<ChunkCase> {};

TEST_P(DeltaRuleChunked, chunked_form_equals_recurrent_form_and_reference) {
    const ChunkCase c = GetParam();
    ref::DeltaRuleParams p{2, 4, 32, 16, c.grouped};  // dv < chunk for most cases: spare lanes
    const auto in = delta_inputs(p, c.n, 20 + uint32_t(c.n));
    const auto init = randn(state_floats(p), 21, 0.3f);
    // recurrent and chunked side by side, each with its own state; only the last row checkpoints
    auto st_rec = test::make_test_state(device(), state_floats(p), 2, 1);
    auto st_chk = test::make_test_state(device(), state_floats(p), 2, 1);
    st_rec->write(0, 0, init);
    st_chk->write(0, 0, init);
    OpHarness h(device(), pipelines());
    h.batch(iota(c.n), std::vector<int32_t>(size_t(c.n), 0));
    std::vector<int32_t> io(size_t(c.n + 1), -1);
    io[0] = 0;
    io[size_t(c.n)] = 1;
    h.state_io(io);
    const TensorId qkv = h.input_f32({qkv_cols(p), c.n}, in.qkv, "qkv");
    const TensorId o_rec = delta_rule(h, p, qkv, in, c.n, st_rec->binding, 0);
    const TensorId o_chk = delta_rule(h, p, qkv, in, c.n, st_chk->binding, c.chunk);
    h.run({o_rec, o_chk});
    const auto ref = ref::gated_delta_rule(in.qkv, in.g, in.beta, init, p);
    const auto s_chk = st_chk->read(0, 1);
    EXPECT_LT(ref::nmse(h.f32(o_chk), h.f32(o_rec)), 1e-10) << c.name;
    EXPECT_LT(ref::nmse(s_chk, st_rec->read(0, 1)), 1e-10) << c.name;
    EXPECT_LT(ref::nmse(h.f32(o_chk), ref.out), 1e-10) << c.name;
    EXPECT_LT(ref::nmse(s_chk, ref.state.back()), 1e-10) << c.name;
    EXPECT_EQ(st_chk->read(0, 0), init) << "the read checkpoint is not written";
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, DeltaRuleChunked,
                         ::testing::Values(ChunkCase{"c1_n5_tiled", 1, 5, false},
                                           ChunkCase{"c4_n37_tiled", 4, 37, false},
                                           ChunkCase{"c16_n37_grouped", 16, 37, true},
                                           ChunkCase{"c64_n64_tiled", 64, 64, false},
                                           ChunkCase{"c64_n150_grouped", 64, 150, true}),
                         [](const auto& p) { return std::string(p.param.name); });

TEST_F(RecurrentState, chunked_form_writes_the_exact_state_of_an_intermediate_checkpoint_row) {
    ref::DeltaRuleParams p{1, 2, 32, 32, true};
    const int n = 40, chunk = 16;
    const auto in = delta_inputs(p, n, 30);
    const auto init = randn(state_floats(p), 31, 0.3f);
    auto st = test::make_test_state(device(), state_floats(p), 5, 1);
    st->write(0, 0, init);
    const auto sentinel = randn(state_floats(p), 32);
    st->write(0, 4, sentinel);
    OpHarness h(device(), pipelines());
    h.batch(iota(n), std::vector<int32_t>(n, 0));
    std::vector<int32_t> io(n + 1, -1);
    io[0] = 0;
    io[1 + 5] = 1;   // inside the first chunk
    io[1 + 20] = 2;  // inside the second
    io[1 + 39] = 3;  // the last row
    h.state_io(io);
    const TensorId o = delta_rule(h, p, h.input_f32({qkv_cols(p), n}, in.qkv, "qkv"), in, n, st->binding, chunk);
    h.run({o});
    const auto ref = ref::gated_delta_rule(in.qkv, in.g, in.beta, init, p);
    EXPECT_LT(ref::nmse(h.f32(o), ref.out), 1e-10);
    EXPECT_LT(ref::nmse(st->read(0, 1), ref.state[5]), 1e-10);
    EXPECT_LT(ref::nmse(st->read(0, 2), ref.state[20]), 1e-10);
    EXPECT_LT(ref::nmse(st->read(0, 3), ref.state[39]), 1e-10);
    EXPECT_TRUE(same_bits_recurrent_ops(st->read(0, 4), sentinel)) << "a checkpoint nobody asked for was written";
}

// ----------------------------------------------------------------------------- checkpoints

TEST_F(RecurrentState, reads_the_named_checkpoint_and_writes_only_where_state_io_says) {
    // conv1d and the delta rule in one graph, two sequences sharing each state buffer;
    // every checkpoint starts with distinct random contents.
    const int64_t C = 24, K = 4;
    ref::DeltaRuleParams p{1, 2, 16, 16, false};
    const int n_ckpt = 5, n_seq = 2, n = 3;
    auto sc = test::make_test_state(device(), uint64_t(C * (K - 1)), n_ckpt, n_seq);
    auto sg = test::make_test_state(device(), state_floats(p), n_ckpt, n_seq);
    for (int s = 0; s < n_seq; ++s)
        for (int k = 0; k < n_ckpt; ++k) {
            sc->write(s, k, randn(size_t(C * (K - 1)), 40 + uint32_t(s * n_ckpt + k)));
            sg->write(s, k, randn(state_floats(p), 60 + uint32_t(s * n_ckpt + k), 0.3f));
        }
    const auto w = randn(size_t(C * K), 41, 0.5f);
    const auto x = randn(size_t(C * n), 42);
    const auto in = delta_inputs(p, n, 43);

    // Runs one batch of sequence `seq` with state_io `io`; checks the written checkpoints
    // against the reference started from checkpoint io[0] and every other one unchanged.
    auto run_and_check = [&](int seq, const std::vector<int32_t>& io) {
        const auto conv_before = sc->read_all(), delta_before = sg->read_all();
        const auto conv_init = sc->read(seq, io[0]), delta_init = sg->read(seq, io[0]);
        OpHarness h(device(), pipelines());
        h.batch(iota(n), std::vector<int32_t>(n, seq));
        h.state_io(io);
        const TensorId y = h.op(TDM_OP_CONV1D_CAUSAL, {h.input_f32({C, n}, x), h.weight(DType::F32, K, C, bytes_of(w)),
                                                        h.graph().state(&sc->binding)});
        const TensorId o = delta_rule(h, p, h.input_f32({qkv_cols(p), n}, in.qkv, "qkv"), in, n, sg->binding, 0);
        h.run({y, o});
        const auto rc = ref::conv1d_causal(x, C, w, K, conv_init, false);
        const auto rd = ref::gated_delta_rule(in.qkv, in.g, in.beta, delta_init, p);
        EXPECT_LT(ref::nmse(h.f32(y), rc.y), 1e-13);
        EXPECT_LT(ref::nmse(h.f32(o), rd.out), 1e-10);
        auto conv_expect = conv_before, delta_expect = delta_before;
        for (int i = 0; i < n; ++i) {
            const int k = io[size_t(1 + i)];
            if (k < 0) continue;
            const size_t ci = size_t(seq * n_ckpt + k);
            std::copy(rc.state[size_t(i)].begin(), rc.state[size_t(i)].end(), conv_expect.begin() + ci * C * (K - 1));
            EXPECT_LT(ref::nmse(sg->read(seq, k), rd.state[size_t(i)]), 1e-10) << "row " << i;
            // the device's values where the reference state is expected; all else must be untouched
            const auto got = sg->read(seq, k);
            std::copy(got.begin(), got.end(), delta_expect.begin() + ci * state_floats(p));
        }
        EXPECT_TRUE(same_bits_recurrent_ops(sc->read_all(), conv_expect)) << "conv state: a checkpoint changed that should not";
        EXPECT_TRUE(same_bits_recurrent_ops(sg->read_all(), delta_expect)) << "delta state: a checkpoint changed that should not";
    };
    run_and_check(1, {2, 4, -1, 0});   // rows 0 and 2 write; row 1 writes nothing
    run_and_check(0, {1, -1, 3, -1});  // the other sequence: sequence 1's slots stay as they are
    run_and_check(1, {4, -1, -1, 4});  // reads the checkpoint it finally overwrites
}

TEST_F(RecurrentState, decoding_in_place_reads_the_checkpoint_before_overwriting_it) {
    // state_io = [0, 0]: every step reads checkpoint 0 and writes it back
    const int64_t C = 40, K = 4;
    ref::DeltaRuleParams p{2, 4, 16, 16, true};
    const int steps = 6;
    const auto w = randn(size_t(C * K), 50, 0.5f);
    const auto x = randn(size_t(C * steps), 51);
    const auto in = delta_inputs(p, steps, 52);
    const auto conv_init = randn(size_t(C * (K - 1)), 53);
    const auto delta_init = randn(state_floats(p), 54, 0.3f);
    auto sc = test::make_test_state(device(), uint64_t(C * (K - 1)), 2, 1);
    auto sg = test::make_test_state(device(), state_floats(p), 2, 1);
    sc->write(0, 0, conv_init);
    sg->write(0, 0, delta_init);
    const auto rc = ref::conv1d_causal(x, C, w, K, conv_init, true);
    const auto rd = ref::gated_delta_rule(in.qkv, in.g, in.beta, delta_init, p);

    OpHarness h(device(), pipelines());
    h.batch({0}, {0});
    h.state_io({0, 0});
    const TensorId tx = h.input_f32({C, 1}, rows(x, C, 0, 1));
    const TensorId tq = h.input_f32({qkv_cols(p), 1}, rows(in.qkv, size_t(qkv_cols(p)), 0, 1), "qkv");
    const TensorId y = h.op(TDM_OP_CONV1D_CAUSAL, {tx, h.weight(DType::F32, K, C, bytes_of(w)), h.graph().state(&sc->binding)},
                            {1});
    DeltaInputs first{{}, rows(in.g, size_t(p.n_v_heads), 0, 1), rows(in.beta, size_t(p.n_v_heads), 0, 1)};
    const TensorId o = delta_rule(h, p, tq, first, 1, sg->binding, 0);
    const TensorId tg = h.graph().find("g"), tb = h.graph().find("beta");
    h.run({y, o});
    for (int t = 0; t < steps; ++t) {
        if (t > 0) {
            std::memcpy(h.compiled().input_data(tx), x.data() + t * C, size_t(C) * 4);
            std::memcpy(h.compiled().input_data(tq), in.qkv.data() + t * qkv_cols(p), size_t(qkv_cols(p)) * 4);
            std::memcpy(h.compiled().input_data(tg), in.g.data() + t * p.n_v_heads, size_t(p.n_v_heads) * 4);
            std::memcpy(h.compiled().input_data(tb), in.beta.data() + t * p.n_v_heads, size_t(p.n_v_heads) * 4);
            h.rerun();
        }
        EXPECT_LT(ref::nmse(h.f32(y), rows(rc.y, size_t(C), size_t(t), 1)), 1e-11) << "step " << t;
        EXPECT_LT(ref::nmse(h.f32(o), rows(rd.out, size_t(p.n_v_heads * p.dv), size_t(t), 1)), 1e-10) << "step " << t;
        EXPECT_EQ(sc->read(0, 0), rc.state[size_t(t)]) << "step " << t;
        EXPECT_LT(ref::nmse(sg->read(0, 0), rd.state[size_t(t)]), 1e-10) << "step " << t;
    }
}

TEST_F(RecurrentState, graph_rejects_state_ops_without_matching_state_io) {
    ref::DeltaRuleParams p{1, 1, 16, 16, false};
    auto st = test::make_test_state(device(), state_floats(p), 2, 1);
    const auto in = delta_inputs(p, 3, 70);
    OpHarness h(device(), pipelines());
    h.batch(iota(3), {0, 0, 0});
    h.state_io({0, 1});  // one entry short
    OpDesc d;
    d.op = TDM_OP_GATED_DELTA_RULE;
    d.in[0] = h.input_f32({qkv_cols(p), 3}, in.qkv);
    d.in[1] = h.input_f32({1, 3}, in.g);
    d.in[2] = h.input_f32({1, 3}, in.beta);
    d.in[3] = h.graph().state(&st->binding);
    d.n_in = 4;
    d.i[0] = 1, d.i[1] = 1, d.i[2] = 16, d.i[3] = 16;
    auto r = h.graph().op(d);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("state_io"), std::string::npos) << r.error().message();
    h.state_io({0, 1, 1, 1});
    d.i[5] = 65;  // larger than the chunked form supports
    auto r2 = h.graph().op(d);
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.error().message().find("chunk size"), std::string::npos) << r2.error().message();
    d.i[5] = 64;
    EXPECT_TRUE(h.graph().op(d).ok());
}

// ----------------------------------------------------------------------------- batch invariance

TEST_F(RecurrentState, each_token_of_a_batch_of_1_to_17_equals_it_decoded_alone) {
    // The Gated DeltaNet chain as the model runs it: conv1d + SiLU, then the delta rule
    // on the conv output, at Qwen3.5's head dims (grouped, r = 3).
    ref::DeltaRuleParams p{2, 6, 128, 128, true};
    const int64_t C = qkv_cols(p), K = 4;
    const int max_n = 17, n_ckpt = max_n + 1;
    const auto w = randn(size_t(C * K), 80, 0.5f);
    const auto x = randn(size_t(C * max_n), 81);
    const auto in = delta_inputs(p, max_n, 82);
    const auto conv_init = randn(size_t(C * (K - 1)), 83);
    const auto delta_init = randn(state_floats(p), 84, 0.3f);
    // sequence 0: decoded token by token; sequence 1: the batches
    auto sc = test::make_test_state(device(), uint64_t(C * (K - 1)), n_ckpt, 2);
    auto sg = test::make_test_state(device(), state_floats(p), n_ckpt, 2);
    for (int s = 0; s < 2; ++s) {
        sc->write(s, 0, conv_init);
        sg->write(s, 0, delta_init);
    }
    auto build = [&](OpHarness& h, int n, int seq, TensorId* ids) {
        h.batch(iota(n), std::vector<int32_t>(size_t(n), seq));
        std::vector<int32_t> io = iota(n + 1);  // read 0, row i writes i + 1
        ids[0] = h.state_io(io);
        ids[1] = h.input_f32({C, n}, rows(x, size_t(C), 0, size_t(n)));
        ids[2] = h.op(TDM_OP_CONV1D_CAUSAL, {ids[1], h.weight(DType::F32, K, C, bytes_of(w)), h.graph().state(&sc->binding)},
                      {1});
        DeltaInputs part{{}, rows(in.g, size_t(p.n_v_heads), 0, size_t(n)), rows(in.beta, size_t(p.n_v_heads), 0, size_t(n))};
        ids[3] = delta_rule(h, p, ids[2], part, n, sg->binding, 0);
    };

    std::vector<std::vector<float>> conv_alone(max_n), delta_alone(max_n);
    {
        OpHarness h(device(), pipelines());
        TensorId ids[4];
        build(h, 1, 0, ids);
        const TensorId tg = h.graph().find("g"), tb = h.graph().find("beta");
        h.run({ids[2], ids[3]});
        for (int t = 0; t < max_n; ++t) {
            if (t > 0) {
                int32_t* io = h.compiled().input_as<int32_t>(ids[0]);  // one row, one segment
                io[1] = t + 1;                                         // written after the row
                io[3] = t;                                             // read before it
                std::memcpy(h.compiled().input_data(ids[1]), x.data() + t * C, size_t(C) * 4);
                std::memcpy(h.compiled().input_data(tg), in.g.data() + t * p.n_v_heads, size_t(p.n_v_heads) * 4);
                std::memcpy(h.compiled().input_data(tb), in.beta.data() + t * p.n_v_heads, size_t(p.n_v_heads) * 4);
                h.rerun();
            }
            conv_alone[size_t(t)] = h.f32(ids[2]);
            delta_alone[size_t(t)] = h.f32(ids[3]);
        }
    }
    // checkpoint k of sequence s in a read_all() copy
    auto ckpt = [&](const std::vector<float>& all, uint64_t n_f32, int s, int k) {
        return rows(all, n_f32, size_t(s * n_ckpt + k), 1);
    };
    const uint64_t nc = uint64_t(C * (K - 1)), nd = state_floats(p);
    const auto conv_decoded = sc->read_all(), delta_decoded = sg->read_all();
    for (int n = 1; n <= max_n; ++n) {
        OpHarness h(device(), pipelines());
        TensorId ids[4];
        build(h, n, 1, ids);
        h.run({ids[2], ids[3]});
        const auto yc = h.f32(ids[2]), yd = h.f32(ids[3]);
        const auto conv_batch = sc->read_all(), delta_batch = sg->read_all();
        for (int t = 0; t < n; ++t) {
            EXPECT_TRUE(same_bits_recurrent_ops(rows(yc, size_t(C), size_t(t), 1), conv_alone[size_t(t)]))
                << "conv output of token " << t << " in a batch of " << n;
            EXPECT_TRUE(same_bits_recurrent_ops(rows(yd, size_t(p.n_v_heads * p.dv), size_t(t), 1), delta_alone[size_t(t)]))
                << "delta rule output of token " << t << " in a batch of " << n;
            EXPECT_TRUE(same_bits_recurrent_ops(ckpt(conv_batch, nc, 1, t + 1), ckpt(conv_decoded, nc, 0, t + 1)))
                << "conv checkpoint after token " << t << " in a batch of " << n;
            EXPECT_TRUE(same_bits_recurrent_ops(ckpt(delta_batch, nd, 1, t + 1), ckpt(delta_decoded, nd, 0, t + 1)))
                << "delta rule checkpoint after token " << t << " in a batch of " << n;
        }
    }
}

// ----------------------------------------------------------------------------- several sequences

// A server's pass holds rows of several sequences: segments, each from its own sequence's
// checkpoint. Every segment's outputs and checkpoints equal, bit for bit, the same rows run
// alone, for the conv, the recurrent delta rule and the chunked one (chunks restart at a
// segment's first row, as they do alone); no other checkpoint changes.
TEST_F(RecurrentState, segments_of_several_sequences_in_one_batch_equal_each_run_alone) {
    const ref::DeltaRuleParams p{2, 4, 32, 32, true};
    const int64_t C = qkv_cols(p), K = 4;
    const int n_seq = 3, n_ckpt = 6;
    struct Seg {
        int seq, read, rows;
        std::vector<int32_t> writes;
    };
    // in row order: sequence 2 from checkpoint 1, sequence 0 from 0, sequence 1 from 3
    const std::vector<Seg> segs = {{2, 1, 3, {2, -1, 4}}, {0, 0, 1, {0}}, {1, 3, 4, {4, 5, -1, 1}}};
    const int n = 8;
    const auto w = randn(size_t(C * K), 90, 0.5f);
    const auto x = randn(size_t(C * n), 91);
    const auto in = delta_inputs(p, n, 92);
    const uint64_t nc = uint64_t(C * (K - 1)), nd = state_floats(p);
    auto fill = [&](test::TestState& sc, test::TestState& sg) {  // distinct random contents everywhere
        for (int s = 0; s < n_seq; ++s)
            for (int k = 0; k < n_ckpt; ++k) {
                sc.write(s, k, randn(nc, uint32_t(100 + s * n_ckpt + k)));
                sg.write(s, k, randn(nd, uint32_t(200 + s * n_ckpt + k), 0.3f));
            }
    };
    for (int chunk : {0, 2}) {
        // rows [row0, row0 + rows) of the inputs as a batch of the given segments
        auto run = [&](test::TestState& sc, test::TestState& sg, int row0, int rows_n, const std::vector<Seg>& part,
                       std::vector<float>* yc, std::vector<float>* yd) {
            OpHarness h(device(), pipelines());
            std::vector<int32_t> seq_ids, writes;
            std::vector<std::pair<int32_t, int32_t>> firsts;
            for (const Seg& g : part) {
                firsts.emplace_back(int32_t(seq_ids.size()), g.read);
                for (int i = 0; i < g.rows; ++i) seq_ids.push_back(g.seq);
                writes.insert(writes.end(), g.writes.begin(), g.writes.end());
            }
            h.batch(iota(rows_n), seq_ids);
            h.state_io_segments(writes, firsts);
            const TensorId xi = h.input_f32({C, rows_n}, rows(x, size_t(C), size_t(row0), size_t(rows_n)));
            const TensorId y = h.op(TDM_OP_CONV1D_CAUSAL,
                                    {xi, h.weight(DType::F32, K, C, bytes_of(w)), h.graph().state(&sc.binding)}, {1});
            DeltaInputs part_in{{}, rows(in.g, size_t(p.n_v_heads), size_t(row0), size_t(rows_n)),
                                rows(in.beta, size_t(p.n_v_heads), size_t(row0), size_t(rows_n))};
            const TensorId o = delta_rule(h, p, y, part_in, rows_n, sg.binding, chunk);
            h.run({y, o});
            *yc = h.f32(y);
            *yd = h.f32(o);
        };
        auto bc = test::make_test_state(device(), nc, n_ckpt, n_seq), bg = test::make_test_state(device(), nd, n_ckpt, n_seq);
        auto ac = test::make_test_state(device(), nc, n_ckpt, n_seq), ag = test::make_test_state(device(), nd, n_ckpt, n_seq);
        fill(*bc, *bg);
        fill(*ac, *ag);
        std::vector<float> batch_c, batch_d;
        run(*bc, *bg, 0, n, segs, &batch_c, &batch_d);
        int row0 = 0;
        for (const Seg& g : segs) {
            std::vector<float> alone_c, alone_d;
            run(*ac, *ag, row0, g.rows, {g}, &alone_c, &alone_d);
            EXPECT_TRUE(same_bits_recurrent_ops(rows(batch_c, size_t(C), size_t(row0), size_t(g.rows)), alone_c))
                << "conv rows of sequence " << g.seq << ", chunk " << chunk;
            EXPECT_TRUE(same_bits_recurrent_ops(rows(batch_d, size_t(p.n_v_heads * p.dv), size_t(row0), size_t(g.rows)), alone_d))
                << "delta rule rows of sequence " << g.seq << ", chunk " << chunk;
            row0 += g.rows;
        }
        EXPECT_TRUE(same_bits_recurrent_ops(bc->read_all(), ac->read_all())) << "conv checkpoints, chunk " << chunk;
        EXPECT_TRUE(same_bits_recurrent_ops(bg->read_all(), ag->read_all())) << "delta rule checkpoints, chunk " << chunk;
        // and something was written: sequence 1's checkpoint 4 is not what fill() put there
        EXPECT_FALSE(same_bits_recurrent_ops(bg->read(1, 4), randn(nd, uint32_t(200 + 1 * n_ckpt + 4), 0.3f)));
    }
}

}  // namespace
}  // namespace tdm
