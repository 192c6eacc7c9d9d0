// Push over WebSocket (issue 29, slice 1): wallet_history.subscribe on the
// router's WebSocket endpoint of the nginx that also serves the
// wallet_history API, while the real wallet-indexer stores hive-node-sim's
// synthetic chain (20 blocks a second) into PostgreSQL. Checked: live events
// arrive exactly once, in the store's order, each exactly as
// get_wallet_history prints it, with a cursor get_wallet_history takes; a
// subscription with a cursor gets the stored events after it, then the live
// ones, with no gap and no repeat, also for a client on the `ws` npm package
// that loses its connection and resumes with its last cursor (without
// node/npm or the registry that case is skipped, and fails under CI=true);
// every bad parameter and limit is answered; a client that does not read
// its notifications is closed with 1008; `nginx -t` refuses bad push
// settings; a subscription outlives a PostgreSQL restart; /metrics counts
// subscribers, their connections, notifications, the delay from the NOTIFY to
// the send, and the connection closed for not reading. One stack for all
// cases: ctest runs the binary as one test.
//
// The account: mefomu533, the synthetic chain's busiest with seed 7 (about
// 0.76 wallet events a block; see api_live_paging_test.cpp).
#include <chrono>
#include <thread>

#include "indexer_support.hpp"
#include "router_support.hpp"
#include "support/api_support.hpp"
#include "support/npm_packages.hpp"
#include "support/prometheus_text.hpp"

using namespace std::chrono_literals;
using router_test::WsClient;
using wallet::JsonPtr;
namespace ws = router::ws;

namespace {

constexpr const char* kAccount = "mefomu533";
constexpr std::int64_t kFirstIndexed = 5001;

std::string subscribe(const std::string& params, const std::string& id = "1") {
    return router_test::rpc("wallet_history.subscribe", params, id);
}

// One notification: the subscription, the event and its cursor.
struct Notification {
    std::string subscription;
    JsonPtr event;
    std::string cursor;
    std::string key() const {
        return router_test::text_at(event.get(), "block_num") + "/" + router_test::text_at(event.get(), "block_seq") + "/" +
               router_test::text_at(event.get(), "role");
    }
};

class PushWebSocket : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        sim = std::make_unique<indexer_test::Simulator>(std::vector<std::string>{
            "--synthetic", "--seed", "7", "--length", "5100", "--block-interval-ms", "50"});
        stack = std::make_unique<api_test::ApiStack>();
        dir = std::make_unique<harness::TempDir>("push-ws");
        harness::write_file(dir->path() / "routes.json",
                            R"({"targets": {"node": "http://127.0.0.1:9"}, "routes": {"^condenser_api\\.": {"target": "node"}}})");
        const std::string http_config =
            "server {\n"
            "    listen 127.0.0.1:{{PORT}};\n"
            "    client_max_body_size 1m;\n"
            "    location / { wallet_history_api; }\n"
            "    location = /metrics { jsonrpc_router_metrics; }\n"
            "    location = /ws {\n"
            "        jsonrpc_router " + (dir->path() / "routes.json").string() + ";\n"
            "        jsonrpc_router_redis off;\n"
            "        jsonrpc_router_push_subscriptions 2;\n"
            "        jsonrpc_router_push_accounts 3;\n"
            "        jsonrpc_router_push_max_output 64k;\n"
            "    }\n"
            "}\n";
        stack->start_nginx({}, 1, http_config);
        const auto health_port = harness::free_port();
        auto env = indexer_test::indexer_env(stack->pg(), "wallet", sim->url(), health_port);
        env.erase("DB_PASSWORD");
        env["INDEXER_START_BLOCK"] = std::to_string(kFirstIndexed);
        indexer = std::make_unique<indexer_test::IndexerDaemon>(env, health_port);
        indexer->start();
        ASSERT_TRUE(indexer_test::wait_for_checkpoint(stack->pg(), "wallet", kFirstIndexed + 100)) << indexer->log();
    }
    static void TearDownTestSuite() {
        if (indexer) indexer->stop();
        indexer.reset();
        stack.reset();
        sim.reset();
        dir.reset();
    }

    static std::uint16_t port() { return stack->nginx().port(); }

    static prometheus_text::Scrape metrics() {
        harness::HttpResponse page = harness::http_request("GET", stack->nginx().url("/metrics"));
        EXPECT_EQ(page.status, 200);
        prometheus_text::Scrape s = prometheus_text::parse(page.body);
        EXPECT_EQ(s.error, "") << page.body;
        return s;
    }

