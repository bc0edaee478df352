// SPDX-License-Identifier: Apache-2.0
// tests/grammar/token_mask_test.cpp: token masks over the real Qwen3 and Gemma 3
// vocabularies equal the brute-force set {t : the state can take all of t's bytes}, in
// states reached by prefixes of a JSON document (cut also inside UTF-8 characters); the
// GrammarConstraint taking a real document's tokens; and the mask cost per token (printed,
// not asserted). constraint_test.cpp checks the constraint's rules on a tiny vocabulary. A handful of states per vocabulary: the check is exact, more
// states would only cost time.
#include "grammar_test_util.h"

#include "grammar/token_mask.h"
#include "grammar/token_trie.h"
#include "support/fixtures.h"
#include "tokenizer/vocab_json.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

namespace tdm::test {
namespace {

const Tokenizer& fixture_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    auto it = cache.find(name);
    if (it != cache.end()) return *it->second;
    auto tok = load_tokenizer_hf(read_fixture("tokenizers/" + name + "/tokenizer.json.zst"),
                                 read_fixture("tokenizers/" + name + "/tokenizer_config.json.zst"),
                                 name + "/tokenizer.json");
    if (!tok.ok()) {
        ADD_FAILURE() << tok.error().message();
        std::abort();  // every caller needs the tokenizer
    }
    return *cache.emplace(name, std::make_unique<Tokenizer>(std::move(tok).value())).first->second;
}

std::shared_ptr<const TokenTrie> fixture_trie(const std::string& name) {
    static std::map<std::string, std::shared_ptr<const TokenTrie>> cache;
    auto& t = cache[name];
    if (!t) t = build_token_trie(fixture_tokenizer(name));
    return t;
}

const char* const kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 24}, "kind": {"enum": ["cat", "dög"]},
    "n": {"type": "integer", "minimum": 0, "maximum": 500},
    "tags": {"type": "array", "items": {"type": "string"}}, "ok": {"type": "boolean"}},
    "required": ["name", "n"], "additionalProperties": false})";
const std::string kDoc =
    "{\"name\": \"Zo\xC3\xAB the \xF0\x9F\x90\x88\", \"n\": 42, \"kind\": \"d\xC3\xB6g\", \"tags\": [\"a b\", \"x\"], \"ok\": true}";

std::vector<int32_t> brute_force_allowed(const CompiledGrammar& g, const Tokenizer& tok, const MatchState& state) {
    std::vector<int32_t> allowed;
    MatchWorkspace ws;
    MatchState a, b;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        TokenType type = tok.token_type(id);
        if (type == TokenType::control || type == TokenType::unknown || type == TokenType::unused) continue;
        std::string piece = tok.token_to_piece(id, /*special=*/false);
        if (piece.empty()) continue;
        const MatchState* in = &state;
        MatchState* out = &a;
        bool ok = true;
        for (char c : piece) {
            if (!advance_byte(g, *in, static_cast<uint8_t>(c), *out, ws)) {
                ok = false;
                break;
            }
            in = out;
            out = out == &a ? &b : &a;
        }
        if (ok) allowed.push_back(id);
    }
    return allowed;
}

void expect_masks_equal_brute_force(const std::string& name, const std::vector<size_t>& cuts) {
    const Tokenizer& tok = fixture_tokenizer(name);
    auto trie = fixture_trie(name);
    auto g = must_compile_schema(kSchema);
    ASSERT_TRUE(g);
    ASSERT_TRUE(accepts(g, kDoc));
    MaskWorkspace ws;
    LazyDfa dfa;
    for (size_t cut : cuts) {
        SCOPED_TRACE(name + " after '" + kDoc.substr(0, cut) + "'");
        GrammarMatcher m(g);
        ASSERT_TRUE(m.feed(kDoc.substr(0, cut)));
        TokenBitset bits;
        EXPECT_TRUE(compute_token_mask(*g, *trie, m.state(), dfa, ws, bits));
        std::vector<int32_t> from_mask;
        for (int32_t id = 0; id < trie->n_vocab(); ++id) {
            if (test_bit(bits, id)) from_mask.push_back(id);
        }
        std::vector<int32_t> brute = brute_force_allowed(*g, tok, m.state());
        EXPECT_FALSE(brute.empty());
        EXPECT_EQ(from_mask, brute);
    }
}

