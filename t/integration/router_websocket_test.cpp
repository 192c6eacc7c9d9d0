// WebSocket clients on the router's endpoint (the same location as POST):
// identical routing and caching, several messages in flight answered by id,
// batches, ping/pong, close, the maximum message size, the idle timeout,
// protocol violations, and an independent client (python3-websockets).
#include <thread>

#include "router_support.hpp"

using namespace router_test;
namespace ws = router::ws;

namespace {

class RouterWebSocketClients : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        node = std::make_unique<Backend>("node", Backend::Options{false, 800});
        social = std::make_unique<Backend>("social");
        dir = std::make_unique<TempDir>("router-ws");
        write_file(dir->path() / "routes.json", R"({"targets": {"node": ")" + node->http_url() + R"(", "social": ")" +
                                                     social->ws_url() + R"("},
  "routes": {"^bridge\\.": {"target": "social", "cache": 30}, "^condenser_api\\.": {"target": "node"}}})");
        redis = std::make_unique<RedisServer>();
        nginx = std::make_unique<NginxServer>(nginx_options(router_http_config(
            dir->path() / "routes.json", redis_directive(*redis) + "    jsonrpc_router_max_body 4k;\n"
                                                                   "    jsonrpc_router_ws_idle_timeout 1500ms;\n"
                                                                   "    jsonrpc_router_ws_ping_interval 400ms;\n")));
    }
    static void TearDownTestSuite() {
        nginx.reset();
        redis.reset();
        node.reset();
        social.reset();
        dir.reset();
    }
    void TearDown() override { EXPECT_TRUE(nginx->fatal_log_lines().empty()); }

    static std::optional<ws::Event> next_non_ping(WsClient& c) {
        for (;;) {
            auto e = c.next();
            if (!e || e->kind != ws::Event::Kind::Ping) return e;
        }
    }

    static inline std::unique_ptr<Backend> node, social;
    static inline std::unique_ptr<TempDir> dir;
    static inline std::unique_ptr<RedisServer> redis;
    static inline std::unique_ptr<NginxServer> nginx;
};

}  // namespace

TEST_F(RouterWebSocketClients, RoutesAndCachesLikePost) {
    WsClient c(nginx->port());
    ASSERT_EQ(c.handshake_status(), 101);
    auto first = parse_json(c.call(rpc("bridge.get_post", R"({"author":"a"})", "1")));
    EXPECT_EQ(text_at(first.get(), "result.backend"), "social");
    auto again = parse_json(c.call(rpc("bridge.get_post", R"({"author":"a"})", "\"second\"")));
    EXPECT_EQ(text_at(again.get(), "result.served"), text_at(first.get(), "result.served"));  // from the cache
    EXPECT_EQ(text_at(again.get(), "id"), "second");
    // A POST of the same call hits the entry the WebSocket call stored.
    auto post = http_post_json(nginx->url(), rpc("bridge.get_post", R"({"author":"a"})", "3"));
    EXPECT_EQ(post.headers["x-jsonrpc-cache"], "HIT");
    auto legacy = parse_json(c.call(rpc("call", R"(["condenser_api","get_accounts",[["a"]]])", "4")));
    EXPECT_EQ(text_at(legacy.get(), "result.backend"), "node");
    auto error = parse_json(c.call(rpc("nowhere.x", "[]", "5")));
    EXPECT_EQ(text_at(error.get(), "error.code"), "-32601");
    EXPECT_EQ(text_at(error.get(), "id"), "5");
}

TEST_F(RouterWebSocketClients, SeveralMessagesInFlightAnswerWithTheirIds) {
    WsClient c(nginx->port());
    c.send_text(rpc("condenser_api.slow_thing", "[]", "\"slow\""));
    c.send_text(rpc("condenser_api.fast", "[]", "\"fast\""));
    c.send_text(json_list({rpc("condenser_api.a", "[]", "1"), rpc("bridge.b", "[]", "2")}));
    std::vector<std::string> order;
    for (int i = 0; i < 3; ++i) {
        auto j = parse_json(c.next_message());
        order.push_back(json_is_array(j.get()) ? "batch" : text_at(j.get(), "id"));
        if (json_is_array(j.get())) {
            EXPECT_EQ(text_at(j.get(), "0.result.backend"), "node");
            EXPECT_EQ(text_at(j.get(), "1.result.backend"), "social");
        }
    }
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order.back(), "slow");  // answered when ready, not in send order
}

TEST_F(RouterWebSocketClients, PingPongAndClose) {
    WsClient c(nginx->port());
    c.send_frame(ws::Opcode::Ping, "hello");
    auto pong = next_non_ping(c);
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->kind, ws::Event::Kind::Pong);
    EXPECT_EQ(pong->payload, "hello");
    // The server pings an idle client.
    auto ping = c.next();
    ASSERT_TRUE(ping);
    EXPECT_EQ(ping->kind, ws::Event::Kind::Ping);
    c.send_raw(ws::encode_close(1000, "done", true));
    auto close = next_non_ping(c);
    ASSERT_TRUE(close);
    EXPECT_EQ(close->kind, ws::Event::Kind::Close);
    EXPECT_EQ(close->close_code, 1000);
    EXPECT_FALSE(c.next());  // then the connection ends
}

