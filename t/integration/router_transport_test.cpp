// Transports to targets through real nginx: HTTP and unix-socket keep-alive
// reuse, WebSocket upstreams multiplexing calls matched by id and
// reconnecting, HTTPS/WSS, and the proxy's errors: 1000 on a timeout, 1500
// for a dead target, 1100 for a bad body, -32601 without a route; a slow or
// dead target fails only the calls routed to it.
#include <future>
#include <set>
#include <thread>

#include "router_support.hpp"

using namespace router_test;

namespace {

std::string field(const std::string& body, const std::string& path) { return text_at(parse_json(body).get(), path); }

class RouterTransport : public ::testing::Test {
protected:
    void start(const std::string& targets, const std::string& timeouts, const std::string& extra = "") {
        write_file(dir.path() / "routes.json", R"({"targets": {)" + targets + R"(}, "timeouts": )" + timeouts + R"(,
  "routes": {"^h\\.": {"target": "h"}, "^u\\.": {"target": "u"}, "^w\\.": {"target": "w"}, "^d\\.": {"target": "d"}}})");
        nginx = std::make_unique<NginxServer>(nginx_options(
            router_http_config(dir.path() / "routes.json", "    jsonrpc_router_redis off;\n" + extra)));
    }
    void TearDown() override {
        if (nginx) {
            EXPECT_TRUE(nginx->fatal_log_lines().empty());
        }
    }
    HttpResponse post(const std::string& body) { return http_post_json(nginx->url(), body); }

    TempDir dir{"router-transport"};
    std::unique_ptr<NginxServer> nginx;
};

}  // namespace

TEST_F(RouterTransport, EachTransportReusesItsConnections) {
    Backend http("h"), unix_backend("u", {true, 1500}), ws("w");
    start(R"("h": ")" + http.http_url() + R"(", "u": ")" + unix_backend.sock_url() + R"(", "w": ")" + ws.ws_url() + R"(",
            "d": "http://127.0.0.1:9")",
          "5", "    jsonrpc_router_ws_connections 1;\n");
    for (const char* api : {"h", "u", "w"}) {
        std::set<std::string> connections;
        for (int i = 0; i < 10; ++i) {
            auto r = post(rpc(std::string(api) + ".get", json_list({std::to_string(i)}), std::to_string(i)));
            ASSERT_EQ(field(r.body, "result.backend"), api) << r.body;
            EXPECT_EQ(field(r.body, "id"), std::to_string(i));
            connections.insert(field(r.body, "result.connection"));
        }
        EXPECT_EQ(connections.size(), 1u) << api << ": one kept-alive connection served every call";
    }
}

TEST_F(RouterTransport, WebSocketTargetMultiplexesCallsMatchedById) {
    Backend ws("w", {false, 1000});
    start(R"("h": "http://127.0.0.1:9", "u": "http://127.0.0.1:9", "w": ")" + ws.ws_url() + R"(", "d": "http://127.0.0.1:9")",
          "5", "    jsonrpc_router_ws_connections 1;\n");
    auto slow = std::async(std::launch::async, [&] { return post(rpc("w.slow_read", "[1]", "\"slow\"")); });
    std::this_thread::sleep_for(100ms);
    // Answered while the slow call is still pending on the same connection.
    std::vector<std::string> fast_connections;
    for (int i = 0; i < 5; ++i) {
        auto r = post(rpc("w.fast", "[2]", std::to_string(100 + i)));
        EXPECT_EQ(field(r.body, "id"), std::to_string(100 + i));
        EXPECT_EQ(field(r.body, "result.method"), "w.fast");
        fast_connections.push_back(field(r.body, "result.connection"));
    }
    EXPECT_EQ(slow.wait_for(0s), std::future_status::timeout);
    auto s = slow.get();
    EXPECT_EQ(field(s.body, "id"), "slow");
    EXPECT_EQ(field(s.body, "result.method"), "w.slow_read");
    EXPECT_EQ(field(s.body, "result.connection"), fast_connections[0]);
}

TEST_F(RouterTransport, TargetsComingBackAreReconnected) {
    Backend http("h"), ws("w");
    start(R"("h": ")" + http.http_url() + R"(", "u": "http://127.0.0.1:9", "w": ")" + ws.ws_url() + R"(", "d": "http://127.0.0.1:9")",
          "5");
    EXPECT_EQ(field(post(rpc("h.a")).body, "result.backend"), "h");
    EXPECT_EQ(field(post(rpc("w.a")).body, "result.backend"), "w");
    http.stop();
    ws.stop();
    EXPECT_EQ(field(post(rpc("h.a")).body, "error.code"), "1500");
    EXPECT_EQ(field(post(rpc("w.a")).body, "error.code"), "1500");
    http.start();
    ws.start();
    EXPECT_EQ(field(post(rpc("h.a")).body, "result.backend"), "h");
    EXPECT_EQ(field(post(rpc("w.a")).body, "result.backend"), "w");
}

TEST_F(RouterTransport, AKeptAliveConnectionTheTargetClosedIsRetriedOnce) {
    Backend http("h");
    start(R"("h": ")" + http.http_url() + R"(", "u": "http://127.0.0.1:9", "w": "http://127.0.0.1:9", "d": "http://127.0.0.1:9")",
          "5");
    EXPECT_EQ(field(post(rpc("h.a")).body, "result.backend"), "h");
    http.stop();  // the pooled connection is now dead
    http.start();
    auto r = post(rpc("h.a"));
    EXPECT_EQ(field(r.body, "result.backend"), "h") << r.body;
}

