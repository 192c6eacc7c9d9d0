// Keyset paging while the real wallet-indexer inserts newer rows: walking
// every page of an account with 10,000 older events (and the rows the indexer
// adds on top), for get_wallet_history with several page sizes, op_types and
// windows, and for get_author_rewards and get_curation_rewards, returns each
// event exactly once, in keyset order, equal to a direct SQL ordering of the
// rows that were there when the walk started — while hive-node-sim's synthetic
// chain advances by itself and wallet-indexer keeps writing rows of the same
// account into the API's database. A walk started after the indexer stops
// returns everything.
//
// The account: the synthetic chain picks actors with a skew towards the low
// end of its account pool (t/sim/src/synthetic_chain.cpp, `someone`), so one
// account is by far the busiest: with seed 7 that is mefomu533, about 0.76
// wallet events per block over blocks 1,001..2,000 (0.42 curation rewards,
// 0.11 transfers, 0.05 author rewards); the next busiest has 0.24. The test
// checks that it is still the busiest among the rows the indexer wrote.
//
// The older events are generated at blocks 1..2,500 with times from the
// chain's genesis (2016-03-24T16:00:00Z) to 17:02:27, strictly older than the
// first block the indexer indexes (5,001, at 20:10:03): they sort after every
// indexed row, and the indexer never writes their blocks. (Keyset paging keeps
// out rows newer than a walk's start because the chain's newer blocks have
// newer times; a row inserted below a walk's cursor would enter the walk.)
//
// Concurrency is made certain, not hoped for: after a walk's first page and
// after each quarter of its pages, the walk waits (with a timeout) until the
// indexer has committed another row of the account that the walk's query
// would match, newer than the walk's start; the walk must still return
// exactly the rows of its start.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <compare>
#include <iostream>
#include <set>

#include "indexer_support.hpp"
#include "support/api_support.hpp"

using namespace api_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kAccount = "mefomu533";  // the busiest account of the synthetic chain, seed 7
constexpr const char* kSeed = "7";
constexpr int kOlderEvents = 10000;
constexpr const char* kOlderStart = "2016-03-24T16:00:00Z";  // the synthetic chain's genesis time
constexpr std::int64_t kFirstIndexed = 5001;
constexpr std::int64_t kInitialHead = 5100;
constexpr const char* kBlockIntervalMs = "50";  // the head advances by itself, 20 blocks a second

// The spec's default and maximum page sizes (WALLET_API_DEFAULT_LIMIT, WALLET_API_MAX_LIMIT).
constexpr std::size_t kDefaultLimit = 50;
constexpr std::size_t kMaxLimit = 200;

constexpr auto kIndexerTimeout = 30s;

// A row's position in the keyset: ("timestamp", block_num, block_seq, role),
// pages run from the greatest down.
struct Key {
    std::string timestamp;  // ISO 8601 UTC to the second: orders as text
    std::int64_t block_num = 0;
    std::int64_t block_seq = 0;
    std::string role;

    auto operator<=>(const Key&) const = default;
    std::string text() const {
        return timestamp + "/" + std::to_string(block_num) + "/" + std::to_string(block_seq) + "/" + role;
    }
    // As a SQL row value comparable with ("timestamp", block_num, block_seq, role).
    std::string sql() const {
        return "('" + timestamp + "'::timestamptz, " + std::to_string(block_num) + ", " + std::to_string(block_seq) +
               ", '" + role + "')";
    }
};

// One walk: a method, its parameters (JSON members besides account and
// cursor), the same rows as a SQL condition, and the page size the API uses.
struct WalkSpec {
    std::string label;
    std::string method;
    std::string params;
    std::string filter;
    std::size_t page_size;
};

class ApiLivePaging : public ::testing::Test {
protected:
    ApiLivePaging()
        : sim_({"--synthetic", "--seed", kSeed, "--length", std::to_string(kInitialHead), "--block-interval-ms",
                kBlockIntervalMs}),
          health_port_(harness::free_port()) {
        auto env = indexer_test::indexer_env(stack_.pg(), "wallet", sim_.url(), health_port_);
        env.erase("DB_PASSWORD");  // the indexer needs only the writer role
        env["INDEXER_START_BLOCK"] = std::to_string(kFirstIndexed);
        indexer_ = std::make_unique<indexer_test::IndexerDaemon>(env, health_port_);
        auto conn = wallet::pg::connect(stack_.pg().superuser_url("wallet"));
        if (!conn) throw std::runtime_error(conn.error());
        db_ = std::move(conn).value();
    }

