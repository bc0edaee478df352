/* SPDX-License-Identifier: Apache-2.0 */
// tests/grammar/grammar_test_util.h: what the grammar tests share: compiling a grammar or
// a schema (failing the test on an error) and feeding a document to a matcher.
#pragma once

#include "grammar/grammar.h"
#include "grammar/matcher.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace tdm::test {

inline std::shared_ptr<const CompiledGrammar> must_compile(const std::string& gbnf) {
    auto g = compile_gbnf(gbnf);
    if (!g.ok()) {
        ADD_FAILURE() << g.error().message() << "\n" << gbnf;
        return nullptr;
    }
    return std::move(g).value();
}

inline std::shared_ptr<const CompiledGrammar> must_compile_schema(const std::string& schema_text) {
    auto gbnf = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema_text));
    if (!gbnf.ok()) {
        ADD_FAILURE() << gbnf.error().message() << "\n" << schema_text;
        return nullptr;
    }
    return must_compile(*gbnf);
}

// The whole document is a complete sentence of the grammar.
inline bool accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& doc) {
    if (!g) return false;
    GrammarMatcher m(g);
    return m.feed(doc) && m.accepting();
}

}  // namespace tdm::test
