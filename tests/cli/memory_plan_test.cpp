// SPDX-License-Identifier: Apache-2.0
// tests/cli/memory_plan_test.cpp: the memory plan checked before a model is loaded: its KV
// estimate against what KvPool::create really allocates, the refusal message with the
// largest context that fits, and `tandem run` refusing a context too large for
// --memory-limit before allocating it, counting the draft head --spec-auto will pick.
//
// To add a case: a KvPoolConfig to kv_estimate_matches_the_pool, or a MemoryPlan of
// linear items to the check_memory_plan tests.
#include "cli/memory_plan.h"
#include "cli/cli_models.h"
#include "cli_run.h"

#include "formats/expect_error.h"
#include "support/device_fixture.h"

#include <gtest/gtest.h>

#include <regex>

#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"

namespace tdm::test {
namespace {

tdm_attention_layer layer(uint32_t n_kv_head, uint32_t dk, uint32_t dv) {
    tdm_attention_layer l{};
    l.struct_size = sizeof l;
    l.n_kv_head = n_kv_head;
    l.head_dim_k = dk;
    l.head_dim_v = dv;
    return l;
}

class MemoryPlanDevice : public DeviceTest {};

TEST_F(MemoryPlanDevice, kv_estimate_matches_what_the_pool_allocates) {
    const std::vector<tdm_attention_layer> layers = {layer(2, 64, 64), layer(4, 32, 16)};
    tdm_recurrent_state state{};
    state.struct_size = sizeof state;
    state.n_f32 = 1000;
    const std::vector<tdm_recurrent_state> states = {state, state};
    struct Case {
        uint32_t n_ctx, n_seq;
        bool f16;
        uint64_t budget;
        uint32_t checkpoints;
        bool with_states;
    };
    const Case cases[] = {
        {4096, 1, true, 0, 2, false},  {100, 1, true, 0, 2, false},   {17, 3, false, 0, 2, false},
        {1000, 1, true, 1 << 20, 2, false}, {64, 2, true, 0, 18, true}, {16, 1, false, 300000, 5, true},
    };
    for (const Case& c : cases) {
        KvPoolConfig kc;
        kc.n_ctx = c.n_ctx;
        kc.n_seq_max = c.n_seq;
        kc.f16 = c.f16;
        kc.memory_budget = c.budget;
        kc.n_checkpoints = c.checkpoints;
        const std::span<const tdm_recurrent_state> st =
            c.with_states ? std::span<const tdm_recurrent_state>(states) : std::span<const tdm_recurrent_state>();
        auto pool = KvPool::create(device(), layers, kc, "plan test", st);
        ASSERT_TRUE(pool.ok()) << pool.error().message();
        EXPECT_EQ(cli::kv_pool_bytes(layers, st, kc), (*pool)->device_bytes())
            << "n_ctx " << c.n_ctx << " n_seq " << c.n_seq << " budget " << c.budget;
    }
}

// Sliding-window layers in rings (kv/kv_layout.h): the estimate still matches, with and
// without a budget, whether the rings are made or the window covers the context.
TEST_F(MemoryPlanDevice, kv_estimate_matches_the_pool_with_sliding_window_rings) {
    std::vector<tdm_attention_layer> layers = {layer(2, 64, 64), layer(4, 32, 16), layer(1, 16, 16)};
    layers[0].window = 24;
    layers[2].window = 100;
    struct Case {
        uint32_t n_ctx, n_seq, rows_max;
        uint64_t budget;
    };
    for (const Case& c : {Case{4096, 1, 16, 0}, Case{4096, 3, 256, 0}, Case{64, 1, 16, 0}, Case{1000, 2, 8, 1 << 20}}) {
        KvPoolConfig kc;
        kc.n_ctx = c.n_ctx;
        kc.n_seq_max = c.n_seq;
        kc.rows_max = c.rows_max;
        kc.memory_budget = c.budget;
        auto pool = KvPool::create(device(), layers, kc, "plan test");
        ASSERT_TRUE(pool.ok()) << pool.error().message();
        EXPECT_EQ(cli::kv_pool_bytes(layers, {}, kc), (*pool)->device_bytes())
            << "n_ctx " << c.n_ctx << " rows_max " << c.rows_max << " budget " << c.budget;
    }
}

TEST_F(MemoryPlanDevice, the_budget_is_the_memory_limit_when_it_is_the_smallest) {
    vk::Device::Options o;
    o.memory_limit = 3 << 20;
    auto dev = vk::Device::create(o);
    ASSERT_TRUE(dev.ok()) << dev.error().message();
    const cli::MemoryBudget b = cli::device_memory_budget(**dev);
    EXPECT_EQ(b.bytes, 3u << 20);
    EXPECT_NE(b.source.find("memory limit of 3.00 MiB"), std::string::npos) << b.source;
    // without a limit: the device's own memory (on a CPU device, the host's available memory)
    const cli::MemoryBudget d = cli::device_memory_budget(device());
    EXPECT_GT(d.bytes, 0u);
    EXPECT_FALSE(d.source.empty());
}

// weights of 1000 bytes, KV of 10 bytes per token (whole blocks of 16)
cli::MemoryPlan linear_plan(uint32_t n_ctx) {
    cli::MemoryPlan p;
    p.n_ctx = n_ctx;
    p.items.push_back({"weights of m.gguf", [](uint32_t) { return uint64_t(1000); }});
    p.items.push_back({"KV cache of m.gguf", [](uint32_t c) { return uint64_t((c + 15) / 16 * 16) * 10; }});
    return p;
}

TEST(MemoryPlan, a_plan_within_the_budget_passes) {
    EXPECT_TRUE(cli::check_memory_plan(linear_plan(4096), {1000 + 40960, "budget"}).ok());
    EXPECT_TRUE(cli::check_memory_plan(linear_plan(1u << 30), {0, "unknown"}).ok());  // nothing known: no check
}

TEST(MemoryPlan, a_plan_beyond_the_budget_names_the_items_and_the_largest_context_that_fits) {
    // 1000 + 10 * c <= 11000  ->  c <= 1000, in whole blocks: 992
    EXPECT_TRUE(fails_with(cli::check_memory_plan(linear_plan(16777216), {11000, "the memory limit of 10.74 KiB"}),
                           {"this run needs about 160.00 MiB", "weights of m.gguf 1000 B",
                            "KV cache of m.gguf 160.00 MiB", "more than the memory limit of 10.74 KiB",
                            "fit up to -c 992 ([model] n_ctx)"}));
    // 1000 + 16 * 10 = 1160 bytes
    EXPECT_TRUE(fails_with(cli::check_memory_plan(linear_plan(4096), {1100, "b"}),
                           "even the shortest context (-c 16) needs 1.13 KiB"));
    cli::MemoryPlan by_memory = linear_plan(4096);
    by_memory.kv_by_memory = true;
    EXPECT_TRUE(fails_with(cli::check_memory_plan(by_memory, {2000, "b"}), "lower --kv-memory"));
}

// ------------------------------------------------------------------ end to end

TEST(MemoryPlanCli, a_context_too_large_for_the_memory_limit_is_refused_before_allocating_with_one_that_fits) {
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "1", "--memory-limit", "3MiB", "-c",
                       "16777216"});
    ASSERT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    EXPECT_TRUE(r.has("KV cache of tiny.gguf")) << r.err;
    EXPECT_TRUE(r.has("more than the memory limit of 3.00 MiB")) << r.err;
    EXPECT_FALSE(r.has("cannot allocate")) << "refused by a single allocation, not by the plan: " << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("fit up to -c ([0-9]+)"))) << r.err;
    const std::string fits = m[1];
    // the context it names passes the plan; one block more does not
    r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "1", "--memory-limit", "3MiB", "-c", fits});
    EXPECT_FALSE(r.has("not enough device memory")) << r.err;
    r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "1", "--memory-limit", "3MiB", "-c",
                std::to_string(std::stoll(fits) + 16)});
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
}

