// Per-client limits through the router (issues 32 and 33), with the shipped
// routing file and the limits at their defaults: the API behind the router
// limits each client on its own (the router tells it who the client is, and
// no client can forge that), and the router bounds the calls in flight of
// one client address.
#include <curl/curl.h>

#include <cerrno>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "router_support.hpp"
#include "support/api_support.hpp"
#include "support/prometheus_text.hpp"

using namespace router_test;

namespace {

const std::string kWalletCall = R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_methods"})";

std::size_t collect(char* data, std::size_t size, std::size_t count, void* out) {
    static_cast<std::string*>(out)->append(data, size * count);
    return size * count;
}

// A POST sent from the local address `source` (127.0.0.2, 127.0.0.3...: every
// 127/8 address is this host's). The response body; empty on a transport error.
std::string post_from(const std::string& source, const std::string& url, const std::string& body,
                      const std::vector<std::string>& headers = {}) {
    wallet::CurlPtr curl(curl_easy_init());
    wallet::CurlSlistPtr list;
    list.reset(curl_slist_append(list.release(), "Content-Type: application/json"));
    for (const auto& h : headers) list.reset(curl_slist_append(list.release(), h.c_str()));
    std::string response;
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_INTERFACE, source.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, list.get());
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response);
    if (curl_easy_perform(curl.get()) != CURLE_OK) return "";
    return response;
}

struct Burst {
    int answered = 0;
    int limited = 0;
};

// `n` wallet_history calls one after another from `source`: how many were
// answered and how many refused by the API's rate limit (a JSON-RPC error).
Burst burst(const std::string& source, const std::string& url, int n, const std::vector<std::string>& headers = {}) {
    Burst b;
    for (int i = 0; i < n; ++i) {
        std::string body = post_from(source, url, kWalletCall, headers);
        if (body.find("\"result\"") != std::string::npos) ++b.answered;
        if (body.find("rate limit exceeded") != std::string::npos) ++b.limited;
    }
    return b;
}

// `count` batches of 50 distinct slow calls (ids 0..49 in each) posted at
// once from `source`; the answers come as the batches end.
std::vector<std::future<std::string>> slow_batches_from(const std::string& source, const std::string& url, int count) {
    std::vector<std::future<std::string>> batches;
    for (int b = 0; b < count; ++b) {
        std::vector<std::string> calls;
        for (int i = 0; i < 50; ++i) {
            calls.push_back(rpc("condenser_api.slow_read", "[" + std::to_string(b * 50 + i) + "]", std::to_string(i)));
        }
        batches.push_back(std::async(std::launch::async, [source, url, body = json_list(calls)] {
            return post_from(source, url, body);
        }));
    }
    return batches;
}

// A router with the shipped routing file and its defaults (plus
// `directives`), its node a stand-in backend, and /metrics; `listen_options`
// go on its listen line.
struct ShippedRouter {
    explicit ShippedRouter(Backend::Options node_options = {}, const std::string& directives = "",
                           const std::string& listen_options = "")
        : node("node", node_options) {
        write_file(dir.path() / "routes.json",
                   routes_with_targets(source_dir() / "conf" / "routes.hive.json", {{"node", node.http_url()}}));
        std::string config = router_http_config(dir.path() / "routes.json", "    jsonrpc_router_redis off;\n" + directives,
                                                "  location = /metrics { jsonrpc_router_metrics; }\n");
        const std::string listen = "listen 127.0.0.1:{{PORT}}";
        config.insert(config.find(listen) + listen.size(), listen_options.empty() ? "" : " " + listen_options);
        nginx = std::make_unique<NginxServer>(nginx_options(config));
    }
    // A value of the router's /metrics (-1 when it has none).
    double metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
        return prometheus_text::parse(harness::http_request("GET", nginx->url("/metrics")).body).value(name, labels).value_or(-1);
    }
    // The sum of a family's series (the requests in flight of every URL).
    double metric_sum(const std::string& name) {
        return prometheus_text::parse(harness::http_request("GET", nginx->url("/metrics")).body).sum(name);
    }
    Backend node;
    TempDir dir{"router-client"};
    std::unique_ptr<NginxServer> nginx;
};

}  // namespace

