#include "wallet/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

namespace wallet {

namespace {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

bool contains_token(std::string_view list, std::string_view token) {
    std::string haystack = lower(list);
    std::size_t pos = 0;
    while (pos <= haystack.size()) {
        std::size_t comma = haystack.find(',', pos);
        if (comma == std::string::npos) comma = haystack.size();
        if (trim(std::string_view(haystack).substr(pos, comma - pos)) == token) return true;
        pos = comma + 1;
    }
    return false;
}

// Sends everything (or fails): the socket is blocking.
bool send_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool send_two(int fd, const std::string& head, std::string_view body) {
    std::size_t head_sent = 0;
    std::size_t body_sent = 0;
    while (head_sent < head.size() || body_sent < body.size()) {
        std::array<iovec, 2> parts{};
        int count = 0;
        if (head_sent < head.size()) {
            parts[0].iov_base = const_cast<char*>(head.data() + head_sent);
            parts[0].iov_len = head.size() - head_sent;
            count = 1;
        }
        if (body_sent < body.size()) {
            parts[static_cast<std::size_t>(count)].iov_base = const_cast<char*>(body.data() + body_sent);
            parts[static_cast<std::size_t>(count)].iov_len = body.size() - body_sent;
            ++count;
        }
        msghdr message{};
        message.msg_iov = parts.data();
        message.msg_iovlen = static_cast<std::size_t>(count);
        ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        auto sent = static_cast<std::size_t>(n);
        std::size_t from_head = std::min(sent, head.size() - head_sent);
        head_sent += from_head;
        body_sent += sent - from_head;
    }
    return true;
}

std::string status_head(int status, std::string_view content_type, std::size_t content_length,
                        const std::vector<std::pair<std::string, std::string>>& headers, bool close) {
    std::string head;
    head.reserve(160);
    head += "HTTP/1.1 ";
    head += std::to_string(status);
    head += ' ';
    head += http_reason_phrase(status);
    head += "\r\nContent-Type: ";
    head += content_type;
    head += "\r\nContent-Length: ";
    head += std::to_string(content_length);
    head += "\r\n";
    for (const auto& [name, value] : headers) {
        head += name;
        head += ": ";
        head += value;
        head += "\r\n";
    }
    if (close) head += "Connection: close\r\n";
    head += "\r\n";
    return head;
}

}  // namespace

std::string_view HttpRequest::path() const {
    std::string_view t(target);
    return t.substr(0, t.find('?'));
}

const std::string* HttpRequest::header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return &value;
    return nullptr;
}

std::string_view http_reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Payload Too Large";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "Status";
    }
}

struct HttpServer::Impl {
    HttpServerOptions options;
    HttpHandler handler;
    UniqueFd listener;
    std::uint16_t port = 0;
    std::stop_source stopping;
    std::thread acceptor;
    std::once_flag stopped_once;

    struct Connection {
        UniqueFd fd;
        std::string peer;
        std::thread thread;
        std::atomic<bool> finished{false};
    };
    std::mutex mutex;
    std::condition_variable slot_free;
    std::list<Connection> connections;

    void accept_loop();
    void serve(Connection& connection);
    void reap_finished();  // with mutex held
    // Waits for the peer to hang up, the server to stop or the time to pass.
    void hang(int fd, std::chrono::milliseconds duration) const;
    void stop();
};

void HttpServer::Impl::reap_finished() {
    for (auto it = connections.begin(); it != connections.end();) {
        if (it->finished.load()) {
            if (it->thread.joinable()) it->thread.join();
            it = connections.erase(it);
        } else {
            ++it;
        }
    }
}

