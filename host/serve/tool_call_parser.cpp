// SPDX-License-Identifier: Apache-2.0
// host/serve/tool_call_parser.cpp
#include "serve/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

namespace tdm::server {

using ojson = nlohmann::ordered_json;

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view strip(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

std::optional<ojson> parse_json(std::string_view text) {
    ojson v = ojson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) return std::nullopt;
    return v;
}

// The declared JSON type of parameter `key` of a function (its "function" JSON); "" unknown.
bool declared_string(const std::string& function_json, const std::string& key) {
    const auto function = parse_json(function_json);
    if (!function || !function->is_object()) return false;
    const ojson* props = nullptr;
    if (auto p = function->find("parameters"); p != function->end() && p->is_object())
        if (auto q = p->find("properties"); q != p->end() && q->is_object()) props = &*q;
    if (!props) return false;
    const auto prop = props->find(key);
    if (prop == props->end() || !prop->is_object()) return false;
    const auto type = prop->find("type");
    if (type == prop->end()) return false;
    if (type->is_string()) return *type == "string";
    if (!type->is_array()) return false;
    for (const ojson& t : *type)
        if (t != "string" && t != "null") return false;
    return true;
}

// An XML-style value (Qwen3.5, GLM): a string when the schema says so or it is neither JSON
// nor one of Python's None, True and False, which Qwen3.5's template writes for null and
// booleans (it prints scalars with str()).
ojson xml_value(const std::string& function_json, const std::string& key, std::string_view raw) {
    if (!declared_string(function_json, key)) {
        const std::string_view word = strip(raw);
        if (word == "None") return ojson(nullptr);
        if (word == "True") return ojson(true);
        if (word == "False") return ojson(false);
        if (auto v = parse_json(word)) return *v;
    }
    return std::string(raw);
}

// Qwen3: {"name": "f", "arguments": {...}} (arguments may come as a JSON string).
std::optional<std::pair<std::string, ojson>> hermes_call(std::string_view body) {
    auto v = parse_json(strip(body));
    if (!v || !v->is_object()) return std::nullopt;
    const auto name = v->find("name");
    const auto args = v->find("arguments");
    if (name == v->end() || !name->is_string() || args == v->end()) return std::nullopt;
    ojson arguments = *args;
    if (arguments.is_string()) {
        auto inner = parse_json(arguments.get<std::string>());
        if (!inner) return std::nullopt;
        arguments = *inner;
    }
    if (!arguments.is_object()) return std::nullopt;
    return std::make_pair(name->get<std::string>(), std::move(arguments));
}

// Qwen3.5: <function=f>\n<parameter=k>\nvalue\n</parameter>\n...</function>
std::optional<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> qwen_xml_call(
    std::string_view body) {
    std::string_view s = strip(body);
    constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
    constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
    if (!s.starts_with(kFunction) || !s.ends_with(kFunctionEnd)) return std::nullopt;
    s.remove_prefix(kFunction.size());
    s.remove_suffix(kFunctionEnd.size());
    const size_t gt = s.find('>');
    if (gt == std::string_view::npos) return std::nullopt;
    std::string name(strip(s.substr(0, gt)));
    s = strip(s.substr(gt + 1));
    std::vector<std::pair<std::string, std::string>> params;
    while (!s.empty()) {
        if (!s.starts_with(kParam)) return std::nullopt;
        s.remove_prefix(kParam.size());
        const size_t key_end = s.find('>');
        if (key_end == std::string_view::npos) return std::nullopt;
        std::string key(strip(s.substr(0, key_end)));
        s.remove_prefix(key_end + 1);
        const size_t end = s.find(kParamEnd);
        if (end == std::string_view::npos) return std::nullopt;
        std::string_view value = s.substr(0, end);
        if (value.starts_with('\n')) value.remove_prefix(1);  // the template's newlines around a value
        if (value.ends_with('\n')) value.remove_suffix(1);
        params.emplace_back(std::move(key), std::string(value));
        s = strip(s.substr(end + kParamEnd.size()));
    }
    if (name.empty()) return std::nullopt;
    return std::make_pair(std::move(name), std::move(params));
}

// GLM: f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n...
std::optional<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> glm_call(std::string_view body) {
    constexpr std::string_view kKey = "<arg_key>", kKeyEnd = "</arg_key>";
    constexpr std::string_view kValue = "<arg_value>", kValueEnd = "</arg_value>";
    const size_t first = body.find(kKey);
    std::string name(strip(body.substr(0, first)));
    if (name.empty() || name.find_first_of("\n<>{}") != std::string::npos) return std::nullopt;
    std::vector<std::pair<std::string, std::string>> params;
    std::string_view s = first == std::string_view::npos ? std::string_view() : strip(body.substr(first));
    while (!s.empty()) {
        if (!s.starts_with(kKey)) return std::nullopt;
        const size_t key_end = s.find(kKeyEnd);
        if (key_end == std::string_view::npos) return std::nullopt;
        std::string key(strip(s.substr(kKey.size(), key_end - kKey.size())));
        s = strip(s.substr(key_end + kKeyEnd.size()));
        if (!s.starts_with(kValue)) return std::nullopt;
        const size_t value_end = s.find(kValueEnd);
        if (value_end == std::string_view::npos) return std::nullopt;
        params.emplace_back(std::move(key), std::string(s.substr(kValue.size(), value_end - kValue.size())));
        s = strip(s.substr(value_end + kValueEnd.size()));
    }
    return std::make_pair(std::move(name), std::move(params));
}

// Gemma 4's object syntax: bare keys, <|"|>-quoted strings, JSON-like numbers and literals.
class GemmaValueReader {
public:
    explicit GemmaValueReader(std::string_view s) : s_(s) {}

