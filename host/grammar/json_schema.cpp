// SPDX-License-Identifier: Apache-2.0
// host/grammar/json_schema.cpp: JSON schema -> GBNF (json_schema_to_gbnf of grammar.h),
// after llama.cpp's common/json-schema-to-grammar.cpp: the same primitive rules, the same
// bounded whitespace, objects with their properties in the schema's order. The keywords
// honoured and refused are listed in docs/GRAMMAR.md; anything else that would change the
// language is an error naming it. Not here: integer ranges (json_schema_int_range.cpp).
#include "grammar/grammar.h"
#include "grammar/json_schema_int_range.h"
#include "tokenizer/unicode.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace tdm {
namespace {

constexpr int kMaxSchemaDepth = 64;
constexpr size_t kMaxEnumValues = 4096;
constexpr int64_t kMaxCount = 10000;
constexpr size_t kMaxKeyBytes = 1024;  // minItems/maxItems/minLength/maxLength (GrammarLimits)

// Keywords that only describe: ignored.
const std::set<std::string, std::less<>> kAnnotations = {
    "title", "description", "examples", "$schema", "default", "$id", "$comment", "deprecated",
    "readOnly", "writeOnly"};
const std::set<std::string, std::less<>> kHonoured = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "minLength",
    "maxLength", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

// The primitive rules (llama.cpp's PRIMITIVE_RULES and its string formats); "{p}" is the
// rule prefix. Whitespace between tokens: at most one newline and 20 spaces or tabs.
struct Primitive {
    const char* name;
    const char* body;
    std::vector<const char*> deps;
};
const std::vector<Primitive>& primitives() {
    static const std::vector<Primitive> table = {
        {"space", R"(| " " | "\n" [ \t]{0,20})", {}},
        {"boolean", R"(("true" | "false") {p}space)", {"space"}},
        {"null", R"("null" {p}space)", {"space"}},
        {"integral-part", R"([0] | [1-9] [0-9]{0,15})", {}},
        {"decimal-part", R"([0-9]{1,16})", {}},
        {"integer", R"(("-"? {p}integral-part) {p}space)", {"integral-part", "space"}},
        {"number", R"(("-"? {p}integral-part) ("." {p}decimal-part)? ([eE] [-+]? {p}integral-part)? {p}space)",
         {"integral-part", "decimal-part", "space"}},
        {"char", R"([^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))", {}},
        {"string", R"("\"" {p}char* "\"" {p}space)", {"char", "space"}},
        {"value", R"({p}object | {p}array | {p}string | {p}number | {p}boolean | {p}null)",
         {"object", "array", "string", "number", "boolean", "null"}},
        {"object",
         R"("{" {p}space ( {p}string ":" {p}space {p}value ("," {p}space {p}string ":" {p}space {p}value)* )? "}" {p}space)",
         {"string", "value", "space"}},
        {"array", R"("[" {p}space ( {p}value ("," {p}space {p}value)* )? "]" {p}space)", {"value", "space"}},
        {"uuid",
         R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" {p}space)",
         {"space"}},
        {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [1-2] [0-9] | "3" [0-1]))", {}},
        {"time",
         R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))",
         {}},
        {"date-time", R"({p}date "T" {p}time)", {"date", "time"}},
        {"date-string", R"("\"" {p}date "\"" {p}space)", {"date", "space"}},
        {"time-string", R"("\"" {p}time "\"" {p}space)", {"time", "space"}},
        {"date-time-string", R"("\"" {p}date-time "\"" {p}space)", {"date-time", "space"}},
    };
    return table;
}

// A GBNF string literal of the bytes s (UTF-8 passes through).
std::string gbnf_literal(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02X}", c);
        else out += static_cast<char>(c);
    }
    return out + "\"";
}

// A rule name part from arbitrary text: [A-Za-z0-9-] kept, the rest '-'.
std::string name_part(std::string_view s) {
    std::string out;
    for (char c : s) {
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        out += keep ? c : '-';
    }
    return out.empty() ? "x" : out;
}

template <class Json>
class SchemaConverter {
public:
    SchemaConverter(const Json& root, std::string_view root_name) : root_(root), root_name_(root_name) {}

