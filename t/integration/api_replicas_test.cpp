// The wallet_history API on hot standbys (issue 20 item 1): a primary, a
// standby made from it by pg_basebackup -R (streaming replication on
// loopback), a writer appending blocks to the primary as the indexer does
// (events, then the checkpoint), and nginx reading the standby alone, or the
// primary and the standby as one list.
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "support/api_support.hpp"
#include "support/prometheus_text.hpp"

namespace {

using namespace std::chrono_literals;

using api_test::dump;
using api_test::parse_json;
using api_test::str;
using harness::PostgresServer;
using wallet::JsonPtr;

constexpr const char* kCursorSecret = "replicas-test-cursor-secret-0001";
constexpr long kFirstLiveBlock = 2000;

std::string reader_url(const std::vector<const PostgresServer*>& servers) {
    std::string hosts;
    for (const auto* pg : servers) hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(pg->port());
    return std::string("postgresql://wallet_api_reader:") + harness::kReaderPassword + "@" + hosts + "/wallet";
}

// Block times of the checkpoint and the live blocks: 3 seconds apart from
// 2021-01-01 (the loaded history is older).
std::string block_time(long block) {
    const long seconds = block * 3;
    char text[96];
    std::snprintf(text, sizeof text, "2021-01-%02ldT%02ld:%02ld:%02ldZ", 1 + seconds / 86400, seconds / 3600 % 24,
                  seconds / 60 % 60, seconds % 60);
    return text;
}

std::string checkpoint_sql(long block) {
    return "INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (" + std::to_string(block) +
             ", 'id', '" + block_time(block) + "') "
             "ON CONFLICT (singleton) DO UPDATE SET block_num = EXCLUDED.block_num, block_time = EXCLUDED.block_time";
}

void set_checkpoint(PostgresServer& pg, long block) { pg.query(checkpoint_sql(block)); }

// Appends alice's events block after block to a database, as the indexer
// does (a block's events and the checkpoint in one transaction: one PQexec of
// several statements), until stopped.
class Writer {
public:
    explicit Writer(PostgresServer& pg) : pg_(&pg) {
        thread_ = std::thread([this] {
            while (!stop_) {
                const long block = next_block_;
                try {
                    pg_->query(api_test::generate_events_sql("alice", 4, block, block_time(block)) + "; " +
                               checkpoint_sql(block) + "; " +
                               "INSERT INTO node_observation (head_block, head_block_time, observed_at) VALUES (" +
                               std::to_string(block) + ", '" + block_time(block) + "', now()) ON CONFLICT (singleton) "
                               "DO UPDATE SET head_block = EXCLUDED.head_block, head_block_time = "
                               "EXCLUDED.head_block_time, observed_at = EXCLUDED.observed_at");
                    next_block_ = block + 1;
                } catch (const std::exception&) {
                    // The primary was stopped: the test decides what that means.
                    std::this_thread::sleep_for(50ms);
                }
                std::this_thread::sleep_for(5ms);
            }
        });
    }
    ~Writer() { stop(); }
    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }
    long blocks() const { return next_block_ - kFirstLiveBlock; }

private:
    PostgresServer* pg_;
    std::atomic<bool> stop_{false};
    std::atomic<long> next_block_{kFirstLiveBlock};
    std::thread thread_;
};

class ApiReplicas : public ::testing::Test {
protected:
    ApiReplicas() {
        primary_.provision("wallet");
        api_test::generate_events(primary_, "alice", 400, 1000);
        set_checkpoint(primary_, 1099);
    }

    std::unique_ptr<PostgresServer> make_standby(std::vector<std::string> settings = {}) {
        settings.push_back("hot_standby_feedback=off");
        return std::make_unique<PostgresServer>(PostgresServer::StandbyOf{primary_, settings});
    }

