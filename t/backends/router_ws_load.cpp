// router-ws-load: WebSocket request rate against the router. Opens
// --connections sockets, keeps --depth messages in flight on each, and counts
// answers for --seconds; prints "messages=N rps=R errors=E". With --rate R,
// sends R messages a second instead, evenly paced, round the connections
// (whatever is in flight); with --burst-ms B too, what is due is sent every
// B ms at once (one message a connection while there are enough of them).
// --source A.B.C.D: the connections' address (default 127.0.0.1), and with
// --sources N the N addresses from it, connection i on the (i % N)th (the
// router caps connections per address).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "router_websocket.hpp"
#include "ws_load_client.hpp"

namespace {

struct Client {
    int fd = -1;
    std::unique_ptr<router::ws::Decoder> decoder;
};

}  // namespace

int main(int argc, char** argv) {
    int port = 0, connections = 16, depth = 4, seconds = 5;
    double rate = 0;
    int burst_ms = 0, sources = 1;
    in_addr source{htonl(INADDR_LOOPBACK)};
    std::string message = R"({"jsonrpc":"2.0","method":"bench.get","params":[1],"id":1})";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string key = argv[i];
        if (key == "--port") port = std::atoi(argv[i + 1]);
        else if (key == "--connections") connections = std::atoi(argv[i + 1]);
        else if (key == "--depth") depth = std::atoi(argv[i + 1]);
        else if (key == "--seconds") seconds = std::atoi(argv[i + 1]);
        else if (key == "--message") message = argv[i + 1];
        else if (key == "--rate") rate = std::atof(argv[i + 1]);
        else if (key == "--burst-ms") burst_ms = std::atoi(argv[i + 1]);
        else if (key == "--sources") sources = std::max(1, std::atoi(argv[i + 1]));
        else if (key == "--source" && inet_pton(AF_INET, argv[i + 1], &source) != 1) {
            std::fprintf(stderr, "bad --source %s\n", argv[i + 1]);
            return 2;
        }
    }
    int ep = epoll_create1(0);
    std::vector<Client> clients(static_cast<std::size_t>(connections));
    std::string frame = router::ws::encode_frame(router::ws::Opcode::Text, message, true);
    for (std::size_t i = 0; i < clients.size(); ++i) {
        Client& c = clients[i];
        const auto address = ntohl(source.s_addr) + static_cast<std::uint32_t>(i % static_cast<std::size_t>(sources));
        ws_load::Connection connection = ws_load::connect_watched(ep, &c, port, "/", address);
        if (!connection.error.empty()) {
            std::fprintf(stderr, "%s\n", connection.error.c_str());
            return 1;
        }
        c.fd = connection.fd;
        c.decoder = std::move(connection.decoder);
        if (rate > 0) continue;
        std::string burst;
        for (int k = 0; k < depth; ++k) burst += frame;
        ws_load::send_all(c.fd, burst);
    }
    long messages = 0, errors = 0, sent = 0;
    auto start = std::chrono::steady_clock::now();
    auto end = start + std::chrono::seconds(seconds);
    epoll_event events[64];
    char buffer[65536];
    while (std::chrono::steady_clock::now() < end) {
        int n = epoll_wait(ep, events, 64, rate > 0 ? 1 : 100);
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
                if (rate <= 0) replies += frame;
            }
            if (!replies.empty()) ws_load::send_all(c->fd, replies);
        }
        if (rate > 0) {
            double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (burst_ms > 0) elapsed = std::floor(elapsed * 1000 / burst_ms) * burst_ms / 1000;  // the last burst's time
            for (const auto due = static_cast<long>(elapsed * rate); sent < due; ++sent) {
                ws_load::send_all(clients[static_cast<std::size_t>(sent) % clients.size()].fd, frame);
            }
        }
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("messages=%ld rps=%.0f errors=%ld\n", messages, static_cast<double>(messages) / elapsed, errors);
    return 0;
}
