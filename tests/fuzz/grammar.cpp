// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/grammar.cpp: structured-output grammars (host/grammar/grammar.h) on arbitrary
// bytes. The input is a grammar and a text, split at the first NUL. A grammar that parses
// as JSON is a JSON schema, converted to GBNF first; anything else is GBNF. Refusals must
// carry a message. An accepted grammar is fed the text byte by byte, and in the states
// reached the token mask over a small vocabulary must equal the tokens the matcher takes
// one by one (or hold only such tokens, when cut short by its step budget), and the
// constraint's allows() must agree with its mask.
// Seeds: tests/fuzz/corpus/grammar/ (grammars and schemas as clients send them).
#include "fuzz_support.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "grammar/token_trie.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace tdm;

namespace {

// Every single byte, and a few pieces of JSON and multi-byte characters.
const std::shared_ptr<const TokenTrie>& vocabulary() {
    static const std::shared_ptr<const TokenTrie> trie = [] {
        std::vector<std::string> pieces;
        for (int b = 1; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
        for (const char* p : {"{\"", "\":", "\": \"", "\",", "true", "null", "12", "\xC3\xA9", "\xF0\x9F\x98\x80",
                              "\xC3", "\xA9x", " \n", "ab", "abc", ""})
            pieces.emplace_back(p);
        return TokenTrie::from_pieces(std::move(pieces));
    }();
    return trie;
}

void check_mask(const CompiledGrammar& g, const MatchState& state, LazyDfa& dfa, MaskWorkspace& ws) {
    const TokenTrie& trie = *vocabulary();
    TokenBitset bits;
    bool exact = compute_token_mask(g, trie, state, dfa, ws, bits);
    for (int32_t id = 0; id < trie.n_vocab(); ++id) {
        bool allowed = token_allowed(g, trie, state, id, ws.match);
        // a mask cut short by its step budget holds allowed tokens only
        FUZZ_CHECK(exact ? test_bit(bits, id) == allowed : !test_bit(bits, id) || allowed);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::string_view> parts = fuzz::split_parts(data, size, 2);
    std::string gbnf(parts[0]);
    auto schema = nlohmann::ordered_json::parse(parts[0], nullptr, false);
    if (!schema.is_discarded()) {
        auto converted = json_schema_to_gbnf(schema);
        if (!converted.ok()) {
            FUZZ_CHECK(!converted.error().message().empty());
            return 0;
        }
        gbnf = *converted;
    }
    auto compiled = compile_gbnf(gbnf);
    if (!compiled.ok()) {
        FUZZ_CHECK(!compiled.error().message().empty());
        return 0;
    }
    std::shared_ptr<const CompiledGrammar> g = *compiled;
    GrammarMatcher m(g);
    LazyDfa dfa;
    MaskWorkspace ws;
    check_mask(*g, m.state(), dfa, ws);
    std::string_view text = parts[1].substr(0, 256);
    for (char c : text) {
        if (!m.feed(std::string_view(&c, 1))) break;
        FUZZ_CHECK(!m.complete() || m.accepting());
        check_mask(*g, m.state(), dfa, ws);
    }
    // The constraint over the same vocabulary, its last id (the empty piece) the end token.
    const int32_t end = vocabulary()->n_vocab() - 1;
    auto c = make_grammar_constraint(g, vocabulary(), std::vector<int32_t>{end});
    FUZZ_CHECK(c.ok());
    std::unique_ptr<TokenConstraint> constraint = std::move(c).value();
    std::vector<float> logits(static_cast<size_t>(vocabulary()->n_vocab()), 0.0f);
    constraint->mask(logits.data(), static_cast<int>(logits.size()));
    for (int32_t id = 0; id < vocabulary()->n_vocab(); ++id)
        FUZZ_CHECK(std::isfinite(logits[static_cast<size_t>(id)]) == constraint->allows(id));
    return 0;
}
