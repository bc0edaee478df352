// SPDX-License-Identifier: Apache-2.0
// host/serve/http_server.cpp
#include "serve/http_server.h"

#include "serve/best_of.h"
#include "serve/gateway_metrics.h"
#include "serve/http_transport.h"
#include "serve/server_metrics.h"
#include "serve/tool_call_parser.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>

namespace tdm::server {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
// The most generations one server runs at once (--parallel is checked against it).
constexpr uint32_t kMaxParallel = 1024;

namespace {

// Compares without an early exit, so that the time taken says nothing about the key.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned char>(x ^ y);
    }
    return diff == 0;
}

std::string json_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ApiError error_of(int status, std::string type, std::string message, std::string code = "") {
    ApiError e;
    e.status = status;
    e.type = std::move(type);
    e.message = std::move(message);
    e.code = std::move(code);
    return e;
}

void send(HttpResponder& res, const ApiError& e, const HttpHeaders& headers = {}) {
    res.send(e.status, "application/json", e.to_json(), headers);
}

void send_json(HttpResponder& res, const std::string& body) { res.send(200, "application/json", body); }

const HttpHeaders kRetryAfter = {{"Retry-After", "1"}};
// How often a request that waits (for a place, or for its next token) looks for its client.
constexpr std::chrono::milliseconds kClientCheck{100};

std::string request_id(Endpoint endpoint) {
    static std::mutex m;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard lock(m);
    return fmt::format("{}-{:016x}", endpoint == Endpoint::chat_completions ? "chatcmpl" : "cmpl", rng());
}

// OpenAI's tool call ids: "call_" and 24 characters.
std::string tool_call_id() {
    static std::mutex m;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard lock(m);
    return fmt::format("call_{:016x}{:08x}", rng(), uint32_t(rng()));
}

// The calls of a reply as the response reports them; with parallel_tool_calls false, only
// the first.
std::vector<ToolCallOut> reply_calls(std::vector<ParsedToolCall> parsed, bool parallel) {
    std::vector<ToolCallOut> out;
    for (ParsedToolCall& c : parsed) {
        if (!parallel && !out.empty()) break;
        out.push_back({tool_call_id(), std::move(c.name), std::move(c.arguments)});
    }
    return out;
}

// A reply that made calls ends with "tool_calls" (OpenAI), or "function_call" for the
// deprecated "functions", unless it was cut short.
std::string finish_with_calls(const std::string& reason, size_t calls, bool legacy_functions) {
    if (calls == 0 || reason != "stop") return reason;
    return legacy_functions ? "function_call" : "tool_calls";
}

}  // namespace

struct HttpServer::Impl {
    using Route = std::function<void(const HttpRequest&, HttpResponder&)>;

    Backend& backend;
    ServerOptions opts;
    ServerMetrics metrics;
    std::map<std::string, Route> routes;  // by "METHOD /path"
    std::unique_ptr<HttpTransport> transport;

    // places to run a generation: backend.parallel() of them (a mutex and a condition
    // variable rather than std::counting_semaphore, whose timed wait in GCC 12's
    // libstdc++ could miss a release: GCC PR 104928)
    std::mutex places_mutex;
    std::condition_variable places_cv;
    uint32_t places_free = 0;
    std::mutex admission_mutex;
    uint32_t admitted = 0;  // waiting + running
    std::atomic<uint32_t> running{0};
    std::atomic<bool> draining{false};

    // Releases an admission when the request has been answered (whole or streamed).
    struct Ticket {
        Impl* server;
        ~Ticket() {
            std::lock_guard lock(server->admission_mutex);
            --server->admitted;
        }
    };

    Impl(Backend& b, ServerOptions o) : backend(b), opts(std::move(o)), places_free(parallel()) {}
    uint32_t parallel() const { return std::clamp<uint32_t>(backend.parallel(), 1, kMaxParallel); }

    std::shared_ptr<Ticket> admit() {
        std::lock_guard lock(admission_mutex);
        if (draining || admitted >= opts.queue + parallel()) return nullptr;
        ++admitted;
        return std::shared_ptr<Ticket>(new Ticket{this});  // no temporary: its destructor would release
    }

    uint32_t waiting() {
        std::lock_guard lock(admission_mutex);
        return admitted - std::min(admitted, running.load());
    }

