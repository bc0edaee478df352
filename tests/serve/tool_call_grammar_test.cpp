// SPDX-License-Identifier: Apache-2.0
// tests/serve/tool_call_grammar_test.cpp: the grammar composed around the tools' schemas
// for tool_choice "required" and named, with a stand-in for the JSON schema converter that
// writes each schema as one literal rule, so that the composition is what is checked.
#include "serve/tool_call_grammar.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tdm::server {
namespace {

const std::vector<ToolDefinition> kGrammarTools = {
    {"get_weather", R"({"name": "get_weather", "parameters": {"type": "object", "properties": {"location": )"
                    R"({"type": "string"}, "days": {"type": "integer"}}, "required": ["location"]}})"},
    {"ping", R"({"name": "ping"})"},
};

// Stand-in converter: `<root> ::= "<the schema's type>"`, recording what it was asked.
struct FakeConverter {
    std::vector<std::string> roots;
    SchemaToGbnf fn() {
        return [this](const nlohmann::json& schema, std::string_view root) -> ApiResult<std::string> {
            roots.emplace_back(root);
            if (schema.contains("pattern")) return ApiError::invalid("tools", "unsupported keyword 'pattern'");
            return std::string(root) + " ::= \"" + schema.value("type", std::string("any")) + "\"";
        };
    }
};

std::string grammar(const ToolChoice& choice, bool parallel, ToolCallFormat format, FakeConverter& fake) {
    auto g = tool_call_grammar_gbnf(kGrammarTools, choice, parallel, format, fake.fn());
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    return g.ok() ? *g : std::string();
}

TEST(ToolCallGrammar, hermes_required_offers_every_tool_and_repeats_when_parallel) {
    FakeConverter fake;
    EXPECT_EQ(grammar({ToolChoiceMode::required, ""}, true, ToolCallFormat::hermes, fake),
              "root ::= tool-call ( \"\\n\" tool-call )*\n"
              "tool-call ::= tool-0 | tool-1\n"
              "tool-0-args ::= \"object\"\n"
              "tool-0 ::= \"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": \" tool-0-args "
              "\"}\\n</tool_call>\"\n"
              "tool-1-args ::= \"object\"\n"
              "tool-1 ::= \"<tool_call>\\n{\\\"name\\\": \\\"ping\\\", \\\"arguments\\\": \" tool-1-args "
              "\"}\\n</tool_call>\"\n");
    EXPECT_EQ(fake.roots, (std::vector<std::string>{"tool-0-args", "tool-1-args"}));
}

TEST(ToolCallGrammar, a_named_choice_allows_that_function_once_without_parallel_calls) {
    FakeConverter fake;
    const std::string g = grammar({ToolChoiceMode::named, "ping"}, false, ToolCallFormat::hermes, fake);
    EXPECT_EQ(g.substr(0, g.find('\n')), "root ::= tool-call");
    EXPECT_NE(g.find("tool-call ::= tool-0\n"), std::string::npos);
    EXPECT_NE(g.find("\\\"ping\\\""), std::string::npos);
    EXPECT_EQ(g.find("get_weather"), std::string::npos);
}

TEST(ToolCallGrammar, xml_families_write_parameters_with_optional_ones_skippable) {
    FakeConverter fake;
    const std::string g = grammar({ToolChoiceMode::named, "get_weather"}, false, ToolCallFormat::glm, fake);
    // location (a string, required) is raw text; days (optional) comes from the converter.
    EXPECT_NE(g.find("tool-0-p0-value ::= ( [^<] | \"<\" [^/] )*\n"), std::string::npos) << g;
    EXPECT_NE(g.find("tool-0-p1-value ::= \"integer\"\n"), std::string::npos) << g;
    EXPECT_NE(g.find("tool-0-params-0 ::= tool-0-p0 tool-0-params-1-after\n"), std::string::npos) << g;
    EXPECT_NE(g.find("tool-0-params-1-after ::= tool-0-p1 tool-0-params-2-after | tool-0-params-2-after\n"),
              std::string::npos)
        << g;
    EXPECT_NE(g.find("tool-0 ::= \"<tool_call>get_weather\\n\" tool-0-params-0 \"</tool_call>\"\n"), std::string::npos)
        << g;
    const std::string q = grammar({ToolChoiceMode::named, "get_weather"}, false, ToolCallFormat::qwen_xml, fake);
    EXPECT_NE(q.find("tool-0-p0 ::= \"<parameter=location>\\n\" tool-0-p0-value \"\\n</parameter>\\n\"\n"),
              std::string::npos)
        << q;
}

TEST(ToolCallGrammar, gemma4_separates_sorted_parameters_with_commas) {
    FakeConverter fake;
    const std::string g = grammar({ToolChoiceMode::named, "get_weather"}, true, ToolCallFormat::gemma4, fake);
    EXPECT_EQ(g.substr(0, g.find('\n')), "root ::= tool-call tool-call*");
    // days sorts before location: p0 = days (optional), p1 = location (required).
    EXPECT_NE(g.find("tool-0-p0 ::= \"days:\" tool-0-p0-value\n"), std::string::npos) << g;
    EXPECT_NE(g.find("tool-0-params-1-after ::= \",\" tool-0-p1 tool-0-params-2-after\n"), std::string::npos) << g;
    EXPECT_NE(g.find("tool-0 ::= \"<|tool_call>call:get_weather{\" tool-0-params-0 \"}<tool_call|>\"\n"),
              std::string::npos)
        << g;
}

TEST(ToolCallGrammar, refusals_name_the_problem) {
    FakeConverter fake;
    const std::vector<ToolDefinition> nested = {
        {"f", R"({"name": "f", "parameters": {"type": "object", "properties": {"o": {"type": "object"}}}})"}};
    auto g = tool_call_grammar_gbnf(nested, {ToolChoiceMode::required, ""}, true, ToolCallFormat::gemma4, fake.fn());
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("'o'"), std::string::npos);
    auto unknown = tool_call_grammar_gbnf(kGrammarTools, {ToolChoiceMode::named, "nope"}, true, ToolCallFormat::hermes, fake.fn());
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().param, "tool_choice");
    auto automatic = tool_call_grammar_gbnf(kGrammarTools, {}, true, ToolCallFormat::hermes, fake.fn());
    EXPECT_FALSE(automatic.ok());
    const std::vector<ToolDefinition> patterned = {
        {"f", R"({"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "integer", "pattern": "x"}}}})"}};
    auto refused = tool_call_grammar_gbnf(patterned, {ToolChoiceMode::required, ""}, true, ToolCallFormat::glm, fake.fn());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().message, "unsupported keyword 'pattern'");
}

}  // namespace
}  // namespace tdm::server