TEST_F(RouterTransport, TimeoutsDeadTargetsAndBadBodiesFailOnlyTheirCalls) {
    Backend http("h", {false, 3000}), ws("w", {false, 3000}), unix_backend("u", {true, 3000});
    start(R"("h": ")" + http.http_url() + R"(", "u": ")" + unix_backend.sock_url() + R"(", "w": ")" + ws.ws_url() +
              R"(", "d": "http://127.0.0.1:9")",
          R"({"h": 0.4, "u": 0.4, "w": 0.4, "d": 2})");
    for (const char* api : {"h", "u", "w"}) {
        auto r = post(rpc(std::string(api) + ".slow", "[]", "\"t\""));
        EXPECT_EQ(field(r.body, "error.code"), "1000") << r.body;
        EXPECT_EQ(field(r.body, "id"), "t");
        std::string request_id = field(r.body, "error.data.request_id");
        EXPECT_EQ(request_id.size(), 16u);
        EXPECT_NE(read_file(nginx->error_log()).find("request_id=" + request_id + " code=1000"), std::string::npos);
    }
    auto dead = post(rpc("d.get", "[]", "9"));
    EXPECT_EQ(field(dead.body, "error.code"), "1500");
    EXPECT_EQ(field(dead.body, "id"), "9");
    EXPECT_EQ(field(dead.body, "error.message"), "Upstream unavailable: target d");
    for (const char* api : {"h", "u", "w"}) {
        auto bad = post(rpc(std::string(api) + ".garbage", "[]", "4"));
        EXPECT_EQ(field(bad.body, "error.code"), "1100") << bad.body;
        EXPECT_EQ(field(bad.body, "id"), "4");
        auto upstream_error = post(rpc(std::string(api) + ".fail", "[]", "5"));
        EXPECT_EQ(field(upstream_error.body, "error.code"), "-32003");  // passed through, with the caller's id
        EXPECT_EQ(field(upstream_error.body, "id"), "5");
    }
    auto dropped = post(rpc("h.drop"));
    EXPECT_EQ(field(dropped.body, "error.code"), "1500");
    auto unrouted = post(rpc("zzz.get_thing", "[]", "\"n\""));
    EXPECT_EQ(field(unrouted.body, "error.code"), "-32601");
    EXPECT_EQ(field(unrouted.body, "error.message"), "no route for method zzz.get_thing");
    EXPECT_EQ(field(unrouted.body, "id"), "n");

    // One batch: only the calls routed to the slow or dead target fail.
    auto batch = post("[" + rpc("h.slow", "[]", "1") + "," + rpc("u.get", "[]", "2") + "," + rpc("d.get", "[]", "3") + "," +
                      rpc("w.get", "[]", "4") + "]");
    auto j = parse_json(batch.body);
    EXPECT_EQ(text_at(j.get(), "0.error.code"), "1000");
    EXPECT_EQ(text_at(j.get(), "1.result.backend"), "u");
    EXPECT_EQ(text_at(j.get(), "2.error.code"), "1500");
    EXPECT_EQ(text_at(j.get(), "3.result.backend"), "w");
    for (int i = 0; i < 4; ++i) EXPECT_EQ(text_at(j.get(), std::to_string(i) + ".id"), std::to_string(i + 1));
}

TEST_F(RouterTransport, HttpsAndWssTargetsWithVerifiedCertificates) {
    Backend backend("tls-backend");
    TempDir tls("router-tls");
    auto gen = run_command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", (tls.path() / "key.pem").string(),
                            "-out", (tls.path() / "cert.pem").string(), "-days", "2", "-subj", "/CN=localhost", "-addext",
                            "subjectAltName=DNS:localhost,IP:127.0.0.1"});
    ASSERT_EQ(gen.exit_code, 0) << gen.output;
    // A TLS front (plain nginx) before the stand-in backend.
    NginxServer front(nginx_options("server {\n  listen 127.0.0.1:{{PORT}} ssl;\n  ssl_certificate " +
                                    (tls.path() / "cert.pem").string() + ";\n  ssl_certificate_key " +
                                    (tls.path() / "key.pem").string() +
                                    ";\n  location / {\n    proxy_pass " + backend.http_url() +
                                    ";\n    proxy_http_version 1.1;\n    proxy_set_header Upgrade $http_upgrade;\n"
                                    "    proxy_set_header Connection $http_connection;\n  }\n}\n"));
    std::string port = std::to_string(front.port());
    start(R"("h": "https://localhost:)" + port + R"(/", "w": "wss://localhost:)" + port + R"(/", "u": "http://127.0.0.1:9",
            "d": "https://127.0.0.1:)" + port + R"(/")",
          "5", "    jsonrpc_router_ssl_trusted_certificate " + (tls.path() / "cert.pem").string() + ";\n");
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(field(post(rpc("h.get", "[1]")).body, "result.backend"), "tls-backend");
        EXPECT_EQ(field(post(rpc("w.get", "[1]")).body, "result.backend"), "tls-backend");
    }
    nginx.reset();
    // Without the certificate among the trusted ones, nothing is sent.
    start(R"("h": "https://localhost:)" + port + R"(/", "w": "http://127.0.0.1:9", "u": "http://127.0.0.1:9", "d": "http://127.0.0.1:9")",
          "5");
    EXPECT_EQ(field(post(rpc("h.get", "[1]")).body, "error.code"), "1500");
}