    ApiError overloaded() const {
        return error_of(503, "server_error",
                        draining ? "the server is shutting down" : "the server is busy: every queue place is taken; retry later",
                        draining ? "shutting_down" : "overloaded");
    }

    void install_routes();
    // Every request: authentication, the route, the request count.
    void handle(const HttpRequest& req, HttpResponder& res);
    void generation(Endpoint endpoint, const HttpRequest& req, HttpResponder& res);
    // Runs a job on the model and streams it as server-sent events.
    // `responder` guards `res` against the choices' threads (writes and hang-up checks).
    void stream(const Job& job, Endpoint endpoint, const ResponseMeta& meta, Clock::time_point arrived,
                HttpResponder& res, std::mutex& responder);
    ApiResult<std::vector<Outcome>> run_locked(const Job& job, Clock::time_point arrived, const ChoiceSink& on_text);
    std::string metrics_text() {
        const uint32_t w = waiting();
        const EngineGauges engine = backend.gauges();
        return metrics.text(w, running.load(), engine) + gateway_metrics_text(backend.model_id(), w, engine);
    }
};

ApiResult<std::vector<Outcome>> HttpServer::Impl::run_locked(const Job& job, Clock::time_point arrived,
                                                             const ChoiceSink& on_text) {
    {
        std::unique_lock lock(places_mutex);
        const auto deadline = Clock::now() + std::chrono::seconds(opts.queue_timeout_s);
        // in steps, to notice a client that gave up waiting
        while (!places_cv.wait_for(lock, kClientCheck, [&] { return places_free > 0; })) {
            if (job.client_gone && job.client_gone())
                return error_of(503, "server_error", "the client has gone", "client_gone");
            if (Clock::now() < deadline) continue;
            return error_of(503, "server_error",
                        fmt::format("the request waited {} s for the model without starting; retry later",
                                    opts.queue_timeout_s),
                            "queue_timeout");
        }
        --places_free;
    }
    ++running;
    std::mutex first_mutex;  // the choices' threads share the first-text time
    bool first = true;
    Clock::time_point first_at{};
    struct Release {
        Impl& s;
        ~Release() {
            {
                std::lock_guard lock(s.places_mutex);
                ++s.places_free;
            }
            s.places_cv.notify_one();
        }
    } release{*this};
    auto timed = [&](uint32_t choice, std::string_view text, const std::vector<TokenLogprob>* lp) {
        if (text.empty() && (!lp || lp->empty())) return true;
        {
            std::lock_guard lock(first_mutex);
            if (first) {
                first = false;
                first_at = Clock::now();
                metrics.time_to_first_token(std::chrono::duration<double>(first_at - arrived).count());
            }
        }
        return on_text(choice, text, lp);
    };
    ApiResult<std::vector<Outcome>> out = backend.run(job, timed);
    --running;
    if (out.ok()) {
        uint64_t longest = 0;  // the choices decode side by side: time per token of the longest
        for (size_t i = 0; i < out->size(); ++i) {
            const Outcome& o = (*out)[i];
            // one prompt, whatever the number of choices
            metrics.generation_done(i == 0 ? o.usage.prompt_tokens : 0, i == 0 ? o.usage.cached_tokens : 0,
                                    o.usage.completion_tokens, o.drafted, o.accepted);
            if (o.controller.on) metrics.controller_done(o.controller, o.measured_speedup);
            if (o.timed_out) metrics.generation_timed_out();
            longest = std::max<uint64_t>(longest, o.usage.completion_tokens);
        }
        if (!first && longest > 1)
            metrics.time_per_output_token(std::chrono::duration<double>(Clock::now() - first_at).count() /
                                          double(longest - 1));
    }
    return out;
}

namespace {

// The usage of a request: its prompt once, the tokens of every choice.
Usage total_usage(const std::vector<Outcome>& outcomes) {
    Usage u;
    if (outcomes.empty()) return u;
    u.prompt_tokens = outcomes[0].usage.prompt_tokens;
    u.cached_tokens = outcomes[0].usage.cached_tokens;
    u.images = outcomes[0].usage.images;
    for (const Outcome& o : outcomes) {
        u.completion_tokens += o.usage.completion_tokens;
        u.image_encode_ms += o.usage.image_encode_ms;  // each choice encodes the images for itself
    }
    return u;
}

}  // namespace

