/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/grammar.h: structured outputs: a GBNF grammar or a JSON schema limits which
// tokens a generation may produce (docs/GRAMMAR.md). This is the whole public API; the
// other headers of host/grammar/ are its implementation.
// Not here: where the mask is applied (the engine and the speculative round, through
// sampling/token_constraint.h), or which request field asks for it (the server).
//
//   auto gbnf    = TDM_TRY(json_schema_to_gbnf(schema));          // or a request's `grammar`
//   auto grammar = TDM_TRY(compile_gbnf(gbnf));                    // once per request
//   auto trie    = build_token_trie(tokenizer);                   // once per tokenizer
//   auto c       = TDM_TRY(make_grammar_constraint(grammar, trie, eog_ids));
//   c->mask(logits, n_vocab); ... c->advance(token);
//
// Everything here reads untrusted input (request bodies): bad or hostile grammars and
// schemas give an Error whose message is fit for a 400 response, never a crash or a hang.
#pragma once

#include "common/error.h"
#include "sampling/token_constraint.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tdm {

class Tokenizer;
struct CompiledGrammar;  // grammar/grammar_rules.h
class TokenTrie;         // grammar/token_trie.h

// Bounds on a grammar; each one exceeded is an error naming it.
struct GrammarLimits {
    size_t max_text_bytes = 512 * 1024;  // the GBNF text
    size_t max_rules = 20000;            // after repetitions are expanded into rules
    size_t max_elements = 1u << 20;      // symbols of all rules, after expansion
    int max_nesting = 64;                // depth of ( ) groups
    int max_repetition = 10000;          // m and n of {m,n}
};

// Parses GBNF (llama.cpp's grammar language; the subset is in docs/GRAMMAR.md) whose start
// rule is `root`. Errors name the line and column, an undefined rule, a left-recursive
// rule, or the limit exceeded. The result is immutable and shared by every constraint
// (and every clone) built from it.
Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text,
                                                            const GrammarLimits& limits = {});

// A JSON schema (OpenAI's response_format json_schema `schema`) as GBNF text. The rule
// `root_name` matches one JSON value valid for the schema; every helper rule is named
// `<root_name>-...`, so the text can be appended to other rules that refer to root_name.
// `response_format: json_object` is the schema {"type": "object"} (any JSON object).
// Unsupported keywords give an error that names the keyword. root_name must be a rule
// name (letters, digits, '-', '_'): a tool's name may need mapping first.
// Object members come in the order the schema object iterates them: nlohmann::json keeps
// its keys sorted, so parse the request with nlohmann::ordered_json to keep the schema's
// own order (as llama.cpp does); required members come first either way.
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema,
                                        std::string_view root_name = "root");
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                        std::string_view root_name = "root");

// The vocabulary as byte strings in a prefix tree: built once per tokenizer (tens of
// milliseconds for 150k tokens) and shared by every constraint of every request.
// Control, unknown and unused tokens are not in it: a grammar never allows them.
std::shared_ptr<const TokenTrie> build_token_trie(const Tokenizer& tokenizer);

// The constraint of one generation: starts at the grammar's root. end_of_generation_ids
// (the model's end tokens) are allowed exactly when the text so far is a complete
// sentence of the grammar. Fails if an id is outside the trie's vocabulary.
Result<std::unique_ptr<TokenConstraint>> make_grammar_constraint(
    std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenTrie> trie,
    std::span<const int32_t> end_of_generation_ids);

}  // namespace tdm
