// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_tree_test.cpp: draft trees (speculative/draft_tree.h) on GLM,
// whose rotary embedding turns only part of each head (partial rope) and whose q/k/v
// projections carry biases here (as GLM-4-0414's do): every node of random trees, run in
// one verify pass at the position of its depth, has the logits of a plain decode of its
// path bit for bit, in both attention layouts, alone and beside another sequence's row;
// a committed path leaves no trace. A few trees per layout: the check is of a mechanism.
#include "glm_helpers.h"

#include <cstdlib>

#include "support/prefill.h"
#include "support/tree_check.h"

namespace tdm {
namespace {

class GlmTree : public test::DeviceTest {};

TEST_F(GlmTree, every_node_of_random_trees_has_the_logits_of_decoding_its_path_in_both_layouts) {
    testglm::ModelSpec spec;
    spec.type = DType::Q8_0;
    spec.mtp = false;
    spec.seed = 23;
    spec.bias = true;
    const std::string path = testglm::synth(spec);
    auto m = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 160;
    kc.n_seq_max = 2;
    auto kv = KvPool::create(device(), (*m)->attention_layers(), kc, "tree");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    const int seq = *(*kv)->add_sequence(), other = *(*kv)->add_sequence();
    const int32_t n_vocab = int32_t((*m)->info().n_vocab);
    const std::vector<int32_t> prompt = testglm::random_prompt(31, 33, 400),
                               other_prompt = testglm::random_prompt(32, 21, 400);
    const int32_t base = int32_t(prompt.size());

    for (const char* layout : {"rl", "ks"}) {
        SCOPED_TRACE(layout);
        ::setenv("TANDEM_ATTENTION_LAYOUT", layout, 1);  // read when a graph is recorded
        Runner runner(**m, **kv, device(), pipelines());
        ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
        ASSERT_TRUE((*kv)->truncate(other, 0).ok());
        auto p1 = test::prefill(runner, seq, prompt, 64, false, {});
        ASSERT_TRUE(p1.ok()) << p1.error().message();
        auto p2 = test::prefill(runner, other, other_prompt, 64, false, {});
        ASSERT_TRUE(p2.ok()) << p2.error().message();
        // a deep tree alone, a bushy one beside the other sequence's decode row
        const DraftTree big = test::random_tree(5, 11, 40, 3, n_vocab);
        test::expect_tree_rows_equal_path_decoding(runner, seq, base, big);
        ASSERT_TRUE((*kv)->truncate(seq, uint32_t(base)).ok());
        const DraftTree bushy = test::random_tree(6, 13, 16, 3, n_vocab);
        test::expect_tree_rows_equal_path_decoding(
            runner, seq, base, bushy, test::BesideRow{other, 77, int32_t(other_prompt.size())});
        // commit the path to the deepest node whose path moves K/V (node i at depth < i)
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
