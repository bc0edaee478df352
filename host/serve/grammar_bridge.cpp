// SPDX-License-Identifier: Apache-2.0
// host/serve/grammar_bridge.cpp: make_constraint() and constraint_factory()
// (serve/constraint_factory.h), the one place the front ends call the grammar engine
// (grammar/grammar.h) from.
#include "serve/constraint_factory.h"

#include "grammar/grammar.h"
#include "serve/ordered_body.h"

#include <nlohmann/json.hpp>

#include <mutex>

namespace tdm {
namespace {

Result<std::string> schema_text_to_gbnf(const std::string& text) {
    auto sorted = nlohmann::json::parse(text, nullptr, false);
    if (sorted.is_discarded()) return Error("the JSON schema is not valid JSON");
    // the schema's own member order where parsing in order is cheap (serve/ordered_body.h)
    if (server::ordered_parse_work(sorted) > server::kMaxOrderedWork) return json_schema_to_gbnf(sorted);
    return json_schema_to_gbnf(nlohmann::ordered_json::parse(text));
}

Result<std::string> gbnf_of(const ConstraintSpec& spec) {
    switch (spec.kind) {
    case ConstraintSpec::Kind::json_object: return json_schema_to_gbnf(nlohmann::json{{"type", "object"}});
    case ConstraintSpec::Kind::json_schema: return schema_text_to_gbnf(spec.text);
    case ConstraintSpec::Kind::grammar: return spec.text;
    case ConstraintSpec::Kind::none: break;
    }
    return Error("no constraint was asked for");
}

Result<std::unique_ptr<TokenConstraint>> build(const ConstraintSpec& spec, std::shared_ptr<const TokenTrie> trie,
                                               std::span<const int32_t> eog) {
    const std::string gbnf = TDM_TRY(gbnf_of(spec));
    auto grammar = TDM_TRY(compile_gbnf(gbnf));
    return make_grammar_constraint(std::move(grammar), std::move(trie), eog);
}

}  // namespace

Result<std::unique_ptr<TokenConstraint>> make_constraint(const ConstraintSpec& spec, const Tokenizer& tokenizer,
                                                         std::span<const int32_t> eog) {
    return build(spec, build_token_trie(tokenizer), eog);
}

ConstraintFactory constraint_factory(const Tokenizer& tokenizer) {
    // The vocabulary's trie is built by the first request that asks for a constraint (tens
    // of milliseconds for 150k tokens), then shared by all.
    struct Shared {
        std::once_flag once;
        std::shared_ptr<const TokenTrie> trie;
    };
    auto shared = std::make_shared<Shared>();
    return [&tokenizer, shared, eog = eog_tokens(tokenizer)](const ConstraintSpec& spec) {
        std::call_once(shared->once, [&] { shared->trie = build_token_trie(tokenizer); });
        return build(spec, shared->trie, eog);
    };
}

Result<std::string> json_schema_rules(const nlohmann::json& schema, std::string_view root) {
    return json_schema_to_gbnf(schema, root);
}

}  // namespace tdm
