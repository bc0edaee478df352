// SPDX-License-Identifier: Apache-2.0
// host/serve/openai_request.cpp
#include "serve/openai_request.h"

#include "serve/constraint_request.h"
#include "serve/file_part.h"
#include "serve/image_url.h"
#include "serve/ordered_body.h"
#include "serve/openai_tools.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <limits>

namespace tdm::server {

using json = nlohmann::json;

namespace {

const char* type_name(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float: return "a number";
        default: return "an unknown value";
    }
}

// Parses the body as one JSON object, nested at most max_depth deep (nlohmann's parser is
// iterative, but a 10 MB "[[[[..." would still cost as many nodes).
ApiResult<json> parse_object(std::string_view body, int max_depth) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
        return ApiError::invalid("", "the request body is empty; send a JSON object");
    bool too_deep = false;
    const json::parser_callback_t depth_check = [&](int depth, json::parse_event_t, json&) {
        if (depth > max_depth) too_deep = true;
        return !too_deep;
    };
    json doc;
    try {
        doc = json::parse(body.begin(), body.end(), depth_check);
    } catch (const json::exception& e) {
        // Syntax (parse_error) and numbers beyond a double (out_of_range: "1e999").
        // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
        std::string what = e.what();
        if (const size_t close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
        return ApiError::invalid("", "the request body is not valid JSON: " + what);
    }
    if (too_deep) return ApiError::invalid("", fmt::format("the request body nests deeper than {} levels", max_depth));
    if (!doc.is_object())
        return ApiError::invalid("", fmt::format("the request body must be a JSON object, not {}", type_name(doc)));
    return doc;
}

// Reads typed fields of one JSON object and keeps the first error. A field that is absent
// or null is "not given" (OpenAI's clients send null for unset optional fields).
class Fields {
public:
    Fields(const json& obj, std::string prefix) : obj_(obj), prefix_(std::move(prefix)) {}

    const std::optional<ApiError>& error() const { return error_; }
    bool failed() const { return error_.has_value(); }

    const json* get(const char* key) const {
        const auto it = obj_.find(key);
        return it == obj_.end() || it->is_null() ? nullptr : &*it;
    }

    void fail(const std::string& key, const std::string& message) {
        if (!error_) error_ = ApiError::invalid(prefix_ + key, message);
    }

    void wrong_type(const std::string& key, const char* expected, const json& got) {
        fail(key, fmt::format("'{}{}' must be {}, not {}", prefix_, key, expected, type_name(got)));
    }

    std::optional<bool> boolean(const char* key) {
        const json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) return wrong_type(key, "a boolean", *v), std::nullopt;
        return v->get<bool>();
    }

    std::optional<std::string> string(const char* key, size_t max_bytes) {
        const json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_string()) return wrong_type(key, "a string", *v), std::nullopt;
        const auto& s = v->get_ref<const std::string&>();
        if (s.size() > max_bytes)
            return fail(key, fmt::format("'{}{}' is {} bytes; at most {} are accepted", prefix_, key, s.size(),
                                         max_bytes)),
                   std::nullopt;
        return s;
    }

    // A finite number in [lo, hi].
    std::optional<double> number(const char* key, double lo, double hi) {
        const json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_number()) return wrong_type(key, "a number", *v), std::nullopt;
        const double x = v->get<double>();
        if (!std::isfinite(x) || x < lo || x > hi)
            return fail(key, fmt::format("'{}{}' must be between {} and {}, not {}", prefix_, key, lo, hi, x)),
                   std::nullopt;
        return x;
    }

    // A whole number in [lo, hi] (a float with no fraction counts, as in Python clients).
    std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) {
        const json* v = get(key);
        if (!v) return std::nullopt;
        return integer_value(key, *v, lo, hi);
    }

    std::optional<int64_t> integer_value(const std::string& key, const json& v, int64_t lo, int64_t hi) {
        int64_t x = 0;
        if (v.is_number_unsigned()) {
            const uint64_t u = v.get<uint64_t>();
            if (u > uint64_t(std::numeric_limits<int64_t>::max())) return out_of_range(key, lo, hi, fmt::format("{}", u));
            x = int64_t(u);
        } else if (v.is_number_integer()) {
            x = v.get<int64_t>();
        } else if (v.is_number_float()) {
            const double d = v.get<double>();
            // 2^63 is exact in a double; anything at or beyond it does not fit.
            if (!std::isfinite(d) || d != std::floor(d) || d >= 0x1p63 || d < -0x1p63)
                return fail(key, fmt::format("'{}{}' must be a whole number, not {}", prefix_, key, d)), std::nullopt;
            x = int64_t(d);
        } else {
            return wrong_type(key, "an integer", v), std::nullopt;
        }
        if (x < lo || x > hi) return out_of_range(key, lo, hi, fmt::format("{}", x));
        return x;
    }

