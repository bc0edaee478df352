// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_transport_test.cpp: `tandem serve` against clients a library would not
// be: slow ones holding connections open, too many at once, pipelined requests, bad
// framing, a chunked body far past the limit, clients that hang up while their answer is
// made, and SIGTERM with all of that going on. Raw sockets on loopback; every wait has a
// generous bound, so a failure is a hang caught in seconds, never a timing threshold.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "cli/cli_models.h"
#include "cli/serve_process.h"

namespace tdm {
namespace {

using nlohmann::json;
using test::ServeProcess;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::string& model_transport() {
    static const std::string dir = test::make_temp_dir("serve-transport");
    return cli_test_model(dir, "qwen3");
}

// ---------------------------------------------------------------------------------------
// A raw HTTP/1.1 client.

class Socket {
public:
    // Connects to 127.0.0.1:port, from `from` when given (another loopback address).
    explicit Socket(int port, const char* from = nullptr) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        if (from) {
            inet_pton(AF_INET, from, &a.sin_addr);
            if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
        }
        a.sin_port = htons(uint16_t(port));
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
    }
    ~Socket() { close(); }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    bool ok() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    bool send(std::string_view data) {
        while (!data.empty()) {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n <= 0) return false;
            data.remove_prefix(size_t(n));
        }
        return true;
    }
    // Reads what is there within `timeout`; false at the end of the stream or a timeout.
    bool read_some(std::chrono::milliseconds timeout) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, int(timeout.count())) <= 0) return false;
        char buf[65536];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) return false;
        in.append(buf, size_t(n));
        return true;
    }
    // Whether the server has closed the connection (within `timeout`).
    bool closed_by_server(std::chrono::milliseconds timeout) {
        const auto until = Clock::now() + timeout;
        while (Clock::now() < until) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            char buf[4096];
            if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;
        }
        return false;
    }

    std::string in;  // received, not yet parsed

private:
    int fd_ = -1;
};

struct RawResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    json json_body() const { return json::parse(body, nullptr, false); }
};

// The next response on `s` (Content-Length framed), or none within `timeout`.
std::optional<RawResponse> read_response(Socket& s, std::chrono::milliseconds timeout = 10s) {
    const auto until = Clock::now() + timeout;
    const auto left = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()); };
    size_t end;
    while ((end = s.in.find("\r\n\r\n")) == std::string::npos)
        if (left().count() <= 0 || !s.read_some(left())) return std::nullopt;
    RawResponse r;
    const std::string head = s.in.substr(0, end);
    r.status = std::atoi(head.c_str() + head.find(' ') + 1);
    size_t at = head.find("\r\n");
    while (at != std::string::npos) {
        const size_t next = head.find("\r\n", at + 2);
        const std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
        const size_t colon = line.find(':');
        std::string name = line.substr(0, colon);
        for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
        at = next;
    }
    const size_t length = std::stoul(r.headers.count("content-length") ? r.headers["content-length"] : "0");
    while (s.in.size() < end + 4 + length)
        if (left().count() <= 0 || !s.read_some(left())) return std::nullopt;
    r.body = s.in.substr(end + 4, length);
    s.in.erase(0, end + 4 + length);
    return r;
}

