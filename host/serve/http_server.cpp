// SPDX-License-Identifier: Apache-2.0
// host/serve/http_server.cpp
#include "serve/http_server.h"

#include "serve/server_metrics.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <algorithm>
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

void send(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(e.to_json(), "application/json");
}

std::string request_id(Endpoint endpoint) {
    static std::mutex m;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard lock(m);
    return fmt::format("{}-{:016x}", endpoint == Endpoint::chat_completions ? "chatcmpl" : "cmpl", rng());
}

}  // namespace

struct HttpServer::Impl {
    Backend& backend;
    ServerOptions opts;
    httplib::Server http;
    ServerMetrics metrics;

    // places to run a generation: backend.parallel() of them (a mutex and a condition
    // variable rather than std::counting_semaphore, whose timed wait in GCC 12's
    // libstdc++ could miss a release: GCC PR 104928)
    std::mutex places_mutex;
    std::condition_variable places_cv;
    uint32_t places_free = 0;
    std::mutex admission_mutex;
    std::condition_variable admission_cv;
    uint32_t admitted = 0;  // waiting + running
    std::atomic<uint32_t> running{0};
    std::atomic<bool> draining{false};
    int bound_port = 0;

    // Releases an admission when the request is answered (or its stream is torn down).
    struct Ticket {
        Impl* server;
        ~Ticket() {
            std::lock_guard lock(server->admission_mutex);
            --server->admitted;
            server->admission_cv.notify_all();
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
    void generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
    // Runs a job on the model and streams it as server-sent events.
    void stream(const Job& job, Endpoint endpoint, const ResponseMeta& meta, Clock::time_point arrived,
                httplib::DataSink& sink);
    ApiResult<Outcome> run_locked(const Job& job, Clock::time_point arrived, const TextSink& on_text);
    std::string metrics_text() { return metrics.text(waiting(), running.load(), backend.gauges()); }
};

ApiResult<Outcome> HttpServer::Impl::run_locked(const Job& job, Clock::time_point arrived, const TextSink& on_text) {
    {
        std::unique_lock lock(places_mutex);
        if (!places_cv.wait_for(lock, std::chrono::seconds(opts.queue_timeout_s), [&] { return places_free > 0; }))
            return error_of(503, "server_error",
                        fmt::format("the request waited {} s for the model without starting; retry later",
                                    opts.queue_timeout_s),
                            "queue_timeout");
        --places_free;
    }
    ++running;
    bool first = true;
    Clock::time_point first_at{};
    uint64_t pieces = 0;
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
    auto timed = [&](std::string_view text, const std::vector<TokenLogprob>* lp) {
        if (text.empty() && (!lp || lp->empty())) return true;
        if (first) {
            first = false;
            first_at = Clock::now();
            metrics.time_to_first_token(std::chrono::duration<double>(first_at - arrived).count());
        }
        ++pieces;
        return on_text(text, lp);
    };
    ApiResult<Outcome> out = backend.run(job, timed);
    --running;
    if (out.ok()) {
        const Outcome& o = *out;
        metrics.generation_done(o.usage.prompt_tokens, o.usage.cached_tokens, o.usage.completion_tokens, o.drafted,
                                o.accepted);
        if (o.controller.on) metrics.controller_done(o.controller, o.measured_speedup);
        if (o.timed_out) metrics.generation_timed_out();
        if (!first && o.usage.completion_tokens > 1)
            metrics.time_per_output_token(std::chrono::duration<double>(Clock::now() - first_at).count() /
                                          double(o.usage.completion_tokens - 1));
    }
    return out;
}

void HttpServer::Impl::stream(const Job& job, Endpoint endpoint, const ResponseMeta& meta, Clock::time_point arrived,
                              httplib::DataSink& sink) {
    bool connected = true;
    const auto write = [&](const std::string& event) {
        if (connected && !sink.write(event.data(), event.size())) connected = false;
        return connected;
    };
    bool first = true;
    std::string text_so_far;
    auto on_text = [&](std::string_view text, const std::vector<TokenLogprob>* lp) {
        ChoiceText choice{text, "", lp};
        choice.text_offset = text_so_far.size();
        text_so_far += text;
        const bool ok = write(sse_event(chunk_body(endpoint, meta, choice, first)));
        first = false;
        return ok;
    };
    ApiResult<Outcome> out = run_locked(job, arrived, on_text);
    if (!connected) return;  // the client has gone: nothing more to say
    if (!out.ok()) {
        // The status line went out with the first byte; the error travels as an event.
        write(sse_event(out.error().to_json()));
    } else {
        write(sse_event(chunk_body(endpoint, meta, {"", out->finish_reason}, first)));
        if (job.request.include_usage) write(sse_event(usage_chunk_body(endpoint, meta, out->usage)));
    }
    write(std::string(kSseDone));
}

void HttpServer::Impl::generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
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
    std::shared_ptr<Ticket> ticket = admit();
    if (!ticket) {
        res.set_header("Retry-After", "1");
        return send(res, overloaded());
    }
    const ResponseMeta meta{request_id(endpoint), int64_t(std::time(nullptr)), backend.model_id()};