private:
    std::optional<int64_t> out_of_range(const std::string& key, int64_t lo, int64_t hi, const std::string& got) {
        fail(key, fmt::format("'{}{}' must be between {} and {}, not {}", prefix_, key, lo, hi, got));
        return std::nullopt;
    }

    const json& obj_;
    std::string prefix_;
    std::optional<ApiError> error_;
};

// Fields that would change the result and cannot apply: refused unless they hold the value
// that means "off". "suffix" asks for fill-in-the-middle, which none of the families' prompt
// formats has (docs/SERVER.md says which vocabularies carry FIM tokens all the same).
void refuse_unsupported(Fields& f, Endpoint endpoint) {
    if (endpoint == Endpoint::completions) {
        for (const char* key : {"tools", "tool_choice", "functions", "function_call"})
            if (f.get(key)) f.fail(key, fmt::format("'{}' belongs to /v1/chat/completions", key));
        if (const json* suffix = f.get("suffix"); suffix && *suffix != "")
            f.fail("suffix", "'suffix' (insertion) is not supported: no served model family has a "
                             "fill-in-the-middle prompt format (docs/SERVER.md)");
    }
}

// "n": how many choices. "best_of", the legacy completions' "generate this many, return
// the n most likely": at least n, and not streamed (OpenAI refuses that too, since the
// ranking needs every sequence whole). Chat has no best_of in OpenAI's API: there it may
// only repeat n.
void read_choices(Fields& f, Endpoint endpoint, const RequestLimits& limits, GenerationRequest& out) {
    if (const auto n = f.integer("n", 1, limits.max_choices)) out.n = uint32_t(*n);
    const json* b = f.get("best_of");
    if (!b) return;
    const auto best_of = f.integer_value("best_of", *b, 1, limits.max_choices);
    if (!best_of) return;
    if (endpoint == Endpoint::chat_completions) {
        if (uint64_t(*best_of) != out.n)
            f.fail("best_of", fmt::format("'best_of' must equal 'n' ({}) in chat completions; /v1/completions ranks "
                                          "best_of sequences",
                                          out.n));
        return;
    }
    if (uint64_t(*best_of) < out.n)
        return f.fail("best_of", fmt::format("'best_of' ({}) must be at least 'n' ({})", *best_of, out.n));
    if (uint64_t(*best_of) > out.n && f.boolean("stream").value_or(false))
        return f.fail("best_of", "'best_of' greater than 'n' cannot be streamed: the n best are known only once "
                                 "every sequence has ended");
    out.best_of = uint32_t(*best_of);
}

// "echo" (completions): the prompt's text before each choice's, and with "logprobs" the
// prompt tokens' logprobs before the generated ones'. "max_tokens": 0 then asks for the
// prompt alone: the classic "score this text" call (OpenAI's legacy API accepts it, and
// lm-eval-harness's loglikelihood sends it); without echo it would ask for nothing.
void read_echo(Fields& f, Endpoint endpoint, GenerationRequest& out) {
    if (endpoint == Endpoint::completions) out.echo = f.boolean("echo").value_or(false);
    if (out.max_tokens == uint64_t(0) && !out.echo)
        f.fail("max_tokens", "'max_tokens' 0 generates nothing: it is accepted only with 'echo' in completions, "
                             "where it scores the prompt");
}

