// SPDX-License-Identifier: Apache-2.0
// host/serve/openai_tools.cpp
#include "serve/openai_tools.h"

#include "serve/json_member.h"
#include "serve/ordered_body.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace tdm::server {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// OpenAI's rule for a function name: letters, digits, '_' and '-', at most 64.
bool valid_function_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    return true;
}

// "tools": [{"type": "function", "function": {...}}], or the deprecated "functions":
// [{...}] (`key`), whose items are the function objects themselves.
std::optional<ApiError> read_tools(const json& doc, const char* key, std::string_view body,
                                   const RequestLimits& limits, GenerationRequest& out) {
    const json& tools = *json_member(doc, key);
    const bool bare = std::string_view(key) == "functions";
    if (!tools.is_array())
        return ApiError::invalid(key, bare ? "'functions' must be an array of {\"name\": ..., \"parameters\": ...}"
                                           : "'tools' must be an array of {\"type\": \"function\", ...}");
    if (tools.size() > limits.max_tools)
        return ApiError::invalid(key, fmt::format("'{}' holds {} tools; at most {} are accepted", key, tools.size(),
                                                  limits.max_tools));
    // The same tools with the client's key order, which the prompt shows (sorted when the
    // body is too wide to parse in order: serve/ordered_body.h).
    std::optional<ojson> ordered = ordered_body(doc, body);
    if (ordered && !(ordered->is_object() && ordered->contains(key) && (*ordered)[key].size() == tools.size()))
        ordered.reset();
    size_t total = 0;
    std::set<std::string> names;
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string item_at = fmt::format("{}[{}]", key, i);
        const json& t = tools[i];
        if (!t.is_object()) return ApiError::invalid(item_at, fmt::format("'{}' must be an object", item_at));
        if (!bare) {
            const json* type = json_member(t, "type");
            if (!type || *type != "function")
                return ApiError::invalid(item_at + ".type", fmt::format("'{}.type' must be \"function\"", item_at));
        }
        const std::string at = bare ? item_at : item_at + ".function";
        const json* function = bare ? &t : json_member(t, "function");
        if (!function || !function->is_object())
            return ApiError::invalid(at, fmt::format("'{}' must be an object with a 'name'", at));
        const json* name = json_member(*function, "name");
        if (!name || !name->is_string() || !valid_function_name(name->get<std::string>()))
            return ApiError::invalid(at + ".name",
                                     fmt::format("'{}.name' must be 1 to 64 letters, digits, '_' or '-'", at));
        if (const json* d = json_member(*function, "description"); d && !d->is_string())
            return ApiError::invalid(at + ".description", fmt::format("'{}.description' must be a string", at));
        if (const json* p = json_member(*function, "parameters"); p && !p->is_object())
            return ApiError::invalid(at + ".parameters",
                                     fmt::format("'{}.parameters' must be a JSON schema object", at));
        if (const json* s = json_member(*function, "strict"); s && !s->is_boolean())
            return ApiError::invalid(at + ".strict", fmt::format("'{}.strict' must be a boolean", at));
        if (!names.insert(name->get<std::string>()).second)
            return ApiError::invalid(at + ".name", fmt::format("two tools are named '{}'", name->get<std::string>()));
        ToolDefinition def;
        def.name = name->get<std::string>();
        if (ordered) {
            const ojson& item = (*ordered)[key][i];
            def.function_json = (bare ? item : item["function"]).dump(-1, ' ', false, ojson::error_handler_t::replace);
        } else {
            def.function_json = function->dump(-1, ' ', false, json::error_handler_t::replace);
        }
        total += def.function_json.size();
        if (total > limits.max_tools_bytes)
            return ApiError::invalid(key, fmt::format("'{}' holds more than {} bytes of definitions, the most this "
                                                      "server accepts",
                                                      key, limits.max_tools_bytes));
        out.tools.push_back(std::move(def));
    }
    return std::nullopt;
}

std::optional<ApiError> read_tool_choice(const json& choice, GenerationRequest& out) {
    if (choice.is_string()) {
        const std::string& s = choice.get_ref<const std::string&>();
        if (s == "none") out.tool_choice.mode = ToolChoiceMode::none;
        else if (s == "auto") out.tool_choice.mode = ToolChoiceMode::automatic;
        else if (s == "required") out.tool_choice.mode = ToolChoiceMode::required;
        else
            return ApiError::invalid("tool_choice", fmt::format("'tool_choice' must be none, auto, required or "
                                                                "{{\"type\": \"function\", \"function\": {{\"name\": "
                                                                "...}}}}, not '{}'",
                                                                s));
    } else if (choice.is_object()) {
        const json* type = json_member(choice, "type");
        const json* function = json_member(choice, "function");
        const json* name = function && function->is_object() ? json_member(*function, "name") : nullptr;
        if (!type || *type != "function" || !name || !name->is_string())
            return ApiError::invalid("tool_choice", "a named 'tool_choice' is {\"type\": \"function\", \"function\": "
                                                    "{\"name\": \"...\"}}");
        out.tool_choice.mode = ToolChoiceMode::named;
        out.tool_choice.name = name->get<std::string>();
    } else {
        return ApiError::invalid("tool_choice", "'tool_choice' must be a string or an object");
    }
    if (out.tool_choice.mode == ToolChoiceMode::named) {
        bool offered = false;
        for (const ToolDefinition& t : out.tools) offered = offered || t.name == out.tool_choice.name;
        if (!offered)
            return ApiError::invalid("tool_choice", fmt::format("'tool_choice' names '{}', which 'tools' does not offer",
                                                                out.tool_choice.name));
    }
    if (out.tool_choice.mode == ToolChoiceMode::required && out.tools.empty())
        return ApiError::invalid("tool_choice", "'tool_choice': 'required' needs 'tools'");
    return std::nullopt;
}

