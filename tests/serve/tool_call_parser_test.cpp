// SPDX-License-Identifier: Apache-2.0
// tests/serve/tool_call_parser_test.cpp: tool calls found in generated text for each
// family's syntax: one call, several, text around them, malformed blocks given back as
// text, and streaming, where the text split at every byte (and fed byte by byte) gives the
// same content and calls as the whole.
#include "serve/tool_call_parser.h"

#include <gtest/gtest.h>

namespace tdm::server {
namespace {

const std::vector<ToolDefinition> kParserTools = {
    {"get_weather",
     R"({"name": "get_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"},)"
     R"( "days": {"type": "integer"}, "zip": {"type": "string"}}}})"},
    {"get_time", R"({"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}})"},
};

ParsedOutput parse(ToolCallFormat format, std::string_view text) { return parse_tool_calls(format, kParserTools, text); }

// Feeds `chunks` in order and gathers what comes out.
// With `stream_arguments`, a Hermes call's arguments come in pieces, added up here.
ParsedOutput stream(ToolCallFormat format, const std::vector<std::string_view>& chunks, bool stream_arguments = false) {
    ToolCallParser parser(format, kParserTools, stream_arguments);
    ParsedOutput out;
    auto take = [&](const std::vector<ToolStreamPiece>& pieces) {
        for (const ToolStreamPiece& p : pieces) {
            switch (p.kind) {
                case ToolStreamPiece::Kind::text: out.content += p.text; break;
                case ToolStreamPiece::Kind::call:
                case ToolStreamPiece::Kind::call_begin: out.calls.push_back(p.call); break;
                case ToolStreamPiece::Kind::call_arguments: out.calls.back().arguments += p.text; break;
            }
        }
    };
    for (std::string_view c : chunks) take(parser.feed(c));
    take(parser.finish());
    return out;
}

void expect_same(const ParsedOutput& a, const ParsedOutput& b, const std::string& what) {
    EXPECT_EQ(a.content, b.content) << what;
    ASSERT_EQ(a.calls.size(), b.calls.size()) << what;
    for (size_t i = 0; i < a.calls.size(); ++i) {
        EXPECT_EQ(a.calls[i].name, b.calls[i].name) << what;
        EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << what;
    }
}

TEST(ToolCallParser, hermes_calls_parallel_and_with_text_before) {
    const auto out = parse(ToolCallFormat::hermes,
                           "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
                           "\"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
                           "\"arguments\": {\"tz\": \"CET\"}}\n</tool_call>");
    EXPECT_EQ(out.content, "Let me look.");
    ASSERT_EQ(out.calls.size(), 2u);
    EXPECT_EQ(out.calls[0].name, "get_weather");
    EXPECT_EQ(out.calls[0].arguments, R"({"location":"Paris","days":2})");  // the model's key order
    EXPECT_EQ(out.calls[1].name, "get_time");
    EXPECT_EQ(out.calls[1].arguments, R"({"tz":"CET"})");
}

TEST(ToolCallParser, qwen_xml_values_follow_the_parameter_schema) {
    const std::string text =
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nNew York\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n<parameter=zip>\n10001\n</parameter>\n</function>\n</tool_call>";
    for (ToolCallFormat f : {ToolCallFormat::qwen_xml, ToolCallFormat::hermes}) {  // Qwen parsers read both forms
        const auto out = parse(f, text);
        EXPECT_EQ(out.content, "");
        ASSERT_EQ(out.calls.size(), 1u);
        EXPECT_EQ(out.calls[0].arguments, R"({"location":"New York","days":3,"zip":"10001"})");
    }
}

// Qwen3.5's template prints None, True and False with Python's str(), so the model may too;
// a parameter declared a string keeps the word.
TEST(ToolCallParser, qwen_xml_reads_python_literals_unless_the_schema_says_string) {
    const auto out = parse(ToolCallFormat::qwen_xml,
                           "<tool_call>\n<function=get_time>\n<parameter=tz>\nNone\n</parameter>\n<parameter=utc>\n"
                           "True\n</parameter>\n<parameter=dst>\nFalse\n</parameter>\n<parameter=at>\nNone\n"
                           "</parameter>\n</function>\n</tool_call>");
    ASSERT_EQ(out.calls.size(), 1u);
    EXPECT_EQ(out.calls[0].arguments, R"({"tz":"None","utc":true,"dst":false,"at":null})");
}

