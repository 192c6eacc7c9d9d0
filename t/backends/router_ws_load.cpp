// router-ws-load: WebSocket request rate against the router. Opens
// --connections sockets, keeps --depth messages in flight on each, and counts
// answers for --seconds; prints "messages=N rps=R errors=E".
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "router_http.hpp"
#include "router_websocket.hpp"

namespace {

struct Client {
    int fd = -1;
    std::unique_ptr<router::ws::Decoder> decoder;
};

bool send_all(int fd, const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) continue;
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    int port = 0, connections = 16, depth = 4, seconds = 5;
    std::string message = R"({"jsonrpc":"2.0","method":"bench.get","params":[1],"id":1})";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string key = argv[i];
        if (key == "--port") port = std::atoi(argv[i + 1]);
        else if (key == "--connections") connections = std::atoi(argv[i + 1]);
        else if (key == "--depth") depth = std::atoi(argv[i + 1]);
        else if (key == "--seconds") seconds = std::atoi(argv[i + 1]);
        else if (key == "--message") message = argv[i + 1];
    }
    int ep = epoll_create1(0);
    std::vector<Client> clients(static_cast<std::size_t>(connections));
    std::string frame = router::ws::encode_frame(router::ws::Opcode::Text, message, true);
    for (auto& c : clients) {
        c.fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            std::perror("connect");
            return 1;
        }
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        send_all(c.fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + router::ws::make_client_key() + "\r\n\r\n");
        router::HttpMessageParser parser(router::HttpMessageParser::Kind::Response, 0);
        char buffer[4096];
        while (parser.state() == router::HttpMessageParser::State::Incomplete) {
            ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
            if (n <= 0) return 1;
            parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        }
        if (parser.status() != 101) {
            std::fprintf(stderr, "handshake refused: %d\n", parser.status());
            return 1;
        }
        c.decoder = std::make_unique<router::ws::Decoder>(router::ws::Decoder::Role::Client, 64 << 20);
        c.decoder->feed(parser.take_leftover());
        fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = &c;
        epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
        std::string burst;
        for (int i = 0; i < depth; ++i) burst += frame;
        send_all(c.fd, burst);
    }
    long messages = 0, errors = 0;
    auto start = std::chrono::steady_clock::now();
    auto end = start + std::chrono::seconds(seconds);
    epoll_event events[64];
    char buffer[65536];
    while (std::chrono::steady_clock::now() < end) {
        int n = epoll_wait(ep, events, 64, 100);
        for (int i = 0; i < n; ++i) {
            auto* c = static_cast<Client*>(events[i].data.ptr);
            for (;;) {
                ssize_t got = recv(c->fd, buffer, sizeof(buffer), 0);
                if (got <= 0) break;
                c->decoder->feed(std::string_view(buffer, static_cast<std::size_t>(got)));
            }
            router::ws::Event event;
            std::string replies;
            while (c->decoder->next(event) == router::ws::Decoder::Status::Event) {
                if (event.kind != router::ws::Event::Kind::Message) continue;
                ++messages;
                if (event.payload.find("\"result\"") == std::string::npos) ++errors;
                replies += frame;
            }
            if (!replies.empty()) send_all(c->fd, replies);
        }
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("messages=%ld rps=%.0f errors=%ld\n", messages, static_cast<double>(messages) / elapsed, errors);
    return 0;
}
