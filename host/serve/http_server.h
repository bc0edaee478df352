/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/http_server.h: `tandem serve`'s HTTP API: OpenAI's
// /v1/chat/completions, /v1/completions (whole or streamed as server-sent events) and
// /v1/models, llama-server's /tokenize, /detokenize and /health, Prometheus /metrics.
//
// Admission: up to backend.parallel() generations run at once (the engine batches them);
// up to `queue` more wait for a place, each at most `queue_timeout_s`; beyond that a
// request is answered 503 with Retry-After at once rather than queued without bound. A client
// that hangs up, streamed or not, stops its generation at the next step. drain() (SIGTERM)
// refuses new requests with 503, lets the admitted ones finish within the shutdown timeout
// and then cuts them, and serve() returns.
//
// Every error is JSON in OpenAI's shape (serve/api_error.h), including the ones the
// transport raises itself (413 for a body over the limit, 400 for bad framing, 503 for too
// many connections). Connections, framing and deadlines: serve/http_transport.h.
#pragma once

#include "common/error.h"
#include "serve/backend.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace tdm::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;               // 0: any free port (see port())
    std::string api_key;           // "": no authentication
    size_t max_body_bytes = size_t(8) << 20;
    uint32_t queue = 16;           // requests that may wait for a place to run
    uint32_t queue_timeout_s = 600;  // the longest a request waits before a 503
    uint32_t generation_timeout_s = 0;  // Job::time_limit_s of every request (0: no limit)
    uint32_t shutdown_timeout_s = 30;   // drain(): how long admitted requests may still run
    uint32_t max_connections = 256;     // open at once; more are answered 503 and closed
    uint32_t max_connections_per_client = 64;  // the same, from one client address
    RequestLimits limits;
};

class HttpServer {
public:
    HttpServer(Backend& backend, ServerOptions options);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds the address; fails naming it (in use, no permission, bad host).
    Status bind();
    int port() const;
    // Serves until stop() or drain() finishes; call after bind().
    Status serve();
    // From another thread: refuse new requests and close idle and slow connections at once;
    // the admitted requests run on for up to shutdown_timeout_s, then are cut; serve() then
    // returns.
    void drain();

    // The Prometheus text of /metrics (for tests and logs).
    std::string metrics_text() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tdm::server