// "logit_bias": {"15043": 5, "2": -100}: token ids as decimal strings, as OpenAI's API has them.
void read_logit_bias(Fields& f, const RequestLimits& limits, GenerationRequest& out) {
    const json* bias = f.get("logit_bias");
    if (!bias) return;
    if (!bias->is_object()) return f.wrong_type("logit_bias", "an object of token id strings to numbers", *bias);
    if (bias->size() > limits.max_logit_bias)
        return f.fail("logit_bias", fmt::format("'logit_bias' holds {} entries; at most {} are accepted", bias->size(),
                                                limits.max_logit_bias));
    Fields bf(*bias, "logit_bias.");
    for (const auto& [key, value] : bias->items()) {
        int32_t id = -1;
        const auto [end, err] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (key.empty() || err != std::errc() || end != key.data() + key.size() || id < 0)
            return f.fail("logit_bias", fmt::format("'logit_bias' key '{}' is not a token id (a whole number, 0 or "
                                                    "more)",
                                                    key));
        const auto b = bf.number(key.c_str(), -100.0, 100.0);
        if (bf.failed()) return f.fail(bf.error()->param, bf.error()->message);
        if (b) out.logit_bias.emplace_back(id, *b);
    }
}

// "messages": [{"role": ..., "content": "..." or [{"type": "text", "text": "..."},
// {"type": "image_url", "image_url": {"url": "data:..."}}, {"type": "file", "file": {"file_data": "data:..."}}]}]
void read_messages(Fields& f, const json& messages, const RequestLimits& limits, GenerationRequest& out) {
    if (!messages.is_array()) return f.wrong_type("messages", "an array of messages", messages);
    if (messages.empty()) return f.fail("messages", "'messages' is empty: send at least one message");
    if (messages.size() > limits.max_messages)
        return f.fail("messages", fmt::format("'messages' holds {} messages; at most {} are accepted",
                                              messages.size(), limits.max_messages));
    size_t total = 0;
    ImageBudget images;
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string at = fmt::format("messages[{}]", i);
        const json& m = messages[i];
        if (!m.is_object()) return f.wrong_type(at, "an object with 'role' and 'content'", m);
        Fields mf(m, at + ".");
        const auto role = mf.string("role", 64);
        if (mf.failed()) return f.fail(mf.error()->param, mf.error()->message);
        if (!role) return f.fail(at + ".role", fmt::format("'{}.role' is missing", at));
        ChatMessage msg;
        if (*role == "system" || *role == "developer") {
            msg.role = "system";
        } else if (*role == "user" || *role == "assistant" || *role == "tool") {
            msg.role = *role;
        } else if (*role == "function") {
            // the deprecated form of a tool result: the function's name stands for the call
            msg.role = "tool";
            const auto name = mf.string("name", 256);
            if (mf.failed()) return f.fail(mf.error()->param, mf.error()->message);
            if (!name) return f.fail(at + ".name", fmt::format("'{}.name' is missing: a 'function' message names "
                                                               "the function it answers",
                                                               at));
            msg.name = *name;
        } else {
            return f.fail(at + ".role", fmt::format("'{}.role' must be system, developer, user, assistant, tool or "
                                                    "function, not '{}'",
                                                    at, *role));
        }
        if (msg.role == "assistant") {
            if (const json* calls = mf.get("tool_calls"))
                if (auto e = read_tool_calls(*calls, at + ".tool_calls", msg.tool_calls)) return f.fail(e->param, e->message);
            if (const json* call = mf.get("function_call"))  // the deprecated form of one call
                if (auto e = read_function_call(*call, at + ".function_call", msg.tool_calls))
                    return f.fail(e->param, e->message);
        }
        if (msg.role == "tool" && *role == "tool") {
            const auto id = mf.string("tool_call_id", 256);
            msg.name = mf.string("name", 256).value_or("");
            if (mf.failed()) return f.fail(mf.error()->param, mf.error()->message);
            if (!id) return f.fail(at + ".tool_call_id", fmt::format("'{}.tool_call_id' is missing", at));
            msg.tool_call_id = *id;
        }
        const json* content = mf.get("content");
        if (!content && msg.tool_calls.empty())
            return f.fail(at + ".content", fmt::format("'{}.content' is missing", at));
        if (!content) {
            // an assistant turn that only calls tools: content null
        } else if (content->is_string()) {
            msg.content = content->get<std::string>();
        } else if (content->is_array()) {
            for (size_t j = 0; j < content->size(); ++j) {
                const std::string part_at = fmt::format("{}.content[{}]", at, j);
                const json& part = (*content)[j];
                if (!part.is_object()) return f.wrong_type(part_at, "a content part object", part);
                Fields pf(part, part_at + ".");
                const auto type = pf.string("type", 64);
                if (pf.failed()) return f.fail(pf.error()->param, pf.error()->message);
                if (!type) return f.fail(part_at + ".type", fmt::format("'{}.type' is missing", part_at));
                if (*type == "image_url") {
                    if (msg.role != "user")
                        return f.fail(part_at, fmt::format("images are accepted in user messages, not {} messages",
                                                           msg.role));
                    auto image = read_image_part(part, part_at, limits, images);
                    if (!image.ok()) return f.fail(image.error().param, image.error().message);
                    msg.images.push_back({msg.content.size(), std::move(*image)});
                    continue;
                }
                if (*type == "file") {
                    if (msg.role != "user")
                        return f.fail(part_at, fmt::format("files are accepted in user messages, not {} messages",
                                                           msg.role));
                    auto pages = read_file_part(part, part_at, limits, images);
                    if (!pages.ok()) return f.fail(pages.error().param, pages.error().message);
                    for (Image& page : *pages) msg.images.push_back({msg.content.size(), std::move(page)});
                    continue;
                }
                if (*type != "text")
                    return f.fail(part_at + ".type",
                                  fmt::format("content parts of type '{}' are not supported; 'text', 'image_url' "
                                              "and 'file' (PDF) are", *type));
                const auto text = pf.string("text", limits.max_prompt_bytes);
                if (pf.failed()) return f.fail(pf.error()->param, pf.error()->message);
                if (!text) return f.fail(part_at + ".text", fmt::format("'{}.text' is missing", part_at));
                msg.content += *text;
            }
        } else {
            return f.wrong_type(at + ".content", "a string or an array of text, image_url and file parts", *content);
        }
        total += msg.content.size();
        if (total > limits.max_prompt_bytes)
            return f.fail("messages", fmt::format("the messages hold more than {} bytes of text, the most this server "
                                                  "accepts", limits.max_prompt_bytes));
        out.messages.push_back(std::move(msg));
    }
}