TEST(MemoryPlanCli, serve_counts_the_kv_of_every_slot) {
    // the largest context one sequence may have under the limit...
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "1", "--memory-limit", "3MiB", "-c",
                       "16777216"});
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("fit up to -c ([0-9]+)"))) << r.err;
    const int64_t one = std::stoll(m[1]);
    // ...is too large for each of 8 slots, and the refusal names what fits per slot
    r = tandem({"serve", "-m", tiny_qwen3_model(), "--parallel", "8", "--memory-limit", "3MiB", "-c", std::to_string(one),
                "--port", "0"});
    ASSERT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("fit up to -c ([0-9]+) \\(\\[model\\] n_ctx\\) per slot with "
                                                       "--parallel 8")))
        << r.err;
    EXPECT_LE(std::stoll(m[1]) * 8, one) << r.err;
    EXPECT_GE(std::stoll(m[1]) * 8, one / 2) << "the weights are small: most of the room is KV; " << r.err;
}

TEST(MemoryPlanCli, the_weights_fit_what_the_plan_counts_for_them_with_a_tensor_of_a_quarter_block) {
    // qwen3 small in f32 with a tied head: a 4 MiB embedding in a 13.8 MB file, whose weight
    // block is the file plus 1 MiB: the arena puts everything in that one block, and the plan
    // counts exactly that, so a limit just above the plan's total loads
    const std::string path = test::make_temp_dir("memory-plan-quarter") + "/small.gguf";
    CliRun r = tandem({"synth", "--preset", "small", "--type", "f32", "--tied", "true", "-o", path});
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"run", "-m", path, "--prompt-tokens", "1,2", "-n", "1", "-c", "64", "--memory-limit", "1MiB"});
    ASSERT_EQ(r.status, 1) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("needs about ([0-9.]+) MiB"))) << r.err;
    const double need = std::stod(m[1]);
    // activations and staging are not in the plan: 1.5 MiB of room for them
    const std::string limit = std::to_string(int64_t((need + 1.5) * 1024)) + "KiB";
    r = tandem({"run", "-m", path, "--prompt-tokens", "1,2", "-n", "1", "-c", "64", "--memory-limit", limit});
    EXPECT_EQ(r.status, 0) << "limit " << limit << ": " << r.err;
    EXPECT_FALSE(r.has("cannot allocate")) << r.err;
}

