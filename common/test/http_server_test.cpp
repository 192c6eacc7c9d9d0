// The threaded HTTP/1.1 server: keep-alive, Content-Length bodies, limits,
// deliberate misbehaviour and a stop that does not wait for slow handlers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "wallet/handles.hpp"
#include "wallet/http_server.hpp"

using namespace std::chrono_literals;

namespace {

// A plain client socket, so that the tests see exactly what goes over the wire.
class RawClient {
public:
    explicit RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    }
    ~RawClient() { ::close(fd_); }
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    bool connected() const { return connected_; }
    void send(const std::string& data) const { ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size())); }
    // Everything until the peer closes (or the timeout passes).
    std::string read_until_close(std::chrono::milliseconds timeout = 5s) const {
        std::string out;
        auto deadline = std::chrono::steady_clock::now() + timeout;
        char chunk[4096];
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd watch{fd_, POLLIN, 0};
            if (::poll(&watch, 1, 50) <= 0) continue;
            ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n <= 0) break;
            out.append(chunk, static_cast<std::size_t>(n));
        }
        return out;
    }
    // One response with a Content-Length body; bytes of the next one stay buffered.
    std::string read_response() {
        char chunk[4096];
        for (;;) {
            std::size_t end = pending_.find("\r\n\r\n");
            if (end != std::string::npos) {
                std::size_t length_at = pending_.find("Content-Length: ");
                std::size_t length = std::stoul(pending_.substr(length_at + 16));
                if (pending_.size() >= end + 4 + length) {
                    std::string out = pending_.substr(0, end + 4 + length);
                    pending_.erase(0, end + 4 + length);
                    return out;
                }
            }
            pollfd watch{fd_, POLLIN, 0};
            if (::poll(&watch, 1, 5000) <= 0) return std::exchange(pending_, {});
            ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n <= 0) return std::exchange(pending_, {});
            pending_.append(chunk, static_cast<std::size_t>(n));
        }
    }

private:
    int fd_;
    bool connected_ = false;
    std::string pending_;
};

std::unique_ptr<wallet::HttpServer> start_server(wallet::HttpHandler handler, wallet::HttpServerOptions options = {}) {
    auto server = wallet::HttpServer::start(std::move(options), std::move(handler));
    if (!server) throw std::runtime_error(server.error());
    return std::move(server).value();
}

std::string body_of(const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); }

size_t write_to_string(char* data, size_t size, size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

}  // namespace

TEST(HttpServer, PicksAFreePortAndEchoesBodiesOverOneKeptAliveConnection) {
    std::atomic<int> calls{0};
    auto server = start_server([&](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
        ++calls;
        response.body = request.method + " " + std::string(request.path()) + " " + request.body;
    });
    ASSERT_NE(server->port(), 0);
    RawClient client(server->port());
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < 3; ++i) {
        std::string body = "request-" + std::to_string(i);
        client.send("POST /rpc?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + body);
        std::string response = client.read_response();
        EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
        EXPECT_EQ(body_of(response), "POST /rpc " + body);
        EXPECT_EQ(response.find("Connection: close"), std::string::npos);
    }
    EXPECT_EQ(calls.load(), 3);
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
    auto server = start_server([](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
        response.body = request.body;
    });
    RawClient client(server->port());
    client.send("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\noneGET / HTTP/1.1\r\nContent-Length: 3\r\n\r\ntwo");
    EXPECT_EQ(body_of(client.read_response()), "one");
    EXPECT_EQ(body_of(client.read_response()), "two");
}

TEST(HttpServer, ConnectionCloseAndHttp10CloseAfterTheAnswer) {
    auto server = start_server([](const wallet::HttpRequest&, wallet::HttpResponse& response) { response.body = "ok"; });
    {
        RawClient client(server->port());
        client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        std::string all = client.read_until_close();
        EXPECT_NE(all.find("Connection: close"), std::string::npos);
        EXPECT_EQ(body_of(all), "ok");
    }
    {
        RawClient client(server->port());
        client.send("GET / HTTP/1.0\r\n\r\n");
        EXPECT_EQ(body_of(client.read_until_close()), "ok");
    }
}

