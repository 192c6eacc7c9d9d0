// Push over WebSocket (issue 29): wallet_history.subscribe on the router's
// WebSocket endpoint of the nginx that also serves the wallet_history API,
// both from the shipped nginx files and routing file with their limits,
// while the real wallet-indexer stores hive-node-sim's synthetic chain (20
// blocks a second, following the head) into PostgreSQL. Checked: live events
// arrive exactly once, in the store's order, each exactly as
// get_wallet_history prints it, with a cursor get_wallet_history takes; a
// subscription with a cursor gets the stored events after it, then the live
// ones, with no gap and no repeat, also for a client on the `ws` npm package
// that loses its connection and resumes with its last cursor (without
// node/npm or the registry that case is skipped, and fails under CI=true),
// and across an nginx reload (closed with 1001); a fork's events are
// retracted, irreversible_only waits for irreversible blocks; subscriptions
// of one account with different filters, on one connection and on two, get
// the frames of their own filter; the writers' news carries their commit
// time (migration 0028); every bad
// parameter and limit is answered, the API's rate limit counts subscribes; a
// catch-up waits for a slow reader, a live subscriber that does not read is
// closed with 1008; `nginx -t` refuses bad push settings; a subscription
// outlives a PostgreSQL restart; /metrics counts subscribers, their
// connections, notifications, the delay from the NOTIFY to the send, and the
// connection closed for not reading. One stack for all cases: ctest runs the
// binary as one test.
//
// The account: mefomu533, the synthetic chain's busiest with seed 7 (about
// 0.76 wallet events a block; see api_live_paging_test.cpp).
#include <poll.h>

#include <chrono>
#include <map>
#include <string_view>
#include <thread>

#include "indexer_support.hpp"
#include "router_support.hpp"
#include "support/api_support.hpp"
#include "support/npm_packages.hpp"
#include "support/prometheus_text.hpp"
#include "wallet/handles.hpp"

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
    bool retract = false;  // wallet_history.retract: `event` holds the retracted event's key
    std::string subscription;
    JsonPtr event;
    std::string cursor;
    std::string key() const {
        return router_test::text_at(event.get(), "block_num") + "/" + router_test::text_at(event.get(), "block_seq") + "/" +
               router_test::text_at(event.get(), "role");
    }
    std::int64_t block_num() const { return std::stoll(router_test::text_at(event.get(), "block_num")); }
};