    std::optional<ojson> object() {
        if (!eat('{')) return std::nullopt;
        ojson out = ojson::object();
        skip();
        if (eat('}')) return out;
        while (true) {
            skip();
            auto key = this->key();
            if (!key) return std::nullopt;
            skip();
            if (!eat(':')) return std::nullopt;
            auto v = value();
            if (!v) return std::nullopt;
            out[*key] = std::move(*v);
            skip();
            if (eat('}')) return out;
            if (!eat(',')) return std::nullopt;
        }
    }

    bool at_end() {
        skip();
        return at_ == s_.size();
    }

private:
    static constexpr std::string_view kQuote = "<|\"|>";

    void skip() {
        while (at_ < s_.size() && is_space(s_[at_])) ++at_;
    }
    bool eat(char c) {
        if (at_ < s_.size() && s_[at_] == c) return ++at_, true;
        return false;
    }
    std::optional<std::string> quoted() {
        if (s_.substr(at_, kQuote.size()) != kQuote) return std::nullopt;
        const size_t end = s_.find(kQuote, at_ + kQuote.size());
        if (end == std::string_view::npos) return std::nullopt;
        std::string out(s_.substr(at_ + kQuote.size(), end - at_ - kQuote.size()));
        at_ = end + kQuote.size();
        return out;
    }
    std::optional<std::string> key() {
        if (auto q = quoted()) return q;
        const size_t begin = at_;
        while (at_ < s_.size() && s_[at_] != ':' && s_[at_] != '{' && s_[at_] != '}' && s_[at_] != ',') ++at_;
        std::string k(strip(s_.substr(begin, at_ - begin)));
        if (k.empty()) return std::nullopt;
        return k;
    }
    std::optional<ojson> value() {
        skip();
        if (at_ >= s_.size()) return std::nullopt;
        if (auto q = quoted()) return ojson(*q);
        if (s_[at_] == '{') return object();
        if (s_[at_] == '[') {
            ++at_;
            ojson out = ojson::array();
            skip();
            if (eat(']')) return out;
            while (true) {
                auto v = value();
                if (!v) return std::nullopt;
                out.push_back(std::move(*v));
                skip();
                if (eat(']')) return out;
                if (!eat(',')) return std::nullopt;
            }
        }
        if (s_[at_] == '"') {  // a JSON string, as models sometimes write one
            size_t end = at_ + 1;
            while (end < s_.size() && s_[end] != '"') end += s_[end] == '\\' ? 2 : 1;
            if (end >= s_.size()) return std::nullopt;
            auto v = parse_json(s_.substr(at_, end + 1 - at_));
            at_ = end + 1;
            return v;
        }
        const size_t begin = at_;
        while (at_ < s_.size() && s_[at_] != ',' && s_[at_] != '}' && s_[at_] != ']') ++at_;
        const std::string_view word = strip(s_.substr(begin, at_ - begin));
        if (word == "None") return ojson(nullptr);
        if (word == "True") return ojson(true);
        if (word == "False") return ojson(false);
        auto v = parse_json(word);
        if (!v || v->is_object() || v->is_array() || v->is_string()) return std::nullopt;
        return v;
    }

