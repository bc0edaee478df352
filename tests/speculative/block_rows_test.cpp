// SPDX-License-Identifier: Apache-2.0
// tests/speculative/block_rows_test.cpp: a block draft head (tandem/ext/block_draft.h) whose
// step breaks the contract on its output rows is refused when its round's graph is built,
// with a message naming the head, the rows asked for and the rows it gave: one row per
// drafted row for a head that declared drafted rows (version 2), one per block row for one
// that did not (version 1). The test head is tests/plugins/block_rows_head.c, whose logits
// are the context rows' target states. (DFlash, which keeps the contract: tests/models/dflash/.)
#include <gtest/gtest.h>

#include "model/runner.h"
#include "plugin/plugin_loader.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

constexpr int64_t kBlockRowsEmbd = 64;

// Draft counts share a few graph shapes: 5 drafts compute 6 rows, 7 compute 8, never more than
// b - 1, and 1 to 4 their own count (the LM-head row counts tests/models/dflash/ checks).
TEST(BlockDraftedRows, draft_counts_round_up_to_a_few_graph_shapes) {
    std::vector<uint32_t> rows;
    for (uint32_t k = 1; k <= 15; ++k) rows.push_back(block_drafted_rows(k, 16));
    EXPECT_EQ(rows, (std::vector<uint32_t>{1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12, 15, 15, 15}));
    EXPECT_EQ(block_drafted_rows(20, 64), 24u);
    EXPECT_EQ(block_drafted_rows(40, 6), 5u);
    for (uint32_t k = 1; k <= 63; ++k) EXPECT_GE(block_drafted_rows(k, 64), k);
}

const std::string& block_rows_model_path() {
    static const std::string path = [] {
        const std::string p = test::make_temp_dir("block-rows") + "/m.gguf";
        synth::Qwen3Shape s;
        s.n_vocab = 512;
        s.n_embd = kBlockRowsEmbd;
        s.n_layer = 1;
        s.n_head = 4;
        s.n_head_kv = 2;
        s.head_dim = 16;
        s.n_ff = 128;
        s.n_ctx_train = 2048;
        EXPECT_TRUE(synth::synth_qwen3_gguf(p, s, synth::Qwen3SynthOptions{}).ok());
        return p;
    }();
    return path;
}

Registry& block_rows_plugins() {
    static std::unique_ptr<Registry> reg = [] {
        PluginSearch s;
        s.use_env = false;
        s.files = {std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-block_rows_head.so"};
        auto r = load_plugins(s);
        EXPECT_TRUE(r.ok()) << r.error().message();
        return std::move(r).value();
    }();
    return *reg;
}

class BlockRows : public test::DeviceTest {};

// The message of a round of 3 drafts after a prompt of 6 tokens (6 context rows) with the
// test head, declaring drafted rows or not ("" when the round drafts).
std::string round_refusal(vk::Device& device, vk::PipelineManager& pipelines, bool drafted_rows) {
    auto model = Model::load(block_rows_model_path(), block_rows_plugins(), device);
    EXPECT_TRUE(model.ok()) << model.error().message();
    if (!model.ok()) return "no model";
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(device, (*model)->attention_layers(), kc, "test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (!kv.ok()) return "no kv";
    const DraftHeadEntry* e = block_rows_plugins().find_draft_head("block-rows-head", "qwen3");
    EXPECT_NE(e, nullptr);
    if (!e) return "no head";
    DraftHeadOptions o;
    o.options["n_embd"] = std::to_string(kBlockRowsEmbd);
    o.options["drafted_rows"] = drafted_rows ? "1" : "0";
    auto head = DraftHeadDrafter::create(*e, "block-rows-head", (*model)->shared_source(), **model, **kv, device,
                                         pipelines, o);
    EXPECT_TRUE(head.ok()) << head.error().message();
    if (!head.ok()) return "no drafter";
    EXPECT_EQ((*head)->graph_per_draft_count(), drafted_rows);
    Runner runner(**model, **kv, device, pipelines);
    runner.set_hidden_point((*head)->hidden_point());
    const int seq = *(*kv)->add_sequence();
    const std::vector<int32_t> prompt = {1, 17, 300, 42, 9, 255};
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    EXPECT_TRUE(out.ok()) << out.error().message();
    if (!out.ok()) return "no pass";
    EXPECT_TRUE((*head)->begin(prompt).ok());
    EXPECT_TRUE((*head)->observe({prompt, 0, out->hidden, out->hidden_width, out->hidden_on_device}).ok());
    std::vector<int32_t> history = prompt;
    history.push_back(7);
    auto drafts = (*head)->draft({history, uint32_t(prompt.size()), 3, seq});
    return drafts.ok() ? std::string() : drafts.error().message();
}

TEST_F(BlockRows, a_head_with_drafted_rows_whose_logits_have_other_rows_is_refused_naming_them) {
    const std::string m = round_refusal(device(), pipelines(), true);
    EXPECT_NE(m.find("draft head block-rows-head: block logits must be [n <= 512, 3] (one row per output row: the "
                     "drafted block rows, declare_drafted_rows()); they are [64, 6]"),
              std::string::npos)
        << m;
}

TEST_F(BlockRows, a_version_1_head_whose_logits_have_other_rows_than_the_block_is_refused_naming_them) {
    const std::string m = round_refusal(device(), pipelines(), false);
    EXPECT_NE(m.find("draft head block-rows-head: block logits must be [n <= 512, 4] (one row per output row: every "
                     "block row); they are [64, 6]"),
              std::string::npos)
        << m;
}

}  // namespace
}  // namespace tdm
