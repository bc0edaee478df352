// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_host_rows_test.cpp: the per-layer embedding table of E2B/E4B kept in host
// memory (extension tdm.host_rows, --host-rows on): each forward reads the rows of its tokens on
// the host and uploads only those. The logits of every prompt position must be the bits that
// the table in device memory (get_rows on the device) gives, in the types llama.cpp's files use
// and in an HF BF16 directory; the table must then take no device memory; and the automatic
// placement must follow the device kind and the size threshold.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/generate.h"
#include "gemma4/synth/gemma4_synth.h"
#include "gemma4_tiny_runtime.h"
#include "plugin/plugin_loader.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/prefill.h"
#include "support/fixtures.h"

namespace tdm {
namespace {


struct HostRowsCase {
    const char* name;
    DType type;
    bool hf;
};

std::string write_e2b(const HostRowsCase& c) {
    const std::string dir = test::make_temp_dir("gemma4-host-rows");
    const std::string path = dir + (c.hf ? "/hf" : "/m.gguf");
    synth::Gemma4SynthOptions o;
    o.weight_type = c.type;
    o.seed = 5;
    const auto shape = synth::gemma4_preset("tiny-e2b");
    EXPECT_TRUE(shape.ok());
    const Status st = c.hf ? synth::synth_gemma4_hf(path, *shape, o) : synth::synth_gemma4_gguf(path, *shape, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

struct PrefillRun {
    std::vector<float> logits;  // every prompt position
    uint64_t device_bytes = 0, host_bytes = 0;
};

PrefillRun prefill_logits(const std::string& path, WeightStore::HostTables mode, vk::Device& dev,
                   vk::PipelineManager& pipes, const std::vector<int32_t>& prompt) {
    PrefillRun r;
    ModelLoadOptions opt;
    opt.host_rows = mode;
    auto model = Model::load(path, test::build_tree_plugins(), dev, opt);
    EXPECT_TRUE(model.ok()) << model.error().message();
    if (!model.ok()) return r;
    r.device_bytes = (*model)->weight_store().device_bytes();
    r.host_bytes = (*model)->weight_store().host_bytes();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(dev, (*model)->attention_layers(), kc, "test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (!kv.ok()) return r;
    Runner runner(**model, **kv, dev, pipes);
    const int seq = *(*kv)->add_sequence();
    // chunks of 5: batches of several distinct tokens, one of them repeated below
    auto pf = test::prefill(runner, seq, prompt, 5, true,
                      [&](const float* row, uint32_t n) { r.logits.insert(r.logits.end(), row, row + n); });
    EXPECT_TRUE(pf.ok()) << pf.error().message();
    return r;
}

class Gemma4HostRows : public test::DeviceTest, public ::testing::WithParamInterface<HostRowsCase> {};

TEST_P(Gemma4HostRows, rows_read_on_the_host_give_the_logits_of_the_table_in_device_memory) {
    const HostRowsCase c = GetParam();
    const std::string path = write_e2b(c);
    // the first and last rows of the table, a repeated token within one batch
    const std::vector<int32_t> prompt = {2, 105, 0, 17, 17, 900, 1023, 3, 64, 17, 511, 2, 40};
    const PrefillRun on = prefill_logits(path, WeightStore::HostTables::on, device(), pipelines(), prompt);
    const PrefillRun off = prefill_logits(path, WeightStore::HostTables::off, device(), pipelines(), prompt);
    ASSERT_EQ(on.logits.size(), off.logits.size());
    ASSERT_FALSE(on.logits.empty());
    EXPECT_TRUE(on.logits == off.logits) << c.name << ": rows read on the host change the logits";
    // tiny-e2b's table: 4 layers x 16 per-layer dims over 1024 tokens, in the file's type
    EXPECT_EQ(off.host_bytes, 0u);
    EXPECT_GT(on.host_bytes, 0u);
    EXPECT_EQ(on.device_bytes + on.host_bytes, off.device_bytes) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Types, Gemma4HostRows,
                         ::testing::Values(HostRowsCase{"q8_0", DType::Q8_0, false},
                                           HostRowsCase{"q4_k", DType::Q4_K, false},
                                           HostRowsCase{"q5_1", DType::Q5_1, false},
                                           HostRowsCase{"f16", DType::F16, false},
                                           HostRowsCase{"hf_bf16", DType::BF16, true}),
                         [](const auto& p) { return std::string(p.param.name); });

class Gemma4HostRowsPlacement : public test::DeviceTest {};

TEST_F(Gemma4HostRowsPlacement, automatic_placement_follows_the_device_kind_and_the_share) {
    const std::string path = write_e2b({"q8_0", DType::Q8_0, false});
    ModelLoadOptions opt;
    opt.host_rows = WeightStore::HostTables::automatic;
    opt.host_rows_share = 1.0;  // a GPU would keep a table smaller than its memory on the device
    auto m = Model::load(path, test::build_tree_plugins(), device(), opt);
    ASSERT_TRUE(m.ok()) << m.error().message();
    // a CPU device's memory is host memory: the table stays in the file's mapping regardless
    if (device().caps().is_cpu())
        EXPECT_GT((*m)->weight_store().host_bytes(), 0u);
    else
        EXPECT_EQ((*m)->weight_store().host_bytes(), 0u);
    opt.host_rows = WeightStore::HostTables::off;
    auto off = Model::load(path, test::build_tree_plugins(), device(), opt);
    ASSERT_TRUE(off.ok()) << off.error().message();
    EXPECT_EQ((*off)->weight_store().host_bytes(), 0u);
}

// A host without tdm.host_rows (an older tandem; here the extension hidden by the
// environment): the plugin loads the table as a plain weight, in device memory, and the
// logits are those of --host-rows off.
TEST_F(Gemma4HostRowsPlacement, without_the_extension_the_table_is_a_device_weight_and_the_logits_are_the_same) {
    const std::string path = write_e2b({"q8_0", DType::Q8_0, false});
    const std::vector<int32_t> prompt = {2, 105, 0, 17, 17, 900, 1023};
    const PrefillRun off = prefill_logits(path, WeightStore::HostTables::off, device(), pipelines(), prompt);
    PrefillRun hidden;
    {
        const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", "tdm.host_rows");
        hidden = prefill_logits(path, WeightStore::HostTables::on, device(), pipelines(), prompt);
    }
    EXPECT_EQ(hidden.host_bytes, 0u) << "the table went to host memory without the extension";
    EXPECT_EQ(hidden.device_bytes, off.device_bytes);
    ASSERT_FALSE(hidden.logits.empty());
    EXPECT_TRUE(hidden.logits == off.logits);
}

// A draft head's steps take their tokens from the device (the previous step's pick), so
// no row of a host table could be read for them: a head that reaches the target's per-layer
// table (tests/plugins/host_rows_head.c, through tdm.target_weights) is refused when its
// graph is built, with a message, whether it reads the table by token rows or as a weight.
TEST_F(Gemma4HostRowsPlacement, a_draft_head_reading_a_target_table_in_host_memory_is_refused) {
    PluginSearch s;
    s.use_env = false;
    s.files = {std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-host_rows_head.so"};
    auto reg = load_plugins(s);
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    const DraftHeadEntry* entry = (*reg)->find_draft_head("host-rows-head", "gemma4");
    ASSERT_NE(entry, nullptr);
    const std::string path = write_e2b({"q8_0", DType::Q8_0, false});
    ModelLoadOptions opt;
    opt.host_rows = WeightStore::HostTables::on;
    auto model = Model::load(path, **reg, device(), opt);
    ASSERT_TRUE(model.ok()) << model.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    const int seq = *(*kv)->add_sequence();
    const std::vector<int32_t> history = {2, 105, 17, 40};
    for (const char* read : {"0", "1"}) {
        auto src = ModelSource::open(path);
        ASSERT_TRUE(src.ok()) << src.error().message();
        DraftHeadOptions o;
        o.options["read"] = read;
        auto head = DraftHeadDrafter::create(*entry, "host-rows-head", std::shared_ptr<const ModelSource>(std::move(*src)),
                                             **model, **kv, device(), pipelines(), o);
        ASSERT_TRUE(head.ok()) << head.error().message();
        ASSERT_TRUE((*head)->begin(history).ok());
        const std::vector<float> hidden(size_t(4) * (*model)->info().n_embd, 0.5f);
        ASSERT_TRUE((*head)->observe({history, 0, hidden.data(), (*model)->info().n_embd}).ok());
        auto drafts = (*head)->draft({history, 3, 2, seq});
        ASSERT_FALSE(drafts.ok()) << "read = " << read;
        EXPECT_NE(drafts.error().message().find("per_layer_token_embd.weight"), std::string::npos)
            << drafts.error().message();
        EXPECT_NE(drafts.error().message().find("host memory"), std::string::npos) << drafts.error().message();
    }
}

}  // namespace
}  // namespace tdm