    std::string_view s_;
    size_t at_ = 0;
};

// Gemma 4: call:f{k:<|"|>v<|"|>,n:3}
std::optional<std::pair<std::string, ojson>> gemma_call(std::string_view body) {
    std::string_view s = strip(body);
    if (!s.starts_with("call:")) return std::nullopt;
    s.remove_prefix(5);
    const size_t brace = s.find('{');
    if (brace == std::string_view::npos) return std::nullopt;
    std::string name(strip(s.substr(0, brace)));
    GemmaValueReader reader(s.substr(brace));
    auto args = reader.object();
    if (!args || !reader.at_end() || name.empty()) return std::nullopt;
    return std::make_pair(std::move(name), std::move(*args));
}

// The longest tail of `s`, shorter than `marker`, that `marker` starts with: text that may
// still grow into the marker.
size_t marker_tail(std::string_view s, std::string_view marker) {
    size_t keep = std::min(s.size(), marker.size() - 1);
    while (keep > 0 && s.substr(s.size() - keep) != marker.substr(0, keep)) --keep;
    return keep;
}

}  // namespace

ToolCallParser::ToolCallParser(ToolCallFormat format, const std::vector<ToolDefinition>& tools, bool stream_arguments)
    : format_(format),
      stream_arguments_(stream_arguments && (format == ToolCallFormat::hermes || format == ToolCallFormat::qwen_xml)) {
    open_ = format == ToolCallFormat::gemma4 ? "<|tool_call>" : "<tool_call>";
    close_ = format == ToolCallFormat::gemma4 ? "<tool_call|>" : "</tool_call>";
    for (const ToolDefinition& t : tools) tools_.emplace_back(t.name, t.function_json);
}

void ToolCallParser::emit_text(std::string_view text, std::vector<ToolStreamPiece>& out) {
    if (after_call_) {
        while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
        if (text.empty()) return;
        after_call_ = false;
    }
    size_t end = text.size();
    while (end > 0 && is_space(text[end - 1])) --end;
    if (end > 0) {
        std::string piece = std::move(held_space_);
        held_space_.clear();
        piece.append(text.substr(0, end));
        if (!out.empty() && out.back().kind == ToolStreamPiece::Kind::text) out.back().text += piece;
        else out.push_back({ToolStreamPiece::Kind::text, std::move(piece), {}});
    }
    held_space_.append(text.substr(end));
}

const std::string* ToolCallParser::offered(const std::string& name) const {
    for (const auto& [n, json] : tools_)
        if (n == name) return &json;
    return nullptr;
}

void ToolCallParser::start_call() {
    held_space_.clear();
    after_call_ = true;
    ++calls_;
}

void ToolCallParser::scan_body(size_t end, std::vector<ToolStreamPiece>& out) {
    if (!stream_arguments_ || end <= scanned_) return;
    const bool was_started = scan_.started();
    scan_.feed(std::string_view(buffer_).substr(scanned_, end - scanned_));
    scanned_ = end;
    if (!was_started && scan_.started() && offered(scan_.name())) {
        start_call();
        streaming_ = true;
        ToolStreamPiece begin;
        begin.kind = ToolStreamPiece::Kind::call_begin;
        begin.call.name = scan_.name();
        out.push_back(std::move(begin));
    }
    if (!streaming_) return;
    if (std::string arguments = scan_.take_new_arguments(); !arguments.empty())
        out.push_back({ToolStreamPiece::Kind::call_arguments, std::move(arguments), {}});
}

