// SPDX-License-Identifier: Apache-2.0
// tests/serve/http_request_parser_test.cpp: the server's HTTP/1.1 request parser
// (serve/http_request_parser.h): requests whole and in pieces, pipelined requests kept for
// later, chunked bodies, and a refusal with its status for each malformed or oversized form.
// To add a case: feed the bytes, check the progress, then the request or the error's status.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "serve/http_request_parser.h"

namespace tdm::server {
namespace {

using Progress = HttpRequestParser::Progress;

// Feeds `bytes` one at a time (every split point is a packet boundary somewhere).
Progress feed_bytewise(HttpRequestParser& p, std::string& in, std::string_view bytes) {
    Progress got = Progress::need_more;
    for (char c : bytes) {
        in += c;
        got = p.feed(in);
        if (got != Progress::need_more) break;
    }
    return got;
}

TEST(HttpRequestParser, a_request_fed_byte_by_byte_is_the_request_sent_whole) {
    const std::string raw = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                            "Content-Length: 12\r\n\r\n{\"prompt\":1}";
    HttpRequestParser p(4096, 4096);
    std::string in;
    ASSERT_EQ(feed_bytewise(p, in, raw), Progress::complete);
    HttpRequest r = p.take();
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/v1/completions?x=1");
    EXPECT_EQ(r.path, "/v1/completions");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.body, "{\"prompt\":1}");
    EXPECT_TRUE(r.keep_alive);
    EXPECT_TRUE(in.empty());
}

TEST(HttpRequestParser, pipelined_requests_come_out_one_at_a_time_in_order) {
    std::string in;
    for (int i = 0; i < 5; ++i)
        in += "POST /tokenize HTTP/1.1\r\nContent-Length: 1\r\n\r\n" + std::to_string(i);
    HttpRequestParser p(4096, 4096);
    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(p.feed(in), Progress::complete) << i;
        EXPECT_EQ(p.take().body, std::to_string(i));
    }
    EXPECT_TRUE(in.empty());
    EXPECT_EQ(p.feed(in), Progress::need_more);
    EXPECT_FALSE(p.started());
}

TEST(HttpRequestParser, a_chunked_body_is_decoded_with_extensions_and_trailers) {
    HttpRequestParser p(4096, 4096);
    std::string in;
    const std::string raw = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\nGET";
    ASSERT_EQ(feed_bytewise(p, in, raw.substr(0, raw.size() - 3)), Progress::complete);
    EXPECT_EQ(p.take().body, "hello 0123456789");
}

TEST(HttpRequestParser, connection_close_and_http_1_0_end_the_connection) {
    HttpRequestParser p(4096, 4096);
    std::string in = "GET /health HTTP/1.1\r\nConnection: close\r\n\r\nGET /health HTTP/1.0\r\n\r\n"
                     "GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
    ASSERT_EQ(p.feed(in), Progress::complete);
    EXPECT_FALSE(p.take().keep_alive);
    ASSERT_EQ(p.feed(in), Progress::complete);
    EXPECT_FALSE(p.take().keep_alive);
    ASSERT_EQ(p.feed(in), Progress::complete);
    EXPECT_TRUE(p.take().keep_alive);
}

struct Refusal {
    std::string name, raw;
    int status;
};