// The deprecated "function_call": "none" | "auto" | {"name": "f"}, as tool_choice's none,
// auto and named function.
std::optional<ApiError> read_function_choice(const json& choice, GenerationRequest& out) {
    if (choice.is_string() && (choice == "none" || choice == "auto")) {
        out.tool_choice.mode = choice == "none" ? ToolChoiceMode::none : ToolChoiceMode::automatic;
        return std::nullopt;
    }
    const json* name = choice.is_object() ? json_member(choice, "name") : nullptr;
    if (!name || !name->is_string())
        return ApiError::invalid("function_call", "'function_call' must be \"none\", \"auto\" or {\"name\": \"...\"}");
    out.tool_choice.mode = ToolChoiceMode::named;
    out.tool_choice.name = name->get<std::string>();
    for (const ToolDefinition& t : out.tools)
        if (t.name == out.tool_choice.name) return std::nullopt;
    return ApiError::invalid("function_call", fmt::format("'function_call' names '{}', which 'functions' does not "
                                                          "offer",
                                                          out.tool_choice.name));
}

// One call's "function": {"name", "arguments"} into `out`; `at` is its path for errors.
std::optional<ApiError> read_called_function(const json* function, const std::string& at, ToolCall& out) {
    const json* name = function && function->is_object() ? json_member(*function, "name") : nullptr;
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
        return ApiError::invalid(at + ".name", fmt::format("'{}.name' must be a function name", at));
    out.name = name->get<std::string>();
    const json* args = json_member(*function, "arguments");
    if (!args) {
        out.arguments = "{}";
    } else if (args->is_string()) {
        out.arguments = args->get<std::string>();
        const json parsed = json::parse(out.arguments, nullptr, /*allow_exceptions=*/false);
        if (!parsed.is_object())
            return ApiError::invalid(at + ".arguments", fmt::format("'{}.arguments' must be a JSON object as a string", at));
    } else if (args->is_object()) {
        out.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
        return ApiError::invalid(at + ".arguments", fmt::format("'{}.arguments' must be a JSON object as a string", at));
    }
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> read_tool_fields(const json& doc, std::string_view body, const RequestLimits& limits,
                                         GenerationRequest& out) {
    const json* functions = json_member(doc, "functions");
    const json* function_call = json_member(doc, "function_call");
    if (functions && json_member(doc, "tools"))
        return ApiError::invalid("functions", "'functions' and 'tools' are both given: send one of them ('functions' "
                                              "is the deprecated form of 'tools')");
    if (function_call && json_member(doc, "tool_choice"))
        return ApiError::invalid("function_call", "'function_call' and 'tool_choice' are both given: send one of "
                                                  "them ('function_call' is the deprecated form of 'tool_choice')");
    if (function_call && !functions)
        return ApiError::invalid("function_call", "'function_call' needs 'functions'");
    if (functions) {
        if (auto e = read_tools(doc, "functions", body, limits, out)) return e;
        out.legacy_functions = true;
        out.parallel_tool_calls = false;  // the legacy reply holds one function_call
    } else if (json_member(doc, "tools")) {
        if (auto e = read_tools(doc, "tools", body, limits, out)) return e;
    }
    if (function_call) {
        if (auto e = read_function_choice(*function_call, out)) return e;
    } else if (const json* choice = json_member(doc, "tool_choice")) {
        if (auto e = read_tool_choice(*choice, out)) return e;
    }
    if (const json* parallel = json_member(doc, "parallel_tool_calls"); parallel && !out.legacy_functions) {
        if (!parallel->is_boolean())
            return ApiError::invalid("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
        out.parallel_tool_calls = parallel->get<bool>();
    }
    return std::nullopt;
}

std::optional<ApiError> read_tool_calls(const json& calls, const std::string& at, std::vector<ToolCall>& out) {
    if (!calls.is_array()) return ApiError::invalid(at, fmt::format("'{}' must be an array", at));
    for (size_t i = 0; i < calls.size(); ++i) {
        const std::string call_at = fmt::format("{}[{}]", at, i);
        const json& c = calls[i];
        if (!c.is_object()) return ApiError::invalid(call_at, fmt::format("'{}' must be an object", call_at));
        if (const json* type = json_member(c, "type"); type && *type != "function")
            return ApiError::invalid(call_at + ".type", fmt::format("'{}.type' must be \"function\"", call_at));
        ToolCall call;
        if (const json* id = json_member(c, "id")) {
            if (!id->is_string()) return ApiError::invalid(call_at + ".id", fmt::format("'{}.id' must be a string", call_at));
            call.id = id->get<std::string>();
        }
        if (auto e = read_called_function(json_member(c, "function"), call_at + ".function", call)) return e;
        out.push_back(std::move(call));
    }
    return std::nullopt;
}

std::optional<ApiError> read_function_call(const json& call, const std::string& at, std::vector<ToolCall>& out) {
    ToolCall c;
    if (auto e = read_called_function(&call, at, c)) return e;
    out.push_back(std::move(c));
    return std::nullopt;
}

}  // namespace tdm::server