class PushWebSocket : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        sim = std::make_unique<indexer_test::Simulator>(std::vector<std::string>{
            "--synthetic", "--seed", "7", "--length", "5100", "--block-interval-ms", "50", "--lib-lag", "20"});
        stack = std::make_unique<api_test::ApiStack>();
        redis = std::make_unique<harness::RedisServer>();
        dir = std::make_unique<harness::TempDir>("push-ws");
        // The shipped files: the API's server (nginx's {{PORT}}, where
        // get_wallet_history is asked) and, on a port of its own, the
        // router's include with the shipped routing file, Redis on, every
        // limit as shipped (the API's rate limit too: ApiStack turns it off).
        // Its targets are not used here: nothing listens at them.
        const harness::fs::path conf = harness::source_dir() / "conf";
        const harness::fs::path routes = dir->path() / "routes.json";
        harness::write_file(routes, router_test::routes_with_targets(conf / "routes.hive.json",
                                                                     {{"node", "http://127.0.0.1:9"},
                                                                      {"hafah", "http://127.0.0.1:9"},
                                                                      {"social", "http://127.0.0.1:9"},
                                                                      {"wallet_indexer", "http://127.0.0.1:9"}}));
        std::string include = harness::read_file(conf / "nginx" / "jsonrpc-router.conf");
        include = harness::replace_all(include, "/etc/wallet-rpc/routes.json", routes.string());
        include = harness::replace_all(include, "127.0.0.1:6379", "127.0.0.1:" + std::to_string(redis->port()));
        harness::write_file(dir->path() / "jsonrpc-router.conf", include);
        std::string api = harness::read_file(conf / "nginx" / "wallet-history-api.conf.in");
        api = harness::replace_all(api, "@API_BIND_HOST@", "127.0.0.1");
        api = harness::replace_all(api, "@API_BIND_PORT@", "{{PORT}}");
        api = harness::replace_all(api, "@WALLET_WWW_DIR@", dir->path().string());
        router_port = harness::free_port();
        slow_port = harness::free_port();
        const std::string http_config =
            api + "server {\n    listen 127.0.0.1:" + std::to_string(router_port) + ";\n" +
            "    include " + (dir->path() / "jsonrpc-router.conf").string() + ";\n" +
            "}\n" +
            // The slow consumer's and the paced catch-up's cases only: the
            // lowest push output limit and a small socket buffer, which this
            // chain's notifications fill within a second (the shipped 4m and
            // the kernel's buffers of megabytes would take minutes).
            "server {\n    listen 127.0.0.1:" + std::to_string(slow_port) + " sndbuf=4k;\n" +
            "    location = / {\n"
            "        jsonrpc_router " + routes.string() + ";\n"
            "        jsonrpc_router_redis 127.0.0.1:" + std::to_string(redis->port()) + ";\n"
            "        jsonrpc_router_push_max_output 16k;\n"
            "    }\n"
            "}\n";
        stack->start_nginx({{"WALLET_API_RATE_RPS", "10"}, {"WALLET_API_RATE_BURST", "20"}}, 1, http_config);
        const auto health_port = harness::free_port();
        auto env = indexer_test::indexer_env(stack->pg(), "wallet", sim->url(), health_port);
        env.erase("DB_PASSWORD");
        env["INDEXER_START_BLOCK"] = std::to_string(kFirstIndexed);
        // The head, not the last irreversible block (20 behind): forks reach
        // the store, and irreversible_only has blocks to wait for.
        env["INDEXER_TARGET_IRREVERSIBLE"] = "false";
        env["INDEXER_TRAIL_BLOCKS"] = "0";
        indexer = std::make_unique<indexer_test::IndexerDaemon>(env, health_port);
        indexer->start();
        ASSERT_TRUE(indexer_test::wait_for_checkpoint(stack->pg(), "wallet", kFirstIndexed + 100)) << indexer->log();
    }
    static void TearDownTestSuite() {
        if (indexer) indexer->stop();
        indexer.reset();
        stack.reset();
        redis.reset();
        sim.reset();
        dir.reset();
    }

    // The router's server: push on its WebSocket endpoint, "/".
    static std::uint16_t port() { return router_port; }

    static prometheus_text::Scrape metrics() {
        harness::HttpResponse page = harness::http_request("GET", stack->nginx().url("/metrics"));
        EXPECT_EQ(page.status, 200);
        prometheus_text::Scrape s = prometheus_text::parse(page.body);
        EXPECT_EQ(s.error, "") << page.body;
        return s;
    }

    // The next notification on c, an event or a retraction (answers and
    // pings skipped); none on timeout or close.
    static std::optional<Notification> next_notification(WsClient& c) {
        for (;;) {
            const std::string text = c.next_message();
            if (text.empty()) return std::nullopt;
            JsonPtr j = router_test::parse_json(text);
            const std::string method = router_test::text_at(j.get(), "method");
            if (method != "wallet_history.event" && method != "wallet_history.retract") continue;
            Notification n;
            n.retract = method == "wallet_history.retract";
            n.subscription = router_test::text_at(j.get(), "params.subscription");
            n.event = wallet::json_ref(json_object_get(json_object_get(j.get(), "params"), "event"));
            n.cursor = router_test::text_at(j.get(), "params.cursor");
            return n;
        }
    }

    // The next event on c (retractions fail the test).
    static std::optional<Notification> next_event(WsClient& c) {
        auto n = next_notification(c);
        EXPECT_FALSE(n && n->retract) << "retraction of " << n->key();
        return n;
    }

    // The answer to `message` sent on c (the notifications before it skipped); none on timeout or close.
    static JsonPtr answer_to(WsClient& c, const std::string& message) {
        c.send_text(message);
        for (;;) {
            const std::string text = c.next_message();
            if (text.empty()) return JsonPtr(json_object());
            JsonPtr j = router_test::parse_json(text);
            if (router_test::text_at(j.get(), "id") != "<absent>") return j;
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
    static inline std::unique_ptr<harness::RedisServer> redis;
    static inline std::uint16_t router_port = 0;
    static inline std::uint16_t slow_port = 0;  // jsonrpc_router_push_max_output 16k, sndbuf 4k
    static inline std::unique_ptr<indexer_test::IndexerDaemon> indexer;
};

}  // namespace

