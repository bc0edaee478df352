// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/chat_template_tools.cpp: conversations with tools, rendered as the models'
// own Jinja templates render them, byte for byte (the tests hold jinja2 renderings). Sources
// (docs/SERVER.md "Tool calls" restates them): Qwen3's chat_template in the fixtures'
// tokenizer_config.json (Hermes JSON calls), Qwen3.5's chat_template.jinja (XML calls,
// docs/models/qwen35.md §5.1), Gemma 4's chat_template.jinja and GLM-4.6's template
// (docs/models/glm-ocr.md §4.1). Tool JSON is printed as transformers' `tojson` prints it:
// json.dumps with ensure_ascii=False, ", " and ": " separators, keys in the client's order.
// Not here: conversations without tools (chat_template.cpp) and parsing replies (serve/).
#include "tokenizer/chat_template_tools.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace tdm {

using ojson = nlohmann::ordered_json;

namespace {

std::string dump_scalar(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// Python's str() of a JSON scalar, as Jinja prints it: strings bare, None, True, False.
std::string python_scalar(const ojson& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "None";
    if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
    return dump_scalar(v);
}

// transformers' tojson filter: json.dumps(value, ensure_ascii=False).
std::string tojson(const ojson& v) {
    std::string out;
    if (v.is_object()) {
        out += '{';
        bool first = true;
        for (const auto& [key, value] : v.items()) {
            if (!first) out += ", ";
            first = false;
            out += dump_scalar(ojson(key)) + ": " + tojson(value);
        }
        return out + '}';
    }
    if (v.is_array()) {
        out += '[';
        for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + tojson(v[i]);
        return out + ']';
    }
    return dump_scalar(v);
}

// Jinja truthiness: empty strings, lists and mappings, false, 0 and none are false.
bool truthy(const ojson* v) {
    if (!v || v->is_null()) return false;
    if (v->is_boolean()) return v->get<bool>();
    if (v->is_string() || v->is_array() || v->is_object()) return !v->empty();
    if (v->is_number()) return v->get<double>() != 0;
    return true;
}

const ojson* field(const ojson& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

std::string text_of(const ojson* v) { return v && v->is_string() ? v->get<std::string>() : std::string(); }

std::string upper(std::string s) {
    for (char& c : s)
        if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
    return s;
}

Result<ojson> parse_arguments(const ToolCall& call) {
    ojson args = ojson::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!args.is_object())
        return Error::format("the arguments of tool call '{}' are not a JSON object: {}", call.name, call.arguments);
    return args;
}

ojson tool_object(const ToolDefinition& tool) {
    ojson function = ojson::parse(tool.function_json, nullptr, /*allow_exceptions=*/false);
    return ojson{{"type", "function"}, {"function", std::move(function)}};
}

// An assistant turn's content split at "</think>" as Qwen3.5's and GLM-4.5's templates split
// it: the reasoning is what follows the last <think> before the first </think>, the content
// what follows the last </think>; newlines next to the tags are dropped.
struct ThinkingSplit {
    std::string reasoning;
    std::string content;
};

ThinkingSplit split_thinking(std::string_view content) {
    const size_t first_close = content.find("</think>");
    if (first_close == std::string_view::npos) return {"", std::string(content)};
    std::string_view before = content.substr(0, first_close);
    while (!before.empty() && before.back() == '\n') before.remove_suffix(1);
    if (const size_t open = before.rfind("<think>"); open != std::string_view::npos)
        before.remove_prefix(open + std::string_view("<think>").size());
    std::string_view after = content.substr(content.rfind("</think>") + std::string_view("</think>").size());
    while (!before.empty() && before.front() == '\n') before.remove_prefix(1);
    while (!after.empty() && after.front() == '\n') after.remove_prefix(1);
    return {std::string(before), std::string(after)};
}

// ---------------------------------------------------------------------------------------
// Qwen (ChatML): Hermes JSON calls (Qwen3) and XML calls (Qwen3.5). Tool results of
// consecutive "tool" messages share one user turn.

constexpr std::string_view kHermesToolsHead =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
    "signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kHermesToolsTail =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call>";
constexpr std::string_view kXmlToolsHead = "# Tools\n\nYou have access to the following functions:\n\n<tools>";
constexpr std::string_view kXmlToolsTail =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified "
    "format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural "
    "language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question "
    "like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

Result<std::string> qwen_call(const ToolCall& call, bool xml) {
    const ojson args = TDM_TRY(parse_arguments(call));
    if (!xml) return "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + tojson(args) + "}\n</tool_call>";
    // Qwen3.5 prints mappings and lists as JSON and everything else with Python's str().
    std::string out = "<tool_call>\n<function=" + call.name + ">\n";
    for (const auto& [key, value] : args.items())
        out += "<parameter=" + key + ">\n" +
               (value.is_object() || value.is_array() ? tojson(value) : python_scalar(value)) + "\n</parameter>\n";
    return out + "</function>\n</tool_call>";
}

// Qwen3: Hermes JSON calls; contents as the client sent them, except that reasoning written
// into an assistant turn (...</think>) is split off and shown again only after the last user query.
Result<std::string> render_qwen3(const ChatTemplateParts& parts, const std::vector<ChatMessage>& messages,
                                 const std::vector<ToolDefinition>& tools, bool add_generation_prompt) {
    std::string out;
    const bool system_first = !messages.empty() && messages[0].role == "system";
    if (!tools.empty()) {
        out += "<|im_start|>system\n";
        if (system_first) out += messages[0].content + "\n\n";
        out += kHermesToolsHead;
        for (const ToolDefinition& t : tools) out += "\n" + tojson(tool_object(t));
        out += kHermesToolsTail;
        out += "<|im_end|>\n";
    } else if (system_first) {
        out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
    }
    // The last user message that is not a tool result passed back as user text (the last
    // message when there is none).
    size_t last_query = messages.empty() ? 0 : messages.size() - 1;
    for (size_t i = messages.size(); i-- > 0;) {
        const std::string& c = messages[i].content;
        if (messages[i].role == "user" && !(c.starts_with("<tool_response>") && c.ends_with("</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user" || (m.role == "system" && i > 0)) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            const ThinkingSplit split = split_thinking(m.content);
            out += "<|im_start|>assistant\n";
            if (i > last_query && (i + 1 == messages.size() || !split.reasoning.empty())) {
                std::string_view content = split.content;
                while (!content.empty() && content.front() == '\n') content.remove_prefix(1);
                out += "<think>\n" + split.reasoning + "\n</think>\n\n" + std::string(content);
            } else {
                out += split.content;
            }
            for (size_t j = 0; j < m.tool_calls.size(); ++j) {
                if (j > 0 || !split.content.empty()) out += "\n";
                out += TDM_TRY(qwen_call(m.tool_calls[j], false));
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
        } else if (m.role != "system") {
            return Error::format("the Qwen template has no turn for role '{}' (message {})", m.role, i);
        }
    }
    if (add_generation_prompt) out += parts.generation_prompt;
    return out;
}

// Qwen3.5: XML calls; every content trimmed; assistant turns after the last user query keep
// their reasoning in a <think> block; a system message only first; no conversation without a
// user query (the template raises on both).
Result<std::string> render_qwen35(const ChatTemplateParts& parts, const std::vector<ChatMessage>& messages,
                                  const std::vector<ToolDefinition>& tools, bool add_generation_prompt) {
    std::string out;
    const bool system_first = !messages.empty() && messages[0].role == "system";
    if (!tools.empty()) {
        out += "<|im_start|>system\n";
        out += kXmlToolsHead;
        for (const ToolDefinition& t : tools) out += "\n" + tojson(tool_object(t));
        out += kXmlToolsTail;
        if (system_first) {
            const std::string system = python_strip(messages[0].content);
            if (!system.empty()) out += "\n\n" + system;
        }
        out += "<|im_end|>\n";
    } else if (system_first) {
        out += "<|im_start|>system\n" + python_strip(messages[0].content) + "<|im_end|>\n";
    }
    // The last user message that is not a tool result passed back as user text.
    size_t last_query = messages.size();
    for (size_t i = messages.size(); i-- > 0;) {
        if (messages[i].role != "user") continue;
        const std::string content = python_strip(messages[i].content);
        if (!(content.starts_with("<tool_response>") && content.ends_with("</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    if (last_query == messages.size()) return Error("the Qwen3.5 template needs a user message");
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        const std::string content = python_strip(m.content);
        if (m.role == "system") {
            if (i > 0) return Error::format("the Qwen3.5 template takes a system message only first (message {})", i);
        } else if (m.role == "user") {
            out += "<|im_start|>user\n" + content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            const ThinkingSplit split = split_thinking(content);
            out += "<|im_start|>assistant\n";
            if (i > last_query) out += "<think>\n" + python_strip(split.reasoning) + "\n</think>\n\n";
            out += split.content;
            for (size_t j = 0; j < m.tool_calls.size(); ++j) {
                out += j == 0 ? (python_strip(split.content).empty() ? "" : "\n\n") : "\n";
                out += TDM_TRY(qwen_call(m.tool_calls[j], true));
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            if (i > 0 && messages[i - 1].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n" + content + "\n</tool_response>";
            if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
        } else {
            return Error::format("the Qwen3.5 template has no turn for role '{}' (message {})", m.role, i);
        }
    }
    if (add_generation_prompt) out += parts.generation_prompt;
    return out;
}

// ---------------------------------------------------------------------------------------
// GLM-4.5 and later: tools in a system turn of their own, calls as <arg_key>/<arg_value>
// pairs, results of consecutive "tool" messages under one <|observation|>.

constexpr std::string_view kGlmToolsHead =
    "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided "
    "with function signatures within <tools></tools> XML tags:\n<tools>\n";
constexpr std::string_view kGlmToolsTail =
    "</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n"
    "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
    "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>";

Result<std::string> render_glm(const ChatTemplateParts& parts, const std::vector<ChatMessage>& messages,
                               const std::vector<ToolDefinition>& tools, bool add_generation_prompt) {
    std::string out = parts.prefix;
    if (!tools.empty()) {
        out += kGlmToolsHead;
        for (const ToolDefinition& t : tools) out += tojson(tool_object(t)) + "\n";
        out += kGlmToolsTail;
    }
    size_t after_last_user = 0;  // the first message after the last user message
    for (size_t i = 0; i < messages.size(); ++i)
        if (messages[i].role == "user") after_last_user = i + 1;
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "system" || m.role == "user") {
            out += "<|" + m.role + "|>\n" + m.content;
        } else if (m.role == "assistant") {
            // Every assistant turn carries a think block, empty unless the turn follows the last
            // user message and its content held reasoning.
            const ThinkingSplit split = split_thinking(m.content);
            out += "<|assistant|>";
            const bool keep_reasoning = i >= after_last_user && !split.reasoning.empty();
            out += keep_reasoning ? "\n<think>" + python_strip(split.reasoning) + "</think>" : "\n<think></think>";
            if (const std::string content = python_strip(split.content); !content.empty()) out += "\n" + content;
            for (const ToolCall& call : m.tool_calls) {
                const ojson args = TDM_TRY(parse_arguments(call));
                out += "\n<tool_call>" + call.name + "\n";
                for (const auto& [key, value] : args.items())
                    out += "<arg_key>" + key + "</arg_key>\n<arg_value>" +
                           (value.is_string() ? value.get<std::string>() : tojson(value)) + "</arg_value>\n";
                out += "</tool_call>";
            }
        } else if (m.role == "tool") {
            if (i == 0 || messages[i - 1].role != "tool") out += "<|observation|>";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
        } else {
            return Error::format("the GLM template has no turn for role '{}' (message {})", m.role, i);
        }
    }
    if (add_generation_prompt) out += parts.generation_prompt;
    return out;
}

// ---------------------------------------------------------------------------------------
// Gemma 4: declarations in the system turn in Gemma's own object syntax (bare keys, strings
// quoted by the <|"|> token, sorted keys, upper-case types); calls and results inside the
// model's turn, which stays open after a result so that the model goes on answering.

constexpr std::string_view kQuote = "<|\"|>";

std::string gemma_quoted(std::string_view s) { return std::string(kQuote) + std::string(s) + std::string(kQuote); }

std::vector<std::string> sorted_keys(const ojson& obj) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : obj.items()) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    return keys;
}

// The template's format_argument macro.
std::string gemma_argument(const ojson& v, bool escape_keys) {
    if (v.is_string()) return gemma_quoted(v.get<std::string>());
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_object()) {
        std::string out = "{";
        bool first = true;
        for (const std::string& key : sorted_keys(v)) {
            if (!first) out += ",";
            first = false;
            out += (escape_keys ? gemma_quoted(key) : key) + ":" + gemma_argument(v[key], escape_keys);
        }
        return out + "}";
    }
    if (v.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + gemma_argument(v[i], escape_keys);
        return out + "]";
    }
    return python_scalar(v);
}

std::string gemma_required(const ojson* required) {
    std::string out = "required:[";
    if (required && required->is_array())
        for (size_t i = 0; i < required->size(); ++i)
            out += (i ? "," : "") + gemma_quoted((*required)[i].is_string() ? (*required)[i].get<std::string>()
                                                                      : python_scalar((*required)[i]));
    return out + "]";
}

// The template's format_parameters macro: one entry per property, standard keys skipped.
std::string gemma_parameters(const ojson& properties) {
    static const std::vector<std::string> standard = {"description", "type", "properties", "required", "nullable"};
    std::string out;
    bool found_first = false;
    if (!properties.is_object()) return out;
    for (const std::string& key : sorted_keys(properties)) {
        if (std::find(standard.begin(), standard.end(), key) != standard.end()) continue;
        if (found_first) out += ",";
        found_first = true;
        const ojson& value = properties[key];
        bool add_comma = false;
        const auto comma = [&] {
            if (add_comma) out += ",";
            add_comma = true;
        };
        out += key + ":{";
        if (const ojson* d = field(value, "description"); truthy(d)) {
            out += "description:" + gemma_quoted(d->is_string() ? d->get<std::string>() : python_scalar(*d));
            add_comma = true;
        }
        const std::string type = upper(text_of(field(value, "type")));
        if (type == "STRING") {
            if (const ojson* e = field(value, "enum"); truthy(e)) {
                comma();
                out += "enum:" + gemma_argument(*e, true);
            }
        } else if (type == "ARRAY") {
            if (const ojson* items = field(value, "items"); items && items->is_object() && !items->empty()) {
                comma();
                out += "items:{";
                bool items_first = true;
                for (const std::string& item_key : sorted_keys(*items)) {
                    const ojson& item_value = (*items)[item_key];
                    if (item_value.is_null()) continue;
                    if (!items_first) out += ",";
                    items_first = false;
                    if (item_key == "properties") {
                        out += "properties:{" + gemma_parameters(item_value) + "}";
                    } else if (item_key == "required") {
                        out += gemma_required(&item_value);
                    } else if (item_key == "type") {
                        if (item_value.is_string()) {
                            out += "type:" + gemma_argument(upper(item_value.get<std::string>()), true);
                        } else {
                            ojson types = ojson::array();
                            if (item_value.is_array())
                                for (const ojson& t : item_value) types.push_back(upper(text_of(&t)));
                            out += "type:" + gemma_argument(types, true);
                        }
                    } else {
                        out += item_key + ":" + gemma_argument(item_value, true);
                    }
                }
                out += "}";
            }
        }
        if (truthy(field(value, "nullable"))) {
            comma();
            out += "nullable:true";
        }
        if (type == "OBJECT") {
            const ojson* props = field(value, "properties");
            comma();
            out += "properties:{" + gemma_parameters(props && props->is_object() ? *props : value) + "}";
            if (const ojson* r = field(value, "required"); truthy(r)) {
                comma();
                out += gemma_required(r);
            }
        }
        comma();
        out += "type:" + gemma_quoted(type) + "}";
    }
    return out;
}

// The template's format_function_declaration macro.
std::string gemma_declaration(const ToolDefinition& tool) {
    const ojson function = ojson::parse(tool.function_json, nullptr, /*allow_exceptions=*/false);
    std::string out = "declaration:" + tool.name + "{description:" + gemma_quoted(text_of(field(function, "description")));
    if (const ojson* params = field(function, "parameters"); truthy(params)) {
        out += ",parameters:{";
        if (const ojson* props = field(*params, "properties"); truthy(props))
            out += "properties:{" + gemma_parameters(*props) + "},";
        if (const ojson* r = field(*params, "required"); truthy(r)) out += gemma_required(r) + ",";
        if (const ojson* t = field(*params, "type"); truthy(t)) out += "type:" + gemma_quoted(upper(text_of(t))) + "}";
    }
    return out + "}";
}

// The template's strip_thinking macro: drop every <|channel>...<channel|> span, then trim.
std::string gemma_strip_thinking(std::string_view text) {
    std::string result;
    size_t at = 0;
    while (true) {
        const size_t close = text.find("<channel|>", at);
        const std::string_view part = text.substr(at, close == std::string_view::npos ? text.npos : close - at);
        const size_t open = part.find("<|channel>");
        result += part.substr(0, open);
        if (close == std::string_view::npos) break;
        at = close + std::string_view("<channel|>").size();
    }
    return python_strip(result);
}

Result<std::string> render_gemma4(const std::vector<ChatMessage>& messages, const std::vector<ToolDefinition>& tools,
                                  bool add_generation_prompt) {
    std::string out;
    size_t begin = 0;
    const bool system_first = !messages.empty() && messages[0].role == "system";
    if (!tools.empty() || system_first) {
        out += "<|turn>system\n";
        if (system_first) {
            out += python_strip(messages[0].content);
            begin = 1;
        }
        for (const ToolDefinition& t : tools) out += "<|tool>" + python_strip(gemma_declaration(t)) + "<tool|>";
        out += "<turn|>\n";
    }
    enum class Last { none, tool_call, tool_response } last = Last::none;
    for (size_t i = begin; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "tool") continue;  // rendered inside the model turn that made the call
        if (m.role != "user" && m.role != "assistant" && m.role != "system")
            return Error::format("the Gemma 4 template has no turn for role '{}' (message {})", m.role, i);
        last = Last::none;
        const std::string role = m.role == "assistant" ? "model" : m.role;
        std::string previous;  // the role of the nearest earlier message that is not a tool result
        for (size_t j = i; j-- > begin;)
            if (messages[j].role != "tool") {
                previous = messages[j].role;
                break;
            }
        if (!(role == "model" && previous == "assistant")) out += "<|turn>" + role + "\n";
        for (const ToolCall& call : m.tool_calls) {
            const ojson args = TDM_TRY(parse_arguments(call));
            out += "<|tool_call>call:" + call.name + "{";
            bool first = true;
            for (const std::string& key : sorted_keys(args)) {
                out += (first ? "" : ",") + key + ":" + gemma_argument(args[key], false);
                first = false;
            }
            out += "}<tool_call|>";
            last = Last::tool_call;
        }
        bool responses = false;
        if (!m.tool_calls.empty()) {
            for (size_t k = i + 1; k < messages.size() && messages[k].role == "tool"; ++k) {
                const ChatMessage& result = messages[k];
                std::string name = result.name.empty() ? "unknown" : result.name;
                for (const ToolCall& call : m.tool_calls)
                    if (call.id == result.tool_call_id) name = call.name;
                out += "<|tool_response>response:" + name + "{value:" + gemma_argument(result.content, false) +
                       "}<tool_response|>";
                responses = true;
                last = Last::tool_response;
            }
        }
        out += role == "model" ? gemma_strip_thinking(m.content) : python_strip(m.content);
        if (last == Last::tool_call && !responses) out += "<|tool_response>";
        else if (!(responses && m.content.empty())) out += "<turn|>\n";
    }
    if (add_generation_prompt && last == Last::none) out += "<|turn>model\n";
    return out;
}

}  // namespace

Result<std::string> render_tool_conversation(const ChatTemplateParts& parts, const std::vector<ChatMessage>& messages,
                                             const std::vector<ToolDefinition>& tools, bool add_generation_prompt) {
    switch (parts.tool_format) {
        case ToolCallFormat::hermes: return render_qwen3(parts, messages, tools, add_generation_prompt);
        case ToolCallFormat::qwen_xml: return render_qwen35(parts, messages, tools, add_generation_prompt);
        case ToolCallFormat::glm: return render_glm(parts, messages, tools, add_generation_prompt);
        case ToolCallFormat::gemma4: return render_gemma4(messages, tools, add_generation_prompt);
        case ToolCallFormat::none: break;
    }
    return Error("this chat template renders no tools");
}

std::string_view tool_results_marker(ToolCallFormat format) {
    if (format == ToolCallFormat::gemma4) return "<|tool_response>";
    if (format == ToolCallFormat::glm) return "<|observation|>";
    return "";
}

}  // namespace tdm