    std::vector<std::vector<std::string>> rows(const std::string& sql) {
        auto result = wallet::pg::exec(db_.get(), sql);
        if (!result) throw std::runtime_error(result.error() + "\nin: " + sql);
        PGresult* r = result->get();
        std::vector<std::vector<std::string>> out;
        for (int i = 0; i < PQntuples(r); ++i) {
            std::vector<std::string> row;
            for (int j = 0; j < PQnfields(r); ++j) row.emplace_back(PQgetvalue(r, i, j));
            out.push_back(std::move(row));
        }
        return out;
    }
    std::int64_t number(const std::string& sql) { return std::stoll(rows(sql).at(0).at(0)); }
    std::int64_t checkpoint() { return number("SELECT coalesce((SELECT block_num FROM indexer_checkpoint), 0)"); }

    // The account's rows matching `filter`, in keyset order, straight from SQL.
    std::vector<Key> sql_keys(const std::string& filter) {
        std::vector<Key> keys;
        for (const auto& row : rows("SELECT to_char(\"timestamp\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
                                    " block_num, block_seq, role FROM wallet_operation_events"
                                    " WHERE account = '" + std::string(kAccount) + "' AND (" + filter + ")"
                                    " ORDER BY \"timestamp\" DESC, block_num DESC, block_seq DESC, role DESC")) {
            keys.push_back({row[0], std::stoll(row[1]), std::stoll(row[2]), row[3]});
        }
        return keys;
    }
    std::int64_t count_of_account(const std::string& filter) {
        return number("SELECT count(*) FROM wallet_operation_events WHERE account = '" + std::string(kAccount) +
                      "' AND (" + filter + ")");
    }

    struct Walked {
        std::vector<Key> keys;
        std::int64_t start_block = 0;  // the checkpoint the first page was read at
        std::int64_t end_block = 0;    // and the last page
        std::size_t pages = 0;
        std::size_t expected_rows = 0;
    };

    // Walks every page. With `pause`, waits after the first page and after
    // each quarter of the pages until the indexer has committed another row
    // that this walk's query matches and that is newer than the walk's start.
    Walked walk(const WalkSpec& spec, bool pause) {
        Walked out;
        std::optional<std::string> cursor;
        std::size_t max_pages = 1;
        std::size_t quarter = 0;  // pages
        std::int64_t newer_seen = 0;
        for (std::size_t page = 0;; ++page) {
            if (page >= max_pages) {
                ADD_FAILURE() << "more pages than rows: " << page;
                return out;
            }
            std::string params = R"({"account":")" + std::string(kAccount) + "\"";
            if (!spec.params.empty()) params += "," + spec.params;
            if (cursor) params += R"(,"cursor":")" + *cursor + "\"";
            params += "}";
            JsonPtr result = stack_.result(spec.method, params);
            ++out.pages;
            const std::int64_t indexed_block =
                json_integer_value(json_object_get(json_object_get(result.get(), "indexer"), "indexed_block"));
            json_t* items = json_object_get(result.get(), "items");
            if (!json_is_array(items)) {
                ADD_FAILURE() << "no items: " << dump(result.get());
                return out;
            }
            std::size_t i = 0;
            json_t* e = nullptr;
            json_array_foreach(items, i, e) {
                EXPECT_EQ(str(e, "account"), kAccount);
                out.keys.push_back({str(e, "timestamp"), json_integer_value(json_object_get(e, "block_num")),
                                    json_integer_value(json_object_get(e, "block_seq")), str(e, "role")});
            }
            if (page == 0) {
                // The rows there when the walk started: the indexer commits a
                // block's events with the checkpoint, and the page read the
                // checkpoint in the same statement as its rows.
                out.start_block = indexed_block;
                out.expected_rows = static_cast<std::size_t>(
                    count_of_account("(" + spec.filter + ") AND block_num <= " + std::to_string(indexed_block)));
                max_pages = out.expected_rows / spec.page_size + 2;
                quarter = std::max<std::size_t>(1, out.expected_rows / spec.page_size / 4);
            }
            if (pause && page % quarter == 0) {
                const std::string newer = "(" + spec.filter + ") AND block_num > " + std::to_string(out.start_block);
                const bool inserted = harness::wait_until(
                    [&] { return count_of_account(newer) > newer_seen; }, kIndexerTimeout, 20ms);
                EXPECT_TRUE(inserted) << "the indexer wrote no newer row of " << kAccount << " matching " << spec.filter
                                      << " after page " << page << " (checkpoint " << checkpoint() << ")\n"
                                      << indexer_->log();
                newer_seen = count_of_account(newer);
            }
            json_t* next = json_object_get(result.get(), "next_cursor");
            if (json_is_null(next)) {
                EXPECT_LE(json_array_size(items), spec.page_size);
                out.end_block = indexed_block;
                return out;
            }
            if (!json_is_string(next)) {
                ADD_FAILURE() << "next_cursor is neither null nor a string: " << dump(result.get());
                return out;
            }
            EXPECT_EQ(json_array_size(items), spec.page_size) << "a page before the last one is full (page " << page << ")";
            cursor = json_string_value(next);
        }
    }

    // The walk's keys, each once, in strictly descending keyset order, equal
    // to the SQL ordering of `expected`.
    void expect_walk(const std::vector<Key>& walked, const std::vector<Key>& expected) {
        std::set<Key> distinct(walked.begin(), walked.end());
        EXPECT_EQ(distinct.size(), walked.size()) << "an event came twice";
        for (std::size_t i = 1; i < walked.size(); ++i) {
            if (!(walked[i - 1] > walked[i])) {
                ADD_FAILURE() << "not in keyset order at " << i << ": " << walked[i - 1].text() << " then "
                              << walked[i].text();
                break;
            }
        }
        EXPECT_EQ(walked.size(), expected.size());
        for (std::size_t i = 0; i < std::min(walked.size(), expected.size()); ++i) {
            if (walked[i] != expected[i]) {
                ADD_FAILURE() << "first different event " << i << ":\n  api: " << walked[i].text()
                              << "\n  sql: " << expected[i].text();
                break;
            }
        }
    }

    ApiStack stack_;
    indexer_test::Simulator sim_;
    std::uint16_t health_port_;
    std::unique_ptr<indexer_test::IndexerDaemon> indexer_;
    wallet::PgConnPtr db_;
};

}  // namespace