void ToolCallParser::close_block(std::string_view body, std::vector<ToolStreamPiece>& out) {
    if (streaming_) {  // its name and arguments are out already
        streaming_ = false;
        return;
    }
    std::optional<ParsedToolCall> call;
    const auto from_pairs = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& pairs) {
        const std::string* function = offered(name);
        if (!function) return;
        ojson args = ojson::object();
        for (const auto& [key, raw] : pairs) args[key] = xml_value(*function, key, raw);
        call = ParsedToolCall{name, args.dump(-1, ' ', false, ojson::error_handler_t::replace)};
    };
    const auto from_json = [&](const std::string& name, const ojson& args) {
        if (offered(name)) call = ParsedToolCall{name, args.dump(-1, ' ', false, ojson::error_handler_t::replace)};
    };
    switch (format_) {
        case ToolCallFormat::hermes:
        case ToolCallFormat::qwen_xml:  // Qwen models write either form: read both
            if (auto h = hermes_call(body)) {
                // the arguments minified as written, as a stream sends them (serve/hermes_call_stream.h)
                HermesCallStream whole;
                whole.feed(body);
                if (whole.done() && whole.name() == h->first) {
                    if (offered(h->first)) call = ParsedToolCall{h->first, whole.arguments()};
                } else {
                    from_json(h->first, h->second);
                }
            } else if (auto x = qwen_xml_call(body)) from_pairs(x->first, x->second);
            break;
        case ToolCallFormat::glm:
            if (auto g = glm_call(body)) from_pairs(g->first, g->second);
            break;
        case ToolCallFormat::gemma4:
            if (auto g = gemma_call(body)) from_json(g->first, g->second);
            break;
        case ToolCallFormat::none: break;
    }
    if (!call) {
        emit_text(open_ + std::string(body) + close_, out);
        return;
    }
    start_call();
    ToolStreamPiece piece;
    piece.kind = ToolStreamPiece::Kind::call;
    piece.call = std::move(*call);
    out.push_back(std::move(piece));
}

std::vector<ToolStreamPiece> ToolCallParser::feed(std::string_view text) {
    std::vector<ToolStreamPiece> out;
    buffer_.append(text);
    while (true) {
        if (inside_) {
            const size_t close = buffer_.find(close_);
            if (close == std::string::npos) {
                scan_body(buffer_.size() - marker_tail(buffer_, close_), out);
                break;
            }
            scan_body(close, out);
            const std::string body = buffer_.substr(0, close);
            buffer_.erase(0, close + close_.size());
            inside_ = false;
            close_block(body, out);
            continue;
        }
        const size_t open = buffer_.find(open_);
        if (open != std::string::npos) {
            emit_text(std::string_view(buffer_).substr(0, open), out);
            buffer_.erase(0, open + open_.size());
            inside_ = true;
            scan_ = HermesCallStream();
            scanned_ = 0;
            continue;
        }
        const size_t keep = marker_tail(buffer_, open_);
        emit_text(std::string_view(buffer_).substr(0, buffer_.size() - keep), out);
        buffer_.erase(0, buffer_.size() - keep);
        break;
    }
    return out;
}

std::vector<ToolStreamPiece> ToolCallParser::finish() {
    std::vector<ToolStreamPiece> out;
    if (inside_ && streaming_) {  // a streamed call cut off: it ends with what it has
        scan_body(buffer_.size(), out);
        streaming_ = false;
    } else {
        emit_text(inside_ ? open_ + buffer_ : buffer_, out);
    }
    buffer_.clear();
    inside_ = false;
    if (calls_ == 0 && !held_space_.empty()) {
        // Without calls the content is the output exactly, trailing whitespace included.
        std::string tail = std::move(held_space_);
        held_space_.clear();
        if (!out.empty() && out.back().kind == ToolStreamPiece::Kind::text) out.back().text += tail;
        else out.push_back({ToolStreamPiece::Kind::text, std::move(tail), {}});
    }
    held_space_.clear();
    return out;
}

ParsedOutput parse_tool_calls(ToolCallFormat format, const std::vector<ToolDefinition>& tools, std::string_view text) {
    ToolCallParser parser(format, tools);
    ParsedOutput out;
    auto take = [&](std::vector<ToolStreamPiece> pieces) {
        for (ToolStreamPiece& p : pieces) {
            switch (p.kind) {
                case ToolStreamPiece::Kind::text: out.content += p.text; break;
                case ToolStreamPiece::Kind::call:
                case ToolStreamPiece::Kind::call_begin: out.calls.push_back(std::move(p.call)); break;
                case ToolStreamPiece::Kind::call_arguments: out.calls.back().arguments += p.text; break;
            }
        }
    };
    take(parser.feed(text));
    take(parser.finish());
    return out;
}

}  // namespace tdm::server