TEST(HttpServer, OversizedBodiesAndHeadersAreRefused) {
    wallet::HttpServerOptions options;
    options.max_body_bytes = 100;
    options.max_header_bytes = 1024;
    auto server = start_server([](const wallet::HttpRequest&, wallet::HttpResponse& response) { response.body = "ok"; },
                               options);
    {
        RawClient client(server->port());
        client.send("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n");
        EXPECT_EQ(client.read_until_close().rfind("HTTP/1.1 413 ", 0), 0u);
    }
    {
        RawClient client(server->port());
        client.send("GET / HTTP/1.1\r\nX-Long: " + std::string(2000, 'a') + "\r\n\r\n");
        EXPECT_EQ(client.read_until_close().rfind("HTTP/1.1 431 ", 0), 0u);
    }
    {
        RawClient client(server->port());
        client.send("NONSENSE\r\n\r\n");
        EXPECT_EQ(client.read_until_close().rfind("HTTP/1.1 400 ", 0), 0u);
    }
}

TEST(HttpServer, AnswersExpectContinueSoThatCurlSendsLargeBodiesAtOnce) {
    auto server = start_server([](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
        response.body = std::to_string(request.body.size());
    });
    std::string body(3 * 1024 * 1024, 'x');
    wallet::CurlPtr curl(curl_easy_init());
    std::string url = "http://127.0.0.1:" + std::to_string(server->port()) + "/";
    std::string out;
    wallet::CurlSlistPtr headers(curl_slist_append(nullptr, "Expect: 100-continue"));
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, write_to_string);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &out);
    // Without the interim answer curl would wait this long before sending the body anyway.
    curl_easy_setopt(curl.get(), CURLOPT_EXPECT_100_TIMEOUT_MS, 60000L);
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 30000L);
    ASSERT_EQ(curl_easy_perform(curl.get()), CURLE_OK);
    EXPECT_EQ(out, std::to_string(body.size()));
}

TEST(HttpServer, TruncatedBodyAnnouncesTheWholeLengthThenCloses) {
    auto server = start_server([](const wallet::HttpRequest&, wallet::HttpResponse& response) {
        response.body = "0123456789";
        response.truncate_body_at = 4;
    });
    RawClient client(server->port());
    client.send("GET / HTTP/1.1\r\n\r\n");
    std::string all = client.read_until_close();
    EXPECT_NE(all.find("Content-Length: 10\r\n"), std::string::npos);
    EXPECT_EQ(body_of(all), "0123");
}

TEST(HttpServer, HangThenCloseSendsNothingAndStopEndsTheWait) {
    auto server = start_server([](const wallet::HttpRequest&, wallet::HttpResponse& response) {
        response.hang_then_close = std::chrono::hours(1);
    });
    RawClient client(server->port());
    client.send("GET / HTTP/1.1\r\n\r\n");
    std::string nothing_yet = client.read_until_close(300ms);
    EXPECT_TRUE(nothing_yet.empty());
    server->stop();  // must not wait for the hour
    EXPECT_TRUE(client.read_until_close(2s).empty());
}

TEST(HttpServer, StopWakesHandlersWaitingOnTheStopToken) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::atomic<bool> entered{false};
    std::atomic<bool> woke_by_stop{false};
    auto server = start_server([&](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
        std::unique_lock lock(mutex);
        entered = true;
        std::stop_token token = request.stop;
        woke_by_stop = !wake.wait_for(lock, token, std::chrono::hours(1), [] { return false; }) && token.stop_requested();
        response.body = "late";
    });
    RawClient client(server->port());
    client.send("GET / HTTP/1.1\r\n\r\n");
    while (!entered) std::this_thread::sleep_for(5ms);
    server->stop();
    EXPECT_TRUE(woke_by_stop.load());
}

TEST(HttpServer, HandlerExceptionsBecome500AndTheServerKeepsServing) {
    auto server = start_server([](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
        if (request.body == "boom") throw std::runtime_error("boom");
        response.body = "fine";
    });
    RawClient client(server->port());
    client.send("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nboom");
    EXPECT_EQ(client.read_response().rfind("HTTP/1.1 500 ", 0), 0u);
    client.send("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nok!!");
    EXPECT_EQ(body_of(client.read_response()), "fine");
}

TEST(HttpServer, ManyConcurrentConnections) {
    auto server = start_server([](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
        response.body = request.body;
    });
    std::vector<std::thread> clients;
    std::atomic<int> good{0};
    for (int i = 0; i < 16; ++i) {
        clients.emplace_back([&, i] {
            RawClient client(server->port());
            for (int j = 0; j < 20; ++j) {
                std::string body = std::to_string(i) + "/" + std::to_string(j);
                client.send("POST / HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
                if (body_of(client.read_response()) == body) ++good;
            }
        });
    }
    for (auto& thread : clients) thread.join();
    EXPECT_EQ(good.load(), 16 * 20);
}