    // The next notification on c (answers and pings skipped); none on timeout or close.
    static std::optional<Notification> next_event(WsClient& c) {
        for (;;) {
            const std::string text = c.next_message();
            if (text.empty()) return std::nullopt;
            JsonPtr j = router_test::parse_json(text);
            if (router_test::text_at(j.get(), "method") != "wallet_history.event") continue;
            Notification n;
            n.subscription = router_test::text_at(j.get(), "params.subscription");
            n.event = wallet::json_ref(json_object_get(json_object_get(j.get(), "params"), "event"));
            n.cursor = router_test::text_at(j.get(), "params.cursor");
            return n;
        }
    }

    static std::vector<Notification> events(WsClient& c, std::size_t count) {
        std::vector<Notification> out;
        while (out.size() < count) {
            auto n = next_event(c);
            if (!n) break;
            out.push_back(std::move(*n));
        }
        return out;
    }

    // The account's newest events, oldest first, as get_wallet_history prints them.
    static std::vector<JsonPtr> stored_events(const std::string& extra = "") {
        JsonPtr page = stack->result("wallet_history.get_wallet_history",
                                     std::string(R"({"account":")") + kAccount + R"(","limit":200)" + extra + "}");
        std::vector<JsonPtr> out;
        json_t* items = json_object_get(page.get(), "items");
        for (std::size_t i = json_array_size(items); i > 0; --i) out.push_back(wallet::json_ref(json_array_get(items, i - 1)));
        return out;
    }

    // `got` is a contiguous run of `stored` (no gap, no repeat, same order, same JSON).
    static void expect_run_of(const std::vector<Notification>& got, const std::vector<JsonPtr>& stored) {
        ASSERT_FALSE(got.empty());
        std::size_t start = stored.size();
        for (std::size_t i = 0; i < stored.size(); ++i) {
            if (json_equal(stored[i].get(), got.front().event.get())) start = i;
        }
        ASSERT_LT(start, stored.size()) << "first event not stored: " << api_test::dump(got.front().event.get());
        ASSERT_LE(start + got.size(), stored.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            EXPECT_TRUE(json_equal(stored[start + i].get(), got[i].event.get()))
                << i << ": " << api_test::dump(got[i].event.get()) << " vs " << api_test::dump(stored[start + i].get());
        }
    }

    static inline std::unique_ptr<indexer_test::Simulator> sim;
    static inline std::unique_ptr<api_test::ApiStack> stack;
    static inline std::unique_ptr<harness::TempDir> dir;
    static inline std::unique_ptr<indexer_test::IndexerDaemon> indexer;
};

}  // namespace

TEST_F(PushWebSocket, LiveEventsArriveOnceInOrderAsGetWalletHistoryPrintsThem) {
    WsClient c(port(), "/ws");
    ASSERT_EQ(c.handshake_status(), 101);
    JsonPtr answer = router_test::parse_json(c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("]})", "\"s\"")));
    const std::string id = router_test::text_at(answer.get(), "result.subscription");
    ASSERT_NE(id, "<absent>") << api_test::dump(answer.get());
    EXPECT_EQ(router_test::text_at(answer.get(), "id"), "s");

    const auto got = events(c, 20);
    ASSERT_EQ(got.size(), 20u);
    for (const auto& n : got) {
        EXPECT_EQ(n.subscription, id);
        EXPECT_EQ(router_test::text_at(n.event.get(), "account"), kAccount);
    }
    expect_run_of(got, stored_events());
    // The first case: this connection and subscription are the only ones.
    {
        const auto s = metrics();
        EXPECT_EQ(s.value("wallet_history_push_subscribers"), 1);
        EXPECT_EQ(s.value("wallet_history_push_connections"), 1);
        EXPECT_GE(s.value("wallet_history_push_notifications_total").value_or(0), 20);
        EXPECT_EQ(s.value("wallet_history_push_retractions_total"), 0);
        // Live events after the first: each came with a NOTIFY (the first
        // fetch is the subscription's own, when it goes live).
        EXPECT_GE(s.value("wallet_history_push_delay_seconds_count").value_or(0), 10);
        EXPECT_EQ(s.value("wallet_history_push_dropped_connections_total", {{"reason", "slow_consumer"}}), 0);
    }
    // A notification's cursor is get_wallet_history's: the page after it
    // starts with the event before it.
    JsonPtr before = stack->result("wallet_history.get_wallet_history", std::string(R"({"account":")") + kAccount +
                                                                           R"(","limit":1,"cursor":")" + got[5].cursor + "\"}");
    EXPECT_TRUE(json_equal(json_array_get(json_object_get(before.get(), "items"), 0), got[4].event.get()))
        << api_test::dump(before.get());

    // Unsubscribed: no more notifications of it.
    c.send_text(router_test::rpc("wallet_history.unsubscribe", R"({"subscription":")" + id + "\"}", "2"));
    JsonPtr done;  // after the notifications queued before it
    while (!done) {
        const std::string text = c.next_message();
        if (text.empty()) break;
        JsonPtr j = router_test::parse_json(text);
        if (router_test::text_at(j.get(), "id") == "2") done = std::move(j);
    }
    ASSERT_TRUE(done);
    ASSERT_EQ(router_test::text_at(done.get(), "result"), "true") << api_test::dump(done.get());
    c.set_timeout(1500ms);
    EXPECT_FALSE(next_event(c));  // the account's events keep being stored meanwhile
    const auto after = metrics();
    EXPECT_EQ(after.value("wallet_history_push_subscribers"), 0);
    EXPECT_EQ(after.value("wallet_history_push_connections"), 0);
    EXPECT_TRUE(stack->nginx().fatal_log_lines().empty());
}

