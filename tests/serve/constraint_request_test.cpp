// SPDX-License-Identifier: Apache-2.0
// tests/serve/constraint_request_test.cpp: a request's output constraint
// (serve/constraint_request.h): OpenAI's response_format (text, json_object, json_schema)
// and llama-server's grammar and json_schema read into a ConstraintSpec through
// parse_generation_request; malformed, oversized and conflicting fields refused by name;
// and build_constraint's 400s: no factory (a server without a grammar engine), or the
// factory's own refusal (an unsupported schema keyword), naming the field.
#include "serve/constraint_request.h"
#include "serve/openai_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace tdm;
using namespace tdm::server;
using nlohmann::json;

namespace {

using Kind = ConstraintSpec::Kind;

ConstraintSpec spec_of(const std::string& fields, Endpoint endpoint = Endpoint::chat_completions) {
    const std::string head = endpoint == Endpoint::chat_completions
                                 ? R"({"messages": [{"role": "user", "content": "hi"}])"
                                 : R"({"prompt": "hi")";
    auto r = parse_generation_request(endpoint, head + ", " + fields + "}");
    EXPECT_TRUE(r.ok()) << fields << "\n -> " << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->constraint : ConstraintSpec{};
}

ApiError constraint_refused(const std::string& fields, const RequestLimits& limits = {}) {
    auto r = parse_generation_request(Endpoint::chat_completions,
                                      R"({"messages": [{"role": "user", "content": "hi"}], )" + fields + "}", limits);
    EXPECT_FALSE(r.ok()) << fields << " was accepted";
    if (r.ok()) return {};
    EXPECT_EQ(r.error().status, 400);
    EXPECT_FALSE(r.error().message.empty());
    return r.error();
}

// Allows every token; counts nothing: what build_constraint hands on is all that is checked.
class AnyToken final : public TokenConstraint {
public:
    void mask(float*, int) override {}
    bool allows(int32_t) override { return true; }
    Status advance(int32_t) override { return {}; }
    bool complete() const override { return false; }
    std::unique_ptr<TokenConstraint> clone() const override { return std::make_unique<AnyToken>(); }
};

}  // namespace

TEST(ConstraintRequest, without_constraint_fields_or_with_text_format_the_output_is_free) {
    EXPECT_FALSE(spec_of(R"("temperature": 0)").any());
    EXPECT_FALSE(spec_of(R"("response_format": {"type": "text"})").any());
    EXPECT_FALSE(spec_of(R"("response_format": null, "grammar": null, "json_schema": null)").any());
    EXPECT_FALSE(spec_of(R"("grammar": "")").any()) << "llama-server: an empty grammar is none";
}

TEST(ConstraintRequest, response_format_json_object_and_json_schema_are_read) {
    const ConstraintSpec object = spec_of(R"("response_format": {"type": "json_object"})");
    EXPECT_EQ(object.kind, Kind::json_object);
    EXPECT_EQ(object.text, "");
    EXPECT_EQ(object.origin, "response_format");

    const json schema = {{"type", "object"},
                         {"properties", {{"name", {{"type", "string"}, {"maxLength", 8}}}}},
                         {"required", {"name"}},
                         {"additionalProperties", false}};
    const json format = {{"type", "json_schema"},
                         {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}};
    const ConstraintSpec s = spec_of(R"("response_format": )" + format.dump());
    EXPECT_EQ(s.kind, Kind::json_schema);
    EXPECT_EQ(json::parse(s.text), schema);
    EXPECT_EQ(s.origin, "response_format");

    // llama-server's form: a schema inside json_object
    const std::string inner_format = R"({"type": "json_object", "schema": )" + schema.dump() + "}";
    const ConstraintSpec inner = spec_of(R"("response_format": )" + inner_format, Endpoint::completions);
    EXPECT_EQ(inner.kind, Kind::json_schema);
    EXPECT_EQ(json::parse(inner.text), schema);
}