void HttpServer::Impl::accept_loop() {
    while (!stopping.stop_requested()) {
        {
            std::unique_lock lock(mutex);
            reap_finished();
            slot_free.wait(lock, [&] {
                reap_finished();
                return stopping.stop_requested() || connections.size() < options.max_connections;
            });
        }
        if (stopping.stop_requested()) break;
        sockaddr_in peer{};
        socklen_t peer_len = sizeof peer;
        int fd = ::accept4(listener.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (stopping.stop_requested()) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and friends
            continue;
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::array<char, INET_ADDRSTRLEN> address{};
        ::inet_ntop(AF_INET, &peer.sin_addr, address.data(), address.size());
        std::lock_guard lock(mutex);
        Connection& connection = connections.emplace_back();
        connection.fd = UniqueFd(fd);
        connection.peer = std::string(address.data()) + ":" + std::to_string(ntohs(peer.sin_port));
        connection.thread = std::thread([this, &connection] {
            serve(connection);
            {
                // Closed here, not at reaping, so that the peer sees the end at once.
                std::lock_guard done_lock(mutex);
                connection.fd.reset();
                connection.finished.store(true);
            }
            slot_free.notify_all();
        });
    }
}

void HttpServer::Impl::hang(int fd, std::chrono::milliseconds duration) const {
    auto deadline = std::chrono::steady_clock::now() + duration;
    std::array<char, 4096> sink{};
    while (!stopping.stop_requested()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return;
        pollfd watch{fd, POLLIN, 0};
        int ready = ::poll(&watch, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
        if (ready > 0) {
            ssize_t n = ::recv(fd, sink.data(), sink.size(), 0);
            if (n <= 0) return;  // the peer gave up
        }
    }
}

void HttpServer::Impl::serve(Connection& connection) {
    const int fd = connection.fd.get();
    std::string buffer;
    std::array<char, 16384> chunk{};

    // Reads more bytes into the buffer; false on EOF, error, idle timeout or stop.
    auto read_more = [&]() -> bool {
        if (stopping.stop_requested()) return false;
        pollfd watch{fd, POLLIN, 0};
        int ready = ::poll(&watch, 1, static_cast<int>(options.idle_timeout.count()));
        if (ready <= 0) return false;
        ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
        if (n <= 0) return false;
        buffer.append(chunk.data(), static_cast<std::size_t>(n));
        return true;
    };
    auto refuse = [&](int status) {
        std::string body = "{\"error\":\"" + std::string(http_reason_phrase(status)) + "\"}";
        send_two(fd, status_head(status, "application/json", body.size(), {}, true), body);
    };

    while (!stopping.stop_requested()) {
        std::size_t header_end;
        while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
            if (buffer.size() > options.max_header_bytes) return refuse(431);
            if (!read_more()) return;
        }
        if (header_end > options.max_header_bytes) return refuse(431);

        HttpRequest request;
        request.peer = connection.peer;
        request.stop = stopping.get_token();
        std::string_view head(buffer.data(), header_end);
        std::size_t line_end = head.find("\r\n");
        std::string_view request_line = head.substr(0, line_end);
        std::size_t first_space = request_line.find(' ');
        std::size_t second_space =
            first_space == std::string_view::npos ? first_space : request_line.find(' ', first_space + 1);
        if (second_space == std::string_view::npos) return refuse(400);
        request.method = std::string(request_line.substr(0, first_space));
        request.target = std::string(request_line.substr(first_space + 1, second_space - first_space - 1));
        std::string_view version = request_line.substr(second_space + 1);
        if (version != "HTTP/1.1" && version != "HTTP/1.0") return refuse(400);

        std::string_view rest = line_end == std::string_view::npos ? std::string_view{} : head.substr(line_end + 2);
        while (!rest.empty()) {
            std::size_t eol = rest.find("\r\n");
            std::string_view line = rest.substr(0, eol);
            rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 2);
            std::size_t colon = line.find(':');
            if (colon == std::string_view::npos) return refuse(400);
            request.headers.emplace_back(lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
        }

        bool keep_alive = version == "HTTP/1.1";
        if (const std::string* value = request.header("connection")) {
            if (contains_token(*value, "close")) keep_alive = false;
            if (contains_token(*value, "keep-alive")) keep_alive = true;
        }
        if (const std::string* coding = request.header("transfer-encoding")) {
            if (lower(*coding) != "identity") return refuse(501);
        }
        std::size_t content_length = 0;
        if (const std::string* value = request.header("content-length")) {
            auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), content_length);
            if (error != std::errc() || end != value->data() + value->size()) return refuse(400);
        }
        if (content_length > options.max_body_bytes) return refuse(413);

        std::size_t body_start = header_end + 4;
        if (buffer.size() - body_start < content_length) {
            if (const std::string* expect = request.header("expect"); expect && lower(*expect) == "100-continue") {
                static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
                if (!send_all(fd, kContinue.data(), kContinue.size())) return;
            }
        }
        while (buffer.size() - body_start < content_length)
            if (!read_more()) return;
        request.body = buffer.substr(body_start, content_length);
        buffer.erase(0, body_start + content_length);

        HttpResponse response;
        try {
            handler(request, response);
        } catch (const std::exception&) {
            response = HttpResponse{};
            response.status = 500;
            response.body = "{\"error\":\"internal error\"}";
        }

        if (response.hang_then_close) {
            hang(fd, *response.hang_then_close);
            return;
        }
        bool close = !keep_alive || response.close_connection || stopping.stop_requested();
        std::string_view payload = response.external_body ? *response.external_body : std::string_view(response.body);
        std::string head_out = status_head(response.status, response.content_type, payload.size(), response.headers,
                                           close || response.truncate_body_at.has_value());
        if (response.truncate_body_at) {
            send_two(fd, head_out, payload.substr(0, std::min(*response.truncate_body_at, payload.size())));
            return;
        }
        if (!send_two(fd, head_out, payload) || close) return;
    }
}

void HttpServer::Impl::stop() {
    std::call_once(stopped_once, [this] {
        stopping.request_stop();
        if (listener.get() >= 0) ::shutdown(listener.get(), SHUT_RDWR);
        slot_free.notify_all();
        if (acceptor.joinable()) acceptor.join();
        std::list<Connection> remaining;
        {
            std::lock_guard lock(mutex);
            for (auto& connection : connections)
                if (connection.fd.get() >= 0) ::shutdown(connection.fd.get(), SHUT_RDWR);
            remaining.splice(remaining.end(), connections);
        }
        for (auto& connection : remaining)
            if (connection.thread.joinable()) connection.thread.join();
        listener.reset();
    });
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options, HttpHandler handler) {
    auto impl = std::make_unique<Impl>();
    impl->options = std::move(options);
    impl->handler = std::move(handler);

    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(impl->options.port);
    if (::inet_pton(AF_INET, impl->options.host.c_str(), &address.sin_addr) != 1)
        return make_error("invalid IPv4 address: " + impl->options.host);
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (listener.get() < 0) return make_error(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
        return make_error("bind " + impl->options.host + ":" + std::to_string(impl->options.port) + ": " +
                          std::strerror(errno));
    if (::listen(listener.get(), 512) != 0) return make_error(std::string("listen: ") + std::strerror(errno));
    socklen_t length = sizeof address;
    ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length);
    impl->port = ntohs(address.sin_port);
    impl->listener = std::move(listener);

    Impl* raw = impl.get();
    impl->acceptor = std::thread([raw] { raw->accept_loop(); });
    return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

std::uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::stop() { impl_->stop(); }

}  // namespace wallet
