// SPDX-License-Identifier: Apache-2.0
// tests/grammar/json_schema_test.cpp: the JSON-schema corpus: each schema with documents
// its grammar must accept and reject (fed byte by byte to the matcher), the keywords
// refused by name, and hostile schemas refused quickly. To add a case, append to
// kCorpus: every accepted document must also be valid JSON (checked).
#include "grammar_test_util.h"


namespace tdm::test {
namespace {

struct SchemaCase {
    const char* what;
    const char* schema;
    std::vector<std::string> accept;
    std::vector<std::string> reject;
};

const std::vector<SchemaCase> kCorpus = {
    {"json_object: any object", R"({"type": "object"})",
     {"{}", R"({"a": [1, 2.5e3, "x", null, true]})", "{ \"nested\" : {\"b\": {}} }", "{\n  \"k\": -0.5\n}"},
     {"[]", R"({"a" 1})", R"({"a": 01})", "{a: 1}", "{\"a\": 1,}", "\"s\""}},
    {"string", R"({"type": "string"})",
     {R"("hi")", R"("esc \" \\ \n \/ \u00e9")", "\"\xC3\xA9\xF0\x9F\x98\x80\"", R"("")"},
     {"\"unterminated", "\"ctl \x01\"", "'x'", R"("bad \q")", R"("\u12")"}},
    {"integer", R"({"type": "integer"})", {"0", "-12", "12345", "9999999999999999"},
     {"01", "1.5", "-", "+1", "1e3", "99999999999999999"}},
    {"number", R"({"type": "number"})", {"0", "-1.25", "3e10", "1.5E-3", "7"}, {".5", "1.", "1e", "NaN", "--1"}},
    {"types: boolean or null", R"({"type": ["boolean", "null"]})", {"true", "false", "null"}, {"\"true\"", "0", "nul"}},
    {"required members, no others, in the schema's order",
     R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"], "additionalProperties": false})",
     {R"({"name": "x", "age": 3})", R"({"name":"x","age":3})"},
     {R"({"age": 3, "name": "x"})", R"({"name": "x"})", R"({"name": "x", "age": 3, "z": 1})",
      R"({"name": 1, "age": 3})"}},
    {"optional members: any subset, in order",
     R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
        "additionalProperties": false})",
     {"{}", R"({"a": 1})", R"({"b": 2})", R"({"a": 1, "c": 3})", R"({"a": 1, "b": 2, "c": 3})"},
     {R"({"c": 3, "a": 1})", R"({"a": 1, "a": 1})", R"({"d": 1})", "{,}"}},
    {"required first, then optional",
     R"({"properties": {"opt": {"type": "boolean"}, "req": {"type": "null"}}, "required": ["req"]})",
     {R"({"req": null})", R"({"req": null, "opt": true})"}, {R"({"opt": true, "req": null})", R"({"opt": true})"}},
    {"additionalProperties true: other keys, never a declared one twice",
     R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true})",
     {R"({"a": 1, "x": "y"})", R"({"x": [1]})", R"({"ab": 1, "b": 2})", R"({"": 0})"},
     {R"({"a": 1, "a": 2})", R"({"a": "str"})", R"({"x": 1, "a": 1})"}},
    {"additionalProperties as a schema", R"({"type": "object", "additionalProperties": {"type": "integer"}})",
     {"{}", R"({"x": 1, "y": 2})"}, {R"({"x": "s"})"}},
    {"array items, minItems, maxItems",
     R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
     {"[1]", "[1, 2, 3]", "[ 1,2 ]"}, {"[]", "[1, 2, 3, 4]", "[\"a\"]", "[1,]"}},
    {"array without bounds", R"({"type": "array", "items": {"type": "string"}})", {"[]", R"(["a", "b"])"}, {"[1]"}},
    {"enum", R"({"enum": ["red", "green", 1, null, {"k": [true]}]})",
     {R"("red")", "1", "null", R"({"k":[true]})"}, {R"("blue")", R"("re")", "2", R"({"k": [true]})"}},
    {"const", R"({"const": {"a": [1, "x"]}})", {R"({"a":[1,"x"]})"}, {R"({"a":[1]})", "{}"}},
    {"anyOf", R"({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]})", {R"("x")", "5"}, {"true", "-1"}},
    {"oneOf of objects",
     R"({"oneOf": [{"type": "object", "properties": {"cat": {"const": "meow"}}, "required": ["cat"]},
                  {"type": "object", "properties": {"dog": {"const": "woof"}}, "required": ["dog"]}]})",
     {R"({"cat": "meow"})", R"({"dog": "woof"})"}, {R"({"cat": "woof"})", "{}"}},
    {"allOf of objects",
     R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                  {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}]})",
     {R"({"a": 1, "b": "x"})"}, {R"({"a": 1})", R"({"b": "x", "a": 1})"}},
    {"$ref to $defs, recursive",
     R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["value"]}},
        "$ref": "#/$defs/node"})",
     {R"({"value": 1})", R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]})"},
     {R"({"children": []})", R"({"value": 1, "children": [{}]})"}},
    {"$ref to definitions",
     R"({"type": "object", "properties": {"p": {"$ref": "#/definitions/point"}}, "required": ["p"],
        "definitions": {"point": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}}})",
     {R"({"p": [1, 2.5]})"}, {R"({"p": [1]})"}},
    {"$ref to the root",
     R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}, "required": ["next"]})",
     {R"({"next": null})", R"({"next": {"next": {"next": null}}})"}, {R"({"next": {}})"}},
    {"string minLength and maxLength", R"({"type": "string", "minLength": 2, "maxLength": 4})",
     {R"("ab")", R"("abcd")", R"("a\n")", "\"\xC3\xA9\xC3\xA9\""}, {R"("a")", R"("abcde")", R"("")"}},
    {"format date", R"({"type": "string", "format": "date"})", {R"("2024-02-29")"}, {R"("2024-13-01")", R"("24-01-01")"}},
    {"format time", R"({"type": "string", "format": "time"})", {R"("12:30:00Z")", R"("23:59:59.123+02:00")"},
     {R"("24:00:00Z")", R"("12:30:00")"}},
    {"format date-time", R"({"type": "string", "format": "date-time"})", {R"("2024-01-01T00:00:00Z")"},
     {R"("2024-01-01 00:00:00Z")"}},
    {"format uuid", R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
     {R"("123e4567")", R"("123e4567-e89b-12d3-a456-42661417400g")"}},
    {"integer minimum and maximum", R"({"type": "integer", "minimum": -5, "maximum": 123})",
     {"-5", "-1", "0", "9", "10", "99", "123"}, {"-6", "124", "200", "1000", "00", "-0", "0123"}},
    {"exclusive bounds", R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})", {"1", "9"}, {"0", "10"}},
    {"annotations are ignored",
     R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d",
        "examples": [1], "default": 1, "type": "integer"})",
     {"1"}, {"\"1\""}},
    {"whitespace is bounded", R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})",
     {"{\"a\": 1}", "{\n  \"a\":\n    1\n}", "{\"a\":1}\n" + std::string(20, ' ')},
     {"{\"a\":" + std::string(25, ' ') + "1}", "{\n\n\"a\": 1}", "{\"a\":1}\n" + std::string(21, ' '),
      "{\"a\":1}  "}},
};