TEST(TokenMask, qwen3_masks_equal_brute_force) {
    // the start, inside a key, inside a string, inside ë and inside the emoji (partial
    // UTF-8), inside a number, inside an enum value, inside an array, and at the end
    expect_masks_equal_brute_force("qwen3", {0, 4, 13, 14, 22, 33, 45, 60, 68, kDoc.size()});
}

TEST(TokenMask, gemma3_masks_equal_brute_force) {
    expect_masks_equal_brute_force("gemma3", {0, 14, 20, 33, 68, kDoc.size()});
}

std::unique_ptr<TokenConstraint> make_constraint(const std::shared_ptr<const CompiledGrammar>& g,
                                                 const std::string& name) {
    const Tokenizer& tok = fixture_tokenizer(name);
    std::vector<int32_t> eog;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        if (tok.is_eog(id)) eog.push_back(id);
    }
    auto c = make_grammar_constraint(g, fixture_trie(name), eog);
    EXPECT_TRUE(c.ok()) << c.error().message();
    return std::move(c).value();
}

// This thread's CPU time: the suite shares its cores, so wall time would measure the others.
double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The document's own tokens pass the constraint one by one, then the end token; the
// mean mask cost per token is printed for docs/GRAMMAR.md (not asserted).
TEST(TokenMask, a_constrained_generation_takes_the_document_and_ends) {
    const Tokenizer& tok = fixture_tokenizer("qwen3");
    auto g = must_compile_schema(kSchema);
    ASSERT_TRUE(g);
    std::vector<int32_t> ids = tok.encode(kDoc, /*add_special=*/false);
    auto c = make_constraint(g, "qwen3");
    std::vector<float> logits(static_cast<size_t>(tok.n_vocab()));
    double mask_seconds = 0;
    for (int32_t id : ids) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        double t0 = cpu_seconds();
        c->mask(logits.data(), tok.n_vocab());
        mask_seconds += cpu_seconds() - t0;
        ASSERT_TRUE(std::isfinite(logits[static_cast<size_t>(id)])) << "token " << id << " '" << tok.token_to_piece(id) << "'";
        EXPECT_FALSE(std::isfinite(logits[static_cast<size_t>(tok.eos())]));
        ASSERT_TRUE(c->allows(id));
        ASSERT_TRUE(c->advance(id).ok());
        EXPECT_FALSE(c->complete());
    }
    std::printf("grammar mask (Qwen3 vocab, %d tokens): mean %.3f ms CPU per token, cold cache\n",
                static_cast<int>(ids.size()), 1e3 * mask_seconds / static_cast<double>(ids.size()));
    std::fill(logits.begin(), logits.end(), 0.0f);
    c->mask(logits.data(), tok.n_vocab());
    EXPECT_TRUE(std::isfinite(logits[static_cast<size_t>(tok.eos())]));  // the object is closed
    EXPECT_TRUE(c->allows(tok.eos()));
    EXPECT_FALSE(c->complete());  // whitespace may still follow
    ASSERT_TRUE(c->advance(tok.eos()).ok());
    EXPECT_TRUE(c->complete());
}

// The mask cost over a longer generation: the same document ten times in an array.
TEST(TokenMask, mask_cost_per_token_over_a_json_generation) {
    const Tokenizer& tok = fixture_tokenizer("qwen3");
    auto g = must_compile_schema(std::string(R"({"type": "array", "items": )") + kSchema + "}");
    ASSERT_TRUE(g);
    std::string doc = "[";
    for (int i = 0; i < 10; ++i) doc += (i ? ",\n " : "") + kDoc;
    doc += "]";
    std::vector<int32_t> ids = tok.encode(doc, /*add_special=*/false);
    auto c = make_constraint(g, "qwen3");
    std::vector<float> logits(static_cast<size_t>(tok.n_vocab()));
    double t0 = cpu_seconds();
    for (int32_t id : ids) {
        c->mask(logits.data(), tok.n_vocab());
        ASSERT_TRUE(c->advance(id).ok()) << id;
    }
    double seconds = cpu_seconds() - t0;
    std::printf("grammar mask + advance (Qwen3 vocab, %d tokens of JSON): mean %.3f ms CPU per token\n",
                static_cast<int>(ids.size()), 1e3 * seconds / static_cast<double>(ids.size()));
}

}  // namespace
}  // namespace tdm::test