    Result<std::string> convert() {
        std::string body = TDM_TRY(visit(root_, "", 0));
        std::string out = fmt::format("{} ::= {}\n", root_name_, body);
        for (const auto& [name, rule_body] : rules_) out += fmt::format("{} ::= {}\n", name, rule_body);
        if (out.size() > GrammarLimits{}.max_text_bytes)
            return Error::format("JSON schema: its grammar is {} bytes; the limit is {}", out.size(),
                                 GrammarLimits{}.max_text_bytes);
        return out;
    }

private:
    using Object = std::vector<std::pair<std::string, const Json*>>;

    std::string full_name(std::string_view hint) const {
        return hint.empty() ? root_name_ + "-value" : root_name_ + "-" + std::string(hint);
    }

    bool taken(const std::string& name) const {
        if (names_.count(name)) return true;
        for (const Primitive& p : primitives()) {
            if (name == root_name_ + "-" + p.name) return true;  // reserved for primitive()
        }
        return false;
    }

    // Adds a rule named after hint (made unique); returns its name. With `reuse`, an
    // existing rule of that name and the same body is returned instead.
    std::string add_rule(std::string_view hint, std::string body, bool reuse = true) {
        std::string base = full_name(hint), name = base;
        for (int n = 2; taken(name); ++n) {
            auto it = names_.find(name);
            if (reuse && it != names_.end() && rules_[it->second].second == body) return name;
            name = fmt::format("{}{}", base, n);
        }
        names_[name] = rules_.size();
        rules_.emplace_back(name, std::move(body));
        return name;
    }

    std::string primitive(std::string_view which) {
        std::string name = root_name_ + "-" + std::string(which);
        if (names_.count(name)) return name;
        for (const Primitive& p : primitives()) {
            if (p.name != which) continue;
            names_[name] = rules_.size();
            rules_.emplace_back(name, "");  // reserved first: the rules refer to each other
            size_t at = names_[name];
            std::string body = p.body;
            for (size_t i; (i = body.find("{p}")) != std::string::npos;) body.replace(i, 3, root_name_ + "-");
            rules_[at].second = body;
            for (const char* dep : p.deps) primitive(dep);
            return name;
        }
        TDM_ASSERT_MSG(false, "unknown primitive rule");
        return name;
    }

    // Compact JSON text; invalid UTF-8 (only possible in a schema built in code, not
    // parsed) becomes U+FFFD instead of an exception.
    static std::string json_text(const Json& v) {
        return v.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
    }

    static Error unsupported(std::string_view keyword, std::string_view why = "") {
        return Error::format("JSON schema: unsupported keyword '{}'{}{}", keyword, why.empty() ? "" : ": ", why);
    }

    Result<const Json*> resolve_ref(const Json& schema) {
        if (!schema["$ref"].is_string()) return unsupported("$ref", "it must be a string");
        std::string ref = schema["$ref"].template get<std::string>();
        if (ref == "#") return &root_;
        if (ref.rfind("#/", 0) != 0) return unsupported("$ref", fmt::format("only local references (#/$defs/...) are supported, not '{}'", ref));
        const Json* node = &root_;
        size_t i = 2;
        while (i <= ref.size()) {
            size_t j = ref.find('/', i);
            if (j == std::string::npos) j = ref.size();
            std::string part = ref.substr(i, j - i);
            for (size_t k; (k = part.find("~1")) != std::string::npos;) part.replace(k, 2, "/");
            for (size_t k; (k = part.find("~0")) != std::string::npos;) part.replace(k, 2, "~");
            if (!node->is_object() || !node->contains(part))
                return Error::format("JSON schema: $ref '{}' does not resolve", ref);
            node = &(*node)[part];
            i = j + 1;
        }
        return node;
    }

    Result<std::string> visit_ref(const Json& schema, int depth) {
        std::string ref = schema["$ref"].is_string() ? schema["$ref"].template get<std::string>() : "";
        auto it = ref_rules_.find(ref);
        if (it != ref_rules_.end()) return it->second;  // done, or in progress (recursion)
        const Json* target = TDM_TRY(resolve_ref(schema));
        std::string hint = "ref-" + name_part(ref.substr(ref.rfind('/') + 1));
        std::string name = add_rule(hint, "", /*reuse=*/false);  // its body comes below
        ref_rules_[ref] = name;
        std::string body = TDM_TRY(visit(*target, hint, depth + 1));
        rules_[names_[name]].second = body;
        return name;
    }