TEST(ConstraintRequest, llama_server_grammar_and_json_schema_fields_are_read) {
    const std::string gbnf = "root ::= \"yes\" | \"no\"\n";
    const ConstraintSpec g = spec_of(R"("grammar": )" + json(gbnf).dump(), Endpoint::completions);
    EXPECT_EQ(g.kind, Kind::grammar);
    EXPECT_EQ(g.text, gbnf);
    EXPECT_EQ(g.origin, "grammar");

    const ConstraintSpec s = spec_of(R"("json_schema": {"type": "array", "items": {"enum": [1, 2]}})");
    EXPECT_EQ(s.kind, Kind::json_schema);
    EXPECT_EQ(json::parse(s.text), json::parse(R"({"type": "array", "items": {"enum": [1, 2]}})"));
    EXPECT_EQ(s.origin, "json_schema");
}

TEST(ConstraintRequest, malformed_conflicting_and_oversized_constraints_are_refused_by_name) {
    EXPECT_EQ(constraint_refused(R"("response_format": "json")").param, "response_format");
    EXPECT_EQ(constraint_refused(R"("response_format": {})").param, "response_format.type");
    const ApiError yaml = constraint_refused(R"("response_format": {"type": "yaml"})");
    EXPECT_EQ(yaml.param, "response_format.type");
    EXPECT_NE(yaml.message.find("json_schema"), std::string::npos) << yaml.message;
    EXPECT_EQ(constraint_refused(R"("response_format": {"type": "json_schema"})").param, "response_format.json_schema");
    EXPECT_EQ(constraint_refused(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})").param,
              "response_format.json_schema.schema");
    EXPECT_EQ(constraint_refused(R"("response_format": {"type": "json_schema", "json_schema": {"schema": [1]}})").param,
              "response_format.json_schema.schema");
    EXPECT_EQ(constraint_refused(R"("grammar": 5)").param, "grammar");
    EXPECT_EQ(constraint_refused(R"("json_schema": "{}")").param, "json_schema");

    const ApiError both =
        constraint_refused(R"("response_format": {"type": "json_object"}, "grammar": "root ::= \"a\"")");
    EXPECT_EQ(both.param, "grammar");
    EXPECT_NE(both.message.find("response_format"), std::string::npos) << both.message;

    RequestLimits limits;
    limits.max_constraint_bytes = 16;
    EXPECT_EQ(constraint_refused(R"("grammar": "root ::= \"a long literal\"")", limits).param, "grammar");
    EXPECT_EQ(constraint_refused(R"("json_schema": {"type": "object", "required": ["abc"]})", limits).param,
              "json_schema");
}

TEST(ConstraintRequest, build_constraint_refuses_without_a_factory_and_names_the_field_of_a_refusal) {
    const ConstraintSpec grammar{Kind::grammar, "root ::= \"a\"", "grammar"};
    auto none = build_constraint(ConstraintSpec{}, ConstraintFactory{});
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(*none, nullptr) << "no constraint asked: none built";

    auto no_engine = build_constraint(grammar, ConstraintFactory{});
    ASSERT_FALSE(no_engine.ok());
    EXPECT_EQ(no_engine.error().status, 400);
    EXPECT_EQ(no_engine.error().param, "grammar");

    const ConstraintSpec schema{Kind::json_schema, R"({"patternProperties": {}})", "response_format"};
    const ConstraintFactory picky = [](const ConstraintSpec& s) -> Result<std::unique_ptr<TokenConstraint>> {
        if (s.kind == Kind::json_schema) return Error("unsupported schema keyword 'patternProperties'");
        return std::unique_ptr<TokenConstraint>(std::make_unique<AnyToken>());
    };
    auto bad = build_constraint(schema, picky);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().param, "response_format");
    EXPECT_NE(bad.error().message.find("patternProperties"), std::string::npos) << bad.error().message;

    auto good = build_constraint(grammar, picky);
    ASSERT_TRUE(good.ok()) << good.error().message;
    EXPECT_NE(*good, nullptr);
}