TEST_F(PushWebSocket, LiveEventsArriveOnceInOrderAsGetWalletHistoryPrintsThem) {
    WsClient c(port(), "/");
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
        // Live events fetched on a NOTIFY are timed; those of the
        // subscription's own fetches are not (its catch-up, and while the
        // worker's listener connects: the chain goes on at 20 blocks a
        // second meanwhile), so more events may be needed to see them.
        double timed = s.value("wallet_history_push_delay_seconds_count").value_or(0);
        for (int more = 0; timed < 5 && more < 200; ++more) {
            ASSERT_TRUE(next_event(c));
            timed = metrics().value("wallet_history_push_delay_seconds_count").value_or(0);
        }
        EXPECT_GE(timed, 5);
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
        WsClient c(port(), "/");
        c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"(","nobody-here"]})"));
        first = events(c, 6);
        ASSERT_EQ(first.size(), 6u);
    }  // the connection ends: its subscription with it
    // Events are stored meanwhile; the new connection resumes after the third.
    std::this_thread::sleep_for(1s);
    WsClient c(port(), "/");
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
    WsClient c(port(), "/");
    c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"op_types":["curation_reward"]})"));
    const auto got = events(c, 8);
    ASSERT_EQ(got.size(), 8u);
    for (const auto& n : got) EXPECT_EQ(router_test::text_at(n.event.get(), "op_type"), "curation_reward");
    expect_run_of(got, stored_events(R"(,"op_types":["curation_reward"])"));
}

// One account, two filters on one connection and the first filter again on
// another: each subscription gets the frames of its own filter, with its own
// id and a cursor of its filter (a notification is rendered once per filter
// and event, and its bytes shared by the subscriptions of that filter).
TEST_F(PushWebSocket, SubscriptionsOfOneAccountWithDifferentFiltersGetTheirOwnFrames) {
    WsClient c(port(), "/");
    WsClient d(port(), "/");
    const std::string account = std::string(R"({"accounts":[")") + kAccount + "\"]";
    c.send_text(subscribe(account + "}", "\"all\""));
    c.send_text(subscribe(account + R"(,"op_types":["curation_reward"]})", "\"curation\""));
    JsonPtr other = router_test::parse_json(d.call(subscribe(account + "}")));
    const std::string other_id = router_test::text_at(other.get(), "result.subscription");
    ASSERT_NE(other_id, "<absent>") << api_test::dump(other.get());
    std::map<std::string, std::string> ids;  // request id -> subscription id
    std::map<std::string, std::vector<Notification>> got;  // by subscription id
    const auto enough = [&] {
        return ids.size() == 2 && got[ids["all"]].size() >= 12 && got[ids["curation"]].size() >= 4;
    };
    while (!enough()) {
        const std::string text = c.next_message();
        ASSERT_FALSE(text.empty()) << "timed out";
        JsonPtr j = router_test::parse_json(text);
        const std::string id = router_test::text_at(j.get(), "id");
        if (id != "<absent>") {
            ids[id] = router_test::text_at(j.get(), "result.subscription");
            ASSERT_NE(ids[id], "<absent>") << text;
            continue;
        }
        ASSERT_EQ(router_test::text_at(j.get(), "method"), "wallet_history.event") << text;
        Notification n;
        n.subscription = router_test::text_at(j.get(), "params.subscription");
        n.event = wallet::json_ref(json_object_get(json_object_get(j.get(), "params"), "event"));
        n.cursor = router_test::text_at(j.get(), "params.cursor");
        got[n.subscription].push_back(std::move(n));
    }
    ASSERT_NE(ids["all"], ids["curation"]);
    EXPECT_EQ(got.size(), 2u);  // no frame of another subscription
    const auto& all = got[ids["all"]];
    const auto& curation = got[ids["curation"]];
    expect_run_of(all, stored_events());
    expect_run_of(curation, stored_events(R"(,"op_types":["curation_reward"])"));
    for (const auto& n : curation) EXPECT_EQ(router_test::text_at(n.event.get(), "op_type"), "curation_reward");
    // Each cursor is one of its own filter: the page after it starts with the event before it.
    const auto page_after = [](const Notification& n, const std::string& extra) {
        return stack->result("wallet_history.get_wallet_history", std::string(R"({"account":")") + kAccount +
                                                                      R"(","limit":1,"cursor":")" + n.cursor + "\"" + extra + "}");
    };
    JsonPtr before = page_after(curation[1], R"(,"op_types":["curation_reward"])");
    EXPECT_TRUE(json_equal(json_array_get(json_object_get(before.get(), "items"), 0), curation[0].event.get()))
        << api_test::dump(before.get());
    before = page_after(all[1], "");
    EXPECT_TRUE(json_equal(json_array_get(json_object_get(before.get(), "items"), 0), all[0].event.get()))
        << api_test::dump(before.get());
    // The other connection's subscription of the first filter: the same
    // events with the same cursors, under its own id.
    const auto others = events(d, 12);
    ASSERT_EQ(others.size(), 12u);
    std::map<std::string, std::string> cursor_of;
    for (const auto& n : all) cursor_of[n.key()] = n.cursor;
    std::size_t shared = 0;
    for (const auto& n : others) {
        EXPECT_EQ(n.subscription, other_id);
        if (auto it = cursor_of.find(n.key()); it != cursor_of.end()) {
            EXPECT_EQ(n.cursor, it->second) << n.key();
            ++shared;
        }
    }
    EXPECT_GT(shared, 0u);
    expect_run_of(others, stored_events());
}

