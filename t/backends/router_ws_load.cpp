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
        ws_load::Connection connection = ws_load::connect_watched(ep, &c, port, "/");
        if (!connection.error.empty()) {
            std::fprintf(stderr, "%s\n", connection.error.c_str());
            return 1;
        }
        c.fd = connection.fd;
        c.decoder = std::move(connection.decoder);
        std::string burst;
        for (int i = 0; i < depth; ++i) burst += frame;
        ws_load::send_all(c.fd, burst);
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
            if (!replies.empty()) ws_load::send_all(c->fd, replies);
        }
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("messages=%ld rps=%.0f errors=%ld\n", messages, static_cast<double>(messages) / elapsed, errors);
    return 0;
}