TEST(JsonSchema, every_corpus_schema_accepts_and_rejects_its_documents) {
    for (const SchemaCase& c : kCorpus) {
        SCOPED_TRACE(c.what);
        auto g = must_compile_schema(c.schema);
        ASSERT_TRUE(g);
        for (const std::string& doc : c.accept) {
            EXPECT_TRUE(nlohmann::json::accept(doc)) << "not JSON: " << doc;
            EXPECT_TRUE(accepts(g, doc)) << "should accept: " << doc;
        }
        for (const std::string& doc : c.reject) EXPECT_FALSE(accepts(g, doc)) << "should reject: " << doc;
    }
}

// nlohmann::json keeps keys sorted: members then come in alphabetical order.
TEST(JsonSchema, a_sorted_json_object_orders_members_alphabetically) {
    auto gbnf = json_schema_to_gbnf(nlohmann::json::parse(
        R"({"properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]})"));
    ASSERT_TRUE(gbnf.ok()) << gbnf.error().message();
    auto g = must_compile(*gbnf);
    EXPECT_TRUE(accepts(g, R"({"age": 3, "name": "x"})"));
    EXPECT_FALSE(accepts(g, R"({"name": "x", "age": 3})"));
}

// Exhaustive over a window of integers, for ranges of each shape.
TEST(JsonSchema, integer_ranges_are_exact) {
    struct Range { std::optional<int64_t> min, max; };
    const std::vector<Range> ranges = {{-5, 123}, {7, 1000}, {100, std::nullopt}, {std::nullopt, -20}, {0, 0},
                                       {-1234, -17}, {std::nullopt, 45}, {-3, std::nullopt}, {19, 21}, {1, 999}};
    for (const Range& r : ranges) {
        nlohmann::json schema = {{"type", "integer"}};
        if (r.min) schema["minimum"] = *r.min;
        if (r.max) schema["maximum"] = *r.max;
        SCOPED_TRACE(schema.dump());
        auto gbnf = json_schema_to_gbnf(schema);
        ASSERT_TRUE(gbnf.ok()) << gbnf.error().message();
        auto g = must_compile(*gbnf);
        ASSERT_TRUE(g);
        GrammarMatcher start(g);
        for (int64_t n = -1500; n <= 1500; ++n) {
            bool in = (!r.min || n >= *r.min) && (!r.max || n <= *r.max);
            GrammarMatcher m = start;
            EXPECT_EQ(m.feed(std::to_string(n)) && m.accepting(), in) << n;
        }
    }
    auto g = must_compile_schema(R"({"type": "integer", "minimum": 1000000})");
    EXPECT_TRUE(accepts(g, "1000000"));
    EXPECT_TRUE(accepts(g, "9999999999999999"));
    EXPECT_FALSE(accepts(g, "999999"));
}

