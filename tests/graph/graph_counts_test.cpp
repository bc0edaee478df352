// SPDX-License-Identifier: Apache-2.0
// tests/graph/graph_counts_test.cpp: what one decode step and one verify pass of each
// in-tree model family record: dispatches, barriers, and dispatches that bind host memory
// (graph/executor.h). The counts are deterministic for a graph's shape, so each family is
// held to a budget: work that fuses ops or moves buffers to the device lowers a budget here,
// and a change that adds dispatches or host bindings without saying so fails.
//
// To add a family: a CountCase with its synthesizer and today's counts as the budget. When a
// count goes down, lower its budget to the new count in the same commit.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "graph/fusion.h"
#include "model/runner.h"
#include "gemma4/synth/gemma4_synth.h"
#include "glm-ocr/synth/glm_synth.h"
#include "llama/synth/llama_synth.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

struct CountCase {
    const char* name;
    std::function<Status(const std::string& path)> synthesize;  // a Q8_0 model of the family
    GraphCounts decode_budget;                                  // at most, for one token
    GraphCounts verify_budget;                                  // at most, for 4 rows of one sequence
};

Status qwen3_tiny(const std::string& path) {
    synth::Qwen3SynthOptions o;
    o.weight_type = DType::Q8_0;
    return synth::synth_qwen3_gguf(path, TDM_TRY(synth::qwen3_preset("tiny")), o);
}

Status qwen35_tiny(const std::string& path) {
    synth::Qwen35SynthOptions o;
    o.weight_type = DType::Q8_0;
    return synth::synth_qwen35_gguf(path, TDM_TRY(synth::qwen35_preset("tiny")), o);
}

Status gemma4_tiny_e2b(const std::string& path) {
    synth::Gemma4SynthOptions o;
    o.weight_type = DType::Q8_0;
    return synth::synth_gemma4_gguf(path, TDM_TRY(synth::gemma4_preset("tiny-e2b")), o);
}

Status glm_tiny(const std::string& path) {
    synth::GlmSynthOptions o;
    o.weight_type = DType::Q8_0;
    return synth::synth_glm_gguf(path, TDM_TRY(synth::glm_preset("tiny")), o);
}

Status llama_tiny(const std::string& path) {
    synth::LlamaSynthOptions o;
    o.weight_type = DType::Q8_0;
    return synth::synth_llama_gguf(path, TDM_TRY(synth::llama_preset("tiny")), o);
}

void PrintTo(const CountCase& c, std::ostream* os) { *os << c.name; }

class ModelGraphCounts : public test::DeviceTest, public ::testing::WithParamInterface<CountCase> {};
class SplitAttentionCounts : public test::DeviceTest {};

TEST_P(ModelGraphCounts, decode_and_verify_graphs_stay_within_their_budgets) {
    const CountCase& c = GetParam();
    // the budgets are the GPUs' graphs, which are fused (lavapipe's default is unfused) and
    // read their matmuls in the "mv" layout (lavapipe's is "rl"), with the GLU epilogue
    const test::ScopedEnv fused("TANDEM_FUSE", "1");
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    const std::string path = test::make_temp_dir("counts") + "/m.gguf";
    const Status st = c.synthesize(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test", (*model)->recurrent_states());
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(**model, **kv, device(), pipelines());

    // staged I/O (discrete GPUs, or TANDEM_STAGED_IO=1) adds a barrier after the copies in
    // and one before the copies out
    const uint32_t staging_barriers = vk::staged_io(device()) ? 2 : 0;
    auto check = [&](const char* what, const GraphCounts& got, GraphCounts budget) {
        budget.barriers += staging_barriers;
        std::printf("%s: %u dispatches, %u barriers, %u binding host memory\n", what, got.dispatches, got.barriers,
                    got.host_memory_dispatches);
        EXPECT_LE(got.dispatches, budget.dispatches) << what;
        EXPECT_LE(got.barriers, budget.barriers) << what;
        EXPECT_LE(got.host_memory_dispatches, budget.host_memory_dispatches) << what;
        // a barrier stands before a dispatch, never two in a row
        EXPECT_LE(got.barriers, got.dispatches) << what;
        EXPECT_LE(got.host_memory_dispatches, got.dispatches) << what;
    };
    const auto decode = runner.graph_counts(1, 1);
    ASSERT_TRUE(decode.ok()) << decode.error().message();
    check("decode", *decode, c.decode_budget);
    const auto verify = runner.graph_counts(4, 4);
    ASSERT_TRUE(verify.ok()) << verify.error().message();
    check("verify", *verify, c.verify_budget);
    // the same shape compiled twice records the same commands
    const auto again = runner.graph_counts(1, 1);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->dispatches, decode->dispatches);
    EXPECT_EQ(again->barriers, decode->barriers);
    EXPECT_EQ(again->host_memory_dispatches, decode->host_memory_dispatches);
}

