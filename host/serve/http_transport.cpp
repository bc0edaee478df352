// SPDX-License-Identifier: Apache-2.0
// host/serve/http_transport.cpp
#include "serve/http_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/log.h"

namespace tdm::server {

namespace {

using MonoClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After an answer that closes a connection with input still coming (a refused body), the
// input is read and dropped this long (or up to this much) before the close, so that the
// close does not reset the connection before the client has read the answer.
constexpr milliseconds kLingerTime{2000};
constexpr size_t kLingerBytes = size_t(4) << 20;
constexpr size_t kReadChunk = size_t(64) << 10;
// Out of descriptors, accept() fails while the connection waits in the backlog, so the
// listener stays readable: it is left out of poll() this long instead of spinning.
constexpr milliseconds kAcceptPause{100};
// Descriptors kept for what is not a connection (the model's files, plugins, the Vulkan
// driver, the listener, logs) when fitting --max-connections to the process's limit.
constexpr uint64_t kReservedDescriptors = 128;
// Past write_timeout spent waiting for a client to take an answer's bytes, the answer must
// have averaged this much over those waits (bytes/s) or it is given up (write_all).
constexpr double kMinWriteRate = 16 << 10;

const char* reason_phrase(int status) {
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

std::string response_head(int status, std::string_view content_type, const HttpHeaders& headers, bool keep_alive,
                          std::string_view framing) {
    std::string h = fmt::format("HTTP/1.1 {} {}\r\n", status, reason_phrase(status));
    if (!content_type.empty()) h += fmt::format("Content-Type: {}\r\n", content_type);
    for (const auto& [name, value] : headers) h += fmt::format("{}: {}\r\n", name, value);
    h += framing;
    h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    return h;
}

std::string peer_address(const sockaddr_storage& a) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
    else if (a.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
    return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// A connection: owned by the event loop while it reads, by one handler thread while its
// request is answered (the loop neither reads it nor closes it then).

struct HttpConnection {
    enum class Phase { reading, handling, lingering };

    HttpConnection(int f, std::string p, const TransportOptions& o)
        : fd(f), peer(std::move(p)), parser(o.max_header_bytes, o.max_body_bytes) {}
    ~HttpConnection() { ::close(fd); }

    const int fd;
    const std::string peer;
    Phase phase = Phase::reading;
    std::string in;  // read, not yet parsed
    HttpRequestParser parser;
    MonoClock::time_point deadline;
    bool body_deadline_set = false;
    bool continue_sent = false;
    size_t lingered = 0;
    bool closed = false;  // dropped from the loop's list at the end of its turn

    HttpRequest request;            // handling: the one being answered
    bool close_after = false;       // handling: the answer said "Connection: close", or failed
    std::atomic<bool> cut{false};   // set by the loop past shutdown's grace
};

// ---------------------------------------------------------------------------------------

struct HttpTransport::Impl {
    TransportOptions opts;
    HttpHandler handler;
    HttpErrorBody error_body;
    int listen_fd = -1;
    int wake_fd = -1;
    int bound_port = 0;

    std::atomic<bool> draining{false};
    MonoClock::time_point drain_deadline{};  // under work_mutex until draining is seen

    std::vector<std::unique_ptr<HttpConnection>> connections;  // loop thread
    MonoClock::time_point accept_paused_until{};                // loop thread: out of descriptors
    std::unordered_map<std::string, uint32_t> open_per_client;  // loop thread: reading + handling
    uint32_t open = 0, handling = 0, lingering = 0;            // loop thread

    std::mutex work_mutex;
    std::condition_variable work_cv;
    std::deque<HttpConnection*> work;       // requests waiting for a handler
    std::vector<HttpConnection*> returned;  // answered, back to the loop
    bool stopping = false;
    std::vector<std::thread> handlers;

    Impl(TransportOptions o, HttpHandler h, HttpErrorBody e)
        : opts(std::move(o)), handler(std::move(h)), error_body(std::move(e)) {
        wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    ~Impl() {
        if (listen_fd >= 0) ::close(listen_fd);
        if (wake_fd >= 0) ::close(wake_fd);
    }

    // Raises the soft limit on open descriptors to the hard one, and lowers max_connections
    // to what then fits (a connection, and another lingering for each).
    void fit_connections_to_descriptors();
    // Ends the handler threads (answers under way are cut) and drops every connection.
    void stop_handlers();

    void wake() {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
    }

    // loop thread
    void accept_all();
    void read_from(HttpConnection& c);
    void parse(HttpConnection& c);
    void dispatch(HttpConnection& c);
    void ready_for_request(HttpConnection& c);
    void refuse(HttpConnection& c, int status, std::string_view message, std::string_view code = "");
    void linger(HttpConnection& c);
    void take_back(HttpConnection& c);
    void forget(HttpConnection& c);
    void close_connection(HttpConnection& c);
    bool past_deadline(HttpConnection& c, MonoClock::time_point now);

    // handler threads
    void handler_loop();
    void answer(HttpConnection& c);
};

// ---------------------------------------------------------------------------------------
// The handler's side of an exchange.

namespace {

class ConnectionResponder final : public HttpResponder {
public:
    ConnectionResponder(HttpConnection& c, const TransportOptions& o, const std::atomic<bool>& draining)
        : c_(c), opts_(o), draining_(draining) {}

    void send(int status, std::string_view content_type, std::string_view body, const HttpHeaders& headers) override {
        if (status_) return;
        status_ = status;
        const bool keep = keep_alive();
        std::string out = response_head(status, content_type, headers, keep,
                                        fmt::format("Content-Length: {}\r\n", body.size()));
        out += body;
        if (!write_all(out) || !keep) c_.close_after = true;
    }

    bool start_stream(int status, std::string_view content_type, const HttpHeaders& headers) override {
        if (status_) return false;
        status_ = status;
        streaming_ = true;
        // HTTP/1.0 has no chunked coding: the stream's end is the connection's
        chunked_ = c_.request.minor_version >= 1;
        const bool keep = chunked_ && keep_alive();
        if (!keep) c_.close_after = true;
        return write_all(response_head(status, content_type, headers, keep, chunked_ ? "Transfer-Encoding: chunked\r\n" : ""));
    }

    bool write(std::string_view data) override {
        if (!streaming_ || ended_) return false;
        if (data.empty()) return !failed_;
        if (!chunked_) return write_all(data);
        std::string chunk = fmt::format("{:x}\r\n", data.size());
        chunk += data;
        chunk += "\r\n";
        return write_all(chunk);
    }

    void end_stream() override {
        if (!streaming_ || ended_) return;
        ended_ = true;
        if (chunked_) write_all("0\r\n\r\n");
    }

    int status() const override { return status_; }

    // POLLRDHUP, a half-close (the client shut its sending side, as `nc -N` does), counts as
    // gone on purpose: it cannot be told from a client that closed (both send a FIN; only a
    // later write would learn which), and cancelling at once frees a slot and its KV.
    // docs/SERVER.md tells clients to keep their side open until the answer has arrived.
    bool client_gone() const override {
        if (failed_ || c_.cut) return true;
        pollfd p{c_.fd, POLLRDHUP, 0};
        return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
    }

    bool streaming() const { return streaming_; }

private:
    bool keep_alive() const { return c_.request.keep_alive && !draining_; }

    // Blocking write of all of `data`. The answer is abandoned (the connection then closes)
    // when no byte goes out for write_timeout, or when its waits for the client to take
    // bytes add up to more than write_timeout while it has taken under kMinWriteRate over
    // them: a client reading one segment just before each stall bound would otherwise hold
    // this handler thread, and its admission place, for as long as it liked.
    bool write_all(std::string_view data) {
        while (!failed_ && !data.empty()) {
            const ssize_t n = ::send(c_.fd, data.data(), data.size(), MSG_NOSIGNAL);
            if (n > 0) {
                data.remove_prefix(size_t(n));
                if (blocked_.count() > 0) drained_ += uint64_t(n);
                stalled_ = {};
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_writable()) continue;
            failed_ = true;
        }
        if (failed_) c_.close_after = true;
        return !failed_;
    }

    // Waits for room in the socket's buffer; false: give the answer up.
    bool wait_writable() {
        using std::chrono::duration_cast;
        const auto budget = opts_.write_timeout;
        // wake at whichever bound comes first: the stall's, or the total's
        auto wait = budget - stalled_;
        if (blocked_ < budget) wait = std::min(wait, duration_cast<milliseconds>(budget - blocked_) + milliseconds(1));
        const auto t0 = MonoClock::now();
        pollfd p{c_.fd, POLLOUT, 0};
        const int r = ::poll(&p, 1, int(std::max<int64_t>(0, wait.count())));
        const auto waited = MonoClock::now() - t0;
        blocked_ += waited;
        stalled_ += duration_cast<milliseconds>(waited);
        if (r < 0) return errno == EINTR;
        if (r > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
        if (stalled_ >= budget) return false;
        const double seconds = std::chrono::duration<double>(blocked_).count();
        return !(blocked_ >= budget && double(drained_) < kMinWriteRate * seconds);
    }

    HttpConnection& c_;
    const TransportOptions& opts_;
    const std::atomic<bool>& draining_;
    int status_ = 0;
    bool streaming_ = false, chunked_ = false, ended_ = false, failed_ = false;
    // bytes sent since the answer first waited: what the client has read meanwhile (the
    // socket buffers filled before then would flatter a slow reader's rate)
    uint64_t drained_ = 0;
    MonoClock::duration blocked_{};        // this answer's waits for the client, in all
    milliseconds stalled_{};               // waited since the last byte went out
};

}  // namespace

void HttpTransport::Impl::handler_loop() {
    while (true) {
        HttpConnection* c = nullptr;
        {
            std::unique_lock lock(work_mutex);
            work_cv.wait(lock, [&] { return stopping || !work.empty(); });
            if (work.empty()) return;
            c = work.front();
            work.pop_front();
        }
        answer(*c);
        {
            std::lock_guard lock(work_mutex);
            returned.push_back(c);
        }
        wake();
    }
}

void HttpTransport::Impl::answer(HttpConnection& c) {
    ConnectionResponder r(c, opts, draining);
    std::string failure;
    try {
        handler(c.request, r);
    } catch (const std::exception& e) {
        failure = fmt::format("internal error: {}", e.what());
    } catch (...) {
        failure = "internal error: an unknown exception";
    }
    if (!r.status()) {
        r.send(500, "application/json", error_body(500, failure.empty() ? "internal error: no answer" : failure, ""), {});
    } else if (r.streaming()) {
        if (failure.empty()) r.end_stream();
        else c.close_after = true;  // a stream cut short must not look complete
    }
    if (!c.request.keep_alive) c.close_after = true;
    c.request = HttpRequest{};
}

// ---------------------------------------------------------------------------------------
// The event loop.

void HttpTransport::Impl::accept_all() {
    while (listen_fd >= 0) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                accept_paused_until = MonoClock::now() + kAcceptPause;  // the backlog waits
            return;
        }
        const int yes = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // streamed tokens go out at once
        connections.push_back(std::make_unique<HttpConnection>(fd, peer_address(addr), opts));
        HttpConnection& c = *connections.back();
        uint32_t& mine = open_per_client[c.peer];
        const bool full = open >= opts.max_connections;
        const bool greedy = mine >= opts.max_connections_per_client;
        ++mine;
        ++open;
        if ((full || greedy) && lingering > opts.max_connections) {
            close_connection(c);  // a flood: not even an answer
        } else if (full || greedy) {
            refuse(c, 503,
                   full ? fmt::format("the server has {} connections open, the most it holds; retry later",
                                      opts.max_connections)
                        : fmt::format("this client address has {} connections open, the most one may hold; "
                                      "retry later",
                                      opts.max_connections_per_client),
                   "too_many_connections");
        } else {
            ready_for_request(c);
        }
    }
}

void HttpTransport::Impl::ready_for_request(HttpConnection& c) {
    c.phase = HttpConnection::Phase::reading;
    c.deadline = MonoClock::now() + opts.header_timeout;
    c.body_deadline_set = false;
    c.continue_sent = false;
}

void HttpTransport::Impl::read_from(HttpConnection& c) {
    char buf[kReadChunk];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (c.phase == HttpConnection::Phase::lingering) {
        c.lingered += n > 0 ? size_t(n) : 0;
        if (n <= 0 || c.lingered > kLingerBytes) close_connection(c);
        return;
    }
    if (n <= 0) {  // the client closed (mid-request or idle): nobody to answer
        close_connection(c);
        return;
    }
    c.in.append(buf, size_t(n));
    parse(c);
}

void HttpTransport::Impl::parse(HttpConnection& c) {
    const auto p = c.parser.feed(c.in);
    if (p == HttpRequestParser::Progress::failed) {
        const HttpParseError& e = c.parser.error();
        refuse(c, e.status, e.message);
        return;
    }
    if (c.parser.headers_done() && !c.body_deadline_set) {
        c.body_deadline_set = true;
        c.deadline = MonoClock::now() + opts.body_timeout;
    }
    if (p == HttpRequestParser::Progress::complete) {
        c.request = c.parser.take();
        dispatch(c);
        return;
    }
    if (c.parser.expects_continue() && !c.continue_sent) {
        // the client waits for this before it sends its body (curl does so for large ones)
        c.continue_sent = true;
        ::send(c.fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

void HttpTransport::Impl::dispatch(HttpConnection& c) {
    c.phase = HttpConnection::Phase::handling;
    c.close_after = false;
    ++handling;
    {
        std::lock_guard lock(work_mutex);
        work.push_back(&c);
    }
    work_cv.notify_one();
}

void HttpTransport::Impl::take_back(HttpConnection& c) {
    --handling;
    if (c.close_after || draining) {
        // what the client may still send is dropped, after the answer has had time to land
        linger(c);
        return;
    }
    ready_for_request(c);
    if (!c.in.empty()) parse(c);  // a pipelined request, already here
}

// Answers with an error that ends the connection (its framing is lost, or it is refused).
void HttpTransport::Impl::refuse(HttpConnection& c, int status, std::string_view message, std::string_view code) {
    const std::string body = error_body(status, message, code);
    HttpHeaders headers;
    if (status == 503) headers.emplace_back("Retry-After", "1");
    std::string out = response_head(status, "application/json", headers, false,
                                    fmt::format("Content-Length: {}\r\n", body.size()));
    out += body;
    // best effort, without blocking the loop: a small answer fits the socket's buffer
    ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    linger(c);
}

void HttpTransport::Impl::linger(HttpConnection& c) {
    forget(c);
    ::shutdown(c.fd, SHUT_WR);
    c.phase = HttpConnection::Phase::lingering;
    c.deadline = MonoClock::now() + kLingerTime;
    c.in.clear();
    c.in.shrink_to_fit();
    ++lingering;
}

// No longer counted as open (it lingers, or is closed).
void HttpTransport::Impl::forget(HttpConnection& c) {
    if (c.phase == HttpConnection::Phase::lingering) return;
    --open;
    auto it = open_per_client.find(c.peer);
    if (it != open_per_client.end() && --it->second == 0) open_per_client.erase(it);
}

void HttpTransport::Impl::close_connection(HttpConnection& c) {
    if (c.closed) return;
    if (c.phase == HttpConnection::Phase::lingering) --lingering;
    else forget(c);
    c.closed = true;
}

void HttpTransport::Impl::fit_connections_to_descriptors() {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    if (lim.rlim_cur == RLIM_INFINITY) return;
    const uint64_t fit = lim.rlim_cur > kReservedDescriptors + 2 ? (lim.rlim_cur - kReservedDescriptors) / 2 : 1;
    if (opts.max_connections <= fit) return;
    TDM_LOG_WARN("serve",
                 "holding at most {} connections at once, not {}: the process may open {} files (raise `ulimit -n` "
                 "for more)",
                 fit, opts.max_connections, uint64_t(lim.rlim_cur));
    opts.max_connections = uint32_t(fit);
}

void HttpTransport::Impl::stop_handlers() {
    {
        std::lock_guard lock(work_mutex);
        stopping = true;
    }
    for (auto& c : connections)  // none when serve() ends normally; else cut so they end soon
        if (c->phase == HttpConnection::Phase::handling && !c->cut) {
            c->cut = true;
            ::shutdown(c->fd, SHUT_RDWR);
        }
    work_cv.notify_all();
    for (std::thread& t : handlers) t.join();
    handlers.clear();
    returned.clear();
    connections.clear();
}

bool HttpTransport::Impl::past_deadline(HttpConnection& c, MonoClock::time_point now) {
    if (c.closed || c.phase == HttpConnection::Phase::handling || now < c.deadline) return false;
    if (c.phase == HttpConnection::Phase::reading && c.parser.started()) {
        refuse(c, 408, c.parser.headers_done() ? "the request body did not arrive in time"
                                               : "the request headers did not arrive in time");
        return false;
    }
    return true;  // idle past its time, or done lingering
}

// ---------------------------------------------------------------------------------------

HttpTransport::HttpTransport(TransportOptions options, HttpHandler handler, HttpErrorBody error_body)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(error_body))) {}

HttpTransport::~HttpTransport() = default;

Status HttpTransport::bind() {
    Impl& s = *impl_;
    if (s.wake_fd < 0) return Error::format("cannot create an eventfd: {}", std::strerror(errno));
    s.fit_connections_to_descriptors();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(s.opts.port);
    const auto refused = [&] {
        return Error::format("cannot listen on {}:{} (in use, not an address of this machine, or not permitted)",
                             s.opts.host, s.opts.port);
    };
    if (getaddrinfo(s.opts.host.c_str(), port.c_str(), &hints, &found) != 0) return refused();
    for (addrinfo* a = found; a && s.listen_fd < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        // SO_REUSEADDR only (a restart need not wait for TIME_WAIT); never SO_REUSEPORT, which
        // would let a second server bind a port in use and share its connections
        const int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) s.listen_fd = fd;
        else ::close(fd);
    }
    freeaddrinfo(found);
    if (s.listen_fd < 0) return refused();
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
    s.bound_port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(addr).sin6_port
                                                    : reinterpret_cast<sockaddr_in&>(addr).sin_port);
    return {};
}

int HttpTransport::port() const { return impl_->bound_port; }

void HttpTransport::shutdown(std::chrono::milliseconds grace) {
    Impl& s = *impl_;
    {
        std::lock_guard lock(s.work_mutex);
        if (s.draining) return;
        s.drain_deadline = MonoClock::now() + grace;
        s.draining = true;
    }
    s.wake();
}

Status HttpTransport::serve() {
    Impl& s = *impl_;
    if (s.listen_fd < 0) return Error("serve() before a successful bind()");
    // however serve() ends (a poll() error, an exception), no handler thread is left joinable
    struct HandlersStopped {
        Impl& s;
        ~HandlersStopped() { s.stop_handlers(); }
    } handlers_stopped{s};
    for (uint32_t i = 0; i < std::max<uint32_t>(1, s.opts.handler_threads); ++i)
        s.handlers.emplace_back([&s] { s.handler_loop(); });

    bool drain_seen = false, cut = false;
    MonoClock::time_point drain_deadline{};
    std::vector<pollfd> fds;
    std::vector<HttpConnection*> polled;
    while (true) {
        std::vector<HttpConnection*> back;
        {
            std::lock_guard lock(s.work_mutex);
            back.swap(s.returned);
            if (s.draining && !drain_seen) {
                drain_seen = true;
                drain_deadline = s.drain_deadline;
            }
        }
        for (HttpConnection* c : back) s.take_back(*c);
        const MonoClock::time_point now = MonoClock::now();
        if (drain_seen) {
            if (s.listen_fd >= 0) {  // stop accepting: new clients are refused by the OS
                ::close(s.listen_fd);
                s.listen_fd = -1;
            }
            // idle or slow: closed at once; answered or refused ones linger out their time
            // (the answer's tail would otherwise be cut by a reset) until the deadline
            for (auto& c : s.connections)
                if (c->phase == HttpConnection::Phase::reading) s.close_connection(*c);
            if (!cut && now >= drain_deadline) {
                cut = true;  // the answers under way end at their next write or token
                for (auto& c : s.connections)
                    if (c->phase == HttpConnection::Phase::handling) {
                        c->cut = true;
                        ::shutdown(c->fd, SHUT_RDWR);
                    }
            }
            if (cut)
                for (auto& c : s.connections)
                    if (c->phase == HttpConnection::Phase::lingering) s.close_connection(*c);
        }
        for (auto& c : s.connections)
            if (s.past_deadline(*c, now)) s.close_connection(*c);
        std::erase_if(s.connections, [](const std::unique_ptr<HttpConnection>& c) { return c->closed; });
        if (drain_seen && s.handling == 0 && s.lingering == 0) break;

        fds.clear();
        polled.clear();
        fds.push_back({s.wake_fd, POLLIN, 0});
        const bool accepting = s.listen_fd >= 0 && now >= s.accept_paused_until;
        if (accepting) fds.push_back({s.listen_fd, POLLIN, 0});
        MonoClock::time_point next = now + milliseconds(1000);
        if (s.listen_fd >= 0 && !accepting) next = std::min(next, s.accept_paused_until);
        if (drain_seen && !cut) next = std::min(next, drain_deadline);
        for (auto& c : s.connections) {
            if (c->phase == HttpConnection::Phase::handling) continue;
            fds.push_back({c->fd, POLLIN, 0});
            polled.push_back(c.get());
            next = std::min(next, c->deadline);
        }
        const auto wait = std::chrono::duration_cast<milliseconds>(next - now).count() + 1;
        if (::poll(fds.data(), fds.size(), int(std::clamp<int64_t>(wait, 0, 1000))) < 0 && errno != EINTR)
            return Error::format("poll failed: {}", std::strerror(errno));

        size_t i = 0;
        if (fds[i++].revents) {
            uint64_t n;
            [[maybe_unused]] ssize_t r = ::read(s.wake_fd, &n, sizeof n);
        }
        if (accepting && fds[i++].revents) s.accept_all();
        for (size_t k = 0; k < polled.size(); ++k)
            if (fds[i + k].revents) s.read_from(*polled[k]);
    }
    return {};
}

}  // namespace tdm::server