    std::unique_ptr<harness::NginxServer> nginx_for(const std::vector<const PostgresServer*>& servers,
                                                    const std::map<std::string, std::string>& settings = {}) {
        harness::NginxServer::Options options;
        options.http_config = api_test::nginx_http_config();
        options.env = primary_.env();
        options.env.erase("DB_PASSWORD");
        options.env["WALLET_API_RATE_RPS"] = "0";
        options.env["API_DATABASE_URL"] = reader_url(servers);
        options.env["WALLET_API_CURSOR_SECRET"] = kCursorSecret;
        for (const auto& [name, value] : settings) options.env[name] = value;
        return std::make_unique<harness::NginxServer>(options);
    }

    static JsonPtr call(harness::NginxServer& nginx, const std::string& method, const std::string& params) {
        auto response = harness::http_post_json(
            nginx.url("/"), R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.)" + method + R"(","params":)" + params + "}");
        EXPECT_EQ(response.status, 200) << response.body;
        return parse_json(response.body);
    }

    // wallet_history_statement_reruns_total{reason=...} of one nginx.
    static double reruns(harness::NginxServer& nginx, const std::string& reason) {
        auto page = harness::http_request("GET", nginx.url("/metrics"));
        EXPECT_EQ(page.status, 200) << page.body;
        return prometheus_text::parse(page.body).value("wallet_history_statement_reruns_total", {{"reason", reason}}).value_or(-1);
    }

    static long indexed_block(harness::NginxServer& nginx) {
        JsonPtr r = call(nginx, "get_status", "{}");
        json_t* result = json_object_get(r.get(), "result");
        EXPECT_NE(result, nullptr) << dump(r.get());
        return result != nullptr ? static_cast<long>(json_integer_value(json_object_get(result, "indexed_block"))) : -1;
    }

    static long checkpoint(PostgresServer& pg) { return std::stol(pg.query("SELECT block_num FROM indexer_checkpoint").at(0)); }

    static long xact_commits(PostgresServer& pg) {
        return std::stol(pg.query("SELECT xact_commit FROM pg_stat_database WHERE datname = 'wallet'").at(0));
    }

    PostgresServer primary_;
};

using EventKey = std::tuple<long, long, std::string>;  // block, block_seq, role

// Walks alice's history newest first, page by page, asking the nginx
// servers in turn; every event's key, in the order returned.
std::vector<EventKey> walk(const std::vector<harness::NginxServer*>& nodes, long limit,
                           const std::function<void(std::size_t page)>& before_page = {}) {
    std::vector<EventKey> keys;
    std::string cursor;
    for (std::size_t page = 0;; ++page) {
        if (before_page) before_page(page);
        std::string params = R"({"account":"alice","limit":)" + std::to_string(limit);
        if (!cursor.empty()) params += R"(,"cursor":")" + cursor + "\"";
        params += "}";
        harness::NginxServer& node = *nodes[page % nodes.size()];
        auto response = harness::http_post_json(
            node.url("/"), R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":)" + params + "}");
        JsonPtr r = parse_json(response.body);
        json_t* result = json_object_get(r.get(), "result");
        if (result == nullptr) {
            ADD_FAILURE() << "page " << page << ": " << response.body;
            return keys;
        }
        json_t* event = nullptr;
        std::size_t i = 0;
        json_array_foreach(json_object_get(result, "items"), i, event) {
            keys.emplace_back(json_integer_value(json_object_get(event, "block_num")),
                              json_integer_value(json_object_get(event, "block_seq")), str(event, "role"));
        }
        json_t* next = json_object_get(result, "next_cursor");
        if (!json_is_string(next)) return keys;
        cursor = json_string_value(next);
    }
}