// The shipped layout: one nginx, the router on the public port and the API on
// its own, routes.hive.json sending wallet_history.* to the API; the API's
// limiter at its defaults (10 requests/s, burst 20).
TEST(RouterClientLimits, EachClientHasItsOwnApiBudgetThroughTheRouter) {
    api_test::ApiStack stack;
    const std::uint16_t api_port = harness::free_port();
    TempDir dir("router-client");
    write_file(dir.path() / "routes.json",
               routes_with_targets(source_dir() / "conf" / "routes.hive.json",
                                   {{"wallet_indexer", "http://127.0.0.1:" + std::to_string(api_port)}}));
    NginxServer::Options options = nginx_options(
        router_http_config(dir.path() / "routes.json", "    jsonrpc_router_redis off;\n") +
        "server {\n  listen 127.0.0.1:" + std::to_string(api_port) + ";\n  location / { wallet_history_api; }\n}\n");
    options.env = stack.pg().env();
    options.env.erase("DB_PASSWORD");
    NginxServer nginx(options);
    const std::string router = nginx.url("/");
    const std::string api = "http://127.0.0.1:" + std::to_string(api_port) + "/";

    // One client spends its burst; another, right after, still has its own.
    Burst first = burst("127.0.0.2", router, 25);
    Burst second = burst("127.0.0.3", router, 25);
    EXPECT_GE(first.answered, 18);
    EXPECT_GE(first.limited, 1);
    EXPECT_GE(second.answered, 18) << "the second client shares the first one's budget";
    EXPECT_GE(second.limited, 1);

    // Headers a client sends to the router name nobody: the router writes its
    // upstream request itself.
    const std::vector<std::string> forged = {
        "X-Forwarded-For: 198.51.100.7",
        "X-Wallet-Router-Client: 00000000000000000000000000000000 198.51.100.7"};
    Burst forged_via_router = burst("127.0.0.3", router, 10, forged);
    EXPECT_LE(forged_via_router.answered, 4);
    // Sent to the API directly, a router header without the token is ignored.
    Burst direct = burst("127.0.0.4", api, 25);
    EXPECT_GE(direct.limited, 1);
    Burst forged_direct = burst("127.0.0.4", api, 10, forged);
    EXPECT_LE(forged_direct.answered, 4);
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// The router's own per-client budget: at most jsonrpc_router_max_client_calls
// (default 200) calls in flight per client address; the calls over it get a
// JSON-RPC error at once, other clients are served, and the budget comes back
// when the answers are out.
TEST(RouterClientLimits, CallsInFlightPerClientAreBounded) {
    // 0.8 s per call: the 200 calls go 32 at a time (the address's share of
    // the 64 upstream connections), all within the node's 10 s timeout.
    ShippedRouter router(Backend::Options{.slow_ms = 800});
    Backend& node = router.node;
    NginxServer& nginx = *router.nginx;
    const std::string url = nginx.url("/");

    // Five batches of 50 distinct slow calls at once from one address: 250 > 200.
    std::vector<std::future<std::string>> batches = slow_batches_from("127.0.0.2", url, 5);
    // The calls sent to the node show as in flight (for 0.8 s each, 32 at a time).
    EXPECT_TRUE(harness::wait_until([&] { return router.metric_sum("jsonrpc_router_upstream_in_flight") > 0; }, 10s));
    ASSERT_TRUE(harness::wait_until([&] { return node.stats().second >= 200; }, 10s));
    // Another address meanwhile: served.
    JsonPtr other = parse_json(post_from("127.0.0.3", url, rpc("condenser_api.get_config")));
    EXPECT_EQ(text_at(other.get(), "result.backend"), "node");

    int answered = 0;
    int refused = 0;
    for (auto& f : batches) {
        JsonPtr batch = parse_json(f.get());
        ASSERT_TRUE(json_is_array(batch.get()));
        for (std::size_t i = 0; i < json_array_size(batch.get()); ++i) {
            json_t* element = json_array_get(batch.get(), i);
            if (json_object_get(element, "result") != nullptr) ++answered;
            if (text_at(element, "error.code") == "1700") {
                ++refused;
                EXPECT_EQ(text_at(element, "id"), std::to_string(i));  // the caller's id
                EXPECT_NE(text_at(element, "error.data"), "<absent>");  // the request id
            }
        }
    }
    EXPECT_EQ(answered, 200);
    EXPECT_EQ(refused, 50);
    EXPECT_EQ(router.metric("jsonrpc_router_limited_total", {{"limit", "client_calls"}}), 50);
    EXPECT_EQ(router.metric_sum("jsonrpc_router_upstream_in_flight"), 0);  // every answered one taken back
    // The refused calls never reached the node (its count has the other
    // client's call and the /stats requests too).
    EXPECT_LT(node.stats().second, 250);

    // Nothing stays counted: the same client has its whole budget again.
    std::vector<std::string> calls;
    for (int i = 0; i < 50; ++i) calls.push_back(rpc("condenser_api.get_config", "[" + std::to_string(i) + "]", "1"));
    JsonPtr again = parse_json(post_from("127.0.0.2", url, json_list(calls)));
    for (std::size_t i = 0; i < json_array_size(again.get()); ++i) {
        EXPECT_EQ(text_at(json_array_get(again.get(), i), "result.backend"), "node");
    }
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// One request's answer is bounded (jsonrpc_router_max_response, 16 MiB): a
// batch of 30 answers of 1 MiB each gets the first ones and error 1800 for
// the rest, and the worker stays well; over WebSocket the same.
// A WebSocket connection of an address whose whole budget is in flight on
// its other connections reads nothing more until calls come back: a flood
// waits in its own TCP window (no CPU of the worker spent refusing it message
// by message), and then each message is answered, none refused.
TEST(RouterClientLimits, AWebSocketOfAClientWithoutBudgetWaitsInsteadOfBeingRefused) {
    ShippedRouter router(Backend::Options{.slow_ms = 4000});
    Backend& node = router.node;
    NginxServer& nginx = *router.nginx;
    const std::string url = nginx.url("/");
    // Four batches of 50 slow calls hold all 200 calls of 127.0.0.2 (for 4 s
    // at least: the node answers each after 4 s, 32 of them at a time).
    std::vector<std::future<std::string>> batches = slow_batches_from("127.0.0.2", url, 4);
    // Spent once a call of the same address is refused (the node sees 32 of
    // them at a time: the address's share of jsonrpc_router_upstream_connections).
    ASSERT_TRUE(harness::wait_until([&] { return node.stats().second >= 32; }, 10s));
    ASSERT_TRUE(harness::wait_until([&] {
        return post_from("127.0.0.2", url, rpc("condenser_api.get_config")).find("\"code\":1700") != std::string::npos;
    }, 10s));
    WsClient ws(nginx.port(), "/", "127.0.0.2");
    ASSERT_EQ(ws.handshake_status(), 101);
    constexpr int kMessages = 20;
    for (int i = 0; i < kMessages; ++i) ws.send_text(rpc("condenser_api.slow_read", "[" + std::to_string(1000 + i) + "]", std::to_string(i)));
    // The messages were sent while the budget was held.
    for (auto& f : batches) ASSERT_EQ(f.wait_for(0s), std::future_status::timeout);
    // Each answered in turn with its own id (a result, or the node's queue
    // timing out behind the slow calls), not one refused for the budget.
    ws.set_timeout(60s);
    std::set<std::string> ids;
    for (int i = 0; i < kMessages; ++i) {
        const std::string message = ws.next_message();
        ASSERT_FALSE(message.empty()) << "answer " << i;
        JsonPtr answer = parse_json(message);
        EXPECT_NE(text_at(answer.get(), "error.code"), "1700") << message;
        ids.insert(text_at(answer.get(), "id"));
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(kMessages));
    for (auto& f : batches) {
        JsonPtr batch = parse_json(f.get());
        EXPECT_TRUE(json_is_array(batch.get()));
    }
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

TEST(RouterClientLimits, TheAnswerOfOneRequestIsBounded) {
    ShippedRouter router;
    NginxServer& nginx = *router.nginx;
    std::vector<std::string> calls;
    for (int i = 0; i < 30; ++i) calls.push_back(rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]", std::to_string(i)));
    auto count = [](const std::string& text, std::size_t& answered, std::size_t& too_large) {
        JsonPtr batch = parse_json(text);
        ASSERT_TRUE(json_is_array(batch.get())) << text.substr(0, 300);
        for (std::size_t i = 0; i < json_array_size(batch.get()); ++i) {
            json_t* element = json_array_get(batch.get(), i);
            if (json_object_get(element, "result") != nullptr) ++answered;
            if (text_at(element, "error.code") == "1800") {
                ++too_large;
                EXPECT_EQ(text_at(element, "id"), std::to_string(i));
            }
        }
    };
    std::size_t answered = 0;
    std::size_t too_large = 0;
    std::string body = post_from("127.0.0.2", nginx.url("/"), json_list(calls));
    EXPECT_LE(body.size(), 16u << 20);
    count(body, answered, too_large);
    EXPECT_EQ(answered, 15u);  // 15 answers of a bit over 1 MiB fit in 16 MiB
    EXPECT_EQ(too_large, 15u);

    WsClient ws(nginx.port());
    ASSERT_EQ(ws.handshake_status(), 101);
    answered = too_large = 0;
    count(ws.call(json_list(calls)), answered, too_large);
    EXPECT_EQ(answered, 15u);
    EXPECT_EQ(too_large, 15u);
    EXPECT_EQ(router.metric("jsonrpc_router_limited_total", {{"limit", "response"}}), 30);
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// The answers in flight of one client address are bounded
// (jsonrpc_router_max_client_response; here 16 MiB per worker instead of 32):
// a request of 15 answers of 1 MiB whose client reads nothing holds 15 MiB
// until it is sent; another request of that address gets error 1800 for
// what does not fit, another address its answers, and the budget comes
// back when the unread answer goes.
TEST(RouterClientLimits, AnswerBytesInFlightPerClientAreBounded) {
    ShippedRouter router(Backend::Options{}, "    jsonrpc_router_max_client_response 16m;\n");
    NginxServer& nginx = *router.nginx;
    auto big_calls = [](int n) {
        std::vector<std::string> calls;
        for (int i = 0; i < n; ++i) calls.push_back(rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]", std::to_string(i)));
        return json_list(calls);
    };
    const std::string body = big_calls(15);
    const std::string small = big_calls(3);
    struct Count {
        std::size_t answered = 0;
        std::size_t over_client = 0;
    };
    auto count = [](const std::string& text) {
        Count c;
        JsonPtr batch = parse_json(text);
        EXPECT_TRUE(json_is_array(batch.get())) << text.substr(0, 300);
        for (std::size_t i = 0; i < json_array_size(batch.get()); ++i) {
            json_t* element = json_array_get(batch.get(), i);
            if (json_object_get(element, "result") != nullptr) ++c.answered;
            if (text_at(element, "error.code") == "1800" &&
                text_at(element, "error.message").find("of one client") != std::string::npos) {
                ++c.over_client;
                EXPECT_EQ(text_at(element, "id"), std::to_string(i));
            }
        }
        return c;
    };
    // A reader that reads nothing: a small receive buffer, so that most of
    // its 15 MiB answer stays with the router.
    auto unread_post = [&](const std::string& source) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        int receive_buffer = 16384;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
        sockaddr_in local{};
        local.sin_family = AF_INET;
        ::inet_pton(AF_INET, source.c_str(), &local.sin_addr);
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)), 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(nginx.port());
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
        const std::string request = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body;
        EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
        // Its answer is built once its first bytes arrive.
        EXPECT_TRUE(harness::wait_until([&] {
            char byte;
            return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
        }, 10s));
        return fd;
    };
    const int unread = unread_post("127.0.0.2");
    Count held = count(post_from("127.0.0.2", nginx.url("/"), small));
    EXPECT_EQ(held.answered, 0u);  // 16 MiB less the 15 MiB held: not one more
    EXPECT_EQ(held.over_client, 3u);
    Count other = count(post_from("127.0.0.3", nginx.url("/"), small));
    EXPECT_EQ(other.answered, 3u);
    ::close(unread);
    // Nothing stays counted once the unread answer is gone.
    EXPECT_TRUE(harness::wait_until([&] { return count(post_from("127.0.0.2", nginx.url("/"), small)).answered == 3u; }, 10s));
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// A WebSocket client that stops reading is closed after
// jsonrpc_router_ws_send_timeout (here 1 s instead of 30) with nothing sent,
// its session and output freed; other clients go on.
TEST(RouterClientLimits, AWebSocketClientThatStopsReadingIsClosed) {
    ShippedRouter router(Backend::Options{}, "    jsonrpc_router_ws_send_timeout 1s;\n");
    NginxServer& nginx = *router.nginx;
    WsClient reader(nginx.port());
    ASSERT_EQ(reader.handshake_status(), 101);
    // Ask for 30 MiB, far more than the socket buffers hold (and less than
    // jsonrpc_router_ws_max_output, 32 MiB, which would close it sooner), and never read.
    std::vector<std::string> calls;
    for (int i = 0; i < 10; ++i) calls.push_back(rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]"));
    for (int m = 0; m < 3; ++m) reader.send_text(json_list(calls));
    ASSERT_TRUE(harness::wait_until([&] {
        return read_file(nginx.error_log()).find("WebSocket client did not read its answers within 1000 ms") != std::string::npos;
    }, 20s));
    WsClient other(nginx.port());
    JsonPtr answer = parse_json(other.call(rpc("condenser_api.get_config")));
    EXPECT_EQ(text_at(answer.get(), "result.backend"), "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// A WebSocket client that lets more than jsonrpc_router_ws_max_output of
// answers pile up (here 2 MiB, max_response raised to match) is closed at
// once, long before the send timeout (30 s): the answers queued beyond are
// dropped, never sent; other clients go on.
TEST(RouterClientLimits, AWebSocketClientsQueuedOutputIsBounded) {
    ShippedRouter router(Backend::Options{}, "    jsonrpc_router_max_response 2m;\n    jsonrpc_router_ws_max_output 2m;\n");
    NginxServer& nginx = *router.nginx;
    WsClient reader(nginx.port());
    ASSERT_EQ(reader.handshake_status(), 101);
    constexpr int kAsked = 30;  // answers of a bit over 1 MiB each, not read while they are asked for
    for (int i = 0; i < kAsked; ++i) reader.send_text(rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]"));
    ASSERT_TRUE(harness::wait_until([&] {
        return read_file(nginx.error_log()).find("WebSocket client not reading:") != std::string::npos;
    }, 20s));
    // What the socket buffers held arrives, then the end of the connection.
    int received = 0;
    while (!reader.next_message().empty()) ++received;
    EXPECT_LT(received, kAsked);
    WsClient other(nginx.port());
    JsonPtr answer = parse_json(other.call(rpc("condenser_api.get_config")));
    EXPECT_EQ(text_at(answer.get(), "result.backend"), "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// The WebSocket answers queued in a worker are bounded in all
// (jsonrpc_router_ws_worker_output, here 16 MiB instead of 128): clients of
// one address that ask for 40 MiB and do not read are closed, the one with
// the most queued first, with 1013 and a reason after the answer they had
// begun; the queued bytes (/metrics) never pass the bound, another address
// is served meanwhile, and nothing stays counted.
TEST(RouterClientLimits, TheWorkersQueuedWebSocketOutputIsBounded) {
    // Small socket buffers on both sides: the answers wait in the router, not in the kernel.
    ShippedRouter router(Backend::Options{},
                         "    jsonrpc_router_max_response 2m;\n    jsonrpc_router_ws_max_output 16m;\n"
                         "    jsonrpc_router_ws_client_output 4m;\n    jsonrpc_router_ws_worker_output 16m;\n",
                         "sndbuf=32k");
    NginxServer& nginx = *router.nginx;
    constexpr int kReaders = 4;
    constexpr int kAsked = 10;  // answers of a bit over 1 MiB each per connection: more than one may hold
    std::vector<std::unique_ptr<WsClient>> idle;
    for (int c = 0; c < kReaders; ++c) {
        idle.push_back(std::make_unique<WsClient>(nginx.port(), "/", "127.0.0.2", 16 * 1024));
        ASSERT_EQ(idle.back()->handshake_status(), 101);
    }
    // Each connection stays under its own bound (16 MiB) while together they pass the worker's.
    for (int i = 0; i < kAsked; ++i) {
        for (int c = 0; c < kReaders; ++c) {
            idle[static_cast<std::size_t>(c)]->send_text(rpc("condenser_api.get_big_thing", "[" + std::to_string(c * kAsked + i) + "]"));
        }
    }
    ASSERT_TRUE(harness::wait_until([&] {
        return read_file(nginx.error_log()).find("over jsonrpc_router_ws_worker_output") != std::string::npos;
    }, 20s));
    // Another address, over WebSocket and HTTP, is served while they hold their answers.
    WsClient other(nginx.port(), "/", "127.0.0.3");
    EXPECT_EQ(text_at(parse_json(other.call(rpc("condenser_api.get_config"))).get(), "result.backend"), "node");
    EXPECT_EQ(text_at(parse_json(post_from("127.0.0.3", nginx.url("/"), rpc("condenser_api.get_config"))).get(),
                      "result.backend"),
              "node");
    const double peak = router.metric("jsonrpc_router_ws_output_peak_bytes");
    EXPECT_LE(peak, 16 << 20);
    EXPECT_GT(peak, 8 << 20) << "the answers did not wait in the router";
    // Read now: what was sent, then, for those closed (all but one may be,
    // until the rest fits), a Close 1013 with its reason.
    int closed_1013 = 0;
    for (auto& ws : idle) {
        ws->set_timeout(20s);
        int answers = 0;
        while (answers < kAsked) {
            auto event = ws->next();
            if (!event) break;
            if (event->kind == router::ws::Event::Kind::Message) ++answers;
            if (event->kind == router::ws::Event::Kind::Close) {
                EXPECT_EQ(event->close_code, 1013);
                EXPECT_EQ(event->payload, "too many answers waiting to be read");
                EXPECT_LT(answers, kAsked);
                ++closed_1013;
                break;
            }
        }
    }
    EXPECT_GE(closed_1013, kReaders - 1);
    EXPECT_TRUE(harness::wait_until([&] { return router.metric("jsonrpc_router_ws_output_bytes") == 0; }, 10s));
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// A client that reads a few kilobytes at a time keeps its connection making
// a little progress, but cannot extend jsonrpc_router_ws_send_timeout (here
// 1 s) with it: what waited as its socket filled up must all be sent within
// the timeout. Asked for 8 MiB and read at about 160 kB/s (nearly a minute of
// reading), it is closed within seconds.
TEST(RouterClientLimits, AWebSocketClientThatReadsTooSlowlyIsClosed) {
    ShippedRouter router(Backend::Options{}, "    jsonrpc_router_ws_send_timeout 1s;\n", "sndbuf=32k");
    NginxServer& nginx = *router.nginx;
    WsClient slow(nginx.port(), "/", "127.0.0.2", 16 * 1024);
    ASSERT_EQ(slow.handshake_status(), 101);
    constexpr std::size_t kAsked = 8;
    for (std::size_t i = 0; i < kAsked; ++i) slow.send_text(rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]"));
    std::size_t read = 0;
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (!slow.peer_closed() && read < kAsked << 20 && std::chrono::steady_clock::now() < give_up) {
        read += slow.read_available(8 * 1024).size();
        std::this_thread::sleep_for(50ms);
    }
    // The last bytes in the socket buffers, then the end.
    while (!slow.read_available(64 * 1024).empty()) {
    }
    EXPECT_TRUE(slow.peer_closed()) << read << " bytes read, not closed";
    EXPECT_LT(read, kAsked << 20);
    EXPECT_NE(read_file(nginx.error_log()).find("WebSocket client did not read its answers within 1000 ms"), std::string::npos);
    WsClient other(nginx.port(), "/", "127.0.0.3");
    EXPECT_EQ(text_at(parse_json(other.call(rpc("condenser_api.get_config"))).get(), "result.backend"), "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// Upstream connections per target URL and worker are bounded: calls over
// jsonrpc_router_upstream_connections (or over one address's share of them)
// wait in a queue, calls over jsonrpc_router_upstream_queue get 1500 at once
// (here 4 and 8 instead of 64 and 1024), and the URL is not marked as
// failing for it.
TEST(RouterClientLimits, UpstreamConnectionsQueueThenRefuse) {
    ShippedRouter router(Backend::Options{.slow_ms = 1000}, "    jsonrpc_router_upstream_connections 4;\n    jsonrpc_router_upstream_queue 8;\n");
    NginxServer& nginx = *router.nginx;
    std::vector<std::string> calls;
    for (int i = 0; i < 20; ++i) calls.push_back(rpc("condenser_api.slow_read", "[" + std::to_string(i) + "]", std::to_string(i)));
    JsonPtr answers = parse_json(post_from("127.0.0.2", nginx.url("/"), json_list(calls)));
    std::size_t answered = 0;
    std::size_t busy = 0;
    std::set<std::string> connections;  // the backend's numbers of the connections that answered
    for (std::size_t i = 0; i < json_array_size(answers.get()); ++i) {
        json_t* element = json_array_get(answers.get(), i);
        if (json_object_get(element, "result") != nullptr) {
            ++answered;
            connections.insert(text_at(element, "result.connection"));
        }
        if (text_at(element, "error.code") == "1500") {
            ++busy;
            EXPECT_EQ(text_at(element, "error.message"), "Upstream busy: target node");
        }
    }
    // 2 sent (the address's half of the 4 connections) and 8 queued, the
    // others refused.
    EXPECT_EQ(answered + busy, 20u);
    EXPECT_EQ(answered, 10u);
    EXPECT_LE(connections.size(), 4u);
    EXPECT_EQ(text_at(parse_json(post_from("127.0.0.3", nginx.url("/"), rpc("condenser_api.get_config"))).get(),
                      "result.backend"),
              "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// The upstream queue is fair across client addresses: an address holds at
// most its share (jsonrpc_router_upstream_client_share, 50 %) of a URL's
// connections (here 4: two), and its backlog waits in its own line; another
// address's call reaches the node before that backlog, not behind it.
TEST(RouterClientLimits, OneAddressesBacklogDoesNotDelayAnothersCall) {
    ShippedRouter router(Backend::Options{.slow_ms = 1000}, "    jsonrpc_router_upstream_connections 4;\n");
    Backend& node = router.node;
    NginxServer& nginx = *router.nginx;
    const std::string url = nginx.url("/");
    const long before = node.stats().second;
    std::vector<std::string> calls;
    for (int i = 0; i < 8; ++i) calls.push_back(rpc("condenser_api.slow_read", "[" + std::to_string(i) + "]", std::to_string(i)));
    auto backlog = std::async(std::launch::async, [&] { return post_from("127.0.0.2", url, json_list(calls)); });
    // The backlog is queued once its first calls reach the node (a batch's
    // calls are all submitted at once).
    ASSERT_TRUE(harness::wait_until([&] { return node.stats().second >= before + 2; }, 10s));
    JsonPtr other = parse_json(post_from("127.0.0.3", url, rpc("condenser_api.slow_read", "[100]")));
    ASSERT_EQ(text_at(other.get(), "result.backend"), "node");
    const long other_served = std::stol(text_at(other.get(), "result.served"));  // the node's arrival order
    JsonPtr batch = parse_json(backlog.get());
    ASSERT_EQ(json_array_size(batch.get()), 8u);
    std::size_t ahead = 0;
    std::size_t behind = 0;
    for (std::size_t i = 0; i < 8; ++i) {
        const std::string served = text_at(json_array_get(batch.get(), i), "result.served");
        ASSERT_NE(served, "<absent>") << text_at(json_array_get(batch.get(), i), "error.message");
        (std::stol(served) < other_served ? ahead : behind) += 1;
    }
    // Two of the backlog (its share) before the other address's call, six after.
    EXPECT_EQ(ahead, 2u);
    EXPECT_EQ(behind, 6u);
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// A POST body trickled a byte every 100 ms (each pause far below nginx's
// client_body_timeout) is bounded as a whole by jsonrpc_router_body_timeout
// (here 1 s instead of 30): the connection is closed before the body is
// complete, the same worker goes on, and other clients are served.
TEST(RouterClientLimits, ASlowlyTrickledBodyIsCutOffAtItsDeadline) {
    ShippedRouter router(Backend::Options{}, "    jsonrpc_router_body_timeout 1s;\n");
    NginxServer& nginx = *router.nginx;
    // The worker, once it serves (it may not be listed before).
    ASSERT_EQ(text_at(parse_json(post_from("127.0.0.3", nginx.url("/"), rpc("condenser_api.get_config"))).get(),
                      "result.backend"),
              "node");
    const std::vector<pid_t> workers = nginx.worker_pids();
    const std::string body = rpc("condenser_api.get_config") + std::string(200, ' ');

    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(nginx.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string head = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n";
    ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
    // The whole trickle would take 20 s; the router closes it long before.
    bool closed = false;
    std::string answer;
    for (std::size_t sent = 0; sent < body.size() && !closed; ++sent) {
        if (::send(fd, body.data() + sent, 1, MSG_NOSIGNAL) != 1) closed = true;
        std::this_thread::sleep_for(100ms);
        char buffer[4096];
        ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) answer.append(buffer, static_cast<std::size_t>(n));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
    }
    ::close(fd);
    EXPECT_TRUE(closed) << "the whole trickled body was read";
    EXPECT_EQ(answer, "") << "a connection cut off at its deadline gets no answer";
    EXPECT_NE(read_file(nginx.error_log()).find("request body not read within 1000 ms, closed"), std::string::npos);
    // The same worker serves the next clients; a body that comes at once is read as before.
    EXPECT_EQ(text_at(parse_json(post_from("127.0.0.3", nginx.url("/"), rpc("condenser_api.get_config"))).get(),
                      "result.backend"),
              "node");
    EXPECT_EQ(nginx.worker_pids(), workers);
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// A raw connection from `source` that sends a POST's head with `Expect:
// 100-continue` and no body yet; what the router answers first.
struct HeldPost {
    HeldPost(std::uint16_t port, const std::string& source) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in local{};
        local.sin_family = AF_INET;
        ::inet_pton(AF_INET, source.c_str(), &local.sin_addr);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        timeval tv{10, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
            ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            throw std::runtime_error("connect from " + source);
        }
        const std::string head = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n";
        ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    }
    ~HeldPost() { ::close(fd); }
    HeldPost(const HeldPost&) = delete;
    HeldPost& operator=(const HeldPost&) = delete;
    // Until the end of the first answer's head (a 100 Continue: the router took
    // the request and waits for its body) or, with `to_end`, of the connection.
    std::string read(bool to_end) {
        std::string got;
        char buffer[4096];
        while (to_end || got.find("\r\n\r\n") == std::string::npos) {
            ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0) break;
            got.append(buffer, static_cast<std::size_t>(n));
        }
        return got;
    }
    int fd;
};

// Router requests that hold a connection are bounded per client address and
// worker (jsonrpc_router_max_client_connections, 64 shipped): 64 POST bodies
// being trickled from one address are read, the 65th request and a WebSocket
// upgrade from it are refused with 503 and a JSON-RPC error and their
// connections closed; another address is served; once the bodies end, the
// address has its connections again.
TEST(RouterClientLimits, ConnectionsPerClientAreBounded) {
    ShippedRouter router;
    NginxServer& nginx = *router.nginx;
    constexpr int kLimit = 64;
    std::vector<std::unique_ptr<HeldPost>> held;
    for (int i = 0; i < kLimit; ++i) {
        held.push_back(std::make_unique<HeldPost>(nginx.port(), "127.0.0.2"));
        ASSERT_NE(held.back()->read(false).find("100 Continue"), std::string::npos) << i;
        ::send(held.back()->fd, "[", 1, MSG_NOSIGNAL);  // the body begins, slowly
    }
    HeldPost over(nginx.port(), "127.0.0.2");
    const std::string refused = over.read(true);  // the whole answer, then the end of the connection
    EXPECT_NE(refused.find("HTTP/1.1 503"), std::string::npos) << refused;
    EXPECT_NE(refused.find("Connection: close"), std::string::npos) << refused;
    JsonPtr error = parse_json(refused.substr(refused.find("\r\n\r\n") + 4));
    EXPECT_EQ(text_at(error.get(), "error.code"), "1700");
    EXPECT_EQ(text_at(error.get(), "error.message"), "Too many connections from this client");
    EXPECT_NE(text_at(error.get(), "error.data"), "<absent>");
    WsClient upgrade(nginx.port(), "/", "127.0.0.2");
    EXPECT_EQ(upgrade.handshake_status(), 503);
    EXPECT_EQ(router.metric("jsonrpc_router_limited_total", {{"limit", "client_connections"}}), 2);
    // Another address meanwhile: served.
    EXPECT_EQ(text_at(parse_json(post_from("127.0.0.3", nginx.url("/"), rpc("condenser_api.get_config"))).get(),
                      "result.backend"),
              "node");
    held.clear();
    EXPECT_TRUE(harness::wait_until([&] {
        return text_at(parse_json(post_from("127.0.0.2", nginx.url("/"), rpc("condenser_api.get_config"))).get(),
                       "result.backend") == "node";
    }, 10s));
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// Our own budget is not the node's fault: calls that time out while they
// wait in the router's queue for one of jsonrpc_router_upstream_connections
// (here 1) never reached the node, which answers every call it gets in
// 0.6 s. They get their JSON-RPC timeout error, and both URLs of the pool
// stay in with no failure counted.
TEST(RouterClientLimits, ASaturatedUpstreamBudgetLeavesAHealthyNodeIn) {
    Backend a("a", Backend::Options{.slow_ms = 600});
    Backend b("b", Backend::Options{.slow_ms = 600});
    TempDir dir("router-client");
    write_file(dir.path() / "routes.json", R"({
  "targets": {"node": [")" + a.http_url() + R"(", ")" + b.http_url() + R"("]},
  "timeouts": 2,
  "routes": {"^": {"target": "node"}}
})");
    NginxServer nginx(nginx_options(
        router_http_config(dir.path() / "routes.json", "    jsonrpc_router_redis off;\n    jsonrpc_router_upstream_connections 1;\n")));
    std::vector<std::string> calls;
    for (int i = 0; i < 16; ++i) calls.push_back(rpc("condenser_api.slow_read", "[" + std::to_string(i) + "]", std::to_string(i)));
    JsonPtr answers = parse_json(post_from("127.0.0.2", nginx.url("/"), json_list(calls)));
    std::size_t answered = 0;
    std::size_t timed_out = 0;
    for (std::size_t i = 0; i < json_array_size(answers.get()); ++i) {
        json_t* element = json_array_get(answers.get(), i);
        if (json_object_get(element, "result") != nullptr) ++answered;
        if (text_at(element, "error.code") == "1000") ++timed_out;
        EXPECT_EQ(text_at(element, "id"), std::to_string(i));
    }
    EXPECT_EQ(answered + timed_out, 16u);
    EXPECT_GE(timed_out, 4u) << "the budget was not saturated";
    JsonPtr status = parse_json(harness::http_request("GET", nginx.url("/")).body);
    for (const char* url : {"0", "1"}) {
        EXPECT_EQ(text_at(status.get(), std::string("targets.node.") + url + ".in"), "true") << url;
        EXPECT_EQ(text_at(status.get(), std::string("targets.node.") + url + ".failures"), "0") << url;
    }
    EXPECT_EQ(read_file(nginx.error_log()).find("consecutive failures"), std::string::npos);
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// Every budget is checked by `nginx -t`; the shipped values pass.
TEST(RouterClientLimits, NginxRefusesBudgetsOutOfRange) {
    TempDir dir("router-client");
    write_file(dir.path() / "routes.json", read_file(source_dir() / "conf" / "routes.hive.json"));
    auto check = [&](const std::string& directives) {
        return NginxServer::test_config(
            nginx_options(router_http_config(dir.path() / "routes.json", "    jsonrpc_router_redis off;\n" + directives)));
    };
    EXPECT_EQ(check("").exit_code, 0);
    EXPECT_EQ(check("    jsonrpc_router_client_rate 0;\n").exit_code, 0);  // no limit
    for (const char* bad : {"jsonrpc_router_max_client_calls many;", "jsonrpc_router_max_response 1k;", "jsonrpc_router_max_client_response 1m;",
                            "jsonrpc_router_ws_max_output 1m;", "jsonrpc_router_ws_send_timeout 0;",
                            "jsonrpc_router_upstream_connections 0;", "jsonrpc_router_upstream_queue -1;",
                            "jsonrpc_router_upstream_client_share 0;", "jsonrpc_router_upstream_client_share 101;",
                            "jsonrpc_router_body_timeout 0;", "jsonrpc_router_ws_worker_output 16m;",
                            "jsonrpc_router_ws_client_output 0;", "jsonrpc_router_ws_client_output 200m;",
                            "jsonrpc_router_max_client_connections -1;", "jsonrpc_router_client_rate 1k;"}) {
        auto result = check(std::string("    ") + bad + "\n");
        EXPECT_NE(result.exit_code, 0) << bad;
        const std::string name = std::string(bad).substr(0, std::string(bad).find(' '));
        EXPECT_NE(result.output.find(name), std::string::npos) << result.output;
    }
}

// The public GET / tells each URL's health by its place in the routing file,
// never its address (that is /metrics', kept to loopback).
TEST(RouterClientLimits, ThePublicStatusNamesNoBackendAddress) {
    ShippedRouter router;
    Backend& node = router.node;
    NginxServer& nginx = *router.nginx;
    JsonPtr parsed = parse_json(harness::http_request("GET", nginx.url("/")).body);
    EXPECT_EQ(text_at(parsed.get(), "status"), "OK");
    EXPECT_NE(text_at(parsed.get(), "targets.node.0.in"), "<absent>");
    EXPECT_EQ(harness::http_request("GET", nginx.url("/")).body.find(std::to_string(node.port())), std::string::npos);
}

// An address that takes more answer bytes than jsonrpc_router_client_rate
// (here 512 KiB/s, after a burst of jsonrpc_router_max_client_response,
// 2 MiB) is slowed, not refused: its next request waits until it has paid
// back, while another address is served at once; then its request is
// answered (the budget comes back). Its WebSocket connections wait the same way.
TEST(RouterClientLimits, AnAddressOverItsAnswerRateWaitsWhileOthersAreServed) {
    ShippedRouter router(Backend::Options{}, "    jsonrpc_router_max_response 2m;\n    jsonrpc_router_max_client_response 2m;\n"
                                             "    jsonrpc_router_client_rate 512k;\n");
    NginxServer& nginx = *router.nginx;
    const std::string url = nginx.url("/");
    auto big = [](int i) { return rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]"); };
    // Three answers of a bit over 1 MiB: the burst, and 1 MiB beyond it (about 2 s at 512 KiB/s).
    for (int i = 0; i < 3; ++i) ASSERT_NE(post_from("127.0.0.2", url, big(i)).find("\"result\""), std::string::npos) << i;
    auto waiting = std::async(std::launch::async, [&] { return post_from("127.0.0.2", url, big(3)); });
    EXPECT_NE(post_from("127.0.0.3", url, big(4)).find("\"result\""), std::string::npos);
    EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout) << "the address over its rate was not slowed";
    EXPECT_NE(waiting.get().find("\"result\""), std::string::npos);
    // Over it again by that answer: its WebSocket connection is not read until it has paid back.
    WsClient ws(nginx.port(), "/", "127.0.0.2");
    ASSERT_EQ(ws.handshake_status(), 101);
    ws.send_text(rpc("condenser_api.get_config"));
    ws.set_timeout(300ms);
    EXPECT_TRUE(ws.next_message().empty()) << "a WebSocket of the address over its rate was read";
    ws.set_timeout(20s);
    EXPECT_EQ(text_at(parse_json(ws.next_message()).get(), "result.backend"), "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

// The answers queued for an address on all its WebSocket connections are
// bounded (jsonrpc_router_ws_client_output, here 2 MiB): past it, none of its
// connections is read (a call on another of them waits), another address is
// served, and reading resumes once the queued answers are read.
TEST(RouterClientLimits, AnAddressWithTooManyQueuedWebSocketAnswersIsNotRead) {
    ShippedRouter router(Backend::Options{},
                         "    jsonrpc_router_max_response 2m;\n    jsonrpc_router_ws_client_output 2m;\n", "sndbuf=32k");
    NginxServer& nginx = *router.nginx;
    WsClient holder(nginx.port(), "/", "127.0.0.2", 16 * 1024);
    ASSERT_EQ(holder.handshake_status(), 101);
    constexpr int kAsked = 4;  // answers of a bit over 1 MiB each, not read for now
    for (int i = 0; i < kAsked; ++i) holder.send_text(rpc("condenser_api.get_big_thing", "[" + std::to_string(i) + "]"));
    ASSERT_TRUE(harness::wait_until([&] { return router.metric("jsonrpc_router_ws_output_bytes") > (2 << 20); }, 20s));
    WsClient second(nginx.port(), "/", "127.0.0.2");
    ASSERT_EQ(second.handshake_status(), 101);
    second.send_text(rpc("condenser_api.get_config"));
    WsClient other(nginx.port(), "/", "127.0.0.3");
    EXPECT_EQ(text_at(parse_json(other.call(rpc("condenser_api.get_config"))).get(), "result.backend"), "node");
    second.set_timeout(500ms);
    EXPECT_TRUE(second.next_message().empty()) << "a connection of the address was read over its queued output";
    // Read the queued answers: the second connection is read again and answered.
    holder.set_timeout(20s);
    for (int i = 0; i < kAsked; ++i) ASSERT_FALSE(holder.next_message().empty()) << i;
    second.set_timeout(10s);
    EXPECT_EQ(text_at(parse_json(second.next_message()).get(), "result.backend"), "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}