TEST_F(PushWebSocket, ACursorResumesWithTheStoredEventsThenTheLiveOnesWithoutGapOrRepeat) {
    std::vector<Notification> first;
    {
        WsClient c(port(), "/ws");
        c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"(","nobody-here"]})"));
        first = events(c, 6);
        ASSERT_EQ(first.size(), 6u);
    }  // the connection ends: its subscription with it
    // Events are stored meanwhile; the new connection resumes after the third.
    std::this_thread::sleep_for(1s);
    WsClient c(port(), "/ws");
    JsonPtr answer = router_test::parse_json(
        c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"cursor":")" + first[2].cursor + "\"}")));
    ASSERT_NE(router_test::text_at(answer.get(), "result.subscription"), "<absent>") << api_test::dump(answer.get());
    const auto resumed = events(c, 30);
    ASSERT_EQ(resumed.size(), 30u);
    EXPECT_EQ(resumed[0].key(), first[3].key());
    EXPECT_EQ(resumed[1].key(), first[4].key());
    EXPECT_EQ(resumed[2].key(), first[5].key());
    expect_run_of(resumed, stored_events());
}

TEST_F(PushWebSocket, FiltersAsGetWalletHistory) {
    WsClient c(port(), "/ws");
    c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"op_types":["curation_reward"]})"));
    const auto got = events(c, 8);
    ASSERT_EQ(got.size(), 8u);
    for (const auto& n : got) EXPECT_EQ(router_test::text_at(n.event.get(), "op_type"), "curation_reward");
    expect_run_of(got, stored_events(R"(,"op_types":["curation_reward"])"));
}

TEST_F(PushWebSocket, EveryBadParameterAndLimitIsAnswered) {
    WsClient c(port(), "/ws");
    auto error_of = [&](const std::string& message) {
        JsonPtr j = router_test::parse_json(c.call(message));
        return router_test::text_at(j.get(), "error.code") + " " + router_test::text_at(j.get(), "error.message");
    };
    const std::string account = std::string("\"") + kAccount + "\"";
    EXPECT_EQ(error_of(subscribe("{}")), "-32602 missing accounts");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[]})")), "-32602 invalid accounts");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":"a"})")), "-32602 invalid accounts");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":["Bad!"]})")), "-32602 invalid account");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":["aa1","aa2","aa3","aa4"]})")), "-32602 too many accounts (at most 3)");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"op_types":["nope"]})")), "-32602 unknown op_type");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"scope":"some"})")), "-32602 invalid scope");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"limit":5})")), "-32602 unknown parameter");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"cursor":"abc"})")), "-32602 invalid cursor");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"irreversible_only":1})")),
              "-32602 invalid irreversible_only");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"irreversible_only":true})")),
              "-32602 irreversible_only true is not supported yet");
    EXPECT_EQ(error_of(subscribe("[1]")), "-32602 invalid params");
    EXPECT_EQ(error_of(router_test::rpc("wallet_history.unsubscribe", R"({"subscription":"999999"})")),
              "-32602 unknown subscription");
    EXPECT_EQ(error_of(router_test::rpc("wallet_history.unsubscribe", R"({})")), "-32602 missing subscription");
    // A cursor of another filter is refused (its signature covers op_types and scope).
    WsClient other(port(), "/ws");
    other.call(subscribe(R"({"accounts":[)" + account + "]}"));
    auto n = next_event(other);
    ASSERT_TRUE(n);
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"scope":"all","cursor":")" + n->cursor + "\"}")),
              "-32602 invalid cursor");
    // Two subscriptions per connection here (jsonrpc_router_push_subscriptions 2).
    EXPECT_NE(router_test::text_at(router_test::parse_json(c.call(subscribe(R"({"accounts":["aa1"]})"))).get(),
                                   "result.subscription"),
              "<absent>");
    EXPECT_NE(router_test::text_at(router_test::parse_json(c.call(subscribe(R"({"accounts":["aa2"]})"))).get(),
                                   "result.subscription"),
              "<absent>");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":["aa3"]})")),
              "-32602 too many subscriptions on this connection (at most 2)");
    // Other methods are still routed.
    JsonPtr routed = router_test::parse_json(c.call(router_test::rpc("nowhere.x", "[]", "5")));
    EXPECT_EQ(router_test::text_at(routed.get(), "error.code"), "-32601");
}