// alice's events at or below a block, as the database holds them.
std::set<EventKey> stored_keys(PostgresServer& pg, long up_to_block) {
    std::set<EventKey> keys;
    for (const auto& row : pg.query("SELECT block_num, block_seq, role FROM wallet_operation_events WHERE account = 'alice' "
                                    "AND block_num <= " + std::to_string(up_to_block) +
                                    " AND op_type IN ('transfer', 'curation_reward', 'author_reward')")) {
        const auto tab1 = row.find('\t');
        const auto tab2 = row.find('\t', tab1 + 1);
        keys.emplace(std::stol(row.substr(0, tab1)), std::stol(row.substr(tab1 + 1, tab2 - tab1 - 1)), row.substr(tab2 + 1));
    }
    return keys;
}

void expect_each_once(const std::vector<EventKey>& walked, const std::set<EventKey>& expected) {
    const std::set<EventKey> seen(walked.begin(), walked.end());
    EXPECT_EQ(seen.size(), walked.size()) << "an event came twice";
    EXPECT_EQ(seen, expected);
}

// get_status and the pages of a standby report the block it has replayed,
// also while it lags the primary the writer keeps moving.
TEST_F(ApiReplicas, StandbyReportsWhatItReplayed) {
    auto standby = make_standby();
    auto nginx = nginx_for({standby.get()});
    Writer writer(primary_);
    ASSERT_TRUE(harness::wait_until([&] { return writer.blocks() >= 5; }));
    standby->pause_replay(true);
    const long replayed = checkpoint(*standby);
    ASSERT_TRUE(harness::wait_until([&] { return checkpoint(primary_) > replayed + 3; }));
    EXPECT_EQ(indexed_block(*nginx), replayed);
    // lag_seconds and lag_blocks count the standby's own delay: the replayed
    // observation says the node was at the indexed block, but that was
    // seconds ago, and the chain makes a block every 3 seconds.
    std::this_thread::sleep_for(3500ms);
    JsonPtr status = call(*nginx, "get_status", "{}");
    json_t* status_result = json_object_get(status.get(), "result");
    EXPECT_GE(json_integer_value(json_object_get(status_result, "lag_seconds")), 3) << dump(status.get());
    EXPECT_GE(json_integer_value(json_object_get(status_result, "lag_blocks")), 1) << dump(status.get());
    JsonPtr page = call(*nginx, "get_wallet_history", R"({"account":"alice","limit":3})");
    json_t* result = json_object_get(page.get(), "result");
    ASSERT_NE(result, nullptr) << dump(page.get());
    // The newest event shown is one the standby's checkpoint covers.
    EXPECT_LE(json_integer_value(json_object_get(json_array_get(json_object_get(result, "items"), 0), "block_num")),
              replayed);
    standby->pause_replay(false);
    writer.stop();
    standby->wait_replayed(primary_);
    EXPECT_EQ(indexed_block(*nginx), checkpoint(primary_));
}

// A list of databases: requests spread over both; a stopped one is avoided
// (every answer still right) and used again once it is back.
TEST_F(ApiReplicas, ListSpreadsAndAvoidsAFailingDatabase) {
    auto standby = make_standby();
    auto nginx = nginx_for({&primary_, standby.get()});
    const long primary_before = xact_commits(primary_);
    const long standby_before = xact_commits(*standby);
    for (int i = 0; i < 40; ++i) ASSERT_EQ(indexed_block(*nginx), 1099);
    // Statistics reach pg_stat_database within about a second.
    EXPECT_TRUE(harness::wait_until([&] { return xact_commits(primary_) - primary_before >= 10; }, 10s, 100ms));
    EXPECT_TRUE(harness::wait_until([&] { return xact_commits(*standby) - standby_before >= 10; }, 10s, 100ms));

    standby->stop();
    for (int i = 0; i < 20; ++i) ASSERT_EQ(indexed_block(*nginx), 1099);
    standby->start();
    const long standby_back = xact_commits(*standby);
    EXPECT_TRUE(harness::wait_until(
        [&] {
            EXPECT_EQ(indexed_block(*nginx), 1099);
            return xact_commits(*standby) - standby_back >= 5;
        },
        20s, 50ms))
        << "the standby got no statement after its backoff";
}