TEST_F(ApiLivePaging, WalksWhileTheIndexerInsertsNewerRows) {
    const auto started = std::chrono::steady_clock::now();
    generate_events(stack_.pg(), kAccount, kOlderEvents, 1, kOlderStart);
    generate_events(stack_.pg(), "bera132", 300, 1, kOlderStart);  // another account of the chain, interleaved
    const std::int64_t older_rows = count_of_account("true");
    ASSERT_GT(older_rows, kOlderEvents);  // self transfers add sender rows
    stack_.start_nginx();
    indexer_->start();
    // Some indexed rows before the first walk, so that walks cross from indexed rows into the older ones.
    ASSERT_TRUE(indexer_test::wait_for_checkpoint(stack_.pg(), "wallet", kInitialHead - 20, kIndexerTimeout))
        << indexer_->log();
    ASSERT_GT(count_of_account("block_num >= " + std::to_string(kFirstIndexed)), 0) << indexer_->log();
    // Every older row sorts after every indexed one.
    EXPECT_EQ(number("SELECT count(*) FROM wallet_operation_events WHERE block_num < " + std::to_string(kFirstIndexed) +
                     " AND \"timestamp\" >= (SELECT min(\"timestamp\") FROM wallet_operation_events WHERE block_num >= " +
                     std::to_string(kFirstIndexed) + ")"),
              0);

    // A page without op_types holds spec 000's 15 types (docs/operations.md).
    const std::string all = "op_type IN ('transfer', 'transfer_to_vesting', 'withdraw_vesting', 'fill_vesting_withdraw',"
                            " 'delegate_vesting_shares', 'return_vesting_delegation', 'transfer_to_savings',"
                            " 'transfer_from_savings', 'cancel_transfer_from_savings', 'fill_transfer_from_savings',"
                            " 'claim_reward_balance', 'author_reward', 'curation_reward', 'comment_benefactor_reward',"
                            " 'interest')";
    const std::vector<WalkSpec> walks = {
        {"default limit", "wallet_history.get_wallet_history", "", all, kDefaultLimit},
        {"limit 200", "wallet_history.get_wallet_history", R"("limit":200)", all, kMaxLimit},
        {"limit above the maximum", "wallet_history.get_wallet_history", R"("limit":100000)", all, kMaxLimit},
        {"limit 37", "wallet_history.get_wallet_history", R"("limit":37)", all, 37},
        {"three op types", "wallet_history.get_wallet_history",
         R"("limit":137,"op_types":["transfer","author_reward","curation_reward"])",
         "op_type IN ('transfer', 'author_reward', 'curation_reward')", 137},
        {"one op type", "wallet_history.get_wallet_history", R"("op_types":["transfer"])", "op_type = 'transfer'",
         kDefaultLimit},
        {"window from", "wallet_history.get_wallet_history", R"("limit":7,"from":"2016-03-24T16:58:00Z")",
         all + " AND \"timestamp\" >= '2016-03-24T16:58:00Z'", 7},
        {"window from/to", "wallet_history.get_wallet_history",
         R"("limit":100,"from":"2016-03-24T16:30:00Z","to":"2016-03-26T00:00:00Z")",
         all + " AND \"timestamp\" >= '2016-03-24T16:30:00Z' AND \"timestamp\" < '2016-03-26T00:00:00Z'", 100},
        {"op types and window", "wallet_history.get_wallet_history",
         R"("limit":64,"op_types":["curation_reward","transfer"],"from":"2016-03-24T16:45:00Z","to":"2016-03-25T12:00:00Z")",
         "op_type IN ('curation_reward', 'transfer') AND \"timestamp\" >= '2016-03-24T16:45:00Z'"
         " AND \"timestamp\" < '2016-03-25T12:00:00Z'",
         64},
        {"author rewards", "wallet_history.get_author_rewards", "", "op_type = 'author_reward'", kDefaultLimit},
        {"curation rewards", "wallet_history.get_curation_rewards", R"("limit":200,"from":"2016-03-24T16:20:00Z")",
         "op_type = 'curation_reward' AND \"timestamp\" >= '2016-03-24T16:20:00Z'", kMaxLimit},
    };

    std::int64_t inserted_of_account = 0;
    std::int64_t inserted_rows = 0;
    std::size_t pages = 0;
    std::size_t events = 0;
    for (const auto& spec : walks) {
        SCOPED_TRACE("walk: " + spec.label);
        const Walked w = walk(spec, true);
        pages += w.pages;
        events += w.keys.size();
        ASSERT_GT(w.start_block, 0);
        // The rows that were there when the walk started, in SQL's keyset order.
        const auto expected = sql_keys("(" + spec.filter + ") AND block_num <= " + std::to_string(w.start_block));
        EXPECT_EQ(expected.size(), w.expected_rows) << "rows at or below the walk's start changed while walking";
        ASSERT_FALSE(expected.empty());
        // The first page began at the newest of them, and newer rows were inserted above it.
        ASSERT_FALSE(w.keys.empty());
        EXPECT_EQ(w.keys.front(), expected.front());
        expect_walk(w.keys, expected);
        EXPECT_GT(count_of_account("(" + spec.filter + ") AND \"timestamp\" > '" + w.keys.front().timestamp + "'"), 0)
            << "no row newer than the walk's first row";
        EXPECT_GT(w.end_block, w.start_block) << "the checkpoint did not move during the walk";
        const std::string during =
            "block_num > " + std::to_string(w.start_block) + " AND block_num <= " + std::to_string(w.end_block);
        inserted_of_account += count_of_account(during);
        inserted_rows += number("SELECT count(*) FROM wallet_operation_events WHERE " + during);
        std::cout << spec.label << ": " << w.keys.size() << " events over " << w.pages << " pages, blocks "
                  << w.start_block << ".." << w.end_block << " indexed meanwhile (" << count_of_account(during)
                  << " rows of " << kAccount << ")" << std::endl;
    }

    // After the indexer stops, a walk returns everything, the rows inserted
    // during the earlier walks included.
    const int status = indexer_->stop(SIGTERM, 10s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << indexer_->log();
    const std::int64_t final_block = checkpoint();
    const auto everything = sql_keys(all);
    // The older rows are all still there.
    EXPECT_EQ(count_of_account("block_num < " + std::to_string(kFirstIndexed)), older_rows);
    const Walked last = walk({"after the indexer stopped", "wallet_history.get_wallet_history", "", all, kDefaultLimit}, false);
    pages += last.pages;
    events += last.keys.size();
    EXPECT_EQ(last.start_block, final_block);
    EXPECT_EQ(last.end_block, final_block);
    expect_walk(last.keys, everything);
    // The chosen account is the busiest of the rows the indexer wrote.
    EXPECT_EQ(rows("SELECT account FROM wallet_operation_events WHERE block_num >= " + std::to_string(kFirstIndexed) +
                   " GROUP BY account ORDER BY count(*) DESC LIMIT 1")
                  .at(0)
                  .at(0),
              kAccount);

    std::cout << "indexed " << kFirstIndexed << ".." << final_block << "; during the walks the indexer inserted "
              << inserted_rows << " rows, " << inserted_of_account << " of " << kAccount << "; " << events
              << " events over " << pages << " pages; the test took "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s" << std::endl;
    EXPECT_GT(inserted_of_account, 0);
}