void HttpServer::Impl::stream(const Job& job, Endpoint endpoint, const ResponseMeta& meta, Clock::time_point arrived,
                              HttpResponder& res, std::mutex& responder) {
    bool connected = res.start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    const auto write = [&](const std::string& event) {
        if (connected && !res.write(event)) connected = false;
        return connected;
    };
    // per choice: whether its first chunk (which carries the role) went out, and its text so far
    const uint32_t n = std::max(1u, job.request.n);
    std::vector<bool> first(n, true);
    std::vector<size_t> text_so_far(n, 0);
    // under `responder`: the choices stream from threads of their own
    auto on_text_locked = [&](uint32_t i, std::string_view text, const std::vector<TokenLogprob>* lp) {
        ChoiceText choice{text, "", lp};
        choice.index = i;
        choice.text_offset = text_so_far[i];
        text_so_far[i] += text.size();
        const bool ok = write(sse_event(chunk_body(endpoint, meta, choice, first[i])));
        first[i] = false;
        return ok;
    };
    // With tools, each choice's text goes through a parser of its own: content as it is
    // decided; a Hermes JSON call as a header chunk once its name is read and argument
    // chunks as they are written, any other call as a header and an arguments chunk once
    // it has closed.
    std::vector<std::optional<ToolCallParser>> parsers(n);
    std::vector<size_t> calls(n, 0);
    std::vector<bool> sending(n, false);  // the call being streamed is sent (parallel_tool_calls)
    if (job.tool_format != ToolCallFormat::none)
        for (auto& p : parsers) p.emplace(job.tool_format, job.request.tools, /*stream_arguments=*/true);
    const bool legacy = job.request.legacy_functions;
    const auto call_chunk = [&](uint32_t i, const std::string* name, std::string_view arguments) {
        if (legacy) return sse_event(function_call_chunk_body(meta, i, name, arguments, first[i]));
        if (!name) return sse_event(tool_call_chunk_body(meta, i, calls[i] - 1, nullptr, arguments, first[i]));
        const ToolCallOut call{tool_call_id(), *name, ""};
        return sse_event(tool_call_chunk_body(meta, i, calls[i] - 1, &call, "", first[i]));
    };
    // under `responder`, as on_text
    auto write_pieces = [&](uint32_t i, const std::vector<ToolStreamPiece>& pieces, const std::vector<TokenLogprob>* lp) {
        bool ok = true;
        for (const ToolStreamPiece& p : pieces) {
            switch (p.kind) {
                case ToolStreamPiece::Kind::text:
                    ok = on_text_locked(i, p.text, lp) && ok;
                    lp = nullptr;  // the logprobs of this text go with its first chunk
                    break;
                case ToolStreamPiece::Kind::call:
                case ToolStreamPiece::Kind::call_begin:
                    sending[i] = job.request.parallel_tool_calls || calls[i] == 0;
                    if (!sending[i]) break;
                    ++calls[i];
                    ok = write(call_chunk(i, &p.call.name, "")) && ok;
                    first[i] = false;
                    if (p.kind == ToolStreamPiece::Kind::call) ok = write(call_chunk(i, nullptr, p.call.arguments)) && ok;
                    break;
                case ToolStreamPiece::Kind::call_arguments:
                    if (sending[i]) ok = write(call_chunk(i, nullptr, p.text)) && ok;
                    break;
            }
        }
        if (lp && !lp->empty()) ok = on_text_locked(i, "", lp) && ok;
        return ok;
    };
    auto on_choice_text = [&](uint32_t i, std::string_view text, const std::vector<TokenLogprob>* lp) {
        std::lock_guard lock(responder);  // the choices stream from threads of their own
        if (!parsers[i]) return on_text_locked(i, text, lp);
        return write_pieces(i, parsers[i]->feed(text), lp);
    };
    ApiResult<std::vector<Outcome>> out = run_locked(job, arrived, on_choice_text);
    if (out.ok())
        for (uint32_t i = 0; i < n; ++i)
            if (parsers[i]) {
                std::lock_guard lock(responder);
                write_pieces(i, parsers[i]->finish(), nullptr);
            }
    if (!connected) return;  // the client has gone: nothing more to say
    if (!out.ok()) {
        // The status line went out with the first byte; the error travels as an event.
        write(sse_event(out.error().to_json()));
    } else {
        for (uint32_t i = 0; i < out->size(); ++i) {
            const std::string reason = finish_with_calls((*out)[i].finish_reason, calls[i], legacy);  // `last` views it
            ChoiceText last{"", reason};
            last.index = i;
            write(sse_event(chunk_body(endpoint, meta, last, first[i])));
        }
        if (job.request.include_usage) write(sse_event(usage_chunk_body(endpoint, meta, total_usage(*out))));
    }
    write(std::string(kSseDone));
    res.end_stream();
}