bool read_token_ids(Fields& f, const std::string& key, const json& ids, const RequestLimits& limits,
                    std::vector<int32_t>& out) {
    if (ids.size() > limits.max_prompt_tokens) {
        f.fail(key, fmt::format("'{}' holds {} tokens; at most {} are accepted", key, ids.size(), limits.max_prompt_tokens));
        return false;
    }
    out.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        const auto id = f.integer_value(fmt::format("{}[{}]", key, i), ids[i], 0, std::numeric_limits<int32_t>::max());
        if (!id) return false;
        out.push_back(int32_t(*id));
    }
    return true;
}

// "prompt": "text" | ["text"] | [1, 2, 3] | [[1, 2, 3]]  (one prompt per request)
void read_prompt(Fields& f, const RequestLimits& limits, GenerationRequest& out) {
    const json* p = f.get("prompt");
    if (!p) return f.fail("prompt", "'prompt' is missing");
    const json* one = p;
    if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
        if (p->size() != 1)
            return f.fail("prompt", fmt::format("'prompt' holds {} prompts; send one per request", p->size()));
        one = &p->front();
    }
    if (one->is_string()) {
        const auto& s = one->get_ref<const std::string&>();
        if (s.size() > limits.max_prompt_bytes)
            return f.fail("prompt", fmt::format("'prompt' is {} bytes; at most {} are accepted", s.size(),
                                                limits.max_prompt_bytes));
        out.prompt = s;
        return;
    }
    if (one->is_array()) {
        if (one->empty()) return f.fail("prompt", "'prompt' is an empty list of tokens");
        if (read_token_ids(f, "prompt", *one, limits, out.prompt_tokens)) out.prompt_is_tokens = true;
        return;
    }
    f.wrong_type("prompt", "a string or an array of token ids", *one);
}

void read_stop(Fields& f, const RequestLimits& limits, GenerationRequest& out) {
    const json* stop = f.get("stop");
    if (!stop) return;
    std::vector<const json*> items;
    if (stop->is_string()) {
        items.push_back(stop);
    } else if (stop->is_array()) {
        if (stop->size() > limits.max_stop)
            return f.fail("stop", fmt::format("'stop' holds {} strings; at most {} are accepted", stop->size(),
                                              limits.max_stop));
        for (const json& s : *stop) items.push_back(&s);
    } else {
        return f.wrong_type("stop", "a string or an array of strings", *stop);
    }
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string at = stop->is_array() ? fmt::format("stop[{}]", i) : "stop";
        if (!items[i]->is_string()) return f.wrong_type(at, "a string", *items[i]);
        const auto& s = items[i]->get_ref<const std::string&>();
        if (s.size() > limits.max_stop_bytes)
            return f.fail(at, fmt::format("'{}' is {} bytes; at most {} are accepted", at, s.size(),
                                          limits.max_stop_bytes));
        if (!s.empty()) out.stop.push_back(s);  // an empty stop string would stop nothing
    }
}