    Result<std::string> visit(const Json& schema, const std::string& hint, int depth) {
        if (depth > kMaxSchemaDepth)
            return Error::format("JSON schema: nested deeper than {} levels", kMaxSchemaDepth);
        if (schema.is_boolean()) {
            if (schema.template get<bool>()) return primitive("value");
            return Error("JSON schema: the schema 'false' matches nothing");
        }
        if (!schema.is_object()) return Error("JSON schema: a schema must be an object or a boolean");
        for (auto it = schema.begin(); it != schema.end(); ++it) {
            const std::string& key = it.key();
            if (kAnnotations.count(key) || kHonoured.count(key)) continue;
            if (key == "pattern") return unsupported("pattern", "regular expressions are not supported");
            return unsupported(key);
        }
        if (schema.contains("$ref")) return visit_ref(schema, depth);
        if (schema.contains("const")) return gbnf_literal(json_text(schema["const"])) + " " + primitive("space");
        if (schema.contains("enum")) return visit_enum(schema["enum"]);
        for (const char* key : {"anyOf", "oneOf"}) {
            if (schema.contains(key)) return visit_alternatives(schema[key], key, hint, depth);
        }
        if (schema.contains("allOf")) return visit_all_of(schema, hint, depth);
        if (schema.contains("type")) {
            const Json& type = schema["type"];
            if (type.is_array()) {
                std::vector<std::string> alts;
                for (const Json& t : type) {
                    if (!t.is_string()) return unsupported("type", "its entries must be strings");
                    alts.push_back(TDM_TRY(visit_type(schema, t.template get<std::string>(), hint, depth)));
                }
                if (alts.empty()) return unsupported("type", "an empty list of types");
                return join(alts);
            }
            if (!type.is_string()) return unsupported("type", "it must be a string or a list of strings");
            return visit_type(schema, type.template get<std::string>(), hint, depth);
        }
        if (schema.contains("properties") || schema.contains("additionalProperties"))
            return visit_type(schema, "object", hint, depth);
        if (schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems"))
            return visit_type(schema, "array", hint, depth);
        return primitive("value");
    }

    static std::string join(const std::vector<std::string>& alts) {
        if (alts.size() == 1) return alts[0];
        std::string out = "(";
        for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
        return out + ")";
    }

    Result<std::string> visit_enum(const Json& values) {
        if (!values.is_array() || values.empty()) return unsupported("enum", "it must be a non-empty array");
        if (values.size() > kMaxEnumValues)
            return unsupported("enum", fmt::format("{} values; at most {} are supported", values.size(), kMaxEnumValues));
        std::vector<std::string> alts;
        for (const Json& v : values) alts.push_back(gbnf_literal(json_text(v)));
        return join(alts) + " " + primitive("space");
    }

    Result<std::string> visit_alternatives(const Json& list, const char* key, const std::string& hint, int depth) {
        if (!list.is_array() || list.empty()) return unsupported(key, "it must be a non-empty array");
        std::vector<std::string> alts;
        for (size_t i = 0; i < list.size(); ++i)
            alts.push_back(TDM_TRY(visit(list[i], fmt::format("{}{}{}", hint, hint.empty() ? "" : "-", i), depth + 1)));
        return join(alts);
    }

    // allOf of object schemas: one object with every part's properties and requirements.
    Result<std::string> visit_all_of(const Json& schema, const std::string& hint, int depth) {
        const Json& parts = schema["allOf"];
        if (!parts.is_array() || parts.empty()) return unsupported("allOf", "it must be a non-empty array");
        Object properties;
        std::map<std::string, size_t> property_index;
        std::set<std::string> required;
        const Json* additional = nullptr;
        for (const Json& part : parts) {
            const Json* p = &part;
            for (int hops = 0; p->is_object() && p->contains("$ref"); ++hops) {
                if (hops > kMaxSchemaDepth) return Error("JSON schema: $ref chain too long");
                p = TDM_TRY(resolve_ref(*p));
            }
            bool object_like = p->is_object() && (p->contains("properties") ||
                                                  (p->contains("type") && (*p)["type"] == "object"));
            if (!object_like || p->contains("anyOf") || p->contains("oneOf") || p->contains("allOf"))
                return unsupported("allOf", "only a list of object schemas (with properties) is supported");
            TDM_TRY(collect_object(*p, properties, property_index, required, additional));
        }
        return object_rule(properties, required, additional, hint, depth);
    }

    Status collect_object(const Json& schema, Object& properties, std::map<std::string, size_t>& property_index,
                          std::set<std::string>& required, const Json*& additional) {
        if (schema.contains("properties")) {
            const Json& props = schema["properties"];
            if (!props.is_object()) return unsupported("properties", "it must be an object");
            for (auto it = props.begin(); it != props.end(); ++it) {
                if (it.key().size() > kMaxKeyBytes)
                    return unsupported("properties", fmt::format("a property name of {} bytes (at most {})", it.key().size(), kMaxKeyBytes));
                auto [at, added] = property_index.emplace(it.key(), properties.size());
                if (added) properties.emplace_back(it.key(), &it.value());
                else properties[at->second].second = &it.value();  // a later allOf part wins
            }
        }
        if (schema.contains("required")) {
            const Json& req = schema["required"];
            if (!req.is_array()) return unsupported("required", "it must be an array of names");
            for (const Json& r : req) {
                if (!r.is_string()) return unsupported("required", "it must be an array of names");
                required.insert(r.template get<std::string>());
            }
        }
        if (schema.contains("additionalProperties")) additional = &schema["additionalProperties"];
        return {};
    }

    Result<int64_t> count(const Json& schema, const char* key, int64_t fallback) {
        if (!schema.contains(key)) return fallback;
        const Json& v = schema[key];
        if (!v.is_number_integer() || v.template get<int64_t>() < 0)
            return unsupported(key, "it must be a non-negative integer");
        int64_t n = v.template get<int64_t>();
        if (n > kMaxCount) return unsupported(key, fmt::format("{} is above the limit {}", n, kMaxCount));
        return n;
    }

    static std::string repeat(const std::string& item, int64_t min, int64_t max) {
        if (max < 0) return min == 0 ? item + "*" : min == 1 ? item + "+" : fmt::format("{}{{{},}}", item, min);
        if (min == 0 && max == 1) return item + "?";
        if (min == max) return fmt::format("{}{{{}}}", item, min);
        return fmt::format("{}{{{},{}}}", item, min, max);
    }

    Result<std::string> visit_type(const Json& schema, const std::string& type, const std::string& hint, int depth) {
        if (type == "object") {
            if (!schema.contains("properties") &&
                (!schema.contains("additionalProperties") || schema["additionalProperties"] == true))
                return primitive("object");
            Object properties;
            std::set<std::string> required;
            const Json* additional = nullptr;
            std::map<std::string, size_t> property_index;
            TDM_TRY(collect_object(schema, properties, property_index, required, additional));
            return object_rule(properties, required, additional, hint, depth);
        }
        if (type == "array") {
            std::string item = primitive("value");
            if (schema.contains("items")) {
                if (schema["items"].is_array()) return unsupported("items", "a list of schemas (tuples) is not supported");
                std::string body = TDM_TRY(visit(schema["items"], hint + (hint.empty() ? "item" : "-item"), depth + 1));
                item = add_rule(hint + (hint.empty() ? "item" : "-item"), body);
            }
            int64_t min = TDM_TRY(count(schema, "minItems", 0));
            int64_t max = TDM_TRY(count(schema, "maxItems", -1));
            if (max >= 0 && max < min) return unsupported("maxItems", "below minItems");
            std::string sp = primitive("space");
            if (max == 0) return fmt::format("\"[\" {} \"]\" {}", sp, sp);
            std::string rest = repeat(fmt::format("(\",\" {} {})", sp, item), min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1);
            std::string list = item + " " + rest;
            if (min == 0) list = "(" + list + ")?";
            return fmt::format("\"[\" {} {} \"]\" {}", sp, list, sp);
        }
        if (type == "string") {
            if (schema.contains("format")) {
                std::string format = schema["format"].is_string() ? schema["format"].template get<std::string>() : "";
                if (format == "uuid" || format == "date" || format == "time" || format == "date-time")
                    return primitive(format == "uuid" ? format : format + "-string");
                return unsupported("format", fmt::format("'{}' (supported: date, time, date-time, uuid)", format));
            }
            int64_t min = TDM_TRY(count(schema, "minLength", 0));
            int64_t max = TDM_TRY(count(schema, "maxLength", -1));
            if (max >= 0 && max < min) return unsupported("maxLength", "below minLength");
            if (min == 0 && max < 0) return primitive("string");
            return fmt::format("\"\\\"\" {} \"\\\"\" {}", repeat(primitive("char"), min, max), primitive("space"));
        }
        if (type == "integer") {
            std::optional<int64_t> min = TDM_TRY(bound(schema, "minimum", false, false));
            std::optional<int64_t> max = TDM_TRY(bound(schema, "maximum", true, false));
            std::optional<int64_t> xmin = TDM_TRY(bound(schema, "exclusiveMinimum", false, true));
            std::optional<int64_t> xmax = TDM_TRY(bound(schema, "exclusiveMaximum", true, true));
            if (xmin && (!min || *xmin > *min)) min = xmin;
            if (xmax && (!max || *xmax < *max)) max = xmax;
            if (!min && !max) return primitive("integer");
            if (min && max && *min > *max) return unsupported("minimum", "no integer lies between minimum and maximum");
            return "(" + integer_range_gbnf(min, max) + ") " + primitive("space");
        }
        if (type == "number") {
            for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
                if (schema.contains(key)) return unsupported(key, "bounds are supported on integers only");
            }
            return primitive("number");
        }
        if (type == "boolean" || type == "null") return primitive(type);
        return unsupported("type", fmt::format("unknown type '{}'", type));
    }