void HttpServer::Impl::generation(Endpoint endpoint, const HttpRequest& req, HttpResponder& res) {
    const Clock::time_point arrived = Clock::now();
    auto parsed = parse_generation_request(endpoint, req.body, opts.limits);
    if (!parsed.ok()) return send(res, parsed.error());
    if (!parsed->model.empty() && parsed->model != backend.model_id())
        return send(res, error_of(404, "invalid_request_error",
                                  fmt::format("the model '{}' does not exist here; this server serves '{}'",
                                              parsed->model, backend.model_id()),
                                  "model_not_found"));
    auto job = backend.prepare(std::move(*parsed));
    if (!job.ok()) return send(res, job.error());
    job->time_limit_s = opts.generation_timeout_s;
    // a client that hangs up, streaming or not, ends its generation at the next step; the
    // choices of an n > 1 request ask from threads of their own, beside the stream's writes
    std::mutex responder;
    job->client_gone = [&res, &responder] {
        std::lock_guard lock(responder);
        return res.client_gone();
    };
    std::shared_ptr<Ticket> ticket = admit();
    if (!ticket) return send(res, overloaded(), kRetryAfter);
    const ResponseMeta meta{request_id(endpoint), int64_t(std::time(nullptr)), backend.model_id()};

    if (!job->request.stream) {
        const uint32_t sequences = std::max(1u, generated_sequences(job->request));
        std::vector<std::string> text(sequences);  // each sequence's thread writes its own entries only
        std::vector<std::vector<TokenLogprob>> logprobs(sequences);
        const bool want_logprobs = job->request.logprobs;
        auto out = run_locked(*job, arrived, [&](uint32_t i, std::string_view t, const std::vector<TokenLogprob>* lp) {
            text[i] += t;
            if (lp) logprobs[i].insert(logprobs[i].end(), lp->begin(), lp->end());
            return true;
        });
        if (!out.ok()) return send(res, out.error(), out.error().status == 503 ? kRetryAfter : HttpHeaders{});
        // the choices: every sequence, or the n most likely of best_of
        std::vector<uint32_t> picked(out->size());
        for (uint32_t i = 0; i < picked.size(); ++i) picked[i] = i;
        if (sequences > job->request.n) picked = best_sequences(*out, job->request.n);
        // ChoiceText views its strings: these own them until the body is written
        std::vector<ChoiceText> choices;
        std::vector<std::string> content(picked.size()), reasons(picked.size());
        std::vector<std::vector<ToolCallOut>> calls(picked.size());
        for (uint32_t c = 0; c < picked.size(); ++c) {
            const uint32_t i = picked[c];
            reasons[c] = (*out)[i].finish_reason;
            content[c] = text[i];  // an echoed prompt included (Backend::run)
            if (job->tool_format != ToolCallFormat::none) {
                ParsedOutput reply = parse_tool_calls(job->tool_format, job->request.tools, content[c]);
                calls[c] = reply_calls(std::move(reply.calls), job->request.parallel_tool_calls);
                reasons[c] = finish_with_calls(reasons[c], calls[c].size(), job->request.legacy_functions);
                content[c] = std::move(reply.content);
            }
            choices.push_back({content[c], reasons[c], want_logprobs ? &logprobs[i] : nullptr});
            choices.back().index = c;
            choices.back().function_call = job->request.legacy_functions;
            if (!calls[c].empty()) choices.back().tool_calls = &calls[c];
        }
        return send_json(res, completion_body(endpoint, meta, choices, total_usage(*out)));
    }
    stream(*job, endpoint, meta, arrived, res, responder);
}