void read_logprobs(Fields& f, Endpoint endpoint, const RequestLimits& limits, GenerationRequest& out) {
    const int64_t max_top = limits.max_top_logprobs;
    if (endpoint == Endpoint::completions) {
        // The legacy API: "logprobs": N asks for the N most likely alternatives per token.
        if (const auto n = f.integer("logprobs", 0, max_top)) {
            out.logprobs = true;
            out.top_logprobs = uint32_t(*n);
        }
        return;
    }
    out.logprobs = f.boolean("logprobs").value_or(false);
    if (const auto n = f.integer("top_logprobs", 0, max_top)) {
        if (!out.logprobs && *n > 0) return f.fail("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        out.top_logprobs = uint32_t(*n);
    }
}

// speculative.draft_tree: "STEPS,TOPK,NODES" as --draft-tree spells it, the same as an
// object, or "none" (chains).
std::optional<DraftTreeSetting> read_draft_tree(Fields& sf) {
    const json* v = sf.get("draft_tree");
    if (!v) return std::nullopt;
    constexpr const char* kRule = "three positive integers STEPS,TOPK,NODES with NODES from 2 to 64";
    if (v->is_string()) {
        const auto& s = v->get_ref<const std::string&>();
        if (s == "none") return DraftTreeSetting{};
        if (auto t = draft_tree_shape(s)) return t;
        return sf.fail("draft_tree", fmt::format("'speculative.draft_tree' must be {} (such as \"4,3,12\") or "
                                                 "\"none\", not \"{}\"", kRule, s.substr(0, 64))),
               std::nullopt;
    }
    if (!v->is_object())
        return sf.wrong_type("draft_tree", "a string like \"4,3,12\" or an object like {\"steps\": 4, \"topk\": 3, "
                                           "\"nodes\": 12}", *v),
               std::nullopt;
    Fields tf(*v, "speculative.draft_tree.");
    const auto steps = tf.integer("steps", 1, 64), topk = tf.integer("topk", 1, 64), nodes = tf.integer("nodes", 2, 64);
    for (const char* key : {"steps", "topk", "nodes"})
        if (!tf.get(key)) tf.fail(key, fmt::format("'speculative.draft_tree.{}' is missing: {}", key, kRule));
    // tf's param is the whole path; sf prefixes its own "speculative."
    if (tf.failed()) return sf.fail(tf.error()->param.substr(sizeof "speculative." - 1), tf.error()->message), std::nullopt;
    return DraftTreeSetting{uint32_t(*steps), uint32_t(*topk), uint32_t(*nodes)};
}

void read_speculative(Fields& f, GenerationRequest& out) {
    const json* spec = f.get("speculative");
    if (!spec) return;
    if (!spec->is_object()) return f.wrong_type("speculative", "an object like {\"type\": \"mtp\", \"draft_max\": 4, \"fixed\": false}", *spec);
    Fields sf(*spec, "speculative.");
    SpeculativeChoice choice;
    choice.type = sf.string("type", 256).value_or("");  // a chain names several: "ngram-simple,eagle3"
    if (sf.get("type") && choice.type.empty() && !sf.failed())
        sf.fail("type", "'speculative.type' is empty: name a drafter of this server (such as mtp or ngram-simple), or "
                        "none");
    if (const auto k = sf.integer("draft_max", 0, 256)) choice.draft_max = uint32_t(*k);
    choice.fixed = sf.boolean("fixed");
    choice.draft_tree = read_draft_tree(sf);
    if (sf.failed()) return f.fail(sf.error()->param, sf.error()->message);
    out.speculative = std::move(choice);
}

}  // namespace

