// No C++ exception reaches nginx's event loop from the router (issue 32,
// point 3): an allocation failure injected into each entry point
// (WALLET_FAULT_INJECT, a test build's fault points: ngx_wallet_guard.hpp)
// is answered with a JSON-RPC internal error, or a WebSocket close 1011 where
// no answer can be matched to a message; the worker lives on (same pid), the
// exception is counted in /metrics, and the next request is served.
#include "router_support.hpp"

using namespace router_test;
namespace ws = router::ws;

namespace {

#ifdef WALLET_FAULT_INJECTION

class RouterGuard : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // A "...slow..." method answers after 2 s: its call's timer fires first.
        node = std::make_unique<Backend>("node", Backend::Options{false, 2000});
        dir = std::make_unique<TempDir>("router-guard");
        write_file(dir->path() / "routes.json", R"({"targets": {"node": ")" + node->http_url() + R"("},
  "timeouts": 0.5, "routes": {"^condenser_api\\.": {"target": "node"}}})");
    }
    static void TearDownTestSuite() {
        node.reset();
        dir.reset();
    }

    // A router whose worker throws std::bad_alloc the first time it reaches `point`.
    void start(const std::string& point) {
        SCOPED_TRACE(point);
        NginxServer::Options options = nginx_options(
            router_http_config(dir->path() / "routes.json", "", "  location = /metrics { jsonrpc_router_metrics; }\n"));
        options.env["WALLET_FAULT_INJECT"] = point;
        nginx = std::make_unique<NginxServer>(options);
        ASSERT_TRUE(wait_until([&] { return nginx->worker_pids().size() == 1; }));
        workers = nginx->worker_pids();
    }

    // The worker survived, counted one exception, logged it, and serves.
    void expect_recovered(const std::string& where) {
        EXPECT_EQ(nginx->worker_pids(), workers);
        auto metrics = http_request("GET", nginx->url("/metrics"));
        EXPECT_NE(metrics.body.find("\nwallet_module_handler_exceptions_total 1\n"), std::string::npos) << metrics.body;
        EXPECT_NE(read_file(nginx->error_log()).find("exception in " + where + ": std::bad_alloc"),
                  std::string::npos);
        auto next = parse_json(http_post_json(nginx->url(), rpc("condenser_api.get_config", "[]", "9")).body);
        EXPECT_EQ(text_at(next.get(), "result.backend"), "node");
        WsClient c(nginx->port());
        auto over_ws = parse_json(c.call(rpc("condenser_api.get_config", "[]", "10")));
        EXPECT_EQ(text_at(over_ws.get(), "result.backend"), "node");
        EXPECT_TRUE(nginx->fatal_log_lines().empty()) << nginx->fatal_log_lines().front();
    }

    // `id`: the call's, when the failure came after the body was read (empty: not checked).
    static void expect_internal_error(const HttpResponse& response, const std::string& id = "") {
        EXPECT_EQ(response.status, 200) << response.body;
        auto j = parse_json(response.body);
        EXPECT_EQ(text_at(j.get(), "error.code"), "-32603") << response.body;
        EXPECT_EQ(text_at(j.get(), "error.message"), "Internal error");
        if (!id.empty()) {
            EXPECT_EQ(text_at(j.get(), "id"), id);
        }
    }

    static inline std::unique_ptr<Backend> node;
    static inline std::unique_ptr<TempDir> dir;
    std::unique_ptr<NginxServer> nginx;
    std::vector<pid_t> workers;
};

#endif

}  // namespace

#ifdef WALLET_FAULT_INJECTION

// The content handler.
TEST_F(RouterGuard, ContentHandlerAnswersAnInternalError) {
    start("router.request");
    expect_internal_error(http_post_json(nginx->url(), rpc("condenser_api.get_config", "[]", "0")));
    expect_recovered("jsonrpc_router: request");
}

// Stream::read_handler -> HttpConn::complete -> Call::upstream_replied.
TEST_F(RouterGuard, UpstreamAnswerAnswersAnInternalError) {
    start("router.upstream_replied");
    expect_internal_error(http_post_json(nginx->url(), rpc("condenser_api.get_config", "[]", "1")), "1");
    expect_recovered("jsonrpc_router: upstream answer");
}

// Call::on_timer (the target's timeout).
TEST_F(RouterGuard, CallTimerAnswersAnInternalError) {
    start("router.call_timer");
    expect_internal_error(http_post_json(nginx->url(), rpc("condenser_api.slow_thing", "[]", "2")), "2");
    expect_recovered("jsonrpc_router: call timer");
}

// The POST body handler -> Exchange::start.
TEST_F(RouterGuard, PostBodyAnswersAnInternalError) {
    start("router.exchange_start");
    expect_internal_error(http_post_json(nginx->url(), rpc("condenser_api.get_config", "[]", "3")));
    expect_recovered("jsonrpc_router: request body");
}

// The WebSocket read handler -> Exchange::start: the session closes with 1011.
TEST_F(RouterGuard, WebSocketReadClosesWith1011) {
    start("router.exchange_start");
    {
        WsClient c(nginx->port());
        c.send_text(rpc("condenser_api.get_config", "[]", "4"));
        std::optional<ws::Event> event;
        do {
            event = c.next();
        } while (event && event->kind == ws::Event::Kind::Ping);
        ASSERT_TRUE(event);
        EXPECT_EQ(event->kind, ws::Event::Kind::Close);
        EXPECT_EQ(event->close_code, ws::close_code::internal_error);
        EXPECT_FALSE(c.next());  // then the connection ends
    }
    expect_recovered("jsonrpc_router: WebSocket read");
}

#else

TEST(RouterGuard, NeedsFaultInjection) {
    GTEST_SKIP() << "the module is built without WALLET_FAULT_INJECTION (the presets turn it on)";
}

#endif
