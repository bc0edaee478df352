/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/http_request_parser.h: strict, incremental parsing of HTTP/1.1 requests for
// `tandem serve`'s transport (serve/http_transport.h). Bytes are fed as they arrive; the
// parser says when a request is whole and keeps what follows it (a pipelined request) for
// the next. Limits hold while reading: headers past their limit, a Content-Length past the
// body limit, or a chunked body growing past it fail at once, before the bytes are kept.
// Content-Length must be one run of digits, given once, and never with Transfer-Encoding
// (request smuggling rides on the lax readings: RFC 9112 §6.3).
// Not here: sockets, deadlines, responses (serve/http_transport.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::server {

struct HttpRequest {
    std::string method;
    std::string target;   // as sent: "/v1/models?x=1"
    std::string path;     // the target without its query: "/v1/models"
    int minor_version = 1;  // HTTP/1.x
    std::vector<std::pair<std::string, std::string>> headers;  // names in lower case, in order
    std::string body;     // decoded (chunked framing removed)
    bool keep_alive = true;       // the client will send another request on this connection
    bool expect_continue = false; // "Expect: 100-continue"

    // The value of the first header named `name` (lower case); "" when absent.
    std::string_view header(std::string_view name) const;
};

// Why a request was refused, with the status to answer it with.
struct HttpParseError {
    int status = 400;
    std::string message;
};

class HttpRequestParser {
public:
    HttpRequestParser(size_t max_header_bytes, size_t max_body_bytes)
        : max_header_bytes_(max_header_bytes), max_body_bytes_(max_body_bytes) {}

    enum class Progress { need_more, complete, failed };

    // Parses what it can of `in`, erasing the bytes it has used (a pipelined request after a
    // complete one stays in `in`). complete: take() the request; failed: error() says why,
    // and the connection must be closed (its framing is lost).
    Progress feed(std::string& in);

    // The request line and headers are in (the body may still be on its way).
    bool headers_done() const { return state_ != State::head; }
    // The headers asked for "100 Continue" before the body.
    bool expects_continue() const { return headers_done() && request_.expect_continue; }
    // Bytes of the current request seen so far (0: none; the connection is idle).
    bool started() const { return started_; }
    HttpRequest take();
    const HttpParseError& error() const { return error_; }

private:
    enum class State { head, fixed_body, chunk_size, chunk_data, chunk_data_end, trailers, done, failed };

    Progress fail(int status, std::string message);
    Progress parse_head(std::string& in);
    Progress parse_body(std::string& in);
    size_t find_line_end(const std::string& in, size_t from);

    const size_t max_header_bytes_;
    const size_t max_body_bytes_;
    State state_ = State::head;
    bool started_ = false;
    HttpRequest request_;
    uint64_t remaining_ = 0;    // fixed_body, chunk_data: bytes still to come
    size_t trailer_bytes_ = 0;  // trailers: counted against max_header_bytes
    // Bytes at the front of what is still unparsed that were searched for the end of the
    // head, a chunk size line or a trailer line without finding it: the next search resumes
    // there (less the delimiter's length less one), so a head sent a byte at a time is
    // scanned once in all, not once per byte.
    size_t scanned_ = 0;
    HttpParseError error_;
};

}  // namespace tdm::server
