// SPDX-License-Identifier: Apache-2.0
// tests/ops/matmul_split_test.cpp: the matmul work splits (host/ops/matmul_split.h).
// Every split `tandem tune` may choose must give the default split's bits for every token
// of every batch width, in every layout ("mv" and "ks", the GPUs' ones, are forced here on
// lavapipe): that is what lets a table tuned on one run serve decode and verify alike.
// Also which split a matmul takes: environment, then the device's table, then the default.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/quant.h"
#include "ops/matmul_split.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::randn;
using test::ScopedEnv;

bool same_split_bits(const std::vector<float>& a, const float* b) {
    return std::memcmp(a.data(), b, a.size() * sizeof(float)) == 0;
}

class MatmulSplits : public test::DeviceTest, public ::testing::WithParamInterface<std::tuple<DType, const char*>> {};

TEST_P(MatmulSplits, every_candidate_gives_the_default_bits_for_every_token_of_a_batch) {
    const DType t = std::get<0>(GetParam());
    const ScopedEnv layout("TANDEM_MATMUL_LAYOUT", std::get<1>(GetParam()));
    const int64_t K = 512, M = 77;  // M: not a multiple of any split's rows per workgroup
    const auto wf = randn(size_t(K * M), 21, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    const int n = 5;  // a verify batch: another tokens-per-pass variant than decode's
    const auto x = randn(size_t(K * n), 22);

    // y[n] for a split given through the environment (which beats any table)
    auto run = [&](const MatmulSplit& s, int tokens) {
        const ScopedEnv rows("TANDEM_MATMUL_ROWS", std::to_string(s.rows).c_str());
        const ScopedEnv groups("TANDEM_MATMUL_SUBGROUPS", std::to_string(s.subgroups).c_str());
        const ScopedEnv unroll("TANDEM_MATMUL_UNROLL", std::to_string(s.unroll).c_str());
        OpHarness h(device(), pipelines());
        const TensorId w = h.weight(t, K, M, wb);
        const TensorId y =
            h.op(TDM_OP_MATMUL, {w, h.input_f32({K, tokens}, std::vector<float>(x.begin(), x.begin() + tokens * K))});
        h.run({y});
        return h.f32(y);
    };
    const std::vector<MatmulSplit> candidates = matmul_split_candidates(device().caps(), t);
    ASSERT_GE(candidates.size(), 6u);
    ASSERT_EQ(candidates.front(), default_matmul_split(device().caps(), t));
    const std::string_view name = std::get<1>(GetParam());
    EXPECT_EQ(candidates.front().layout,
              name == "rl" ? MatmulLayout::rl : name == "mv" ? MatmulLayout::mv : MatmulLayout::ks);
    const std::vector<float> decode = run(candidates.front(), 1);
    const std::vector<float> verify = run(candidates.front(), n);
    for (const MatmulSplit& s : candidates) {
        const std::vector<float> one = run(s, 1);
        EXPECT_TRUE(same_split_bits(decode, one.data())) << dtype_name(t) << " split " << s.to_string() << ", decode";
        const std::vector<float> batch = run(s, n);
        EXPECT_TRUE(same_split_bits(verify, batch.data())) << dtype_name(t) << " split " << s.to_string() << ", batch";
        // and the batch's first token is the decode's
        EXPECT_EQ(std::memcmp(batch.data(), decode.data(), decode.size() * sizeof(float)), 0)
            << dtype_name(t) << " split " << s.to_string() << ": token 0 of a batch of " << n << " differs from decode";
    }
}

// "mv" (the GPUs' layout, where tuning runs by default) on a type of one 32-weight piece per
// unit and one of two (its per-piece sums are what a split must not reorder); "ks" on a
// plain, a block and a super-block type; "rl" on one (compiling every split's variants on
// lavapipe is the cost: an "mv" Q6_K case alone took about as long as all of these).
INSTANTIATE_TEST_SUITE_P(TypesAndLayouts, MatmulSplits,
                         ::testing::Values(std::tuple(DType::Q8_0, "mv"), std::tuple(DType::Q4_K, "mv"),
                                           std::tuple(DType::F16, "ks"), std::tuple(DType::Q8_0, "ks"),
                                           std::tuple(DType::Q4_K, "ks"), std::tuple(DType::Q8_0, "rl")),
                         [](const auto& p) {
                             return std::string(dtype_name(std::get<0>(p.param))) + "_" + std::get<1>(p.param);
                         });

class MatmulSplitChoice : public test::DeviceTest {};

TEST_F(MatmulSplitChoice, the_environment_beats_the_table_which_beats_the_default) {
    const ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "ks");
    const int64_t K = 256, M = 64;
    const auto wb = quantize_matrix(DType::Q8_0, randn(size_t(K * M), 3).data(), M, K);
    OpHarness h(device(), pipelines());
    const DeviceWeight& w = *h.graph().tensor(h.weight(DType::Q8_0, K, M, wb)).weight;
    const vk::DeviceCaps& caps = device().caps();
    vk::WorkSplits table;
    EXPECT_EQ(matmul_split(caps, table, w), default_matmul_split(caps, DType::Q8_0));
    const std::string key = matmul_split_key(caps, w);
    EXPECT_NE(key.find("matmul_q8_0_"), std::string::npos) << key;
    EXPECT_NE(key.find(" 64x256"), std::string::npos) << key;
    table.set(key, {2, 4});
    EXPECT_EQ(matmul_split(caps, table, w), (MatmulSplit{MatmulLayout::ks, 2, 4, 1}));
    table.set(key, {2, 100000});  // a workgroup no device has: ignored
    EXPECT_EQ(matmul_split(caps, table, w), default_matmul_split(caps, DType::Q8_0));
    table.set(key, {1, 2});
    const ScopedEnv rows("TANDEM_MATMUL_ROWS", "4");
    EXPECT_EQ(matmul_split(caps, table, w), (MatmulSplit{MatmulLayout::ks, 4, 2, 1}));
    EXPECT_TRUE(matmul_tunable(w));
}

