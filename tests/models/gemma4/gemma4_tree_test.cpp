// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_tree_test.cpp: draft trees (speculative/draft_tree.h) on Gemma 4,
// whose sliding-window layers keep rings of blocks: a tree's nodes store their K/V at slots
// base + i, which wrap the rings, while each node still reads its window of the path's
// keys. Every node's logits in the one verify pass equal a plain decode of its path bit for
// bit, in each attention layout, alone and beside another sequence's row; a committed path
// leaves no trace. A few trees per layout: the check is of a mechanism.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gemma4_tiny.h"
#include "gemma4_tiny_runtime.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/prefill.h"
#include "support/tree_check.h"

namespace tdm {
namespace {

namespace g4 = test::g4;

class Gemma4Tree : public test::DeviceTest {};

TEST_F(Gemma4Tree, every_node_of_random_trees_has_the_logits_of_decoding_its_path_through_wrapping_rings) {
    const g4::Preset tp = g4::preset("tiny-e2b");
    const std::string path = g4::write_gguf(tp, g4::amplify_layer_outputs(g4::make_weights(tp, 51), 4.0f),
                                            test::make_temp_dir("gemma4-tree") + "/target.gguf");
    g4::Loaded l = g4::load(path, device(), pipelines());
    ASSERT_TRUE(l.model);
    // passes of up to 64 rows: rings of ceil((8 + 64 - 1) / 16) = 5 blocks, 80 positions,
    // which a 48-node tree at position 40 wraps (the 64-node case is the Qwen3 test's)
    KvPoolConfig kc;
    kc.n_ctx = 160;
    kc.n_seq_max = 2;
    kc.rows_max = kKvTreeMaxNodes;
    auto kv = KvPool::create(device(), l.model->attention_layers(), kc, "tree");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    ASSERT_TRUE((*kv)->has_rings());
    l.runner.reset();
    l.kv = std::move(kv).value();
    const int seq = *l.kv->add_sequence(), other = *l.kv->add_sequence();
    const std::vector<int32_t> prompt = g4::random_tokens(7, 40), other_prompt = g4::random_tokens(8, 29);
    const int32_t n_vocab = int32_t(l.model->info().n_vocab);
    const int32_t base = int32_t(prompt.size());

    for (const char* layout : {"rl", "ks", "split"}) {
        SCOPED_TRACE(layout);
        ::setenv("TANDEM_ATTENTION_LAYOUT", layout, 1);  // read when a graph is recorded
        Runner runner(*l.model, *l.kv, device(), pipelines());
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        ASSERT_TRUE(l.kv->truncate(other, 0).ok());
        auto p1 = test::prefill(runner, seq, prompt, 16, false, {});
        ASSERT_TRUE(p1.ok()) << p1.error().message();
        auto p2 = test::prefill(runner, other, other_prompt, 16, false, {});
        ASSERT_TRUE(p2.ok()) << p2.error().message();
        const DraftTree big = test::random_tree(3, 21, 48, 3, n_vocab);
        test::expect_tree_rows_equal_path_decoding(runner, seq, base, big);
        ASSERT_TRUE(l.kv->truncate(seq, uint32_t(base)).ok());
        const DraftTree bushy = test::random_tree(4, 22, 12, 3, n_vocab);
        test::expect_tree_rows_equal_path_decoding(
            runner, seq, base, bushy, test::BesideRow{other, 99, int32_t(other_prompt.size())});
        uint32_t deepest = 0;  // the deepest node whose path moves K/V (node i at depth < i)
        for (uint32_t i = 0; i < big.size(); ++i)
            if (i > big.depth(i) && big.depth(i) > big.depth(deepest)) deepest = i;
        ASSERT_GT(big.depth(deepest), 2u);
        test::expect_committed_path_leaves_no_trace(runner, seq, base, big, deepest, 3);
    }
    ::unsetenv("TANDEM_ATTENTION_LAYOUT");
}

}  // namespace
}  // namespace tdm