// The writers' news carries the writer's clock at its NOTIFY, its
// transaction's last statement (migration 0028), in microseconds since the
// epoch: the delay metric counts from it. (The bound only tells the unit.)
TEST_F(PushWebSocket, TheWritersNewsCarriesTheirCommitTime) {
    wallet::PgConnPtr conn(PQconnectdb(stack->pg().superuser_socket_conninfo("wallet").c_str()));
    ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
    wallet::PgResultPtr listening(PQexec(conn.get(), "LISTEN wallet_events"));
    ASSERT_EQ(PQresultStatus(listening.get()), PGRES_COMMAND_OK);
    std::string payload;  // the first of a batch (the indexer stores 20 blocks a second)
    for (int i = 0; i < 100 && payload.empty(); ++i) {
        pollfd p{PQsocket(conn.get()), POLLIN, 0};
        poll(&p, 1, 100);
        ASSERT_EQ(PQconsumeInput(conn.get()), 1);
        while (PGnotify* n = PQnotifies(conn.get())) {
            if (payload.empty() && std::string_view(n->extra).find("\"first\"") != std::string_view::npos) payload = n->extra;
            PQfreemem(n);
        }
    }
    ASSERT_FALSE(payload.empty());
    JsonPtr j = router_test::parse_json(payload);
    const json_t* committed = json_object_get(j.get(), "committed_us");
    ASSERT_TRUE(json_is_integer(committed)) << payload;
    const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    EXPECT_LE(json_integer_value(committed), now_us) << payload;
    EXPECT_GT(json_integer_value(committed), now_us - 3'600'000'000LL) << payload;
}

TEST_F(PushWebSocket, EveryBadParameterAndLimitIsAnswered) {
    WsClient c(port(), "/", "127.0.0.4");  // an address of its own: 17 subscribes are within its rate
    auto error_of = [&](const std::string& message) {
        JsonPtr j = router_test::parse_json(c.call(message));
        return router_test::text_at(j.get(), "error.code") + " " + router_test::text_at(j.get(), "error.message");
    };
    const std::string account = std::string("\"") + kAccount + "\"";
    EXPECT_EQ(error_of(subscribe("{}")), "-32602 missing accounts");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[]})")), "-32602 invalid accounts");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":"a"})")), "-32602 invalid accounts");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":["Bad!"]})")), "-32602 invalid account");
    std::string accounts = "\"aa0\"";
    for (int i = 1; i <= 100; ++i) accounts += ",\"aa" + std::to_string(i) + "\"";
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + accounts + "]}")), "-32602 too many accounts (at most 100)");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"op_types":["nope"]})")), "-32602 unknown op_type");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"scope":"some"})")), "-32602 invalid scope");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"limit":5})")), "-32602 unknown parameter");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"cursor":"abc"})")), "-32602 invalid cursor");
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"irreversible_only":1})")),
              "-32602 invalid irreversible_only");
    EXPECT_EQ(error_of(subscribe("[1]")), "-32602 invalid params");
    EXPECT_EQ(error_of(router_test::rpc("wallet_history.unsubscribe", R"({"subscription":"999999"})")),
              "-32602 unknown subscription");
    EXPECT_EQ(error_of(router_test::rpc("wallet_history.unsubscribe", R"({})")), "-32602 missing subscription");
    // A cursor of another filter is refused (its signature covers op_types and scope).
    WsClient other(port(), "/", "127.0.0.5");
    other.call(subscribe(R"({"accounts":[)" + account + "]}"));
    auto n = next_event(other);
    ASSERT_TRUE(n);
    EXPECT_EQ(error_of(subscribe(R"({"accounts":[)" + account + R"(],"scope":"all","cursor":")" + n->cursor + "\"}")),
              "-32602 invalid cursor");
    // 16 subscriptions per connection (jsonrpc_router_push_subscriptions as shipped).
    for (int i = 0; i < 16; ++i) {
        EXPECT_NE(router_test::text_at(router_test::parse_json(c.call(subscribe(R"({"accounts":["aa)" + std::to_string(i) +
                                                                                "\"]}"))).get(),
                                       "result.subscription"),
                  "<absent>");
    }
    EXPECT_EQ(error_of(subscribe(R"({"accounts":["aa16"]})")),
              "-32602 too many subscriptions on this connection (at most 16)");
    // Other methods are still routed.
    JsonPtr routed = router_test::parse_json(c.call(router_test::rpc("nowhere.x", "[]", "5")));
    EXPECT_EQ(router_test::text_at(routed.get(), "error.code"), "-32601");
}