TEST(ToolCallParser, glm_and_gemma4_calls) {
    const auto glm = parse(ToolCallFormat::glm,
                           "<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Paris</arg_value>\n"
                           "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>\n<tool_call>get_time\n"
                           "</tool_call>");
    ASSERT_EQ(glm.calls.size(), 2u);
    EXPECT_EQ(glm.calls[0].arguments, R"({"location":"Paris","days":2})");
    EXPECT_EQ(glm.calls[1].name, "get_time");
    EXPECT_EQ(glm.calls[1].arguments, "{}");
    const auto gemma = parse(ToolCallFormat::gemma4,
                             "Sure.<|tool_call>call:get_weather{days:2,location:<|\"|>Paris, \"FR\"<|\"|>}<tool_call|>"
                             "<|tool_call>call:get_time{tz:<|\"|>CET<|\"|>}<tool_call|>");
    EXPECT_EQ(gemma.content, "Sure.");
    ASSERT_EQ(gemma.calls.size(), 2u);
    EXPECT_EQ(gemma.calls[0].arguments, R"({"days":2,"location":"Paris, \"FR\""})");
    EXPECT_EQ(gemma.calls[1].arguments, R"({"tz":"CET"})");
}

TEST(ToolCallParser, output_that_does_not_parse_is_content_exactly) {
    const std::vector<std::pair<ToolCallFormat, std::string>> cases = {
        {ToolCallFormat::hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"a\": }\n</tool_call>"},
        {ToolCallFormat::hermes, "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call> done"},
        {ToolCallFormat::hermes, "  text <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}  "},  // unclosed
        {ToolCallFormat::glm, "<tool_call>get_weather\n<arg_value>x</arg_value>\n</tool_call>"},
        {ToolCallFormat::gemma4, "<|tool_call>call:get_time{tz:<|\"|>CET}<tool_call|>\n"},
        {ToolCallFormat::qwen_xml, "a < b and <tool_call> is a tag\n"},
    };
    for (const auto& [format, text] : cases) {
        const auto out = parse(format, text);
        EXPECT_TRUE(out.calls.empty()) << text;
        EXPECT_EQ(out.content, text);
    }
}

TEST(ToolCallParser, a_good_call_after_a_bad_one_is_still_a_call) {
    const auto out = parse(ToolCallFormat::hermes,
                           "<tool_call>oops</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}"
                           "</tool_call>\n");
    EXPECT_EQ(out.content, "<tool_call>oops</tool_call>");
    ASSERT_EQ(out.calls.size(), 1u);
}

TEST(ToolCallParser, streaming_split_anywhere_gives_the_whole_result) {
    const std::vector<std::pair<ToolCallFormat, std::string>> cases = {
        {ToolCallFormat::hermes,
         "Hi <tool <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"P\"}}\n</tool_call>\n"
         "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"},
        {ToolCallFormat::qwen_xml, "<tool_call>\n<function=get_time>\n<parameter=tz>\nUTC\n</parameter>\n</function>\n"
                                   "</tool_call> after <tool_call>bad</tool_call> <tool_"},
        {ToolCallFormat::glm, "x\n<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>UTC</arg_value>\n</tool_call>"},
        {ToolCallFormat::gemma4, "<|tool_call>call:get_time{tz:<|\"|>UTC<|\"|>}<tool_call|><|tool_call>call:get_weather"
                                 "{location:<|\"|>Oslo<|\"|>}<tool_call|> <|tool"},
        {ToolCallFormat::hermes, "no calls at all, trailing space  \n"},
    };
    for (const auto& [format, text] : cases) {
        const ParsedOutput whole = parse(format, text);
        for (size_t cut = 0; cut <= text.size(); ++cut)
            expect_same(stream(format, {std::string_view(text).substr(0, cut), std::string_view(text).substr(cut)}),
                        whole, text + " cut at " + std::to_string(cut));
        std::vector<std::string_view> bytes;
        for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
        expect_same(stream(format, bytes), whole, text + " byte by byte");
    }
}