// The database label of /metrics: host:port/dbname, no user nor password.
std::string database_label(const PostgresServer& pg) { return "127.0.0.1:" + std::to_string(pg.port()) + "/wallet"; }

// The workers' probes put each database of the list in /metrics: the primary
// (standby 0, no delay) and the standby (standby 1, its replay delay), which
// grows while its replay is paused and the primary writes, and is 0 again
// once it has replayed; a stopped database is not reachable (no role, no
// delay) until it is back.
TEST_F(ApiReplicas, MetricsShowEachDatabasesRoleAndReplayDelay) {
    auto standby = make_standby();
    auto nginx = nginx_for({&primary_, standby.get()}, {{"WALLET_API_DB_PROBE_INTERVAL_MS", "100"}});
    const std::string on_primary = database_label(primary_);
    const std::string on_standby = database_label(*standby);
    prometheus_text::Scrape scrape;
    const auto read = [&](const char* name, const std::string& database) { return scrape.value(name, {{"database", database}}); };
    // Polls /metrics until `holds` is true of one scrape.
    const auto scrape_until = [&](const std::function<bool()>& holds) {
        return harness::wait_until([&] {
            auto page = harness::http_request("GET", nginx->url("/metrics"));
            scrape = prometheus_text::parse(page.body);
            return page.status == 200 && holds();
        }, 30s, 50ms);
    };
    // A transaction replayed since the standby started: the delay counts from the last one.
    set_checkpoint(primary_, 1100);
    standby->wait_replayed(primary_);
    ASSERT_TRUE(scrape_until([&] {
        return read("wallet_history_database_up", on_primary) == 1 && read("wallet_history_database_up", on_standby) == 1;
    })) << scrape.error;
    EXPECT_EQ(read("wallet_history_database_standby", on_primary), 0);
    EXPECT_EQ(read("wallet_history_database_replay_delay_seconds", on_primary), 0);
    EXPECT_EQ(read("wallet_history_database_standby", on_standby), 1);
    EXPECT_EQ(read("wallet_history_database_replay_delay_seconds", on_standby), 0);

    standby->pause_replay(true);
    set_checkpoint(primary_, 1101);  // received by the standby, not replayed
    EXPECT_TRUE(scrape_until([&] { return read("wallet_history_database_replay_delay_seconds", on_standby) > 0; }));
    EXPECT_EQ(read("wallet_history_database_standby", on_standby), 1);
    EXPECT_EQ(read("wallet_history_database_replay_delay_seconds", on_primary), 0);
    // Growing while the replay stays paused.
    const double first = *read("wallet_history_database_replay_delay_seconds", on_standby);
    EXPECT_TRUE(scrape_until([&] { return read("wallet_history_database_replay_delay_seconds", on_standby) > first; }));
    EXPECT_EQ(checkpoint(*standby), 1100);

    standby->pause_replay(false);
    EXPECT_TRUE(scrape_until([&] { return read("wallet_history_database_replay_delay_seconds", on_standby) == 0; }));
    EXPECT_EQ(checkpoint(*standby), 1101);

    standby->stop();
    EXPECT_TRUE(scrape_until([&] { return read("wallet_history_database_up", on_standby) == 0; }));
    EXPECT_EQ(read("wallet_history_database_standby", on_standby), std::nullopt);
    EXPECT_EQ(read("wallet_history_database_replay_delay_seconds", on_standby), std::nullopt);
    EXPECT_EQ(read("wallet_history_database_up", on_primary), 1);
    standby->start();
    EXPECT_TRUE(scrape_until([&] {
        return read("wallet_history_database_up", on_standby) == 1 && read("wallet_history_database_standby", on_standby) == 1;
    }));
    // The label holds no credentials.
    const std::string text = harness::http_request("GET", nginx->url("/metrics")).body;
    EXPECT_EQ(text.find(harness::kReaderPassword), std::string::npos);
    EXPECT_EQ(text.find("wallet_api_reader"), std::string::npos);
}