    // An integer bound; exclusive bounds move one inward. Fractional bounds round inward.
    Result<std::optional<int64_t>> bound(const Json& schema, const char* key, bool upper, bool exclusive) {
        if (!schema.contains(key)) return std::optional<int64_t>();
        const Json& v = schema[key];
        if (!v.is_number()) return unsupported(key, "it must be a number");
        double d = v.template get<double>();
        if (std::fabs(d) > 9.0e15) return unsupported(key, "its magnitude is above 9e15");
        int64_t n = v.is_number_integer() ? v.template get<int64_t>()
                                          : static_cast<int64_t>(upper ? std::floor(d) : std::ceil(d));
        bool integral = v.is_number_integer() || std::floor(d) == d;
        if (exclusive && integral) n += upper ? -1 : 1;
        return std::optional<int64_t>(n);
    }

    // "\"not one of these keys\"" for additional properties (llama.cpp's _not_strings): a
    // trie of the declared keys as JSON writes them, one UTF-8 character per edge.
    std::string key_not_in(const Object& properties) {
        struct Node { std::map<std::string, Node> children; bool end = false; };
        Node trie;
        for (const auto& [key, schema] : properties) {
            std::string text = json_text(Json(key));
            std::string_view inner = std::string_view(text).substr(1, text.size() - 2);
            Node* n = &trie;
            for (size_t i = 0; i < inner.size();) {
                size_t start = i;
                uint32_t cp = 0;
                if (!unicode::decode(inner, i, cp)) i = start + 1;
                n = &n->children[std::string(inner.substr(start, i - start))];
            }
            n->end = true;
        }
        std::string ch = primitive("char");
        // Native recursion, one level per character of a key: keys are at most
        // kMaxKeyBytes long (collect_object).
        auto visit_node = [&](auto&& self, const Node& node) -> std::string {
            std::vector<std::string> alts;
            std::string others;
            for (const auto& [c, child] : node.children) {
                unsigned char c0 = static_cast<unsigned char>(c[0]);
                if (c.size() == 1 && (c0 < 0x20 || c0 == 0x7F)) others += fmt::format("\\x{:02X}", c0);
                else if (c == "\"" || c == "\\" || c == "]" || c == "-" || c == "^") others += "\\" + c;
                else others += c;
                std::string lit = gbnf_literal(c);
                if (child.children.empty()) {
                    alts.push_back(lit + " " + ch + "+");
                } else {
                    std::string rest = "(" + self(self, child) + ")";
                    alts.push_back(lit + " " + rest + (child.end ? "" : "?"));
                }
            }
            alts.push_back(fmt::format("[^\"\\\\{}] {}*", others, ch));
            std::string out;
            for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
            return out;
        };
        std::string body = "(" + visit_node(visit_node, trie) + ")";
        if (!trie.end) body += "?";
        return add_rule("additional-key", fmt::format("\"\\\"\" {} \"\\\"\" {}", body, primitive("space")));
    }