    if (!job->request.stream) {
        std::string text;
        std::vector<TokenLogprob> logprobs;
        const bool want_logprobs = job->request.logprobs;
        auto out = run_locked(*job, arrived, [&](std::string_view t, const std::vector<TokenLogprob>* lp) {
            text += t;
            if (lp) logprobs.insert(logprobs.end(), lp->begin(), lp->end());
            return true;
        });
        if (!out.ok()) {
            if (out.error().status == 503) res.set_header("Retry-After", "1");
            return send(res, out.error());
        }
        res.set_content(
            completion_body(endpoint, meta, {text, out->finish_reason, want_logprobs ? &logprobs : nullptr}, out->usage),
            "application/json");
        return;
    }
    auto shared_job = std::make_shared<Job>(std::move(*job));
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, shared_job, ticket, endpoint, meta, arrived](size_t, httplib::DataSink& sink) {
            stream(*shared_job, endpoint, meta, arrived, sink);
            sink.done();
            return true;
        });
}

void HttpServer::Impl::install_routes() {
    http.set_payload_max_length(opts.max_body_bytes);
    // cpp-httplib sets SO_REUSEPORT, which lets a second server bind a port in use and share
    // its connections; only SO_REUSEADDR (a restart need not wait for TIME_WAIT).
    http.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    // Enough workers that every admitted request has one, and /health and /metrics still answer.
    const size_t workers = size_t(opts.queue) + parallel() + 4;
    http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };

    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (opts.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
        const std::string auth = req.get_header_value("Authorization");
        const std::string_view prefix = "Bearer ";
        if (auth.compare(0, prefix.size(), prefix) == 0 && same_secret(std::string_view(auth).substr(prefix.size()), opts.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        send(res, error_of(401, "authentication_error",
                           auth.empty() ? "no API key: send the header 'Authorization: Bearer KEY'" : "the API key is not valid",
                           "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
    });
    http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        // Known paths only: a label per path a client makes up would grow without bound.
        static const std::set<std::string, std::less<>> known = {
            "/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions", "/v1/models",
            "/tokenize", "/detokenize", "/health", "/metrics"};
        metrics.request_done(known.count(req.path) ? req.path : "other", res.status);
    });
    // Errors cpp-httplib answers itself come without a body: give them OpenAI's.
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 413)
            send(res, error_of(413, "invalid_request_error",
                               fmt::format("the request body is larger than {} bytes, the most this server accepts",
                                           opts.max_body_bytes)));
        else if (res.status == 404)
            send(res, error_of(404, "invalid_request_error", fmt::format("no such endpoint: {} {}", req.method, req.path)));
        else
            send(res, error_of(res.status, "invalid_request_error", fmt::format("HTTP error {}", res.status)));
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        send(res, error_of(500, "server_error", "internal error: " + what));
    });

    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        res.status = draining ? 503 : 200;
        res.set_content(json_text({{"status", draining ? "draining" : "ok"}}), "application/json");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        json model = {{"id", backend.model_id()}, {"object", "model"}, {"created", 0}, {"owned_by", "tandem"}};
        res.set_content(json_text({{"object", "list"}, {"data", json::array({model})}}), "application/json");
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_text(), "text/plain; version=0.0.4");
    });
    http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
        auto parsed = parse_tokenize_request(req.body, opts.limits);
        if (!parsed.ok()) return send(res, parsed.error());
        auto ids = backend.tokenize(*parsed);
        if (!ids.ok()) return send(res, ids.error());
        json tokens = json::array();
        for (int32_t id : *ids) {
            if (parsed->with_pieces) tokens.push_back({{"id", id}, {"piece", backend.token_piece(id)}});
            else tokens.push_back(id);
        }
        res.set_content(json_text({{"tokens", tokens}}), "application/json");
    });
    http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
        auto parsed = parse_detokenize_request(req.body, opts.limits);
        if (!parsed.ok()) return send(res, parsed.error());
        auto text = backend.detokenize(*parsed);
        if (!text.ok()) return send(res, text.error());
        res.set_content(json_text({{"content", *text}}), "application/json");
    });
    for (const char* path : {"/v1/chat/completions", "/chat/completions"})
        http.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
            generation(Endpoint::chat_completions, req, res);
        });
    for (const char* path : {"/v1/completions", "/completions"})
        http.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
            generation(Endpoint::completions, req, res);
        });
}

HttpServer::HttpServer(Backend& backend, ServerOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(options))) {
    impl_->install_routes();
}

HttpServer::~HttpServer() = default;

Status HttpServer::bind() {
    Impl& s = *impl_;
    if (s.opts.port == 0) {
        s.bound_port = s.http.bind_to_any_port(s.opts.host);
    } else if (s.http.bind_to_port(s.opts.host, s.opts.port)) {
        s.bound_port = s.opts.port;
    }
    if (s.bound_port <= 0)
        return Error::format("cannot listen on {}:{} (in use, not an address of this machine, or not permitted)",
                             s.opts.host, s.opts.port);
    return {};
}

int HttpServer::port() const { return impl_->bound_port; }

Status HttpServer::serve() {
    if (!impl_->http.listen_after_bind()) return Error("the server stopped listening unexpectedly");
    return {};
}

void HttpServer::drain() {
    Impl& s = *impl_;
    {
        std::unique_lock lock(s.admission_mutex);
        s.draining = true;
        s.admission_cv.wait(lock, [&] { return s.admitted == 0; });
    }
    s.http.stop();
}

std::string HttpServer::metrics_text() const { return impl_->metrics_text(); }

}  // namespace tdm::server