TEST(HttpRequestParser, rejects_malformed_framing_with_its_status) {
    const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: a\r\n";
    const std::vector<Refusal> cases = {
        {"non-numeric Content-Length", post + "Content-Length: abc\r\n\r\n", 400},
        {"signed Content-Length", post + "Content-Length: +5\r\n\r\nhello", 400},
        {"negative Content-Length", post + "Content-Length: -1\r\n\r\n", 400},
        {"a list as Content-Length", post + "Content-Length: 5, 5\r\n\r\nhello", 400},
        {"Content-Length twice, equal", post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400},
        {"Content-Length twice, different", post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400},
        {"Content-Length with Transfer-Encoding",
         post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"an empty Content-Length", post + "Content-Length:\r\n\r\n", 400},
        {"a huge Content-Length", post + "Content-Length: 99999999999999999999999\r\n\r\n", 400},
        {"an unknown transfer coding", post + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
        {"a bad chunk size", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"a chunk longer than its size", post + "Transfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 400},
        {"a folded header", post + "X-A: 1\r\n  continued\r\n\r\n", 400},
        {"a space before the colon", post + "X-A : 1\r\n\r\n", 400},
        {"a target not starting with /", "GET http//x HTTP/1.1\r\n\r\n", 400},
        {"HTTP/2 in the request line", "GET / HTTP/2.0\r\n\r\n", 505},
        {"no version", "GET /\r\n\r\n", 400},
        {"an unknown expectation", post + "Expect: 200-ok\r\n\r\n", 417},
    };
    for (const Refusal& c : cases) {
        HttpRequestParser p(4096, 1000);
        std::string in = c.raw;
        EXPECT_EQ(p.feed(in), Progress::failed) << c.name;
        EXPECT_EQ(p.error().status, c.status) << c.name << ": " << p.error().message;
        EXPECT_FALSE(p.error().message.empty()) << c.name;
    }
}

TEST(HttpRequestParser, rejects_a_content_length_over_the_limit_before_the_body) {
    HttpRequestParser p(4096, 1000);
    std::string in = "POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n";
    EXPECT_EQ(p.feed(in), Progress::failed);
    EXPECT_EQ(p.error().status, 413);
}

TEST(HttpRequestParser, rejects_a_chunked_body_at_the_first_chunk_past_the_limit) {
    HttpRequestParser p(4096, 1000);
    std::string in = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    ASSERT_EQ(p.feed(in), Progress::need_more);
    size_t sent = 0;
    Progress got = Progress::need_more;
    while (got == Progress::need_more && sent < 100000) {
        in += "64\r\n" + std::string(100, 'x') + "\r\n";
        sent += 100;
        got = p.feed(in);
    }
    EXPECT_EQ(got, Progress::failed);
    EXPECT_EQ(p.error().status, 413);
    EXPECT_EQ(sent, 1100u) << "refused at the chunk that crosses 1000 bytes";
    // a chunk that declares more than the limit is refused at its size line, before its data
    HttpRequestParser q(4096, 1000);
    std::string big = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\n";
    EXPECT_EQ(q.feed(big), Progress::failed);
    EXPECT_EQ(q.error().status, 413);
}

TEST(HttpRequestParser, rejects_headers_over_the_limit_without_their_end) {
    HttpRequestParser p(1024, 1000);
    std::string in = "GET / HTTP/1.1\r\nX-Long: " + std::string(2000, 'a');
    EXPECT_EQ(p.feed(in), Progress::failed);
    EXPECT_EQ(p.error().status, 431);
}

// The searches for a head's end and a line's end resume where the last one stopped: a
// delimiter split across feeds at any point is still found, and a head near the limit
// trickled in byte by byte parses as when sent whole (each byte is scanned once, not once
// per feed, which a single loop thread serving every connection depends on).
TEST(HttpRequestParser, a_60_kib_head_and_chunk_lines_fed_byte_by_byte_parse_whole) {
    std::string head = "POST /big HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; head.size() < (size_t(60) << 10); ++i)
        head += "X-Filler-" + std::to_string(i) + ": " + std::string(200, char('a' + i % 26)) + "\r\n";
    const size_t fields = size_t(std::count(head.begin(), head.end(), '\n')) - 1;
    const std::string raw = head + "Transfer-Encoding: chunked\r\n\r\n" + "5;" + std::string(900, 'e') +
                            "\r\nhello\r\n0\r\nX-Trailer: " + std::string(500, 't') + "\r\n\r\n";
    HttpRequestParser p(size_t(64) << 10, 4096);
    std::string in;
    ASSERT_EQ(feed_bytewise(p, in, raw), Progress::complete);
    HttpRequest r = p.take();
    EXPECT_EQ(r.path, "/big");
    EXPECT_EQ(r.headers.size(), fields + 1);
    EXPECT_EQ(r.header("x-filler-7"), std::string(200, 'h'));
    EXPECT_EQ(r.body, "hello");
    // the parser is ready for the next request on the connection, fed the same way
    EXPECT_TRUE(in.empty());
    ASSERT_EQ(feed_bytewise(p, in, "GET /next HTTP/1.1\r\n\r\n"), Progress::complete);
    EXPECT_EQ(p.take().path, "/next");
}

}  // namespace
}  // namespace tdm::server
