// Bad input to the router through real nginx: each gets its JSON-RPC error,
// and the worker stays up (no crash, alert or sanitizer report in the log).
#include "router_support.hpp"

using namespace router_test;

namespace {

class RouterInput : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        backend = std::make_unique<Backend>("b");
        dir = std::make_unique<TempDir>("router-input");
        write_file(dir->path() / "routes.json",
                   R"({"targets": {"b": ")" + backend->http_url() + R"("}, "routes": {"^b\\.": {"target": "b"}}})");
        nginx = std::make_unique<NginxServer>(nginx_options(router_http_config(
            dir->path() / "routes.json",
            "    jsonrpc_router_redis off;\n    jsonrpc_router_max_body 64k;\n    jsonrpc_router_max_batch 10;\n")));
    }
    static void TearDownTestSuite() {
        nginx.reset();
        backend.reset();
        dir.reset();
    }
    void TearDown() override {
        // The worker still answers, and nothing bad was logged.
        auto r = http_post_json(nginx->url(), rpc("b.ping", "[]", "\"alive\""));
        EXPECT_EQ(text_at(parse_json(r.body).get(), "result.backend"), "b");
        EXPECT_TRUE(nginx->fatal_log_lines().empty());
    }
    static void expect_error(const HttpResponse& r, long status, const std::string& code, const std::string& id = "null") {
        EXPECT_EQ(r.status, status) << r.body;
        auto j = parse_json(r.body);
        EXPECT_EQ(text_at(j.get(), "error.code"), code) << r.body;
        EXPECT_EQ(text_at(j.get(), "id"), id) << r.body;
        EXPECT_EQ(text_at(j.get(), "jsonrpc"), "2.0");
        EXPECT_EQ(text_at(j.get(), "error.data.request_id"), r.headers.at("x-jsonrpc-request-id"));
    }
    static HttpResponse post(const std::string& body) { return http_post_json(nginx->url(), body); }

    static inline std::unique_ptr<Backend> backend;
    static inline std::unique_ptr<TempDir> dir;
    static inline std::unique_ptr<NginxServer> nginx;
};

}  // namespace

TEST_F(RouterInput, MalformedJson) {
    expect_error(post(R"({"jsonrpc":"2.0","method":"b.x",)"), 200, "-32700");
    expect_error(post("{'single': 'quotes'}"), 200, "-32700");
    expect_error(post(R"({"jsonrpc":"2.0","method":"b.x","id":1} trailing)"), 200, "-32700");
}

TEST_F(RouterInput, EmptyBody) { expect_error(post(""), 200, "-32700"); }

TEST_F(RouterInput, NotARequestObject) {
    expect_error(post("42"), 200, "-32600");
    expect_error(post(R"("text")"), 200, "-32600");
    expect_error(post("[]"), 200, "-32600");
    expect_error(post(R"({"jsonrpc":"2.0","id":3})"), 200, "-32600", "3");
    expect_error(post(R"({"jsonrpc":"2.0","method":7,"id":"m"})"), 200, "-32600", "m");
    expect_error(post(R"({"jsonrpc":"2.0","method":"b.x","params":"str","id":4})"), 200, "-32600", "4");
    expect_error(post(R"({"jsonrpc":"2.0","method":"call","params":["b"],"id":5})"), 200, "-32600", "5");
    expect_error(post(R"({"jsonrpc":"2.0","method":"b.x","id":{"obj":1}})"), 200, "-32600");
    expect_error(post(R"({"method":"b.x","id":6})"), 200, "-32600", "6");
}

TEST_F(RouterInput, OversizedBody) {
    std::string big = rpc("b.x", "[\"" + std::string(70 * 1024, 'a') + "\"]");
    expect_error(post(big), 413, "-32600");
    // Chunked, without a length up front.
    auto chunked = http_request("POST", nginx->url(), big, {"Content-Type: application/json", "Transfer-Encoding: chunked"});
    expect_error(chunked, 413, "-32600");
}

TEST_F(RouterInput, HugeBatch) {
    std::vector<std::string> calls;
    for (int i = 0; i < 11; ++i) calls.push_back(rpc("b.x", "[]", std::to_string(i)));
    auto r = post(json_list(calls));
    expect_error(r, 200, "1600");
    EXPECT_EQ(text_at(parse_json(r.body).get(), "error.message"), "JSONRPC batch size of 11 exceeds 10");
    calls.pop_back();
    auto full = post(json_list(calls));
    auto j = parse_json(full.body);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(text_at(j.get(), std::to_string(i) + ".id"), std::to_string(i));
}

TEST_F(RouterInput, DeepNesting) {
    expect_error(post(rpc("b.x", std::string(1000, '[') + std::string(1000, ']'), "1")), 200, "-32600");
    expect_error(post(std::string(20000, '[') + std::string(20000, ']')), 200, "-32600");
    std::string objects;
    for (int i = 0; i < 2000; ++i) objects += "{\"a\":";
    expect_error(post(objects + "1" + std::string(2000, '}')), 200, "-32600");
    // 60 levels are fine.
    auto ok = post(rpc("b.x", std::string(60, '[') + std::string(60, ']'), "2"));
    EXPECT_EQ(text_at(parse_json(ok.body).get(), "result.backend"), "b");
}

TEST_F(RouterInput, InvalidUtf8) {
    expect_error(post("{\"jsonrpc\":\"2.0\",\"method\":\"b.x\",\"params\":[\"\xff\xfe\"],\"id\":1}"), 200, "-32700");
    expect_error(post("{\"jsonrpc\":\"2.0\",\"method\":\"b.\xc0\xaf\",\"id\":1}"), 200, "-32700");
}

TEST_F(RouterInput, MixedBatchGetsPerElementErrors) {
    auto r = post("[1, " + rpc("b.x", "[]", "\"ok\"") + R"(, {"jsonrpc":"2.0","method":"nowhere.x","id":2}])");
    auto j = parse_json(r.body);
    EXPECT_EQ(text_at(j.get(), "0.error.code"), "-32600");
    EXPECT_EQ(text_at(j.get(), "1.result.backend"), "b");
    EXPECT_EQ(text_at(j.get(), "1.id"), "ok");
    EXPECT_EQ(text_at(j.get(), "2.error.code"), "-32601");
    EXPECT_EQ(text_at(j.get(), "2.id"), "2");
}

TEST_F(RouterInput, OtherHttpMethods) {
    auto get = http_request("GET", nginx->url());
    EXPECT_EQ(get.status, 200);
    EXPECT_EQ(text_at(parse_json(get.body).get(), "status"), "OK");
    expect_error(http_request("PUT", nginx->url(), rpc("b.x")), 405, "-32600");
    expect_error(http_request("DELETE", nginx->url()), 405, "-32600");
    // A broken WebSocket upgrade is refused without taking the connection over.
    auto bad_upgrade = http_request("GET", nginx->url(), "", {"Upgrade: websocket", "Connection: Upgrade"});
    EXPECT_EQ(bad_upgrade.status, 400);
}

TEST_F(RouterInput, ClientsGoingAwayMidRequest) {
    // Requests whose clients give up before the target answers.
    for (int i = 0; i < 5; ++i) {
        auto r = http_request("POST", nginx->url(), rpc("b.slow"), {"Content-Type: application/json"}, 100ms);
        EXPECT_FALSE(r.error.empty());
    }
}
