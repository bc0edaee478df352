// SPDX-License-Identifier: Apache-2.0
// tests/grammar/constraint_test.cpp: the GrammarConstraint's rules through the
// TokenConstraint interface, on a vocabulary of a few tokens (token_mask_test.cpp uses the
// real ones): forbidden tokens, end tokens, clones, ids outside the vocabulary, and a
// grammar that never finishes.
#include "grammar_test_util.h"

#include "grammar/token_trie.h"

#include <cmath>

namespace tdm::test {
namespace {

// ids:                                     0    1    2     3    4      5     6        7 (end)
const std::vector<std::string> kPieces = {"a", "b", "ab", "c", "yes", "no", "maybe", ""};
constexpr int32_t kA = 0, kAb = 2, kC = 3, kYes = 4, kMaybe = 6, kEnd = 7;
constexpr int kVocab = 8;

std::unique_ptr<TokenConstraint> tiny_constraint(const std::string& gbnf) {
    auto c = make_grammar_constraint(must_compile(gbnf), TokenTrie::from_pieces(kPieces), std::vector<int32_t>{kEnd});
    EXPECT_TRUE(c.ok()) << c.error().message();
    return std::move(c).value();
}

std::vector<int32_t> allowed_ids(TokenConstraint& c, int n_vocab = kVocab) {
    std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
    c.mask(logits.data(), n_vocab);
    std::vector<int32_t> ids;
    for (int i = 0; i < n_vocab; ++i) {
        if (std::isfinite(logits[static_cast<size_t>(i)])) ids.push_back(i);
    }
    return ids;
}

TEST(GrammarConstraint, the_mask_allows_the_tokens_that_continue_and_the_end_when_complete) {
    auto c = tiny_constraint(R"(root ::= "a" "b"?)");
    EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{kA, kAb}));
    ASSERT_TRUE(c->advance(kA).ok());
    EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{1, kEnd}));  // "b" or the end
    EXPECT_FALSE(c->complete());
    ASSERT_TRUE(c->advance(1).ok());
    EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{kEnd}));
    EXPECT_TRUE(c->complete());
    ASSERT_TRUE(c->advance(kEnd).ok());
    EXPECT_TRUE(c->complete());
    EXPECT_TRUE(allowed_ids(*c).empty());  // nothing follows the end token
}

TEST(GrammarConstraint, a_forbidden_token_is_refused_and_the_state_kept) {
    auto c = tiny_constraint(R"(root ::= "yes" | "no")");
    EXPECT_FALSE(c->allows(kMaybe));
    auto s = c->advance(kMaybe);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message(), "token 6 is not allowed by the grammar here");
    EXPECT_FALSE(c->allows(-1));
    EXPECT_FALSE(c->allows(kVocab + 5));
    EXPECT_FALSE(c->allows(kEnd));
    EXPECT_TRUE(c->allows(kYes));
    // ids past the vocabulary are forbidden in a longer logits row
    EXPECT_EQ(allowed_ids(*c, kVocab + 4), (std::vector<int32_t>{kYes, 5}));
    ASSERT_TRUE(c->advance(kYes).ok());
    EXPECT_TRUE(c->complete());
    EXPECT_TRUE(c->allows(kEnd));
}

TEST(GrammarConstraint, a_clone_moves_independently) {
    auto c = tiny_constraint(R"(root ::= "ab" "c"?)");
    ASSERT_TRUE(c->advance(kAb).ok());
    auto copy = c->clone();
    ASSERT_TRUE(copy->advance(kC).ok());
    EXPECT_TRUE(copy->complete());
    EXPECT_FALSE(c->complete());
    EXPECT_TRUE(c->allows(kC));
    EXPECT_TRUE(c->allows(kEnd));
    EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{kC, kEnd}));
    EXPECT_EQ(allowed_ids(*copy), (std::vector<int32_t>{kEnd}));
}

TEST(GrammarConstraint, a_grammar_that_never_finishes_keeps_a_non_empty_mask) {
    auto c = tiny_constraint(R"(root ::= "a" root)");
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{kA}));
        EXPECT_FALSE(c->complete());
        ASSERT_TRUE(c->advance(kA).ok());
    }
}

// 2049 parses open at once: masks stay bounded in time and never allow a wrong token.
TEST(GrammarConstraint, a_highly_ambiguous_grammar_still_gets_masks) {
    std::string pairs = "root ::= a0 \"b\"\n";
    for (int i = 0; i < 12; ++i) pairs += "a" + std::to_string(i) + " ::= (a" + std::to_string(i + 1) + " a" + std::to_string(i + 1) + ")?\n";
    auto c = tiny_constraint(pairs + "a12 ::= \"a\"\n");  // an even number of a's, up to 8192, then b
    EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{kA, 1}));
    for (int i = 0; i < 21; ++i) ASSERT_TRUE(c->advance(kA).ok());
    EXPECT_EQ(allowed_ids(*c), (std::vector<int32_t>{kA, kAb}));  // odd: "b" must wait
    ASSERT_TRUE(c->advance(kAb).ok());
    EXPECT_TRUE(c->complete());
}

TEST(GrammarConstraint, the_factory_refuses_end_ids_outside_the_vocabulary) {
    std::vector<int32_t> eog = {kVocab};
    auto c = make_grammar_constraint(must_compile(R"(root ::= "a")"), TokenTrie::from_pieces(kPieces), eog);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().message(), "grammar constraint: end-of-generation id 8 is outside the vocabulary of 8 tokens");
    EXPECT_FALSE(make_grammar_constraint(nullptr, TokenTrie::from_pieces(kPieces), {}).ok());
}

}  // namespace
}  // namespace tdm::test