// A statement a standby cancels for a recovery conflict (SQLSTATE 40001) is
// run again on the other database: the client gets the right page.
TEST_F(ApiReplicas, RecoveryConflictIsRetriedElsewhere) {
    // A page statement slow enough to be running when the primary's lock
    // reaches the standby: the cursor role's code (looked up once per page)
    // waits a little, on the standby only (the primary's lock would
    // otherwise wait for its own readers).
    const std::string role_code = primary_.query("SELECT oid::regprocedure FROM pg_proc WHERE proname = 'wallet_role_code'").at(0);
    primary_.query("ALTER FUNCTION " + role_code + " RENAME TO wallet_role_code_fast");
    primary_.query("CREATE FUNCTION wallet_role_code(name text) RETURNS smallint LANGUAGE plpgsql IMMUTABLE AS "
                   "$$ BEGIN IF pg_is_in_recovery() THEN PERFORM pg_sleep(0.5); END IF; RETURN wallet_role_code_fast(name); END $$");
    auto standby = make_standby({"max_standby_streaming_delay=50ms"});
    auto nginx = nginx_for({standby.get(), &primary_});

    // Concurrent clients, asking again until the lock is taken: the pool
    // spreads them over both databases (a first connection to the standby
    // may still be opening while the primary answers the first requests).
    constexpr std::size_t kClients = 4;
    std::atomic<bool> locked{false};
    std::mutex answers_mutex;
    std::vector<harness::HttpResponse> answers;
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < kClients; ++i) {
        clients.emplace_back([&] {
            do {
                auto answer = harness::http_post_json(
                    nginx->url("/"),
                    R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice","limit":2}})");
                std::lock_guard lock(answers_mutex);
                answers.push_back(std::move(answer));
            } while (!locked);
        });
    }
    const bool running = harness::wait_until(
        [&] {
            return standby->query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wallet_history_api' "
                                  "AND wait_event = 'PgSleep'").at(0) != "0";
        },
        30s, 5ms);
    // The primary takes an exclusive lock: replaying it cancels the standby's statements.
    primary_.query("BEGIN; SET LOCAL synchronous_commit = on; LOCK TABLE wallet_events IN ACCESS EXCLUSIVE MODE; COMMIT");
    locked = true;
    for (auto& client : clients) client.join();
    ASSERT_TRUE(running);
    for (const auto& answer : answers) {
        JsonPtr r = parse_json(answer.body);
        json_t* events = json_object_get(json_object_get(r.get(), "result"), "items");
        ASSERT_EQ(json_array_size(events), 2u) << answer.body;
        EXPECT_EQ(json_integer_value(json_object_get(json_array_get(events, 0), "block_num")), 1099);
    }
    EXPECT_TRUE(harness::wait_until(
        [&] {
            return standby->query("SELECT confl_lock FROM pg_stat_database_conflicts WHERE datname = 'wallet'").at(0) != "0";
        },
        10s, 100ms));
    EXPECT_NE(harness::read_file(nginx->error_log()).find("SQLSTATE 40001, run again"), std::string::npos);
    EXPECT_GE(reruns(*nginx, "retryable_error"), 1);
}

