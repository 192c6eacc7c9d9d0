// The client side of a WebSocket connection for the load tools (router-ws-load,
// t/bench/push_bench_client): a blocking connect and upgrade, then a
// non-blocking socket and the router's client-side decoder (router_websocket.hpp,
// masked frames out) holding whatever came right behind the 101.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "router_http.hpp"
#include "router_websocket.hpp"

namespace ws_load {

// Sends all of `data`, waiting while the socket is full.
inline bool send_all(int fd, std::string_view data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                fd_set w;
                FD_ZERO(&w);
                FD_SET(fd, &w);
                select(fd + 1, nullptr, &w, nullptr, nullptr);
                continue;
            }
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

struct Connection {
    int fd = -1;
    std::unique_ptr<router::ws::Decoder> decoder;
    std::string error;  // empty once upgraded
};

// To 127.0.0.1:port, from the loopback address `source` (host order), the
// upgrade of `path`.
inline Connection connect(int port, std::string_view path, std::uint32_t source = INADDR_LOOPBACK) {
    Connection c;
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(source);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(c.fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
        ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        c.error = std::string("connect: ") + std::strerror(errno);
        return c;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    send_all(c.fd, "GET " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + router::ws::make_client_key() + "\r\n\r\n");
    router::HttpMessageParser parser(router::HttpMessageParser::Kind::Response, 0);
    char buffer[4096];
    while (parser.state() == router::HttpMessageParser::State::Incomplete) {
        ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
            c.error = "connection closed in the handshake";
            return c;
        }
        parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
    if (parser.status() != 101) {
        c.error = "handshake refused: " + std::to_string(parser.status());
        return c;
    }
    c.decoder = std::make_unique<router::ws::Decoder>(router::ws::Decoder::Role::Client, 64 << 20);
    c.decoder->feed(parser.take_leftover());
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    return c;
}

// connect(), then its input watched by the epoll instance `ep`, whose events
// carry `data` (the tool's own record of the connection).
inline Connection connect_watched(int ep, void* data, int port, std::string_view path,
                                  std::uint32_t source = INADDR_LOOPBACK) {
    Connection c = connect(port, path, source);
    if (c.error.empty()) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = data;
        epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    }
    return c;
}

}  // namespace ws_load
