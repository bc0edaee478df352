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

std::optional<ApiError> read_tools(const json& doc, const json& tools, std::string_view body,
                                   const RequestLimits& limits, GenerationRequest& out) {
    if (!tools.is_array()) return ApiError::invalid("tools", "'tools' must be an array of {\"type\": \"function\", ...}");
    if (tools.size() > limits.max_tools)
        return ApiError::invalid("tools", fmt::format("'tools' holds {} tools; at most {} are accepted", tools.size(),
                                                      limits.max_tools));
    // The same tools with the client's key order, which the prompt shows (sorted when the
    // body is too wide to parse in order: serve/ordered_body.h).
    std::optional<ojson> ordered = ordered_body(doc, body);
    if (ordered && !(ordered->is_object() && ordered->contains("tools") && (*ordered)["tools"].size() == tools.size()))
        ordered.reset();
    size_t total = 0;
    std::set<std::string> names;
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = fmt::format("tools[{}]", i);
        const json& t = tools[i];
        if (!t.is_object()) return ApiError::invalid(at, fmt::format("'{}' must be an object", at));
        const json* type = json_member(t, "type");
        if (!type || *type != "function")
            return ApiError::invalid(at + ".type", fmt::format("'{}.type' must be \"function\"", at));
        const json* function = json_member(t, "function");
        if (!function || !function->is_object())
            return ApiError::invalid(at + ".function", fmt::format("'{}.function' must be an object with a 'name'", at));
        const json* name = json_member(*function, "name");
        if (!name || !name->is_string() || !valid_function_name(name->get<std::string>()))
            return ApiError::invalid(at + ".function.name",
                                     fmt::format("'{}.function.name' must be 1 to 64 letters, digits, '_' or '-'", at));
        if (const json* d = json_member(*function, "description"); d && !d->is_string())
            return ApiError::invalid(at + ".function.description",
                                     fmt::format("'{}.function.description' must be a string", at));
        if (const json* p = json_member(*function, "parameters"); p && !p->is_object())
            return ApiError::invalid(at + ".function.parameters",
                                     fmt::format("'{}.function.parameters' must be a JSON schema object", at));
        if (const json* s = json_member(*function, "strict"); s && !s->is_boolean())
            return ApiError::invalid(at + ".function.strict", fmt::format("'{}.function.strict' must be a boolean", at));
        if (!names.insert(name->get<std::string>()).second)
            return ApiError::invalid(at + ".function.name",
                                     fmt::format("two tools are named '{}'", name->get<std::string>()));
        ToolDefinition def;
        def.name = name->get<std::string>();
        def.function_json = ordered ? (*ordered)["tools"][i]["function"].dump(-1, ' ', false, ojson::error_handler_t::replace)
                                    : function->dump(-1, ' ', false, json::error_handler_t::replace);
        total += def.function_json.size();
        if (total > limits.max_tools_bytes)
            return ApiError::invalid("tools", fmt::format("'tools' holds more than {} bytes of definitions, the most "
                                                          "this server accepts",
                                                          limits.max_tools_bytes));
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

}  // namespace

std::optional<ApiError> read_tool_fields(const json& doc, std::string_view body, const RequestLimits& limits,
                                         GenerationRequest& out) {
    if (json_member(doc, "functions"))
        return ApiError::invalid("functions", "'functions' (the deprecated form of tools) is not supported: send "
                                              "'tools': [{\"type\": \"function\", \"function\": {...}}]");
    if (json_member(doc, "function_call"))
        return ApiError::invalid("function_call", "'function_call' (deprecated) is not supported: use 'tool_choice'");
    if (const json* tools = json_member(doc, "tools"))
        if (auto e = read_tools(doc, *tools, body, limits, out)) return e;
    if (const json* choice = json_member(doc, "tool_choice"))
        if (auto e = read_tool_choice(*choice, out)) return e;
    if (const json* parallel = json_member(doc, "parallel_tool_calls")) {
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
        const json* function = json_member(c, "function");
        const json* name = function && function->is_object() ? json_member(*function, "name") : nullptr;
        if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
            return ApiError::invalid(call_at + ".function.name",
                                     fmt::format("'{}.function.name' must be a function name", call_at));
        call.name = name->get<std::string>();
        const json* args = json_member(*function, "arguments");
        if (!args) {
            call.arguments = "{}";
        } else if (args->is_string()) {
            call.arguments = args->get<std::string>();
            const json parsed = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
            if (!parsed.is_object())
                return ApiError::invalid(call_at + ".function.arguments",
                                         fmt::format("'{}.function.arguments' must be a JSON object as a string", call_at));
        } else if (args->is_object()) {
            call.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
        } else {
            return ApiError::invalid(call_at + ".function.arguments",
                                     fmt::format("'{}.function.arguments' must be a JSON object as a string", call_at));
        }
        out.push_back(std::move(call));
    }
    return std::nullopt;
}

}  // namespace tdm::server
