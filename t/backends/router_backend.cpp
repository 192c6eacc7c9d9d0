// router-test-backend: a small real JSON-RPC server for the router's tests and
// benchmark. It listens on TCP and/or a unix socket, speaks HTTP/1.1
// (keep-alive) and WebSocket on the same port, and answers every call with
// its own name:
//   {"jsonrpc":"2.0","result":{"backend":NAME,"method":...,"params":...,
//    "served":N,"connection":K},"id":<the id it received>}
// The effective method (params[1] of a `call`) selects test behaviours:
//   ...slow...    answers after --slow-ms
//   ...garbage... answers a body that is not JSON
//   ...fail...    answers a JSON-RPC error
//   ...drop...    closes the connection without an answer
//   ...big...     answers a result padded to --big-bytes (1 MiB)
// GET /stats answers {"connections":K,"requests":N}.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jsonrpc_json.hpp"
#include "wallet/json_util.hpp"
#include "router_http.hpp"
#include "router_websocket.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string name = "backend";
    int port = 0;
    std::string unix_path;
    int slow_ms = 2000;
    long big_bytes = 1 << 20;
};

struct Connection {
    int fd = -1;
    std::uint64_t number = 0;
    bool websocket = false;
    std::unique_ptr<router::HttpMessageParser> parser;
    std::unique_ptr<router::ws::Decoder> decoder;
    std::string out;
    bool close_after_write = false;
};

struct Delayed {
    Clock::time_point due;
    int fd;
    std::uint64_t number;
    std::string data;
};

Options options;
int epoll_fd = -1;
std::map<int, Connection> connections;
std::vector<Delayed> delayed;
std::uint64_t connection_count = 0;
std::uint64_t request_count = 0;

void close_connection(int fd) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    connections.erase(fd);
}

void want_write(Connection& c, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
}

void flush(Connection& c) {
    while (!c.out.empty()) {
        ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) {
                want_write(c, true);
                return;
            }
            close_connection(c.fd);
            return;
        }
        c.out.erase(0, static_cast<std::size_t>(n));
    }
    want_write(c, false);
    if (c.close_after_write) close_connection(c.fd);
}

std::string http_response(int status, const std::string& body, bool keep_alive) {
    std::string head = "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
                       "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                       (keep_alive ? "\r\n" : "\r\nConnection: close\r\n") + "\r\n";
    return head + body;
}

// What to answer to one JSON-RPC request; empty = drop the connection.
struct Answer {
    std::string body;
    bool slow = false;
    bool drop = false;
};

Answer answer(std::string_view request, std::uint64_t connection_number) {
    ++request_count;
    jsonrpc::JsonDocument doc;
    if (doc.parse(request, 256) != jsonrpc::JsonParseStatus::Ok || doc.kind(0) != jsonrpc::JsonKind::Object) {
        return {R"({"jsonrpc":"2.0","error":{"code":-32700,"message":"backend parse error"},"id":null})"};
    }
    auto id = doc.member(0, "id");
    auto method = doc.member(0, "method");
    auto params = doc.member(0, "params");
    std::string id_text = id ? std::string(doc.text(*id)) : "null";
    std::string method_text = method ? std::string(doc.text(*method)) : "null";
    std::string params_text = params ? std::string(doc.text(*params)) : "null";
    std::string effective = method ? doc.string_value(*method) : "";
    if (effective == "call" && params && doc.kind(*params) == jsonrpc::JsonKind::Array && doc.node(*params).count >= 2) {
        effective = doc.string_value(doc.children(*params)[1]);
    }
    Answer a;
    if (effective.find("drop") != std::string::npos) {
        a.drop = true;
        return a;
    }
    a.slow = effective.find("slow") != std::string::npos;
    if (effective.find("garbage") != std::string::npos) {
        a.body = "this is not json";
    } else if (effective.find("fail") != std::string::npos) {
        a.body = R"({"jsonrpc":"2.0","error":{"code":-32003,"message":"failed by )" + options.name + R"("},"id":)" +
                 id_text + "}";
    } else if (effective.find("big") != std::string::npos) {
        a.body = R"({"jsonrpc":"2.0","result":{"backend":)" + wallet::json::quoted(options.name) + R"(,"padding":")" +
                 std::string(static_cast<std::size_t>(options.big_bytes), 'x') + R"("},"id":)" + id_text + "}";
    } else {
        a.body = R"({"jsonrpc":"2.0","result":{"backend":)" + wallet::json::quoted(options.name) + R"(,"method":)" +
                 method_text + R"(,"params":)" + params_text + R"(,"served":)" + std::to_string(request_count) +
                 R"(,"connection":)" + std::to_string(connection_number) + R"(},"id":)" + id_text + "}";
    }
    return a;
}

void deliver(Connection& c, std::string data, bool slow) {
    if (slow) {
        delayed.push_back({Clock::now() + std::chrono::milliseconds(options.slow_ms), c.fd, c.number, std::move(data)});
        return;
    }
    c.out += data;
}

