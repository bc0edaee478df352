/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/constraint_factory.h: where a ConstraintSpec (serve/constraint_spec.h) becomes
// the TokenConstraint (sampling/token_constraint.h) that the engine masks each step with:
// the one door between the front ends (the server's requests, `tandem run`) and the grammar
// engine. make_constraint(), constraint_factory() and json_schema_rules() are defined in
// serve/grammar_bridge.cpp, the only file of the front ends that knows the grammar engine.
// Not here: reading a spec from a request (serve/constraint_request.h), applying the
// constraint (engine/batch_session.cpp, speculative/constrained_round.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/error.h"
#include "sampling/token_constraint.h"
#include "serve/constraint_spec.h"
#include "tokenizer/tokenizer.h"

namespace tdm {

// The constraint `spec` asks for over `tokenizer`'s vocabulary, in its start state. It
// allows the `eog` ids exactly when the output so far is complete. Fails with a message
// that names what is wrong (a schema keyword it does not support, a grammar's syntax
// error), or when this build has no grammar engine. spec.kind must not be none.
Result<std::unique_ptr<TokenConstraint>> make_constraint(const ConstraintSpec& spec, const Tokenizer& tokenizer,
                                                         std::span<const int32_t> eog);

// The tokenizer's end-of-generation ids, in id order.
std::vector<int32_t> eog_tokens(const Tokenizer& tokenizer);

// Builds a request's constraint; empty: the front end takes no constraints.
using ConstraintFactory = std::function<Result<std::unique_ptr<TokenConstraint>>(const ConstraintSpec&)>;

// make_constraint() over `tokenizer` (which must outlive the factory) with its
// end-of-generation ids; the vocabulary's token trie is built once, at the first request
// that asks for a constraint, and shared by all.
ConstraintFactory constraint_factory(const Tokenizer& tokenizer);

// GBNF rules for a JSON schema: `root` matches a value valid for it and every helper rule is
// named `<root>-...`, so the text joins other rules (the tool-call grammar,
// serve/tool_call_grammar.h). Fails naming an unsupported keyword.
Result<std::string> json_schema_rules(const nlohmann::json& schema, std::string_view root);

}  // namespace tdm