TEST(ToolCallParser, text_that_may_open_a_call_is_held_back_until_decided) {
    ToolCallParser p(ToolCallFormat::hermes, kParserTools);
    auto pieces = p.feed("Hello <tool");
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].text, "Hello");  // the space waits too: it is dropped if a call follows
    pieces = p.feed("box");
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].text, " <toolbox");
}

TEST(ToolCallParser, hermes_arguments_stream_in_pieces_that_add_up_to_the_whole_call) {
    const std::vector<std::pair<ToolCallFormat, std::string>> cases = {
        {ToolCallFormat::hermes,
         "Hi <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"P \\\"a\\\" }\", \"days\": "
         "[1, {\"x\": 2}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"},
        {ToolCallFormat::qwen_xml, "<tool_call>{\"name\":\"get_time\",\"id\":7,\"arguments\":{ \"tz\" : \"UTC\" }}"
                                   "</tool_call> and <tool_call>\n<function=get_time>\n</function>\n</tool_call>"},
        // not streamable (arguments first, arguments as a string): whole, as before
        {ToolCallFormat::hermes, "<tool_call>{\"arguments\": {\"tz\": \"UTC\"}, \"name\": \"get_time\"}</tool_call>"
                                 "<tool_call>{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": 1}\"}</tool_call>"},
        {ToolCallFormat::hermes, "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call> text"},
    };
    for (const auto& [format, text] : cases) {
        const ParsedOutput whole = parse(format, text);
        for (size_t cut = 0; cut <= text.size(); ++cut)
            expect_same(stream(format, {std::string_view(text).substr(0, cut), std::string_view(text).substr(cut)}, true),
                        whole, text + " cut at " + std::to_string(cut));
        std::vector<std::string_view> bytes;
        for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
        expect_same(stream(format, bytes, true), whole, text + " byte by byte");
    }
    // minified as written: whitespace outside strings goes, the rest stays
    const ParsedOutput first = parse(ToolCallFormat::hermes, cases[0].second);
    ASSERT_EQ(first.calls.size(), 2u);
    EXPECT_EQ(first.calls[0].arguments, R"({"location":"P \"a\" }","days":[1,{"x":2}]})");
    EXPECT_EQ(first.content, "Hi");
}

TEST(ToolCallParser, a_streamed_call_begins_at_its_name_and_grows_with_its_arguments) {
    ToolCallParser p(ToolCallFormat::hermes, kParserTools, /*stream_arguments=*/true);
    EXPECT_TRUE(p.feed("<tool_call>\n{\"name\": \"get_wea").empty());
    auto pieces = p.feed("ther\", \"arguments\": {\"loca");
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].kind, ToolStreamPiece::Kind::call_begin);
    EXPECT_EQ(pieces[0].call.name, "get_weather");
    EXPECT_EQ(pieces[1].kind, ToolStreamPiece::Kind::call_arguments);
    EXPECT_EQ(pieces[1].text, "{\"loca");
    pieces = p.feed("tion\": \"Oslo\"}}\n</tool");  // the marker's start is not arguments
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].text, "tion\":\"Oslo\"}");
    EXPECT_TRUE(p.feed("_call>").empty());
    EXPECT_TRUE(p.finish().empty());
    EXPECT_EQ(p.calls(), 1u);

    // cut off (max_tokens): the streamed call ends with what it has, nothing turns into text
    ToolCallParser cut(ToolCallFormat::hermes, kParserTools, true);
    pieces = cut.feed("<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CE");
    ASSERT_EQ(pieces.size(), 2u);
    pieces = cut.finish();
    ASSERT_EQ(pieces.size(), 0u);
    // an unoffered name is not streamed: the block stays text
    ToolCallParser unknown(ToolCallFormat::hermes, kParserTools, true);
    EXPECT_TRUE(unknown.feed("<tool_call>{\"name\": \"rm_rf\", \"arguments\": {").empty());
    pieces = unknown.finish();
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].kind, ToolStreamPiece::Kind::text);
    EXPECT_EQ(pieces[0].text, "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {");
}

}  // namespace
}  // namespace tdm::server