TEST_F(PushWebSocket, AClientNotReadingItsNotificationsIsClosedWith1008) {
    // The stored events after a cursor 200 events back are far more than
    // jsonrpc_router_push_max_output (64k) and a small receive buffer takes.
    JsonPtr page = stack->result("wallet_history.get_wallet_history",
                                 std::string(R"({"account":")") + kAccount + R"(","limit":200})");
    const std::string cursor = router_test::text_at(page.get(), "next_cursor");
    ASSERT_NE(cursor, "null");
    WsClient c(port(), "/ws", "", 4096);
    c.send_text(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"cursor":")" + cursor + "\"}"));
    std::this_thread::sleep_for(2s);  // not reading meanwhile
    std::optional<std::uint16_t> close_code;
    for (;;) {
        auto e = c.next();
        if (!e) break;
        if (e->kind == ws::Event::Kind::Close) close_code = e->close_code;
    }
    ASSERT_TRUE(close_code);
    EXPECT_EQ(*close_code, ws::close_code::policy_violation);
    EXPECT_GE(metrics().value("wallet_history_push_dropped_connections_total", {{"reason", "slow_consumer"}}).value_or(0), 1);
}

TEST_F(PushWebSocket, AWsClientResumingAfterALostConnectionMissesNothingAndGetsNothingTwice) {
    const harness::fs::path clients_dir = harness::binary_dir() / "t" / "clients";
    if (std::string why = npm_test::install_packages("clients", {"push_client.js"}, clients_dir); !why.empty()) {
        if (npm_test::missing_tools_fail()) FAIL() << why << " (CI=true: a skip would hide it)";
        GTEST_SKIP() << why;
    }
    const harness::fs::path out = dir->path() / "push_client.json";
    auto client = harness::run_command({"node", (clients_dir / "push_client.js").string(), std::to_string(port()), "/ws",
                                        kAccount, "5", "15", out.string()},
                                       {}, 120s);
    ASSERT_EQ(client.exit_code, 0) << client.output;
    JsonPtr result = router_test::parse_json(harness::read_file(out));
    ASSERT_TRUE(result) << client.output;
    json_t* list = json_object_get(result.get(), "events");
    ASSERT_EQ(json_array_size(list), 20u);
    std::vector<Notification> got;
    for (std::size_t i = 0; i < json_array_size(list); ++i) {
        Notification n;
        n.event = wallet::json_ref(json_object_get(json_array_get(list, i), "event"));
        got.push_back(std::move(n));
    }
    // The two connections' subscriptions are two; their events one run.
    EXPECT_NE(router_test::text_at(result.get(), "answers.0.result.subscription"),
              router_test::text_at(result.get(), "answers.1.result.subscription"));
    expect_run_of(got, stored_events());
}

TEST_F(PushWebSocket, NginxTestRefusesBadPushSettings) {
    for (const auto& [directive, message] : std::vector<std::pair<std::string, std::string>>{
             {"jsonrpc_router_push_subscriptions 0;", "jsonrpc_router_push_subscriptions must be from 1 to 1000"},
             {"jsonrpc_router_push_accounts 10001;", "jsonrpc_router_push_accounts must be from 1 to 10000"},
             {"jsonrpc_router_push_max_output 8k;", "jsonrpc_router_push_max_output must be at least 16k"},
             {"jsonrpc_router_push_accounts x;", "invalid number"}}) {
        harness::NginxServer::Options options = router_test::nginx_options(
            router_test::router_http_config(dir->path() / "routes.json", "    jsonrpc_router_redis off;\n    " + directive + "\n"));
        auto r = harness::NginxServer::test_config(options);
        EXPECT_NE(r.exit_code, 0) << directive;
        EXPECT_NE(r.output.find(message), std::string::npos) << directive << ": " << r.output;
    }
}

// Last: it restarts the stack's PostgreSQL. The subscription outlives it (the
// worker's listener connects again and fetches what was committed meanwhile).
TEST_F(PushWebSocket, ASubscriptionOutlivesAPostgresRestartWithoutGapOrRepeat) {
    WsClient c(port(), "/ws");
    c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("]})"));
    auto got = events(c, 3);
    ASSERT_EQ(got.size(), 3u);
    stack->pg().stop();
    std::this_thread::sleep_for(1s);  // the indexer and the worker find it gone meanwhile
    stack->pg().start();
    auto after = events(c, 12);
    ASSERT_EQ(after.size(), 12u) << harness::read_file(stack->nginx().error_log()) << indexer->log();
    for (auto& n : after) got.push_back(std::move(n));
    expect_run_of(got, stored_events());
}
