// SPDX-License-Identifier: Apache-2.0
// host/serve/tool_call_grammar.cpp
//
// Rule names: `root`, `tool-call` (one call of any allowed function), `tool-<i>` (a call of
// the i-th allowed function), `tool-<i>-args` (its JSON arguments, from schema_to_gbnf) or
// `tool-<i>-p<j>...` (the family's per-parameter pieces for the XML and Gemma syntaxes).
// Parameters of the XML and Gemma syntaxes come in the schema's property order (Gemma:
// sorted, as its template sorts them), required ones always, optional ones may be left out.
#include "serve/tool_call_grammar.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace tdm::server {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// A GBNF string literal.
std::string literal(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default: out += c;
        }
    }
    return out + "\"";
}

struct Parameter {
    std::string key;
    ojson schema;
    bool required = false;
};

// The properties of a parameters schema, in its order, with whether each is required.
std::vector<Parameter> parameters_of(const ojson& schema) {
    std::vector<Parameter> out;
    const auto props = schema.find("properties");
    if (props == schema.end() || !props->is_object()) return out;
    std::vector<std::string> required;
    if (auto r = schema.find("required"); r != schema.end() && r->is_array())
        for (const ojson& k : *r)
            if (k.is_string()) required.push_back(k.get<std::string>());
    for (const auto& [key, value] : props->items())
        out.push_back({key, value, std::find(required.begin(), required.end(), key) != required.end()});
    return out;
}

bool is_string_schema(const ojson& schema) {
    const auto t = schema.find("type");
    return t != schema.end() && t->is_string() && *t == "string";
}

// A sequence of optional and required items: rule `<base>-<j>` produces items j.. given
// that something came before (`after`) or not; `separator` goes between two items.
void sequence_rules(const std::string& base, const std::vector<std::string>& items, const std::vector<bool>& required,
                    std::string_view separator, std::string& rules) {
    const size_t n = items.size();
    for (size_t j = 0; j <= n; ++j) {
        for (bool after : {false, true}) {
            const std::string name = fmt::format("{}-{}{}", base, j, after ? "-after" : "");
            if (j == n) {
                rules += name + " ::= \"\"\n";
                continue;
            }
            const std::string next = fmt::format("{}-{}-after", base, j + 1);
            const std::string sep = after && !separator.empty() ? literal(separator) + " " : "";
            std::string alt = sep + items[j] + " " + next;
            if (!required[j]) alt += " | " + fmt::format("{}-{}{}", base, j + 1, after ? "-after" : "");
            rules += name + " ::= " + alt + "\n";
        }
    }
}

struct Composer {
    ToolCallFormat format;
    const SchemaToGbnf& schema_to_gbnf;
    std::string rules;
    ApiError error;  // the converter's, after a failed convert()

    // Appends the converter's rules for `schema` under `root`; false (and `error`) if it refuses.
    bool convert(const ojson& schema, const std::string& root) {
        auto r = schema_to_gbnf(json::parse(schema.dump()), root);
        if (!r.ok()) {
            error = r.error();
            return false;
        }
        rules += *r + "\n";
        return true;
    }

    // A value of an XML-style parameter: raw text for strings, JSON otherwise.
    bool xml_value(const std::string& rule, const ojson& schema) {
        if (!is_string_schema(schema)) return convert(schema, rule);
        // Any text without '<' followed by '/', where the closing tag begins.
        rules += rule + " ::= ( [^<] | \"<\" [^/] )*\n";
        return true;
    }