    Result<std::string> object_rule(const Object& properties, const std::set<std::string>& required,
                                    const Json* additional, const std::string& hint, int depth) {
        std::string sp = primitive("space");
        std::string prefix = hint.empty() ? "" : hint + "-";
        std::vector<std::string> req_kvs, opt_kvs;
        std::set<std::string_view> declared;
        for (const auto& [key, schema] : properties) declared.insert(key);
        for (const std::string& name : required) {
            if (!declared.count(name)) return unsupported("required", fmt::format("'{}' is not among the properties", name));
        }
        for (const auto& [key, schema] : properties) {
            std::string value_hint = prefix + name_part(key);
            std::string value = TDM_TRY(visit(*schema, value_hint, depth + 1));
            std::string kv = add_rule(value_hint + "-kv", fmt::format("{} {} \":\" {} {}", gbnf_literal(json_text(Json(key))), sp, sp, value));
            (required.count(key) ? req_kvs : opt_kvs).push_back(kv);
        }
        if (additional && !additional->is_boolean() && !additional->is_object())
            return unsupported("additionalProperties", "it must be a boolean or a schema");
        if (additional && !(additional->is_boolean() && !additional->template get<bool>())) {
            std::string value = primitive("value");
            if (additional->is_object())
                value = TDM_TRY(visit(*additional, prefix + "additional-value", depth + 1));
            std::string kv = add_rule(prefix + "additional-kv", fmt::format("{} \":\" {} {}", key_not_in(properties), sp, value));
            opt_kvs.push_back(add_rule(prefix + "additional-kvs", fmt::format("{} (\",\" {} {})*", kv, sp, kv)));
        }
        // rest_i: a non-empty ordered subset of the optional members i.. (llama.cpp's
        // get_recursive_refs), built from the last one back.
        std::string rest;
        for (size_t i = opt_kvs.size(); i-- > 0;) {
            std::string body = opt_kvs[i];
            if (!rest.empty()) body = fmt::format("{} (\",\" {} {})? | {}", opt_kvs[i], sp, rest, rest);
            rest = add_rule(fmt::format("{}rest-{}", prefix, i), body);
        }
        std::string members;
        for (size_t i = 0; i < req_kvs.size(); ++i) members += (i ? fmt::format(" \",\" {} ", sp) : "") + req_kvs[i];
        if (!rest.empty()) {
            members = req_kvs.empty() ? "(" + rest + ")?" : fmt::format("{} (\",\" {} {})?", members, sp, rest);
        }
        return fmt::format("\"{{\" {} {} \"}}\" {}", sp, members, sp);
    }

    const Json& root_;
    std::string root_name_;
    std::vector<std::pair<std::string, std::string>> rules_;  // name, body, in order of creation
    std::map<std::string, size_t> names_;
    std::map<std::string, std::string> ref_rules_;
};

}  // namespace

namespace {

Status check_root_name(std::string_view root_name) {
    bool ok = !root_name.empty();
    for (char c : root_name) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
    }
    if (!ok) return Error::format("JSON schema: '{}' is not a grammar rule name (letters, digits, '-', '_')", root_name);
    return {};
}

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema, std::string_view root_name) {
    TDM_TRY(check_root_name(root_name));
    return SchemaConverter<nlohmann::json>(schema, root_name).convert();
}

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, std::string_view root_name) {
    TDM_TRY(check_root_name(root_name));
    return SchemaConverter<nlohmann::ordered_json>(schema, root_name).convert();
}

}  // namespace tdm