// False when the connection was closed.
bool handle_http(Connection& c, std::string_view data) {
    std::string pending(data);
    while (!pending.empty()) {
        if (!c.parser) c.parser = std::make_unique<router::HttpMessageParser>(router::HttpMessageParser::Kind::Request);
        auto state = c.parser->feed(pending);
        pending.clear();
        if (state == router::HttpMessageParser::State::Incomplete) return true;
        if (state == router::HttpMessageParser::State::Error) {
            close_connection(c.fd);
            return false;
        }
        auto parser = std::move(c.parser);
        pending = parser->take_leftover();
        auto upgrade = parser->header("upgrade");
        if (parser->method() == "GET" && upgrade && router::header_has_token(*upgrade, "websocket")) {
            auto key = parser->header("sec-websocket-key");
            c.out += "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
                     router::ws::accept_key(key.value_or("")) + "\r\n\r\n";
            c.websocket = true;
            c.decoder = std::make_unique<router::ws::Decoder>(router::ws::Decoder::Role::Server, 64 << 20);
            c.decoder->feed(pending);
            return true;
        }
        if (parser->method() == "GET") {
            c.out += http_response(200, R"({"connections":)" + std::to_string(connection_count) + R"(,"requests":)" +
                                            std::to_string(request_count) + "}",
                                   parser->keep_alive());
        } else {
            Answer a = answer(parser->body(), c.number);
            if (a.drop) {
                close_connection(c.fd);
                return false;
            }
            deliver(c, http_response(200, a.body, parser->keep_alive()), a.slow);
        }
        if (!parser->keep_alive()) c.close_after_write = true;
    }
    return true;
}

bool handle_websocket(Connection& c, std::string_view data) {
    c.decoder->feed(data);
    router::ws::Event event;
    for (;;) {
        auto status = c.decoder->next(event);
        if (status == router::ws::Decoder::Status::NeedMore) return true;
        if (status == router::ws::Decoder::Status::Error) {
            close_connection(c.fd);
            return false;
        }
        switch (event.kind) {
            case router::ws::Event::Kind::Ping:
                c.out += router::ws::encode_frame(router::ws::Opcode::Pong, event.payload);
                break;
            case router::ws::Event::Kind::Pong:
                break;
            case router::ws::Event::Kind::Close:
                c.out += router::ws::encode_close(1000, "");
                c.close_after_write = true;
                return true;
            case router::ws::Event::Kind::Message: {
                Answer a = answer(event.payload, c.number);
                if (a.drop) {
                    close_connection(c.fd);
                    return false;
                }
                deliver(c, router::ws::encode_frame(router::ws::Opcode::Text, a.body), a.slow);
                break;
            }
        }
    }
}

void on_readable(int fd) {
    auto it = connections.find(fd);
    if (it == connections.end()) return;
    Connection& c = it->second;
    char buffer[65536];
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
        if (n < 0 && errno == EAGAIN) return;
        close_connection(fd);
        return;
    }
    std::string_view data(buffer, static_cast<std::size_t>(n));
    bool alive = c.websocket ? handle_websocket(c, data) : handle_http(c, data);
    if (alive) flush(c);
}

void accept_all(int listener) {
    for (;;) {
        int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        Connection& c = connections[fd];
        c.fd = fd;
        c.number = ++connection_count;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    }
}

int listen_on(sockaddr* addr, socklen_t len, int family) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, addr, len) != 0 || listen(fd, 4096) != 0) {
        std::perror("bind/listen");
        std::exit(1);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    return fd;
}

void run_due() {
    auto now = Clock::now();
    std::vector<Delayed> due;
    for (auto it = delayed.begin(); it != delayed.end();) {
        if (it->due <= now) {
            due.push_back(std::move(*it));
            it = delayed.erase(it);
        } else {
            ++it;
        }
    }
    for (auto& d : due) {
        auto it = connections.find(d.fd);
        if (it == connections.end() || it->second.number != d.number) continue;  // the client is gone
        it->second.out += d.data;
        flush(it->second);
    }
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string key = argv[i];
        std::string value = argv[i + 1];
        if (key == "--name") options.name = value;
        else if (key == "--port") options.port = std::atoi(value.c_str());
        else if (key == "--unix") options.unix_path = value;
        else if (key == "--slow-ms") options.slow_ms = std::atoi(value.c_str());
        else if (key == "--big-bytes") options.big_bytes = std::atol(value.c_str());
    }
    signal(SIGPIPE, SIG_IGN);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    std::vector<int> listeners;
    if (options.port > 0) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(options.port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        listeners.push_back(listen_on(reinterpret_cast<sockaddr*>(&addr), sizeof(addr), AF_INET));
    }
    if (!options.unix_path.empty()) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", options.unix_path.c_str());
        unlink(options.unix_path.c_str());
        listeners.push_back(listen_on(reinterpret_cast<sockaddr*>(&addr), sizeof(addr), AF_UNIX));
    }
    if (listeners.empty()) {
        std::fprintf(stderr, "usage: router-test-backend --name NAME [--port N] [--unix PATH] [--slow-ms MS]\n");
        return 2;
    }
    std::fprintf(stderr, "backend %s ready\n", options.name.c_str());
    epoll_event events[256];
    for (;;) {
        int timeout = delayed.empty() ? -1 : 5;
        int n = epoll_wait(epoll_fd, events, 256, timeout);
        for (int i = 0; i < n; ++i) {
            int fd = events[i].data.fd;
            bool is_listener = false;
            for (int l : listeners) is_listener = is_listener || l == fd;
            if (is_listener) {
                accept_all(fd);
                continue;
            }
            if (events[i].events & EPOLLOUT) {
                auto it = connections.find(fd);
                if (it != connections.end()) flush(it->second);
            }
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(fd);
        }
        if (!delayed.empty()) run_due();
    }
}