// Cursors of one node are accepted by another sharing the secret, and a walk
// moving between the primary and a standby that lags (its replay paused
// while the writer moves on) returns every event exactly once: a standby
// behind the cursor's block never answers the next page.
TEST_F(ApiReplicas, PageWalkAcrossPrimaryAndStandbyReturnsEachEventOnce) {
    auto standby = make_standby();
    auto on_primary = nginx_for({&primary_});
    auto on_standby = nginx_for({standby.get()});
    auto on_both = nginx_for({standby.get(), &primary_});
    Writer writer(primary_);
    ASSERT_TRUE(harness::wait_until([&] { return writer.blocks() >= 3; }));
    standby->pause_replay(true);
    ASSERT_TRUE(harness::wait_until([&] { return checkpoint(primary_) > checkpoint(*standby) + 3; }));

    // Primary first: its first page is above what the standby replayed. The
    // standby node's next page waits for the replay, resumed meanwhile.
    const long top = checkpoint(primary_);
    std::thread resume;
    auto walked = walk({on_primary.get(), on_standby.get()}, 5, [&](std::size_t page) {
        if (page == 1) {
            resume = std::thread([&] {
                std::this_thread::sleep_for(300ms);
                standby->pause_replay(false);
            });
        }
    });
    resume.join();
    ASSERT_FALSE(walked.empty());
    EXPECT_GE(reruns(*on_standby, "behind_cursor"), 1);
    EXPECT_EQ(reruns(*on_primary, "behind_cursor"), 0);
    expect_each_once(walked, stored_keys(primary_, std::get<0>(walked.front())));
    EXPECT_GE(std::get<0>(walked.front()), top);

    // One node with both databases, the standby first and behind: pages the
    // standby cannot answer go to the primary.
    standby->pause_replay(true);
    ASSERT_TRUE(harness::wait_until([&] { return checkpoint(primary_) > checkpoint(*standby) + 3; }));
    auto mixed = walk({on_primary.get(), on_both.get()}, 7);
    expect_each_once(mixed, stored_keys(primary_, std::get<0>(mixed.front())));
    standby->pause_replay(false);
}

// A backfill still loading below the checkpoint holds indexed_block back,
// while the standby has replayed every stored row: a next page whose cursor
// is above indexed_block is answered by the standby at once (it holds the
// cursor's block), never run again until the request deadline.
TEST_F(ApiReplicas, StandbyPagesAboveTheIndexedBlockOfALoadingBackfill) {
    // Blocks 1050..1099 of the shard are not loaded yet: indexed_block 1049
    // (on the standby too: its base backup is taken after this commit).
    primary_.query("INSERT INTO backfill_shards (start_block, end_block, state, next_block) VALUES (1000, 1099, 'running', 1050)");
    auto standby = make_standby();
    auto on_standby = nginx_for({standby.get()});
    ASSERT_EQ(indexed_block(*on_standby), 1049);
    expect_each_once(walk({on_standby.get()}, 40), stored_keys(primary_, 1099));
    EXPECT_EQ(reruns(*on_standby, "behind_cursor"), 0);
}

// Failover: the primary stops, the standby is promoted; the same nginx keeps
// answering (from the promoted standby, which the writer now feeds).
TEST_F(ApiReplicas, PromotedStandbyKeepsServingWithoutRestart) {
    auto standby = make_standby();
    auto on_both = nginx_for({&primary_, standby.get()});
    auto on_standby = nginx_for({standby.get()});
    Writer writer(primary_);
    ASSERT_TRUE(harness::wait_until([&] { return writer.blocks() >= 3; }));
    // The new standby streams from the moment it is ready: it may not have
    // replayed the first live blocks yet (both databases answer in turn).
    standby->wait_replayed(primary_);
    for (int i = 0; i < 10; ++i) EXPECT_GE(indexed_block(*on_both), kFirstLiveBlock);
    writer.stop();
    standby->wait_replayed(primary_);
    const long last = checkpoint(primary_);

    primary_.stop();
    for (int i = 0; i < 20; ++i) EXPECT_EQ(indexed_block(*on_both), last);
    standby->promote();
    set_checkpoint(*standby, last + 1);  // the indexer, moved to the new primary
    EXPECT_EQ(indexed_block(*on_both), last + 1);
    EXPECT_EQ(indexed_block(*on_standby), last + 1);
    expect_each_once(walk({on_both.get(), on_standby.get()}, 50), stored_keys(*standby, last + 1));
}

}  // namespace