std::string post_request(const std::string& path, const std::string& body, const std::string& extra = "") {
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" + extra +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A request through cpp-httplib's client, timed; status 0 when no answer came in 20 s.
struct Timed {
    int status = 0;
    std::string body;
    double seconds = 0;
};
Timed timed_post(int port, const std::string& path, const std::string& body) {
    const auto t0 = Clock::now();
    httplib::Client cli("127.0.0.1", port);
    cli.set_connection_timeout(10);
    cli.set_read_timeout(20);
    cli.set_write_timeout(20);
    auto res = cli.Post(path, body, "application/json");
    Timed t;
    t.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (res) {
        t.status = res->status;
        t.body = res->body;
    }
    return t;
}

std::string metrics(int port) {
    httplib::Client cli("127.0.0.1", port);
    auto res = cli.Get("/metrics");
    return res ? res->body : "";
}

// /metrics once it has every line of `lines`, or after `timeout` as it then is.
std::string metrics_when(int port, const std::vector<std::string>& lines, std::chrono::seconds timeout) {
    const auto until = Clock::now() + timeout;
    while (true) {
        const std::string body = metrics(port);
        if (std::all_of(lines.begin(), lines.end(), [&](const std::string& l) { return body.find(l + "\n") != std::string::npos; }) ||
            Clock::now() > until)
            return body;
        std::this_thread::sleep_for(20ms);
    }
}

int64_t metric_value(const std::string& text, const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stoll(text.substr(at + name.size() + 2));
}

int64_t rss_kib(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
    return -1;
}

// Keeps connections half-sent, one more byte each second, until stopped.
class SlowClients {
public:
    SlowClients(int port, int n_headers, int n_bodies) {
        for (int i = 0; i < n_headers + n_bodies; ++i) {
            auto s = std::make_unique<Socket>(port);
            if (i < n_headers) s->send("GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: ");
            else s->send("POST /tokenize HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n{\"content\": \"");
            sockets_.push_back(std::move(s));
        }
        dripper_ = std::thread([this] {
            while (!stop_) {
                for (auto& s : sockets_) s->send("a");
                for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(100ms);
            }
        });
    }
    ~SlowClients() {
        stop_ = true;
        dripper_.join();
    }
    std::vector<std::unique_ptr<Socket>>& sockets() { return sockets_; }

private:
    std::vector<std::unique_ptr<Socket>> sockets_;
    std::atomic<bool> stop_{false};
    std::thread dripper_;
};

// ---------------------------------------------------------------------------------------

TEST(ServeTransport, slow_header_and_slow_body_clients_beyond_the_pool_do_not_starve_a_normal_request) {
    // --parallel 1 --queue 0: cpp-httplib's pool had 5 threads; 40 slow clients
    ServeProcess server({"-m", model_transport(), "--parallel", "1", "--queue", "0"});
    ASSERT_TRUE(server.started()) << server.log();
    SlowClients slow(server.port(), 24, 16);
    std::this_thread::sleep_for(1500ms);  // each has dripped a byte: a thread-per-connection server is stuck now
    const Timed health = timed_post(server.port(), "/tokenize", R"({"content": "Hello"})");
    EXPECT_EQ(health.status, 200) << health.body;
    EXPECT_LT(health.seconds, 5.0);
    const Timed generated = timed_post(server.port(), "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})");
    EXPECT_EQ(generated.status, 200) << generated.body;
    EXPECT_LT(generated.seconds, 5.0);
}

TEST(ServeTransport, connections_beyond_the_caps_get_503_and_are_closed) {
    ServeProcess server({"-m", model_transport(), "--max-connections", "6", "--max-connections-per-client", "4"});
    ASSERT_TRUE(server.started()) << server.log();
    std::vector<std::unique_ptr<Socket>> held;
    for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<Socket>(server.port()));
    Socket fifth(server.port());
    ASSERT_TRUE(fifth.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto refused = read_response(fifth);
    ASSERT_TRUE(refused) << "no answer";
    EXPECT_EQ(refused->status, 503) << refused->body;
    EXPECT_EQ(refused->headers["connection"], "close");
    EXPECT_EQ(refused->json_body()["error"]["code"], "too_many_connections") << refused->body;
    EXPECT_TRUE(fifth.closed_by_server(5s));

    // another client address fills the server's cap
    for (int i = 0; i < 2; ++i) held.push_back(std::make_unique<Socket>(server.port(), "127.0.0.2"));
    Socket seventh(server.port(), "127.0.0.2");
    ASSERT_TRUE(seventh.ok());
    seventh.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    auto full = read_response(seventh);
    ASSERT_TRUE(full) << "no answer";
    EXPECT_EQ(full->status, 503);
    EXPECT_NE(full->json_body()["error"]["message"].get<std::string>().find("6 connections"), std::string::npos)
        << full->body;

    // a held connection still works, and once they close there is room again
    ASSERT_TRUE(held[0]->send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto ok = read_response(*held[0]);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    held.clear();
    Timed after;
    for (int i = 0; i < 100 && after.status != 200; ++i) {
        after = timed_post(server.port(), "/tokenize", R"({"content": "Hi"})");
        if (after.status != 200) std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(after.status, 200) << after.body;
}

TEST(ServeTransport, max_connections_past_the_open_file_limit_is_capped_and_a_flood_is_survived) {
    // 256 files at most: (256 - 128 kept for the rest) / 2 (a connection, and one lingering) = 64
    ServeProcess server({"-m", model_transport(), "--max-connections", "1000", "--max-connections-per-client", "1000"},
                        256);
    ASSERT_TRUE(server.started()) << server.log();
    EXPECT_NE(server.log().find("holding at most 64 connections at once, not 1000"), std::string::npos) << server.log();

    // more connections than the server has descriptors: the first 64 are held, the next are
    // refused, and those past every descriptor wait in the backlog while the loop waits too
    std::vector<std::unique_ptr<Socket>> flood;
    for (int i = 0; i < 300; ++i) flood.push_back(std::make_unique<Socket>(server.port()));
    std::optional<RawResponse> refused;
    for (auto& s : flood)
        if (s->send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n") && (refused = read_response(*s, 200ms)) &&
            refused->status == 503)
            break;
    ASSERT_TRUE(refused && refused->status == 503) << "no connection was refused";
    EXPECT_NE(refused->json_body()["error"]["message"].get<std::string>().find("64 connections"), std::string::npos)
        << refused->body;

    // once they close, the server serves again
    flood.clear();
    Timed after;
    for (int i = 0; i < 200 && after.status != 200; ++i) {
        after = timed_post(server.port(), "/tokenize", R"({"content": "Hi"})");
        if (after.status != 200) std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(after.status, 200) << after.body;
}

TEST(ServeTransport, five_pipelined_requests_are_answered_in_order) {
    ServeProcess server({"-m", model_transport()});
    ASSERT_TRUE(server.started()) << server.log();
    std::vector<std::string> contents, expected;
    std::string all;
    for (int i = 0; i < 5; ++i) {
        contents.push_back(std::string(size_t(i + 1), 'x') + " " + std::to_string(i));
        const std::string body = json{{"content", contents.back()}}.dump();
        expected.push_back(timed_post(server.port(), "/tokenize", body).body);
        all += post_request("/tokenize", body);
    }
    Socket s(server.port());
    ASSERT_TRUE(s.send(all));  // one write: the five arrive together
    for (int i = 0; i < 5; ++i) {
        auto r = read_response(s);
        ASSERT_TRUE(r) << "request " << i << " was not answered";
        EXPECT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(r->body, expected[size_t(i)]) << "request " << i << " answered out of order";
    }
}

TEST(ServeTransport, malformed_content_length_is_400_and_the_server_keeps_serving) {
    ServeProcess server({"-m", model_transport()});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string head = "POST /tokenize HTTP/1.1\r\nHost: t\r\n";
    const std::string body = R"({"content":"a"})";  // 15 bytes
    for (const std::string& framing :
         {std::string("Content-Length: abc\r\n"), std::string("Content-Length: 15\r\nContent-Length: 15\r\n"),
          std::string("Content-Length: 15\r\nContent-Length: 16\r\n"), std::string("Content-Length: +15\r\n"),
          std::string("Content-Length: 15, 15\r\n"), std::string("Content-Length: -1\r\n"),
          std::string("Content-Length: 15\r\nTransfer-Encoding: chunked\r\n")}) {
        Socket s(server.port());
        ASSERT_TRUE(s.send(head + framing + "\r\n" + body));
        auto r = read_response(s);
        ASSERT_TRUE(r) << framing;
        EXPECT_EQ(r->status, 400) << framing << " -> " << r->body;
        EXPECT_TRUE(r->json_body().contains("error")) << r->body;
        EXPECT_EQ(r->headers["connection"], "close") << framing;
    }
    EXPECT_EQ(timed_post(server.port(), "/tokenize", body).status, 200);
}

TEST(ServeTransport, a_chunked_body_past_the_limit_is_refused_while_it_arrives) {
    const size_t limit = size_t(1) << 20;
    ServeProcess server({"-m", model_transport(), "--max-body", std::to_string(limit)});
    ASSERT_TRUE(server.started()) << server.log();
    ASSERT_EQ(timed_post(server.port(), "/tokenize", R"({"content": "warm"})").status, 200);
    const int64_t rss_before = rss_kib(server.pid());
    Socket s(server.port());
    ASSERT_TRUE(s.send("POST /tokenize HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"));
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
    size_t sent = 0;
    bool answered = false;
    const auto until = Clock::now() + 30s;
    while (sent < (size_t(128) << 20) && Clock::now() < until) {  // 128 MiB at most
        pollfd p{s.fd(), POLLIN | POLLOUT, 0};
        if (::poll(&p, 1, 1000) <= 0) continue;
        if (p.revents & POLLIN) {
            answered = true;
            break;
        }
        const ssize_t n = ::send(s.fd(), chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0 && errno != EAGAIN) break;  // the server closed
        if (n > 0) sent += size_t(n);
    }
    ASSERT_TRUE(answered) << "no answer after " << sent << " bytes";
    auto r = read_response(s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413) << r->body;
    // refused at the limit: what the socket buffers hold besides, not the body
    EXPECT_LT(sent, size_t(32) << 20);
    const int64_t rss_after = rss_kib(server.pid());
    EXPECT_LT(rss_after - rss_before, 16 * 1024) << rss_before << " KiB -> " << rss_after << " KiB";
    EXPECT_EQ(timed_post(server.port(), "/tokenize", R"({"content": "still here"})").status, 200);
}

// Two requests that would run for minutes; their clients hang up. The generations stop,
// the places are free, and far fewer tokens than asked for were made.
TEST(ServeTransport, abandoned_non_streaming_requests_are_cancelled_and_free_their_slots) {
    ServeProcess server({"-m", model_transport(), "--parallel", "2", "--queue", "0", "-c", "65536"});
    ASSERT_TRUE(server.started()) << server.log();
    const std::string body = R"({"prompt": "Once", "max_tokens": 60000, "ignore_eos": true})";
    {
        Socket a(server.port()), b(server.port());
        ASSERT_TRUE(a.send(post_request("/v1/completions", body)));
        ASSERT_TRUE(b.send(post_request("/v1/completions", body)));
        const std::string busy = metrics_when(server.port(), {"tandem_requests_running 2"}, 30s);
        ASSERT_NE(busy.find("tandem_requests_running 2\n"), std::string::npos) << busy;
    }  // both hang up
    const std::vector<std::string> idle = {"tandem_requests_running 0", "tandem_sequences_running 0"};
    const std::string after = metrics_when(server.port(), idle, 10s);
    for (const std::string& line : idle) EXPECT_NE(after.find(line + "\n"), std::string::npos) << after;
    EXPECT_LT(metric_value(after, "tandem_generation_tokens_total"), 2 * 60000) << after;
    const Timed next = timed_post(server.port(), "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})");
    EXPECT_EQ(next.status, 200) << next.body;
}

// SIGTERM: idle and slow connections close at once, the running stream is cut at the
// shutdown timeout, and the process exits soon after, whatever the slow clients do.
TEST(ServeTransport, sigterm_with_slow_clients_exits_within_the_shutdown_timeout) {
    ServeProcess server({"-m", model_transport(), "-c", "65536", "--shutdown-timeout", "2"});
    ASSERT_TRUE(server.started()) << server.log();
    SlowClients slow(server.port(), 10, 6);
    Socket idle(server.port());
    Socket streaming(server.port());
    ASSERT_TRUE(streaming.send(post_request(
        "/v1/completions", R"({"prompt": "Once", "max_tokens": 60000, "ignore_eos": true, "stream": true})")));
    ASSERT_TRUE(streaming.read_some(30s)) << "the stream did not start";
    const auto t0 = Clock::now();
    EXPECT_EQ(server.terminate(), 0) << server.log();
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_LT(took, 2.0 + 4.0) << "exited " << took << " s after SIGTERM";
    EXPECT_TRUE(idle.closed_by_server(1s));
    for (auto& s : slow.sockets()) EXPECT_TRUE(s->closed_by_server(1s));
    EXPECT_TRUE(streaming.closed_by_server(5s));
}

}  // namespace
}  // namespace tdm
