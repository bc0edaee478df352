/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/http_transport.h: `tandem serve`'s HTTP/1.1 server: sockets, connections and
// their deadlines, request framing, responses, graceful shutdown. Routes, authentication and
// admission are its user's (serve/http_server.h).
//
// Why our own rather than cpp-httplib (0.11, as Debian packages it, which served before):
// its pool gives each connection a thread for the connection's whole life, and its reads
// time out only when no byte comes for 5 s, so a few dozen clients sending a byte a second
// held every thread; it drops what a pipelined client sent after its first request (the
// stream that buffered it is destroyed between requests); it reads a chunked body whole
// before its size limit applies; and it gives a handler no way to learn that its client has
// gone. Its compiled library does not let any of that be changed from outside. Boost.Beast
// would hold it, at the cost of Asio and a long compile for a server this small.
//
// The design: one event-loop thread (serve()) accepts, reads and parses every connection
// with poll(), with a deadline for the headers (counted from when the connection is ready
// for a request) and one for the body, and caps the connections open at once, in all and
// per client address (beyond either, a 503 and the connection closed). A whole request goes
// to a pool of handler threads; a slow client costs a buffer, never a thread. A connection
// carries one request at a time: the handler writes the answer, then the connection returns
// to the loop, which takes the next request already buffered (pipelining: answered in
// order). While a handler runs, client_gone() tells it whether the client has hung up.
#pragma once

#include "common/error.h"
#include "serve/http_request_parser.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::server {

struct TransportOptions {
    std::string host = "127.0.0.1";
    int port = 8080;  // 0: any free port
    size_t max_header_bytes = size_t(64) << 10;
    size_t max_body_bytes = size_t(8) << 20;
    uint32_t max_connections = 256;           // open at once, in all (bind() lowers it to fit the open-file limit)
    uint32_t max_connections_per_client = 64;  // open at once from one address
    uint32_t handler_threads = 8;             // requests handled at once
    // A request's line and headers must be in this long after the connection is ready for
    // it (accepted, or its previous answer sent); an idle connection closes then too.
    std::chrono::milliseconds header_timeout{10'000};
    std::chrono::milliseconds body_timeout{60'000};   // from the end of the headers
    // An answer is given up when no byte of it goes out for this long, or when its waits for
    // the client add up to more than this at under 16 KiB/s on average (a slow reader).
    std::chrono::milliseconds write_timeout{30'000};
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// A handler's side of one exchange: a whole answer (send) or a stream (start_stream, write,
// end_stream, in chunked transfer coding). Used by one handler thread only.
class HttpResponder {
public:
    virtual ~HttpResponder() = default;
    virtual void send(int status, std::string_view content_type, std::string_view body,
                      const HttpHeaders& headers = {}) = 0;
    // false: the client has gone (as for every later write).
    virtual bool start_stream(int status, std::string_view content_type, const HttpHeaders& headers = {}) = 0;
    virtual bool write(std::string_view data) = 0;
    virtual void end_stream() = 0;
    // The status sent (0: nothing yet).
    virtual int status() const = 0;
    // Whether the client has closed its side or the connection was cut (shutdown's
    // deadline): its answer will reach nobody. Cheap enough to ask at every token.
    virtual bool client_gone() const = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;
// The body of an answer the transport gives itself (413, 431, 503 when full, ...), as JSON.
using HttpErrorBody = std::function<std::string(int status, std::string_view message, std::string_view code)>;

class HttpTransport {
public:
    HttpTransport(TransportOptions options, HttpHandler handler, HttpErrorBody error_body);
    ~HttpTransport();
    HttpTransport(const HttpTransport&) = delete;
    HttpTransport& operator=(const HttpTransport&) = delete;

    // Binds and listens; fails naming the address.
    Status bind();
    int port() const;
    // Serves on this thread until shutdown() has finished.
    Status serve();
    // From any thread: stop accepting, close the connections not being answered (idle, or
    // still sending a request) at once, and let the answers under way finish within `grace`;
    // past it their connections are cut (client_gone() turns true). serve() then returns.
    void shutdown(std::chrono::milliseconds grace);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tdm::server