TEST_F(MatmulSplitChoice, an_mv_entry_holds_rows_subgroups_and_unroll_under_the_mv_kernel_name) {
    const ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    const int64_t K = 256, M = 64;
    const auto wb = quantize_matrix(DType::Q4_K, randn(size_t(K * M), 4).data(), M, K);
    OpHarness h(device(), pipelines());
    const DeviceWeight& w = *h.graph().tensor(h.weight(DType::Q4_K, K, M, wb)).weight;
    const vk::DeviceCaps& caps = device().caps();
    const MatmulSplit d = default_matmul_split(caps, DType::Q4_K);
    EXPECT_EQ(d, (MatmulSplit{MatmulLayout::mv, 2, 2, 2}));
    vk::WorkSplits table;
    const std::string key = matmul_split_key(caps, w);
    EXPECT_EQ(key.rfind("matmul_mv_q4_K_", 0), 0u) << key;
    table.set(key, {1, 4});  // a "ks" entry's length: not an mv split, ignored
    EXPECT_EQ(matmul_split(caps, table, w), d);
    table.set(key, {1, 4, 4});
    EXPECT_EQ(matmul_split(caps, table, w), (MatmulSplit{MatmulLayout::mv, 1, 4, 4}));
    table.set(key, {1, 4, 9});  // more units in flight than the kernel allows: ignored
    EXPECT_EQ(matmul_split(caps, table, w), d);
    const ScopedEnv unroll("TANDEM_MATMUL_UNROLL", "1");
    EXPECT_EQ(matmul_split(caps, table, w), (MatmulSplit{MatmulLayout::mv, 2, 2, 1}));
}

TEST(WorkSplits, a_saved_table_loads_back_and_a_foreign_file_is_refused) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tdm-splits-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "splits.txt").string();
    {
        auto none = vk::WorkSplits::load(path);
        ASSERT_TRUE(none.ok()) << none.error().message();
        EXPECT_EQ(none->size(), 0u);
        none->set("matmul_q8_0_buf 1024x4096", {2, 4});
        none->set("matmul_q4_K_buf 4096x1024", {1, 8});
        ASSERT_TRUE(none->save().ok());
    }
    auto back = vk::WorkSplits::load(path);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->size(), 2u);
    EXPECT_EQ(back->find("matmul_q8_0_buf 1024x4096"), (std::vector<uint32_t>{2, 4}));
    EXPECT_FALSE(back->find("matmul_q8_0_buf 1024x1024"));
    const std::pair<const char*, const char*> bad[] = {
        {"not a table\n", "does not start with"},
        {"tandem-work-splits 1\nmatmul_q8_0_buf 1024x4096\n", "line 2"},
        {"tandem-work-splits 1\n# fine\nmatmul_q8_0_buf 1024x4096 2 x\n", "line 3"},
        {"tandem-work-splits 1\nmatmul_q8_0_buf 1024x4096 0 4\n", "out of range"},
    };
    for (const auto& [text, why] : bad) {
        std::ofstream(path, std::ios::trunc) << text;
        auto r = vk::WorkSplits::load(path);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_NE(r.error().message().find(why), std::string::npos) << r.error().message();
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tdm