// The GPUs' path (vk::staged_io: inputs, block tables and outputs copied through host
// staging by the command buffer) forced on lavapipe: the same logits to the bit as the
// mapped path, over a prefill and greedy decode steps, and still no dispatch binding host
// memory; the copies cost one barrier in and one out.
TEST_P(ModelGraphCounts, staged_io_gives_the_mapped_paths_logits_and_binds_no_host_memory) {
    const CountCase& c = GetParam();
    const std::string path = test::make_temp_dir("staged") + "/m.gguf";
    const Status st = c.synthesize(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();

    struct Run {
        std::vector<std::vector<float>> logits;
        GraphCounts decode;
    };
    auto generate = [&](bool staged) {
        const test::ScopedEnv env("TANDEM_STAGED_IO", staged ? "1" : "0");
        Run r;
        KvPoolConfig kc;
        kc.n_ctx = 64;
        auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test", (*model)->recurrent_states());
        EXPECT_TRUE(kv.ok()) << kv.error().message();
        if (!kv.ok()) return r;
        Runner runner(**model, **kv, device(), pipelines());
        auto seq = (*kv)->add_sequence();
        EXPECT_TRUE(seq.ok());
        std::vector<int32_t> tokens = {11, 42, 7, 99, 3, 5, 8, 13}, positions(tokens.size()), rows = {7};
        for (size_t i = 0; i < positions.size(); ++i) positions[i] = int32_t(i);
        auto out = runner.forward({tokens, positions, *seq, rows});
        const uint32_t n_vocab = (*model)->info().n_vocab;
        for (int step = 0; step < 6 && out.ok(); ++step) {
            r.logits.emplace_back(out->logits, out->logits + n_vocab);
            const int32_t next = out->argmax[0], pos = int32_t(tokens.size()) + step, row = 0;
            out = runner.forward({{&next, 1}, {&pos, 1}, *seq, {&row, 1}});
        }
        EXPECT_TRUE(out.ok()) << out.error().message();
        auto counts = runner.graph_counts(1, 1);
        EXPECT_TRUE(counts.ok());
        if (counts.ok()) r.decode = *counts;
        return r;
    };
    const Run mapped = generate(false), staged = generate(true);
    ASSERT_EQ(mapped.logits.size(), 6u);
    ASSERT_EQ(staged.logits.size(), mapped.logits.size());
    for (size_t i = 0; i < mapped.logits.size(); ++i)
        EXPECT_EQ(std::memcmp(mapped.logits[i].data(), staged.logits[i].data(), mapped.logits[i].size() * 4), 0)
            << "step " << i;
    EXPECT_EQ(staged.decode.dispatches, mapped.decode.dispatches);
    EXPECT_EQ(staged.decode.barriers, mapped.decode.barriers + 2);
    EXPECT_EQ(staged.decode.host_memory_dispatches, 0u);
}

// The fusion pass (graph/fusion.h) forms other kernels from the same graph: over a prefill
// and a few greedy decode steps, the logits are the unfused graph's to the bit
// (TANDEM_FUSE=0 turns the pass off), with fewer dispatches. Both in the GPUs' "mv" matmul
// layout, where fusion runs (the GLU epilogue, graph/fusion_glu.h, needs it). Three steps:
// exactness of the mechanism, each step a fresh decode graph run.
TEST_P(ModelGraphCounts, fused_graphs_give_the_unfused_logits_bit_for_bit) {
    const CountCase& c = GetParam();
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    const std::string path = test::make_temp_dir("fused") + "/m.gguf";
    const Status st = c.synthesize(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();

    struct Run {
        std::vector<std::vector<float>> logits;
        GraphCounts decode;
    };
    auto generate = [&](bool fuse) {
        const test::ScopedEnv env("TANDEM_FUSE", fuse ? "1" : "0");
        Run r;
        KvPoolConfig kc;
        kc.n_ctx = 64;
        auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test", (*model)->recurrent_states());
        EXPECT_TRUE(kv.ok()) << kv.error().message();
        if (!kv.ok()) return r;
        Runner runner(**model, **kv, device(), pipelines());
        auto seq = (*kv)->add_sequence();
        EXPECT_TRUE(seq.ok());
        std::vector<int32_t> tokens = {11, 42, 7, 99, 3, 5, 8, 13}, positions(tokens.size()), rows = {7};
        for (size_t i = 0; i < positions.size(); ++i) positions[i] = int32_t(i);
        auto out = runner.forward({tokens, positions, *seq, rows});
        const uint32_t n_vocab = (*model)->info().n_vocab;
        for (int step = 0; step < 3 && out.ok(); ++step) {
            r.logits.emplace_back(out->logits, out->logits + n_vocab);
            const int32_t next = out->argmax[0], pos = int32_t(tokens.size()) + step, row = 0;
            out = runner.forward({{&next, 1}, {&pos, 1}, *seq, {&row, 1}});
        }
        EXPECT_TRUE(out.ok()) << out.error().message();
        auto counts = runner.graph_counts(1, 1);
        EXPECT_TRUE(counts.ok());
        if (counts.ok()) r.decode = *counts;
        return r;
    };
    const Run fused = generate(true), plain = generate(false);
    ASSERT_EQ(fused.logits.size(), 3u);
    ASSERT_EQ(plain.logits.size(), fused.logits.size());
    for (size_t i = 0; i < fused.logits.size(); ++i)
        EXPECT_EQ(std::memcmp(fused.logits[i].data(), plain.logits[i].data(), fused.logits[i].size() * 4), 0)
            << "step " << i;
    std::printf("decode: %u dispatches fused, %u unfused\n", fused.decode.dispatches, plain.decode.dispatches);
    EXPECT_LT(fused.decode.dispatches, plain.decode.dispatches);
}


// The split attention layout (the GPUs', ops/attention_layout.h) forced on lavapipe: one
// dispatch (the combine pass) and one barrier per attention more than the "ks" layout, for a
// decode step and a verify pass alike, and no more dispatches binding host memory. A
// 512-row prefill chunk folds its splits in one pass per attention: the counts of "ks".
TEST_F(SplitAttentionCounts, the_split_layout_adds_one_dispatch_and_one_barrier_per_attention) {
    const std::string path = test::make_temp_dir("split_counts") + "/m.gguf";
    const Status st = qwen3_tiny(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    auto counts = [&](const char* layout, uint32_t rows, uint32_t outputs) {
        const test::ScopedEnv env("TANDEM_ATTENTION_LAYOUT", layout);
        KvPoolConfig kc;
        kc.n_ctx = 64;
        auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test");
        EXPECT_TRUE(kv.ok()) << kv.error().message();
        Runner runner(**model, **kv, device(), pipelines());
        auto c = runner.graph_counts(rows, outputs);
        EXPECT_TRUE(c.ok()) << c.error().message();
        return c.ok() ? *c : GraphCounts{};
    };
    const uint32_t n_attention = uint32_t((*model)->attention_layers().size());
    for (const uint32_t rows : {1u, 4u}) {
        const GraphCounts ks = counts("ks", rows, rows), split = counts("split", rows, rows);
        std::printf("%u rows: ks %u dispatches, %u barriers; split %u, %u\n", rows, ks.dispatches, ks.barriers,
                    split.dispatches, split.barriers);
        EXPECT_EQ(split.dispatches, ks.dispatches + n_attention) << rows << " rows";
        EXPECT_EQ(split.barriers, ks.barriers + n_attention) << rows << " rows";
        EXPECT_EQ(split.host_memory_dispatches, ks.host_memory_dispatches) << rows << " rows";
    }
    const GraphCounts ks = counts("ks", 512, 1), split = counts("split", 512, 1);
    EXPECT_EQ(split.dispatches, ks.dispatches) << "a 512-row prefill chunk";
    EXPECT_EQ(split.barriers, ks.barriers) << "a 512-row prefill chunk";
    EXPECT_EQ(split.host_memory_dispatches, ks.host_memory_dispatches) << "a 512-row prefill chunk";
}

// A greedy pass (ForwardInput::read_logits = false) brings back the argmax ids and the
// logit at each, not the logits: on both paths (mapped, staged) the logits pointer is
// null, and the ids and values are those of passes that read the logits; a pass that asks
// again after one that did not gets its logits. A prefill and three steps each (a check of
// the mechanism: a few steps suffice).
TEST_P(ModelGraphCounts, greedy_passes_read_back_only_the_argmax) {
    const CountCase& c = GetParam();
    const std::string path = test::make_temp_dir("ids_only") + "/m.gguf";
    const Status st = c.synthesize(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    const uint32_t n_vocab = (*model)->info().n_vocab;
    auto bits = [](float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        return u;
    };
    struct Run {
        std::vector<int32_t> ids;
        std::vector<uint32_t> values;  // bits of the logit at each id
    };
    auto generate = [&](bool staged, const std::function<bool(int step)>& read_logits) {
        const test::ScopedEnv env("TANDEM_STAGED_IO", staged ? "1" : "0");
        Run r;
        KvPoolConfig kc;
        kc.n_ctx = 64;
        auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test", (*model)->recurrent_states());
        EXPECT_TRUE(kv.ok()) << kv.error().message();
        if (!kv.ok()) return r;
        Runner runner(**model, **kv, device(), pipelines());
        auto seq = (*kv)->add_sequence();
        EXPECT_TRUE(seq.ok());
        std::vector<int32_t> tokens = {11, 42, 7, 99, 3, 5, 8, 13}, positions(tokens.size()), rows = {7};
        for (size_t i = 0; i < positions.size(); ++i) positions[i] = int32_t(i);
        ForwardInput in{tokens, positions, *seq, rows};
        int32_t next = 0, pos = 0, row = 0;
        for (int step = 0; step < 4; ++step) {
            if (step > 0) in = {{&next, 1}, {&pos, 1}, *seq, {&row, 1}};
            in.read_logits = read_logits(step);
            auto out = runner.forward(in);
            EXPECT_TRUE(out.ok()) << out.error().message();
            if (!out.ok()) return r;
            EXPECT_EQ(out->logits != nullptr, in.read_logits) << "step " << step;
            next = out->argmax[0];
            r.ids.push_back(next);
            r.values.push_back(bits(out->argmax_logit[0]));
            if (out->logits) {
                EXPECT_EQ(r.values.back(), bits(out->logits[next])) << "step " << step;
            }
            EXPECT_LT(uint32_t(next), n_vocab);
            pos = int32_t(tokens.size()) + step;
        }
        return r;
    };
    const Run want = generate(false, [](int) { return true; });
    ASSERT_EQ(want.ids.size(), 4u);
    for (const bool staged : {false, true}) {
        const Run got = generate(staged, [](int step) { return step == 2; });
        EXPECT_EQ(got.ids, want.ids) << (staged ? "staged" : "mapped");
        EXPECT_EQ(got.values, want.values) << (staged ? "staged" : "mapped");
    }
}

INSTANTIATE_TEST_SUITE_P(
    Families, ModelGraphCounts,
    // the tiny presets: the counts grow by a fixed amount per layer (fused graphs,
    // graph/fusion.h; unfused they were 37/30, 77/64, 141/130, 39/32, 33/26; the argmax's
    // two passes, ops/argmax.cpp, are one dispatch and one barrier more than its one pass was;
    // before the GLU epilogue, graph/fusion_glu.h, 23/22, 63/58, 78/74, 27/25, 25/22: one
    // dispatch and one barrier less per dense FFN; GLM's gate and up are one weight, unfused;
    // Gemma 4 E2B before its per-layer input gate took the GLU as an epilogue too
    // (ops/matmul_act_mul.h) 73/69: one dispatch and one barrier less per layer)
    ::testing::Values(CountCase{"qwen3_tiny", qwen3_tiny, {21, 20, 0}, {21, 20, 0}},
                      CountCase{"qwen35_tiny", qwen35_tiny, {59, 54, 0}, {59, 54, 0}},
                      CountCase{"gemma4_tiny_e2b", gemma4_tiny_e2b, {68, 64, 0}, {68, 64, 0}},
                      CountCase{"glm_tiny", glm_tiny, {27, 25, 0}, {27, 25, 0}},
                      CountCase{"llama_tiny", llama_tiny, {23, 20, 0}, {23, 20, 0}}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace

// Fusion is the GPUs' default and off on CPU devices, where it measured slower
// (graph/fusion.h); TANDEM_FUSE forces it either way.
TEST(FusionDefault, on_for_gpus_off_for_cpu_devices_and_forced_by_the_environment) {
    vk::DeviceCaps gpu, cpu;
    gpu.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    {
        const test::ScopedEnv unset("TANDEM_FUSE", "");  // empty: as if unset
        EXPECT_TRUE(fusion_enabled(gpu));
        EXPECT_FALSE(fusion_enabled(cpu));
    }
    {
        const test::ScopedEnv on("TANDEM_FUSE", "1");
        EXPECT_TRUE(fusion_enabled(gpu));
        EXPECT_TRUE(fusion_enabled(cpu));
    }
    {
        const test::ScopedEnv off("TANDEM_FUSE", "0");
        EXPECT_FALSE(fusion_enabled(gpu));
        EXPECT_FALSE(fusion_enabled(cpu));
    }
}

}  // namespace tdm