ApiResult<GenerationRequest> parse_generation_request(Endpoint endpoint, std::string_view body,
                                                      const RequestLimits& limits) {
    auto doc = parse_object(body, limits.max_depth);
    if (!doc.ok()) return doc.error();
    Fields f(*doc, "");
    GenerationRequest out;
    out.endpoint = endpoint;
    out.model = f.string("model", 256).value_or("");
    refuse_unsupported(f, endpoint);
    if (endpoint == Endpoint::chat_completions) {
        if (const json* messages = f.get("messages")) read_messages(f, *messages, limits, out);
        else f.fail("messages", "'messages' is missing");
        if (!f.failed())
            if (auto e = read_tool_fields(*doc, body, limits, out)) f.fail(e->param, e->message);
    } else {
        read_prompt(f, limits, out);
    }

    constexpr int64_t kMaxTokens = int64_t(1) << 53;  // past any context; the server checks its own
    // 0 only with "echo" in completions (read_echo)
    std::optional<int64_t> max_tokens = f.integer("max_tokens", endpoint == Endpoint::completions ? 0 : 1, kMaxTokens);
    if (endpoint == Endpoint::chat_completions)
        if (auto m = f.integer("max_completion_tokens", 1, kMaxTokens)) max_tokens = m;
    if (max_tokens) out.max_tokens = uint64_t(*max_tokens);

    out.temperature = f.number("temperature", 0.0, 1e6);
    out.top_p = f.number("top_p", 0.0, 1.0);
    out.min_p = f.number("min_p", 0.0, 1.0);
    out.repetition_penalty = f.number("repetition_penalty", 1e-6, 1e6);
    if (auto k = f.integer("top_k", -1, std::numeric_limits<int32_t>::max())) out.top_k = *k < 0 ? 0 : *k;
    out.presence_penalty = f.number("presence_penalty", -2.0, 2.0);
    out.frequency_penalty = f.number("frequency_penalty", -2.0, 2.0);
    read_logit_bias(f, limits, out);
    read_choices(f, endpoint, limits, out);
    if (const json* seed = f.get("seed")) {
        // -1 is llama-server's "random"; other negative seeds have no meaning here.
        if (auto s = f.integer_value("seed", *seed, -1, std::numeric_limits<int64_t>::max()); s && *s >= 0)
            out.seed = uint64_t(*s);
    }
    read_stop(f, limits, out);

    out.stream = f.boolean("stream").value_or(false);
    if (const json* opts = f.get("stream_options")) {
        if (!out.stream) {
            f.fail("stream_options", "'stream_options' needs 'stream': true");
        } else if (!opts->is_object()) {
            f.wrong_type("stream_options", "an object", *opts);
        } else {
            Fields of(*opts, "stream_options.");
            out.include_usage = of.boolean("include_usage").value_or(false);
            if (of.failed()) f.fail(of.error()->param, of.error()->message);
        }
    }
    read_logprobs(f, endpoint, limits, out);
    read_echo(f, endpoint, out);
    out.ignore_eos = f.boolean("ignore_eos");
    read_speculative(f, out);
    if (f.failed()) return *f.error();
    auto constraint = read_constraint(*doc, limits.max_constraint_bytes);
    if (!constraint.ok()) return constraint.error();
    out.constraint = std::move(*constraint);
    if (out.constraint.kind == ConstraintSpec::Kind::json_schema)  // the output follows the schema's member order
        if (const auto ordered = ordered_body(*doc, body)) keep_schema_order(*ordered, out.constraint);
    return out;
}

ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body, const RequestLimits& limits) {
    auto doc = parse_object(body, limits.max_depth);
    if (!doc.ok()) return doc.error();
    Fields f(*doc, "");
    TokenizeRequest out;
    const auto content = f.string("content", limits.max_prompt_bytes);
    if (!content && !f.failed()) f.fail("content", "'content' is missing");
    out.content = content.value_or("");
    out.add_special = f.boolean("add_special").value_or(false);
    out.parse_special = f.boolean("parse_special").value_or(true);
    out.with_pieces = f.boolean("with_pieces").value_or(false);
    if (f.failed()) return *f.error();
    return out;
}

ApiResult<DetokenizeRequest> parse_detokenize_request(std::string_view body, const RequestLimits& limits) {
    auto doc = parse_object(body, limits.max_depth);
    if (!doc.ok()) return doc.error();
    Fields f(*doc, "");
    DetokenizeRequest out;
    const json* tokens = f.get("tokens");
    if (!tokens) {
        f.fail("tokens", "'tokens' is missing");
    } else if (!tokens->is_array()) {
        f.wrong_type("tokens", "an array of token ids", *tokens);
    } else {
        read_token_ids(f, "tokens", *tokens, limits, out.tokens);
    }
    if (f.failed()) return *f.error();
    return out;
}

}  // namespace tdm::server