TEST(JsonSchema, a_schema_rule_appends_to_a_wrapper_grammar) {
    auto call = json_schema_to_gbnf(nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"), "call");
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(call->find("root"), std::string::npos) << "every rule is prefixed call-";
    auto g = must_compile("root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n" + *call);
    EXPECT_TRUE(accepts(g, "<tool_call>\n{\"city\": \"Paris\"}\n</tool_call>"));
    EXPECT_FALSE(accepts(g, "<tool_call>\n{\"town\": \"Paris\"}\n</tool_call>"));
}

std::string schema_error(const std::string& schema) {
    auto gbnf = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
    if (!gbnf.ok()) return gbnf.error().message();
    auto g = compile_gbnf(*gbnf);
    return g.ok() ? std::string("(compiled)") : g.error().message();
}

TEST(JsonSchema, unsupported_keywords_are_errors_that_name_them) {
    EXPECT_EQ(schema_error(R"({"type": "string", "pattern": "^a+$"})"),
              "JSON schema: unsupported keyword 'pattern': regular expressions are not supported");
    EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"a": {}}})"),
              "JSON schema: unsupported keyword 'patternProperties'");
    EXPECT_EQ(schema_error(R"({"not": {"type": "string"}})"), "JSON schema: unsupported keyword 'not'");
    EXPECT_EQ(schema_error(R"({"type": "array", "prefixItems": [{}]})"), "JSON schema: unsupported keyword 'prefixItems'");
    EXPECT_EQ(schema_error(R"({"type": "array", "uniqueItems": true})"), "JSON schema: unsupported keyword 'uniqueItems'");
    EXPECT_EQ(schema_error(R"({"type": "string", "format": "email"})"),
              "JSON schema: unsupported keyword 'format': 'email' (supported: date, time, date-time, uuid)");
    EXPECT_EQ(schema_error(R"({"type": "number", "minimum": 0.5})"),
              "JSON schema: unsupported keyword 'minimum': bounds are supported on integers only");
    EXPECT_EQ(schema_error(R"({"$ref": "https://example.com/s.json"})"),
              "JSON schema: unsupported keyword '$ref': only local references (#/$defs/...) are supported, not "
              "'https://example.com/s.json'");
    EXPECT_EQ(schema_error(R"({"$ref": "#/$defs/missing"})"), "JSON schema: $ref '#/$defs/missing' does not resolve");
    EXPECT_EQ(schema_error(R"({"type": "strange"})"), "JSON schema: unsupported keyword 'type': unknown type 'strange'");
    EXPECT_EQ(schema_error(R"({"properties": {"a": {}}, "properties2": 1})"), "JSON schema: unsupported keyword 'properties2'");
    EXPECT_EQ(schema_error(R"({"allOf": [{"type": "string"}]})"),
              "JSON schema: unsupported keyword 'allOf': only a list of object schemas (with properties) is supported");
    EXPECT_EQ(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
              "JSON schema: unsupported keyword 'minimum': no integer lies between minimum and maximum");
    EXPECT_EQ(schema_error(R"({"type": "string", "maxLength": 1000000})"),
              "JSON schema: unsupported keyword 'maxLength': 1000000 is above the limit 10000");
    EXPECT_EQ(schema_error("false"), "JSON schema: the schema 'false' matches nothing");
    auto bad_name = json_schema_to_gbnf(nlohmann::json::object(), "get.weather");
    ASSERT_FALSE(bad_name.ok());
    EXPECT_EQ(bad_name.error().message(),
              "JSON schema: 'get.weather' is not a grammar rule name (letters, digits, '-', '_')");
}

// Each is an error or a bounded compile, never a hang (ctest's timeout) or a crash.
TEST(JsonSchema, hostile_schemas_are_refused_quickly) {
    std::string deep;
    for (int i = 0; i < 1000; ++i) deep += R"({"type": "array", "items": )";
    deep += "{}" + std::string(1000, '}');
    EXPECT_EQ(schema_error(deep), "JSON schema: nested deeper than 64 levels");

    nlohmann::ordered_json big_enum = {{"enum", nlohmann::ordered_json::array()}};
    for (int i = 0; i < 100000; ++i) big_enum["enum"].push_back("value" + std::to_string(i));
    EXPECT_EQ(schema_error(big_enum.dump()),
              "JSON schema: unsupported keyword 'enum': 100000 values; at most 4096 are supported");

    nlohmann::json chain = {{"$ref", "#/$defs/d0"}, {"$defs", nlohmann::json::object()}};
    for (int i = 0; i < 1000; ++i) chain["$defs"]["d" + std::to_string(i)] = {{"$ref", "#/$defs/d" + std::to_string(i + 1)}};
    chain["$defs"]["d1000"] = {{"type", "integer"}};
    EXPECT_EQ(schema_error(chain.dump()), "JSON schema: nested deeper than 64 levels");

    std::string e = schema_error(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})");
    EXPECT_NE(e.find("left-recursive"), std::string::npos) << e;

    std::string wide = R"({"type": "object", "properties": {)";
    for (int i = 0; i < 20000; ++i) wide += (i ? ", \"p" : "\"p") + std::to_string(i) + R"(": {"type": "string"})";
    // (nlohmann::json: ordered_json finds each key by a linear search, 20000^2 when parsing)
    auto wide_gbnf = json_schema_to_gbnf(nlohmann::json::parse(wide + "}}"));
    ASSERT_FALSE(wide_gbnf.ok());
    EXPECT_NE(wide_gbnf.error().message().find("the limit is 524288"), std::string::npos) << wide_gbnf.error().message();

}

}  // namespace
}  // namespace tdm::test