// The API's rate limit (the shipped 10 a second, burst 20) counts a client
// address's subscribes with its requests: more at once than the burst are
// answered as the API answers over it.
TEST_F(PushWebSocket, SubscribesCountInTheApisRateLimit) {
    WsClient c(port(), "/", "127.0.0.3");  // an address of its own
    constexpr int kCalls = 30;
    std::string frames;
    for (int i = 0; i < kCalls; ++i) {
        frames += ws::encode_frame(ws::Opcode::Text,
                                   subscribe(std::string(R"({"accounts":[")") + kAccount + R"("]})", std::to_string(i)), true);
    }
    c.send_raw(frames);
    int limited = 0;
    int subscribed = 0;
    for (int answers = 0; answers < kCalls;) {
        const std::string text = c.next_message();
        ASSERT_FALSE(text.empty()) << answers << " answers";
        JsonPtr j = router_test::parse_json(text);
        if (router_test::text_at(j.get(), "id") == "<absent>") continue;  // a notification
        ++answers;
        const std::string error = router_test::text_at(j.get(), "error.code") + " " + router_test::text_at(j.get(), "error.message");
        if (error == "-32600 rate limit exceeded") ++limited;
        if (router_test::text_at(j.get(), "result.subscription") != "<absent>") ++subscribed;
    }
    EXPECT_GT(limited, 0);
    EXPECT_LE(limited, kCalls - 20);  // the burst passed (to the per-connection limit)
    EXPECT_EQ(subscribed, 16);
}

// On the slow server (jsonrpc_router_push_max_output 16k): the stored events after a
// cursor 100 events back are far more than that and than a small receive
// buffer takes; the client does not read for a while. The catch-up waits
// for it instead of closing it: then every event arrives, once, in order.
TEST_F(PushWebSocket, ACatchUpLargerThanTheOutputLimitGoesAtTheClientsPace) {
    JsonPtr page = stack->result("wallet_history.get_wallet_history",
                                 std::string(R"({"account":")") + kAccount + R"(","limit":100})");
    const std::string cursor = router_test::text_at(page.get(), "next_cursor");
    ASSERT_NE(cursor, "null");
    WsClient c(slow_port, "/", "", 4096);
    c.send_text(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"cursor":")" + cursor + "\"}"));
    std::this_thread::sleep_for(2s);  // not reading meanwhile
    const auto got = events(c, 120);
    ASSERT_EQ(got.size(), 120u) << harness::read_file(stack->nginx().error_log());
    expect_run_of(got, stored_events());
}

// The API's in-flight cap (the shipped 64, the workers' requests together)
// counts a subscription until its catch-up is read: 64 catch-ups (200
// events each) waiting for clients that do not read (on the slow server) fill it; then a subscribe
// and an API request are both answered "server busy", until they end.
TEST_F(PushWebSocket, CatchUpsCountInTheApisInFlightCap) {
    JsonPtr page = stack->result("wallet_history.get_wallet_history",
                                 std::string(R"({"account":")") + kAccount + R"(","limit":200})");
    const std::string with_cursor = subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"cursor":")" +
                                              router_test::text_at(page.get(), "next_cursor") + "\"}");
    auto busy = [&](WsClient& c) {
        JsonPtr j = answer_to(c, with_cursor);
        return router_test::text_at(j.get(), "error.code") + " " + router_test::text_at(j.get(), "error.message");
    };
    {
        std::vector<std::unique_ptr<WsClient>> clients;
        for (int i = 0; i < 4; ++i) {  // 16 each, from addresses of their own (the rate limit)
            clients.push_back(std::make_unique<WsClient>(slow_port, "/", "127.0.0.1" + std::to_string(i), 4096));
            for (int k = 0; k < 16; ++k) {
                JsonPtr j = answer_to(*clients.back(), with_cursor);
                ASSERT_NE(router_test::text_at(j.get(), "result.subscription"), "<absent>") << api_test::dump(j.get());
            }
        }
        WsClient c(slow_port, "/", "127.0.0.14");
        EXPECT_EQ(busy(c), "-32603 server busy");
        const auto response = stack->post(router_test::rpc("wallet_history.get_status", "{}"));
        EXPECT_EQ(response.status, 503) << response.body;
    }  // the connections end, their places with them
    WsClient c(slow_port, "/", "127.0.0.15");
    // Polled within the rate limit of this address (the other cases' too).
    ASSERT_TRUE(harness::wait_until(
        [&] { return stack->post(router_test::rpc("wallet_history.get_status", "{}")).status == 200; }, 10s, 200ms));
    EXPECT_NE(busy(c), "-32603 server busy");
}

// A worker's listener connection (application_name wallet_history_push)
// lives while it has subscriptions: closed with the last, opened again with
// the next.
TEST_F(PushWebSocket, TheListenerConnectionLivesWhileTheWorkerHasSubscriptions) {
    auto listeners = [&] {
        return stack->pg().query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wallet_history_push'")[0];
    };
    ASSERT_TRUE(harness::wait_until([&] { return listeners() == "0"; }, 10s)) << "the earlier cases' subscriptions are gone";
    WsClient c(port(), "/");
    JsonPtr answer = router_test::parse_json(c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("]})")));
    const std::string id = router_test::text_at(answer.get(), "result.subscription");
    ASSERT_TRUE(harness::wait_until([&] { return listeners() == "1"; }, 10s));
    JsonPtr done = answer_to(c, router_test::rpc("wallet_history.unsubscribe", R"({"subscription":")" + id + "\"}", "2"));
    ASSERT_EQ(router_test::text_at(done.get(), "result"), "true") << api_test::dump(done.get());
    EXPECT_TRUE(harness::wait_until([&] { return listeners() == "0"; }, 10s));
    JsonPtr again = answer_to(c, subscribe(std::string(R"({"accounts":[")") + kAccount + R"("]})", "3"));
    auto n = next_event(c);
    ASSERT_TRUE(n);
    EXPECT_EQ(n->subscription, router_test::text_at(again.get(), "result.subscription"));
    EXPECT_TRUE(harness::wait_until([&] { return listeners() == "1"; }, 10s));
}