void HttpServer::Impl::handle(const HttpRequest& req, HttpResponder& res) {
    // Known paths only: a label per path a client makes up would grow without bound.
    static const std::set<std::string, std::less<>> known = {
        "/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions", "/v1/models",
        "/tokenize", "/detokenize", "/health", "/metrics"};
    struct Count {
        Impl& s;
        const HttpRequest& req;
        HttpResponder& res;
        ~Count() { s.metrics.request_done(known.count(req.path) ? req.path : "other", res.status() ? res.status() : 500); }
    } count{*this, req, res};

    if (!opts.api_key.empty() && req.path != "/health") {
        const std::string_view auth = req.header("authorization");
        const std::string_view prefix = "Bearer ";
        if (!auth.starts_with(prefix) || !same_secret(auth.substr(prefix.size()), opts.api_key))
            return send(res, error_of(401, "authentication_error",
                                      auth.empty() ? "no API key: send the header 'Authorization: Bearer KEY'"
                                                   : "the API key is not valid",
                                      "invalid_api_key"));
    }
    const auto route = routes.find(req.method + " " + req.path);
    if (route == routes.end())
        return send(res, error_of(404, "invalid_request_error", fmt::format("no such endpoint: {} {}", req.method, req.path)));
    route->second(req, res);
}

void HttpServer::Impl::install_routes() {
    routes["GET /health"] = [this](const HttpRequest&, HttpResponder& res) {
        res.send(draining ? 503 : 200, "application/json", json_text({{"status", draining ? "draining" : "ok"}}));
    };
    routes["GET /v1/models"] = [this](const HttpRequest&, HttpResponder& res) {
        json model = {{"id", backend.model_id()}, {"object", "model"}, {"created", 0}, {"owned_by", "tandem"}};
        send_json(res, json_text({{"object", "list"}, {"data", json::array({model})}}));
    };
    routes["GET /metrics"] = [this](const HttpRequest&, HttpResponder& res) {
        res.send(200, "text/plain; version=0.0.4", metrics_text());
    };
    routes["POST /tokenize"] = [this](const HttpRequest& req, HttpResponder& res) {
        auto parsed = parse_tokenize_request(req.body, opts.limits);
        if (!parsed.ok()) return send(res, parsed.error());
        auto ids = backend.tokenize(*parsed);
        if (!ids.ok()) return send(res, ids.error());
        json tokens = json::array();
        for (int32_t id : *ids) {
            if (parsed->with_pieces) tokens.push_back({{"id", id}, {"piece", backend.token_piece(id)}});
            else tokens.push_back(id);
        }
        send_json(res, json_text({{"tokens", tokens}}));
    };
    routes["POST /detokenize"] = [this](const HttpRequest& req, HttpResponder& res) {
        auto parsed = parse_detokenize_request(req.body, opts.limits);
        if (!parsed.ok()) return send(res, parsed.error());
        auto text = backend.detokenize(*parsed);
        if (!text.ok()) return send(res, text.error());
        send_json(res, json_text({{"content", *text}}));
    };
    for (const char* path : {"/v1/chat/completions", "/chat/completions"})
        routes[fmt::format("POST {}", path)] = [this](const HttpRequest& req, HttpResponder& res) {
            generation(Endpoint::chat_completions, req, res);
        };
    for (const char* path : {"/v1/completions", "/completions"})
        routes[fmt::format("POST {}", path)] = [this](const HttpRequest& req, HttpResponder& res) {
            generation(Endpoint::completions, req, res);
        };

    TransportOptions t;
    t.host = opts.host;
    t.port = opts.port;
    t.max_body_bytes = opts.max_body_bytes;
    t.max_connections = opts.max_connections;
    t.max_connections_per_client = opts.max_connections_per_client;
    // Every admitted request has a thread (it waits in it), and others still find one.
    t.handler_threads = opts.queue + parallel() + 4;
    transport = std::make_unique<HttpTransport>(
        t, [this](const HttpRequest& req, HttpResponder& res) { handle(req, res); },
        [](int status, std::string_view message, std::string_view code) {
            return error_of(status, status >= 500 ? "server_error" : "invalid_request_error", std::string(message),
                            std::string(code))
                .to_json();
        });
}

HttpServer::HttpServer(Backend& backend, ServerOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(options))) {
    impl_->install_routes();
}

HttpServer::~HttpServer() = default;

Status HttpServer::bind() { return impl_->transport->bind(); }

int HttpServer::port() const { return impl_->transport->port(); }

Status HttpServer::serve() { return impl_->transport->serve(); }

void HttpServer::drain() {
    Impl& s = *impl_;
    {
        std::lock_guard lock(s.admission_mutex);
        s.draining = true;
    }
    s.transport->shutdown(std::chrono::seconds(s.opts.shutdown_timeout_s));
}

std::string HttpServer::metrics_text() const { return impl_->metrics_text(); }

}  // namespace tdm::server
