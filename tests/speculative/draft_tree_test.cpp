// SPDX-License-Identifier: Apache-2.0
// tests/speculative/draft_tree_test.cpp: draft trees (speculative/draft_tree.h) on a synthetic
// Qwen3 target. DESIGN invariant 1 for trees: in the one verify pass of a random tree (up
// to 64 nodes), every node's logits equal a plain decode of its path bit for bit, in each
// attention layout (in the split one, the GPUs', with the tree across a split boundary),
// alone and beside another sequence's row; invariant 3: after the
// accepted path is committed, later steps equal a run that never saw the other nodes.
// A few trees per layout: the check is of a mechanism, each node is decoded again alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"
#include "support/prefill.h"
#include "support/tree_check.h"

namespace tdm {
namespace {

class DraftTreeQwen3 : public test::DeviceTest {};

TEST(DraftTree, a_chain_is_one_branch_and_greedy_acceptance_follows_the_targets_argmax) {
    const int32_t drafts[] = {5, 6, 7};
    const DraftTree chain = DraftTree::chain(4, drafts);
    ASSERT_EQ(chain.size(), 4u);
    EXPECT_EQ(chain.max_depth(), 3u);
    EXPECT_EQ(chain.ancestors(3), 0b1111u);
    const std::vector<KvTreeRow> rows = chain.kv_rows(10);
    EXPECT_EQ(rows[2].base, 10);
    EXPECT_EQ(chain.positions(10), (std::vector<int32_t>{10, 11, 12, 13}));

    DraftTree t(1);                  // 0
    ASSERT_EQ(*t.add(0, 2), 1u);     // 1: depth 1
    ASSERT_EQ(*t.add(0, 3), 2u);     // 2: depth 1
    ASSERT_EQ(*t.add(2, 4), 3u);     // 3: depth 2, under 2
    ASSERT_EQ(*t.add(0, 3), 2u);     // the same token under the same parent: the same node
    EXPECT_EQ(t.path(3), (std::vector<uint32_t>{0, 2, 3}));
    EXPECT_EQ(t.ancestors(3), 0b1101u);
    // the target wants 3 after the root, 4 after node 2, 9 after node 3
    const int32_t argmax[] = {3, 0, 4, 9};
    const TreeVerdict v = accept_greedy(t, argmax);
    EXPECT_EQ(v.path, (std::vector<uint32_t>{0, 2, 3}));
    EXPECT_EQ(v.next, 9);
    const int32_t none[] = {8, 0, 0, 0};
    EXPECT_EQ(accept_greedy(t, none).path.size(), 1u);
    EXPECT_EQ(accept_greedy(t, none).next, 8);

    DraftTree full(0);
    for (uint32_t i = 1; i < kKvTreeMaxNodes; ++i) ASSERT_TRUE(full.add(0, int32_t(i)).ok());
    EXPECT_FALSE(full.add(0, 1000).ok()) << "a 65th node";
    EXPECT_FALSE(t.add(7, 1).ok()) << "no node 7";
}

TEST_F(DraftTreeQwen3, every_node_of_random_trees_has_the_logits_of_decoding_its_path_in_each_layout) {
    const std::string path = test::make_temp_dir("tree-qwen3") + "/target.gguf";
    auto shape = synth::qwen3_preset("tiny");
    ASSERT_TRUE(shape.ok());
    synth::Qwen3SynthOptions so;
    so.weight_type = DType::Q8_0;
    so.seed = 17;
    ASSERT_TRUE(synth::synth_qwen3_gguf(path, *shape, so).ok());
    auto m = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 512;
    kc.n_seq_max = 2;
    auto kv = KvPool::create(device(), (*m)->attention_layers(), kc, "tree");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    const int seq = *(*kv)->add_sequence(), other = *(*kv)->add_sequence();
    const int32_t n_vocab = int32_t((*m)->info().n_vocab);
    std::vector<int32_t> other_prompt(23);
    for (size_t i = 0; i < other_prompt.size(); ++i) other_prompt[i] = int32_t(5 + (i * 31) % 400);

    for (const char* layout : {"rl", "ks", "split"}) {
        SCOPED_TRACE(layout);
        // split: the trees' nodes sit on both sides of the first split boundary (position 256)
        std::vector<int32_t> prompt(std::string_view(layout) == "split" ? 230 : 37);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(3 + (i * 97) % 400);
        const int32_t base = int32_t(prompt.size());
        ::setenv("TANDEM_ATTENTION_LAYOUT", layout, 1);  // read when a graph is recorded
        Runner runner(**m, **kv, device(), pipelines());
        ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
        ASSERT_TRUE((*kv)->truncate(other, 0).ok());
        auto p1 = test::prefill(runner, seq, prompt, 64, false, {});
        ASSERT_TRUE(p1.ok()) << p1.error().message();
        auto p2 = test::prefill(runner, other, other_prompt, 64, false, {});
        ASSERT_TRUE(p2.ok()) << p2.error().message();
        // a 64-node tree alone, a chain, and a bushy tree beside the other sequence's row
        const DraftTree big = test::random_tree(1, 11, kKvTreeMaxNodes, 3, n_vocab);
        test::expect_tree_rows_equal_path_decoding(runner, seq, base, big);
        ASSERT_TRUE((*kv)->truncate(seq, uint32_t(base)).ok());
        const int32_t drafts[] = {40, 41, 42, 43, 44, 45, 46};
        test::expect_tree_rows_equal_path_decoding(runner, seq, base, DraftTree::chain(12, drafts));
        ASSERT_TRUE((*kv)->truncate(seq, uint32_t(base)).ok());
        const DraftTree bushy = test::random_tree(2, 13, 20, 3, n_vocab);
        test::expect_tree_rows_equal_path_decoding(
            runner, seq, base, bushy, test::BesideRow{other, 77, int32_t(other_prompt.size())});
        // commit the path to the deepest node whose path moves K/V (node i at depth < i),
        // then three steps
        uint32_t deepest = 0;
        for (uint32_t i = 0; i < big.size(); ++i)
            if (i > big.depth(i) && big.depth(i) > big.depth(deepest)) deepest = i;
        ASSERT_GT(big.depth(deepest), 2u);
        test::expect_committed_path_leaves_no_trace(runner, seq, base, big, deepest, 3);
    }
    ::unsetenv("TANDEM_ATTENTION_LAYOUT");
}

}  // namespace
}  // namespace tdm
