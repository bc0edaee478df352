// SPDX-License-Identifier: Apache-2.0
// tests/serve/http_transport_write_test.cpp: the HTTP transport (serve/http_transport.h)
// in-process, writing a large streamed answer: a client that reads it at a trickle has it
// given up, one that reads at loopback speed gets all of it. Not here: the
// parser (http_request_parser_test.cpp) or `tandem serve` over sockets (tests/cli).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "serve/http_transport.h"

namespace tdm::server {
namespace {

using namespace std::chrono_literals;
using WriteClock = std::chrono::steady_clock;

constexpr size_t kStreamChunk = size_t(64) << 10;
constexpr int kStreamChunks = 512;  // 32 MiB: far more than any socket buffer holds

// A transport whose one route streams kStreamChunks chunks, recording whether every write
// went out (written) or one failed (given_up).
class StreamingServer {
public:
    enum Outcome { pending, written, given_up };

    explicit StreamingServer(std::chrono::milliseconds write_timeout) {
        TransportOptions o;
        o.port = 0;
        o.handler_threads = 1;
        o.write_timeout = write_timeout;
        transport_ = std::make_unique<HttpTransport>(
            o,
            [this](const HttpRequest&, HttpResponder& r) {
                bool ok = r.start_stream(200, "application/octet-stream");
                const std::string chunk(kStreamChunk, 'x');
                for (int i = 0; i < kStreamChunks && ok; ++i) ok = r.write(chunk);
                outcome_ = ok ? written : given_up;
            },
            [](int, std::string_view message, std::string_view) { return std::string(message); });
        bound_ = transport_->bind().ok();
        if (bound_) loop_ = std::thread([this] { (void)transport_->serve(); });
    }
    ~StreamingServer() {
        transport_->shutdown(0ms);
        if (loop_.joinable()) loop_.join();
    }

    bool bound() const { return bound_; }
    int port() const { return transport_->port(); }
    Outcome outcome() const { return outcome_; }

private:
    std::unique_ptr<HttpTransport> transport_;
    std::thread loop_;
    bool bound_ = false;
    std::atomic<Outcome> outcome_{pending};
};

// A connected socket, its request sent; `rcvbuf`: its receive buffer's size (0: the default).
int connect_and_request(int port, int rcvbuf = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    const std::string request = "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
        ::close(fd);
        return -1;
    }
    return fd;
}

TEST(HttpTransportWrite, a_client_reading_a_trickle_has_its_answer_given_up) {
    StreamingServer server(500ms);
    ASSERT_TRUE(server.bound());
    const int fd = connect_and_request(server.port(), 4096);
    ASSERT_GE(fd, 0);
    // 1 KiB every 100 ms (10 KiB/s), under the 16 KiB/s an answer must average once its
    // waits pass 500 ms. (On loopback the sender's buffer is large enough that the stall
    // bound, no room for 500 ms, may end it first; either way it ends.)
    const auto until = WriteClock::now() + 30s;
    char buf[1024];
    while (server.outcome() == StreamingServer::pending && WriteClock::now() < until) {
        if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) == 0) break;
        std::this_thread::sleep_for(100ms);
    }
    ::close(fd);
    EXPECT_EQ(server.outcome(), StreamingServer::given_up);
}

TEST(HttpTransportWrite, a_client_reading_at_full_speed_gets_the_whole_answer) {
    StreamingServer server(5s);  // generous: a loaded machine may pause this client
    ASSERT_TRUE(server.bound());
    const int fd = connect_and_request(server.port());
    ASSERT_GE(fd, 0);
    // read to the stream's last chunk (its bytes may still be in the buffers when the handler
    // has written them all)
    size_t received = 0;
    std::string tail;
    const auto until = WriteClock::now() + 60s;
    std::vector<char> buf(size_t(256) << 10);
    while (!tail.ends_with("\r\n0\r\n\r\n") && WriteClock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n <= 0) break;
        received += size_t(n);
        tail = (tail + std::string(buf.data(), size_t(n))).substr(std::max<size_t>(tail.size() + size_t(n), 7) - 7);
    }
    ::close(fd);
    EXPECT_EQ(server.outcome(), StreamingServer::written);
    EXPECT_GT(received, size_t(kStreamChunks) * kStreamChunk);  // the data, with its head and chunk framing
}

}  // namespace
}  // namespace tdm::server