TEST(MemoryPlanCli, a_context_beyond_the_hosts_memory_is_refused_without_a_limit) {
    // 2^31 - 16 tokens of KV for the tiny model is 512 GiB: more than any test machine has
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "1", "-c", "2147483632"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("not enough device memory: this run needs about 512.")) << r.err;
    EXPECT_TRUE(r.has("fit up to -c")) << r.err;
}

// A tiny qwen35, with or without its MTP layer.
std::string qwen35_model(bool mtp) {
    const std::string p = make_temp_dir("memory-plan-q35") + (mtp ? "/mtp.gguf" : "/no-mtp.gguf");
    auto shape = synth::qwen35_preset("tiny");
    synth::Qwen35SynthOptions o;
    o.weight_type = DType::F16;
    o.mtp = mtp;
    EXPECT_TRUE(shape.ok() && synth::synth_qwen35_gguf(p, *shape, o).ok());
    return p;
}

TEST(MemoryPlanCli, the_draft_head_spec_auto_will_pick_is_counted) {
    const std::string with_head = qwen35_model(true);
    const std::vector<std::string> run = {"run", "--prompt-tokens", "1,2", "-n", "1", "--memory-limit", "3MiB",
                                          "-c", "16777216"};
    auto args = [&](const std::string& model, bool spec_auto) {
        std::vector<std::string> a = run;
        a.insert(a.begin() + 1, {"-m", model});
        if (spec_auto) a.push_back("--spec-auto");
        return a;
    };
    CliRun r = tandem(args(with_head, true));
    ASSERT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    EXPECT_TRUE(r.has("KV cache of the qwen35-mtp draft head")) << r.err;

    // without --spec-auto no head is loaded, and none is counted
    r = tandem(args(with_head, false));
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    EXPECT_FALSE(r.has("draft head")) << r.err;

    // a file without an MTP layer: auto mode will decode plainly, so nothing is counted
    r = tandem(args(qwen35_model(false), true));
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    EXPECT_FALSE(r.has("draft head")) << r.err;
}

}  // namespace
}  // namespace tdm::test