// On the slow server too: a live subscription to the chain's 100 busiest accounts
// whose client does not read is closed with 1008 once more than 16k waits
// for it (its queued notifications dropped), not buffered without bound.
TEST_F(PushWebSocket, AClientNotReadingItsLiveNotificationsIsClosedWith1008) {
    const auto busiest = stack->pg().query(
        "SELECT a.name FROM wallet_accounts a JOIN wallet_events e ON e.account_id = a.id"
        " GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT 100");
    ASSERT_EQ(busiest.size(), 100u);
    std::string accounts;
    for (const auto& name : busiest) accounts += (accounts.empty() ? "\"" : ",\"") + name + "\"";
    // Nginx's word that it closed a subscriber (the earlier cases' too).
    auto closed = [&] {
        const std::string log = harness::read_file(stack->nginx().error_log());
        std::size_t count = 0;
        for (auto at = log.find("WebSocket subscriber not reading"); at != std::string::npos;
             at = log.find("WebSocket subscriber not reading", at + 1)) {
            ++count;
        }
        return count;
    };
    const std::size_t closed_before = closed();
    WsClient c(slow_port, "/", "127.0.0.6", 4096);
    JsonPtr answer = router_test::parse_json(c.call(subscribe(R"({"accounts":[)" + accounts + "]}")));
    ASSERT_NE(router_test::text_at(answer.get(), "result.subscription"), "<absent>") << api_test::dump(answer.get());
    // Not reading until nginx says it closed this one (at most 60 s).
    ASSERT_TRUE(harness::wait_until([&] { return closed() > closed_before; }, 60s, 100ms));
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
    auto client = harness::run_command({"node", (clients_dir / "push_client.js").string(), std::to_string(port()), "/",
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

// A fork of the node's newest blocks, with two subscriptions on one
// connection. The one without irreversible_only gets every notification of
// the removed blocks retracted, newest first, each with the cursor to resume
// from (the notification's before it), then the events stored in their
// place, once. The one with irreversible_only gets events only of blocks the
// node calls irreversible (20 behind its head here), and no retraction. Both
// end as a run of what the store holds after the fork.
TEST_F(PushWebSocket, AForkIsRetractedAndIrreversibleOnlyWaitsForIrreversibleBlocks) {
    WsClient c(port(), "/");
    const std::string account = std::string(R"({"accounts":[")") + kAccount + "\"]";
    const std::string head_id = router_test::text_at(router_test::parse_json(c.call(subscribe(account + "}"))).get(),
                                                     "result.subscription");
    const std::string settled_id = router_test::text_at(
        router_test::parse_json(c.call(subscribe(account + R"(,"irreversible_only":true})"))).get(), "result.subscription");
    ASSERT_NE(head_id, "<absent>");
    ASSERT_NE(settled_id, "<absent>");
    std::vector<Notification> head;   // what the client holds: events, less the retracted
    std::vector<Notification> settled;  // irreversible_only
    std::size_t retracted = 0;
    auto take = [&](Notification n) {
        if (n.subscription == settled_id) {
            EXPECT_FALSE(n.retract) << n.key();
            EXPECT_LE(n.block_num(), indexer_test::sim_last_irreversible(*sim)) << n.key();
            settled.push_back(std::move(n));
        } else if (n.retract) {
            ASSERT_FALSE(head.empty()) << "retraction of " << n.key();
            EXPECT_EQ(n.key(), head.back().key());  // newest first
            head.pop_back();
            if (!head.empty()) {
                EXPECT_EQ(n.cursor, head.back().cursor);
            }
            EXPECT_FALSE(n.cursor.empty());
            ++retracted;
        } else {
            head.push_back(std::move(n));
        }
    };
    // The chain stops growing until the indexer has stored its head (a
    // sanitized indexer lags), and the account's newest event has arrived
    // (after a first live one: the newest stored may be older than the
    // subscription). It grows again at the end whatever happens.
    while (head.empty()) {
        auto n = next_notification(c);
        ASSERT_TRUE(n);
        take(std::move(*n));
    }
    struct Resume {
        ~Resume() {
            try {
                sim->control(R"({"block_interval_ms":50})");
            } catch (...) {
            }
        }
    } resume;
    sim->control(R"({"block_interval_ms":0})");
    const std::int64_t head_block = indexer_test::sim_head(*sim);
    ASSERT_TRUE(indexer_test::wait_for_checkpoint(stack->pg(), "wallet", head_block)) << indexer->log();
    JsonPtr newest = stack->result("wallet_history.get_wallet_history",
                                   std::string(R"({"account":")") + kAccount + R"(","limit":1})");
    json_t* newest_event = json_array_get(json_object_get(newest.get(), "items"), 0);
    ASSERT_NE(newest_event, nullptr);
    while (head.empty() || !json_equal(head.back().event.get(), newest_event)) {
        auto n = next_notification(c);
        ASSERT_TRUE(n);
        take(std::move(*n));
    }
    // Its block and those above are replaced, the fork above the last
    // irreversible block; then the chain grows again.
    const std::int64_t forked = head.back().block_num();
    const std::int64_t depth = head_block - forked + 1;
    ASSERT_LT(depth, 20) << "the fork must stay above the last irreversible block";
    sim->control(R"({"fork":)" + std::to_string(depth) + "}");
    sim->control(R"({"block_interval_ms":50})");
    while (retracted == 0 || head.empty() || head.back().block_num() < forked + 30 || settled.empty() ||
           settled.back().block_num() < forked + 5) {
        auto n = next_notification(c);
        ASSERT_TRUE(n) << "retracted " << retracted << ", " << head.size() << " and " << settled.size() << " events\n"
                       << indexer->log();
        take(std::move(*n));
    }
    EXPECT_NE(indexer->log().find("fork reconciled"), std::string::npos) << indexer->log();
    const auto stored = stored_events();
    expect_run_of(head, stored);
    expect_run_of(settled, stored);
    EXPECT_GE(metrics().value("wallet_history_push_retractions_total").value_or(0), static_cast<double>(retracted));
}

// nginx reloads: the old worker closes the connection with 1001 (going
// away), and the client subscribes on the new worker with the cursor of the
// last notification it received: no gap, no repeat.
TEST_F(PushWebSocket, AcrossAnNginxReloadTheClientResumesWithItsLastCursor) {
    std::vector<Notification> got;
    {
        WsClient c(port(), "/");
        c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("]})"));
        got = events(c, 3);
        ASSERT_EQ(got.size(), 3u);
        stack->nginx().reload();
        std::optional<std::uint16_t> close_code;
        while (!close_code) {
            auto e = c.next();
            ASSERT_TRUE(e) << "the connection ended without a Close frame";
            if (e->kind == ws::Event::Kind::Close) close_code = e->close_code;
            if (e->kind != ws::Event::Kind::Message) continue;
            JsonPtr j = router_test::parse_json(e->payload);
            if (router_test::text_at(j.get(), "method") != "wallet_history.event") continue;
            Notification n;
            n.event = wallet::json_ref(json_object_get(json_object_get(j.get(), "params"), "event"));
            n.cursor = router_test::text_at(j.get(), "params.cursor");
            got.push_back(std::move(n));
        }
        EXPECT_EQ(*close_code, ws::close_code::going_away);
    }
    WsClient c(port(), "/");
    JsonPtr answer = router_test::parse_json(
        c.call(subscribe(std::string(R"({"accounts":[")") + kAccount + R"("],"cursor":")" + got.back().cursor + "\"}")));
    ASSERT_NE(router_test::text_at(answer.get(), "result.subscription"), "<absent>") << api_test::dump(answer.get());
    for (auto& n : events(c, 10)) got.push_back(std::move(n));
    ASSERT_GE(got.size(), 13u);
    expect_run_of(got, stored_events());
    EXPECT_TRUE(stack->nginx().fatal_log_lines().empty());
}

// Last: it restarts the stack's PostgreSQL. The subscription outlives it (the
// worker's listener connects again and fetches what was committed meanwhile).
TEST_F(PushWebSocket, ASubscriptionOutlivesAPostgresRestartWithoutGapOrRepeat) {
    WsClient c(port(), "/");
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
