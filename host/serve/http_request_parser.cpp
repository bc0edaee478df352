// SPDX-License-Identifier: Apache-2.0
// host/serve/http_request_parser.cpp
#include "serve/http_request_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace tdm::server {

namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr size_t kMaxChunkLine = 1024;  // size, extensions and CRLF

bool is_tchar(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return std::isalnum(u) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Whether the comma-separated list `value` holds `token` (case-insensitive).
bool list_has(std::string_view value, std::string_view token) {
    while (!value.empty()) {
        const size_t comma = value.find(',');
        if (lower(trim(value.substr(0, comma))) == token) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (n == name) return v;
    return {};
}

HttpRequestParser::Progress HttpRequestParser::fail(int status, std::string message) {
    state_ = State::failed;
    error_ = {status, std::move(message)};
    return Progress::failed;
}

HttpRequestParser::Progress HttpRequestParser::feed(std::string& in) {
    if (state_ == State::failed) return Progress::failed;
    if (state_ == State::head) {
        // RFC 9112 §2.2: empty lines before a request line are ignored (a client's stray CRLF)
        if (!started_) {
            size_t skip = 0;
            while (in.compare(skip, 2, kCrlf) == 0) skip += 2;
            in.erase(0, skip);
        }
        if (!in.empty()) started_ = true;
        const Progress p = parse_head(in);
        if (p != Progress::complete) return p;
    }
    return parse_body(in);
}

HttpRequestParser::Progress HttpRequestParser::parse_head(std::string& in) {
    const size_t end = in.find("\r\n\r\n", scanned_ >= 3 ? scanned_ - 3 : 0);
    if (end == std::string::npos) {
        if (in.size() > max_header_bytes_)
            return fail(431, fmt::format("the request headers are larger than {} bytes", max_header_bytes_));
        scanned_ = in.size();
        return Progress::need_more;
    }
    scanned_ = 0;
    if (end + 4 > max_header_bytes_)
        return fail(431, fmt::format("the request headers are larger than {} bytes", max_header_bytes_));
    const std::string_view head = std::string_view(in).substr(0, end + 2);
    HttpRequest& r = request_;

    // request line: METHOD SP TARGET SP HTTP/1.x
    size_t line_end = head.find(kCrlf);
    const std::string_view line = head.substr(0, line_end);
    const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1) return fail(400, "a malformed request line");
    r.method = std::string(line.substr(0, sp1));
    r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    const std::string_view version = line.substr(sp2 + 1);
    if (!is_token(r.method)) return fail(400, "a malformed request method");
    if (r.target.empty() || r.target[0] != '/' ||
        std::any_of(r.target.begin(), r.target.end(), [](char c) { return c <= ' ' || c == 0x7f; }))
        return fail(400, "a malformed request target");
    if (version == "HTTP/1.1") r.minor_version = 1;
    else if (version == "HTTP/1.0") r.minor_version = 0;
    else if (version.starts_with("HTTP/")) return fail(505, fmt::format("{} is not supported: HTTP/1.1 is", version));
    else return fail(400, "a malformed request line");
    r.path = r.target.substr(0, r.target.find('?'));

    // header fields: NAME ":" OWS VALUE OWS, no folding (RFC 9112 §5.2: obs-fold is refused)
    size_t at = line_end + 2;
    while (at < head.size()) {
        line_end = head.find(kCrlf, at);
        const std::string_view field = head.substr(at, line_end - at);
        at = line_end + 2;
        const size_t colon = field.find(':');
        if (colon == std::string_view::npos || !is_token(field.substr(0, colon)))
            return fail(400, "a malformed header field");
        const std::string_view value = trim(field.substr(colon + 1));
        if (std::any_of(value.begin(), value.end(), [](char c) { return c == '\r' || c == '\n' || c == 0; }))
            return fail(400, "a malformed header value");
        r.headers.emplace_back(lower(field.substr(0, colon)), std::string(value));
    }
    in.erase(0, end + 4);

    // framing (RFC 9112 §6): chunked, or Content-Length, or no body
    const std::string* length = nullptr;
    const std::string* encoding = nullptr;
    std::string connection;
    for (const auto& [name, value] : r.headers) {
        if (name == "content-length") {
            if (length) return fail(400, "Content-Length is given more than once");
            length = &value;
        } else if (name == "transfer-encoding") {
            if (encoding) return fail(400, "Transfer-Encoding is given more than once");
            encoding = &value;
        } else if (name == "connection") {
            connection += value + ",";
        } else if (name == "expect") {
            if (lower(value) != "100-continue") return fail(417, fmt::format("the expectation '{}' is not supported", value));
            r.expect_continue = true;
        }
    }
    r.keep_alive = r.minor_version == 1 ? !list_has(connection, "close") : list_has(connection, "keep-alive");
    if (length && encoding) return fail(400, "Content-Length and Transfer-Encoding together");
    if (encoding) {
        if (lower(*encoding) != "chunked")
            return fail(501, fmt::format("the transfer coding '{}' is not supported: only chunked", *encoding));
        state_ = State::chunk_size;
        return Progress::complete;
    }
    if (length) {
        const std::string& v = *length;
        if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return fail(400, fmt::format("Content-Length '{}' is not a number of bytes", v));
        remaining_ = std::stoull(v);
        if (remaining_ > max_body_bytes_)
            return fail(413, fmt::format("the request body is larger than {} bytes, the most this server accepts",
                                         max_body_bytes_));
        state_ = State::fixed_body;
        return Progress::complete;
    }
    state_ = State::done;
    return Progress::complete;
}

// The CRLF ending the line that starts at `from`, resuming where the last search of this
// line stopped; npos (remembering how far it looked) when the line is not whole yet.
size_t HttpRequestParser::find_line_end(const std::string& in, size_t from) {
    const size_t eol = in.find(kCrlf, from + (scanned_ >= 1 ? scanned_ - 1 : 0));
    scanned_ = eol == std::string::npos ? in.size() - from : 0;
    return eol;
}

HttpRequestParser::Progress HttpRequestParser::parse_body(std::string& in) {
    HttpRequest& r = request_;
    size_t used = 0;
    const auto finish = [&](Progress p) {
        in.erase(0, used);
        return p;
    };
    while (true) {
        switch (state_) {
        case State::fixed_body: {
            const size_t n = size_t(std::min<uint64_t>(remaining_, in.size() - used));
            r.body.append(in, used, n);
            used += n;
            remaining_ -= n;
            if (remaining_ > 0) return finish(Progress::need_more);
            state_ = State::done;
            break;
        }
        case State::chunk_size: {
            const size_t eol = find_line_end(in, used);
            if (eol == std::string::npos) {
                if (in.size() - used > kMaxChunkLine) return fail(400, "a malformed chunk size line");
                return finish(Progress::need_more);
            }
            const std::string_view line = std::string_view(in).substr(used, eol - used);
            const std::string_view size = trim(line.substr(0, line.find(';')));
            if (size.empty() || size.size() > 15 || !std::all_of(size.begin(), size.end(), [](char c) {
                    return std::isxdigit(static_cast<unsigned char>(c));
                }))
                return fail(400, "a malformed chunk size");
            remaining_ = std::stoull(std::string(size), nullptr, 16);
            used = eol + 2;
            if (r.body.size() + remaining_ > max_body_bytes_)
                return fail(413, fmt::format("the request body is larger than {} bytes, the most this server accepts",
                                             max_body_bytes_));
            state_ = remaining_ == 0 ? State::trailers : State::chunk_data;
            break;
        }
        case State::chunk_data: {
            const size_t n = size_t(std::min<uint64_t>(remaining_, in.size() - used));
            r.body.append(in, used, n);
            used += n;
            remaining_ -= n;
            if (remaining_ > 0) return finish(Progress::need_more);
            state_ = State::chunk_data_end;
            break;
        }
        case State::chunk_data_end:
            if (in.size() - used < 2) return finish(Progress::need_more);
            if (in.compare(used, 2, kCrlf) != 0) return fail(400, "a chunk longer than its size");
            used += 2;
            state_ = State::chunk_size;
            break;
        case State::trailers: {  // read and dropped: nothing here uses them
            const size_t eol = find_line_end(in, used);
            if (eol == std::string::npos) {
                if (trailer_bytes_ + in.size() - used > max_header_bytes_)
                    return fail(431, "the request trailers are too large");
                return finish(Progress::need_more);
            }
            trailer_bytes_ += eol + 2 - used;
            if (trailer_bytes_ > max_header_bytes_) return fail(431, "the request trailers are too large");
            const bool last = eol == used;
            used = eol + 2;
            if (last) state_ = State::done;
            break;
        }
        case State::done:
            return finish(Progress::complete);
        case State::head:
        case State::failed:
            return finish(Progress::failed);
        }
    }
}

HttpRequest HttpRequestParser::take() {
    HttpRequest out = std::move(request_);
    request_ = HttpRequest{};
    state_ = State::head;
    started_ = false;
    remaining_ = 0;
    trailer_bytes_ = 0;
    scanned_ = 0;
    return out;
}

}  // namespace tdm::server