    ApiResult<std::string> call(size_t i, const ToolDefinition& tool) {
        const std::string rule = fmt::format("tool-{}", i);
        ojson function = ojson::parse(tool.function_json, nullptr, false);
        ojson params = ojson::object();
        if (auto p = function.find("parameters"); p != function.end() && p->is_object()) params = *p;
        if (params.empty()) params = ojson{{"type", "object"}};
        switch (format) {
            case ToolCallFormat::hermes: {
                if (!convert(params, rule + "-args")) return error;
                rules += rule + " ::= " + literal("<tool_call>\n{\"name\": \"" + tool.name + "\", \"arguments\": ") +
                         " " + rule + "-args " + literal("}\n</tool_call>") + "\n";
                return rule;
            }
            case ToolCallFormat::qwen_xml:
            case ToolCallFormat::glm: {
                const bool glm = format == ToolCallFormat::glm;
                std::vector<std::string> items;
                std::vector<bool> required;
                size_t j = 0;
                for (const Parameter& p : parameters_of(params)) {
                    const std::string item = fmt::format("{}-p{}", rule, j++);
                    const std::string value = item + "-value";
                    if (!xml_value(value, p.schema)) return error;
                    rules += item + " ::= " +
                             (glm ? literal("<arg_key>" + p.key + "</arg_key>\n<arg_value>") + " " + value + " " +
                                        literal("</arg_value>\n")
                                  : literal("<parameter=" + p.key + ">\n") + " " + value + " " +
                                        literal("\n</parameter>\n")) +
                             "\n";
                    items.push_back(item);
                    required.push_back(p.required);
                }
                sequence_rules(rule + "-params", items, required, "", rules);
                rules += rule + " ::= " +
                         (glm ? literal("<tool_call>" + tool.name + "\n") + " " + rule + "-params-0 " +
                                    literal("</tool_call>")
                              : literal("<tool_call>\n<function=" + tool.name + ">\n") + " " + rule + "-params-0 " +
                                    literal("</function>\n</tool_call>")) +
                         "\n";
                return rule;
            }
            case ToolCallFormat::gemma4: {
                std::vector<Parameter> ps = parameters_of(params);
                std::sort(ps.begin(), ps.end(), [](const Parameter& a, const Parameter& b) { return a.key < b.key; });
                std::vector<std::string> items;
                std::vector<bool> required;
                for (size_t j = 0; j < ps.size(); ++j) {
                    const ojson& schema = ps[j].schema;
                    const auto type = schema.find("type");
                    const bool compound = type == schema.end() || !type->is_string() || *type == "object" ||
                                          *type == "array";
                    if (compound)
                        return ApiError::invalid("tools", fmt::format("parameter '{}' of tool '{}' is not a string, "
                                                                      "number, integer or boolean: a Gemma 4 call "
                                                                      "cannot be enforced for it",
                                                                      ps[j].key, tool.name));
                    const std::string item = fmt::format("{}-p{}", rule, j);
                    const std::string value = item + "-value";
                    if (is_string_schema(schema)) {
                        rules += value + " ::= " + literal("<|\"|>") + " ( [^<] | \"<\" [^|] )* " + literal("<|\"|>") +
                                 "\n";
                    } else if (!convert(schema, value)) {
                        return error;
                    }
                    rules += item + " ::= " + literal(ps[j].key + ":") + " " + value + "\n";
                    items.push_back(item);
                    required.push_back(ps[j].required);
                }
                sequence_rules(rule + "-params", items, required, ",", rules);
                rules += rule + " ::= " + literal("<|tool_call>call:" + tool.name + "{") + " " + rule + "-params-0 " +
                         literal("}<tool_call|>") + "\n";
                return rule;
            }
            case ToolCallFormat::none: break;
        }
        return ApiError::invalid("tools", "this model's chat template renders no tools");
    }
};

}  // namespace

ApiResult<std::string> tool_call_grammar_gbnf(const std::vector<ToolDefinition>& tools, const ToolChoice& choice,
                                              bool parallel_tool_calls, ToolCallFormat format,
                                              const SchemaToGbnf& schema_to_gbnf) {
    if (choice.mode != ToolChoiceMode::required && choice.mode != ToolChoiceMode::named)
        return ApiError::invalid("tool_choice", "only tool_choice 'required' or a named function needs a grammar");
    std::vector<const ToolDefinition*> allowed;
    for (const ToolDefinition& t : tools)
        if (choice.mode == ToolChoiceMode::required || t.name == choice.name) allowed.push_back(&t);
    if (allowed.empty())
        return ApiError::invalid("tool_choice", choice.mode == ToolChoiceMode::named
                                                    ? fmt::format("tool_choice names '{}', which 'tools' does not "
                                                                  "offer", choice.name)
                                                    : std::string("tool_choice 'required' needs at least one tool"));
    Composer c{format, schema_to_gbnf, {}, {}};
    std::string alternatives;
    for (size_t i = 0; i < allowed.size(); ++i) {
        auto rule = c.call(i, *allowed[i]);
        if (!rule.ok()) return rule.error();
        alternatives += (i ? " | " : "") + *rule;
    }
    const std::string separator = format == ToolCallFormat::gemma4 ? "" : "\n";
    std::string head = "root ::= tool-call";
    if (parallel_tool_calls)
        head += separator.empty() ? " tool-call*" : " ( " + literal(separator) + " tool-call )*";
    return head + "\ntool-call ::= " + alternatives + "\n" + c.rules;
}

}  // namespace tdm::server