TEST_F(RouterWebSocketClients, OversizedMessageClosesWith1009) {
    WsClient c(nginx->port());
    c.send_text(rpc("condenser_api.x", "[\"" + std::string(5000, 'x') + "\"]"));
    auto close = next_non_ping(c);
    ASSERT_TRUE(close);
    EXPECT_EQ(close->kind, ws::Event::Kind::Close);
    EXPECT_EQ(close->close_code, ws::close_code::too_big);
}

TEST_F(RouterWebSocketClients, ProtocolViolationsClose) {
    {
        WsClient c(nginx->port());
        c.send_frame(ws::Opcode::Text, rpc("condenser_api.x"), false);  // unmasked
        auto close = next_non_ping(c);
        ASSERT_TRUE(close);
        EXPECT_EQ(close->close_code, ws::close_code::protocol_error);
    }
    {
        WsClient c(nginx->port());
        c.send_frame(ws::Opcode::Binary, rpc("condenser_api.x"));
        auto close = next_non_ping(c);
        ASSERT_TRUE(close);
        EXPECT_EQ(close->close_code, ws::close_code::unsupported_data);
    }
    {
        WsClient c(nginx->port());
        c.send_text("{\"bad\xff\"}");
        auto close = next_non_ping(c);
        ASSERT_TRUE(close);
        EXPECT_EQ(close->close_code, ws::close_code::invalid_payload);
    }
    {
        WsClient c(nginx->port());  // bad JSON in a valid frame is an ordinary JSON-RPC error
        EXPECT_EQ(text_at(parse_json(c.call("{oops")).get(), "error.code"), "-32700");
    }
}

TEST_F(RouterWebSocketClients, IdleClientsAreClosed) {
    WsClient c(nginx->port());
    // Pings are not activity from the client: it is closed after the idle timeout.
    auto close = next_non_ping(c);
    ASSERT_TRUE(close);
    EXPECT_EQ(close->kind, ws::Event::Kind::Close);
    EXPECT_EQ(close->close_code, ws::close_code::going_away);
}

TEST_F(RouterWebSocketClients, AnIndependentClientLibraryWorks) {
    fs::path script = dir->path() / "client.py";
    write_file(script, R"PY(
import asyncio, json, sys
import websockets

async def main(url):
    async with websockets.connect(url, ping_interval=None, max_size=2**20) as ws:
        await ws.ping(b"x")
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "bridge.get_ranked_posts", "params": {"sort": "hot"}, "id": "py"}))
        a = json.loads(await ws.recv())
        await ws.send(json.dumps([{"jsonrpc": "2.0", "method": "condenser_api.get_accounts", "params": [["x"]], "id": 1}]))
        b = json.loads(await ws.recv())
        print(a["result"]["backend"], a["id"], b[0]["result"]["backend"], b[0]["id"])

asyncio.run(main(sys.argv[1]))
)PY");
    auto r = run_command({"/usr/bin/python3", script.string(), "ws://127.0.0.1:" + std::to_string(nginx->port()) + "/"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, "social py node 1\n");
}

// A reload (or graceful stop) must not wait for WebSocket clients, pooled
// upstream connections or Redis: the old worker closes them and exits.
TEST(RouterReload, OldWorkerClosesItsConnectionsAndExits) {
    Backend node("node"), social("social");
    RedisServer redis;
    TempDir dir("router-reload");
    write_file(dir.path() / "routes.json", R"({"targets": {"node": ")" + node.http_url() + R"(", "social": ")" +
                                               social.ws_url() + R"("},
  "routes": {"^bridge\\.": {"target": "social", "cache": 30}, "^condenser_api\\.": {"target": "node"}}})");
    NginxServer nginx(nginx_options(router_http_config(dir.path() / "routes.json", redis_directive(redis))));
    WsClient client(nginx.port());
    EXPECT_EQ(text_at(parse_json(client.call(rpc("bridge.get_post", "[1]"))).get(), "result.backend"), "social");
    EXPECT_EQ(text_at(parse_json(http_post_json(nginx.url(), rpc("condenser_api.get_block", "[1]")).body).get(),
                      "result.backend"),
              "node");
    nginx.reload();
    EXPECT_TRUE(wait_until([&] { return read_file(nginx.error_log()).find("exited with code 0") != std::string::npos; }));
    EXPECT_EQ(client.next_message(), "");  // the old worker let the client go
    WsClient fresh(nginx.port());
    EXPECT_EQ(text_at(parse_json(fresh.call(rpc("bridge.get_post", "[1]", "2"))).get(), "id"), "2");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}
