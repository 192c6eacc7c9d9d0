// Bringing a store up to date (issue 17 item 3; docs/operations.md): a store
// loaded by decoder version 1 (spec 000's 15 types: the rows and raw
// operations of the other types removed, the ranges marked 1) is re-run by
// wallet-backfill, which adds exactly the missing rows (the table and the
// reward sums equal a fresh full load's, row for row), twice gives the same
// table, and beside the indexer writing the same blocks too. get_status
// reports the outdated run before and none after, and an honest indexed_block
// while history below the checkpoint is missing.
//
// Sizes: a synthetic chain at mainnet density, 600 blocks, shards of 100.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "backfill_support.hpp"
#include "progress.hpp"
#include "support/api_support.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;
using api_test::ApiStack;
using api_test::dump;
using wallet::JsonPtr;

namespace {

constexpr std::uint32_t kHead = 601;
constexpr std::int64_t kLastBlock = kHead - 1;  // the simulator's last irreversible block

std::map<std::string, std::string> backfill_env(const PostgresServer& pg, const std::string& url, std::int64_t first,
                                                std::int64_t last) {
    return daemon_env(pg, {{"BACKFILL_RPC_URLS", url},
                           {"BACKFILL_START_BLOCK", std::to_string(first)},
                           {"BACKFILL_END_BLOCK", std::to_string(last)},
                           {"BACKFILL_SHARD_SIZE", "100"},
                           {"BACKFILL_BATCH_SIZE", "50"},
                           {"BACKFILL_WORKERS", "3"}});
}

CommandResult run_backfill(const PostgresServer& pg, const std::string& url, std::int64_t first = 1,
                           std::int64_t last = kLastBlock) {
    return run_command({backfill_binary().string(), "--progress=none"}, backfill_env(pg, url, first, last), 120s);
}

// What decoder version 1 stored: spec 000's types only, and in wallet_blocks
// only the raw operations that have events.
void downgrade_to_version_1(PostgresServer& pg) {
    pg.query("DELETE FROM wallet_events WHERE wide;"
             "WITH kept AS (SELECT DISTINCT block_num, block_seq FROM wallet_events),"
             " stripped AS (SELECT b.block_num, json_object_agg(o.key, o.value ORDER BY o.key::integer) AS ops"
             "   FROM wallet_blocks b CROSS JOIN LATERAL json_each(b.ops) o"
             "   JOIN kept k ON k.block_num = b.block_num AND k.block_seq = o.key::integer GROUP BY b.block_num)"
             " UPDATE wallet_blocks b SET ops = s.ops FROM stripped s WHERE s.block_num = b.block_num;"
             "DELETE FROM wallet_blocks b WHERE NOT EXISTS (SELECT FROM wallet_events e WHERE e.block_num = b.block_num);"
             "UPDATE backfill_shards SET decoder_version = 1;"
             "UPDATE indexer_ranges SET decoder_version = 1;"
             "SELECT 1");
}

// The reward sums, every row.
std::vector<std::string> reward_sums(const PostgresServer& pg) {
    return pg.query("SELECT format('%s %s %s %s %s', a.name, day, op_type, event_count, vesting_sum)"
                    " FROM wallet_reward_daily d JOIN wallet_accounts a ON a.id = d.account_id"
                    " UNION ALL SELECT format('%s %s %s %s %s', a.name, day, op_type, symbol, amount_sum)"
                    " FROM wallet_reward_liquid_daily d JOIN wallet_accounts a ON a.id = d.account_id ORDER BY 1");
}

std::int64_t number(const PostgresServer& pg, const std::string& sql) { return std::stoll(pg.query(sql).at(0)); }

bool indexed_through_last_block(const PostgresServer& pg) {
    return number(pg, "SELECT coalesce((SELECT block_num FROM indexer_checkpoint), 0)") >= kLastBlock;
}

std::int64_t integer(json_t* object, const char* key) { return json_integer_value(json_object_get(object, key)); }

std::string decoder_of(ApiStack& stack) {
    JsonPtr status = stack.result("wallet_history.get_status");
    return dump(json_object_get(status.get(), "decoder"));
}

std::string outdated(std::int64_t from, std::int64_t to) {
    return R"({"current_version":2,"outdated":{"from":)" + std::to_string(from) + R"(,"to":)" + std::to_string(to) +
           R"(},"up_to_date":false})";
}
const std::string kUpToDate = R"({"current_version":2,"up_to_date":true})";

}  // namespace

TEST(BackfillDecoderVersion, ReRunOverAVersionOneStoreAddsExactlyTheMissingRows) {
    ApiStack stack;
    PostgresServer& pg = stack.pg();
    NodeSimulator sim(chain_args(kHead));
    stack.start_nginx();

    // A fresh full load: the reference.
    auto loaded = run_backfill(pg, sim.url());
    ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
    const auto full = table_digest(pg);
    const auto full_sums = reward_sums(pg);
    const std::int64_t full_rows = number(pg, "SELECT count(*) FROM wallet_events");
    EXPECT_EQ(decoder_of(stack), kUpToDate);
    EXPECT_EQ(number(pg, "SELECT count(*) FROM backfill_shards WHERE decoder_version <> 2"), 0);

    downgrade_to_version_1(pg);
    const std::int64_t v1_rows = number(pg, "SELECT count(*) FROM wallet_events");
    ASSERT_LT(v1_rows, full_rows);
    ASSERT_GT(v1_rows, 0);
    EXPECT_EQ(decoder_of(stack), outdated(1, kLastBlock));

    // The re-run adds exactly the missing rows: the fresh load's table and sums.
    auto rerun = run_backfill(pg, sim.url());
    ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
    EXPECT_NE(rerun.output.find("6 loaded by an older decoder"), std::string::npos) << rerun.output;
    EXPECT_NE(rerun.output.find("(" + wallet::backfill::with_thousands(full_rows - v1_rows) + " new rows"), std::string::npos) << rerun.output;
    auto digest = table_digest(pg);
    EXPECT_TRUE(digest == full) << "first difference: " << first_difference(full, digest);
    EXPECT_EQ(reward_sums(pg), full_sums);
    EXPECT_EQ(number(pg, "SELECT count(*) FROM backfill_shards WHERE decoder_version <> 2 OR state <> 'done'"), 0);
    EXPECT_EQ(decoder_of(stack), kUpToDate);

    // Again: nothing to do.
    auto again = run_backfill(pg, sim.url());
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_NE(again.output.find("this run stored 0 blocks"), std::string::npos) << again.output;
    digest = table_digest(pg);
    EXPECT_TRUE(digest == full) << "first difference: " << first_difference(full, digest);

    // Beside the indexer, which writes the same blocks meanwhile (from block 1).
    downgrade_to_version_1(pg);
    TempDir dir("wallet-decoder-version");
    Process indexer = start_indexer(pg, sim.url(), dir.path() / "indexer.log");
    auto beside = run_backfill(pg, sim.url());
    ASSERT_EQ(beside.exit_code, 0) << beside.output;
    ASSERT_TRUE(wait_until([&] { return indexed_through_last_block(pg); }, 60s))
        << indexer.log();
    indexer.stop();
    digest = table_digest(pg);
    EXPECT_TRUE(digest == full) << "first difference: " << first_difference(full, digest);
    EXPECT_EQ(reward_sums(pg), full_sums);
    EXPECT_EQ(pg.query("SELECT first_block, last_block, decoder_version FROM indexer_ranges"),
              std::vector<std::string>{"1\t" + std::to_string(kLastBlock) + "\t2"});
    JsonPtr status = stack.result("wallet_history.get_status");
    EXPECT_EQ(integer(status.get(), "indexed_block"), kLastBlock);
    EXPECT_EQ(json_object_get(status.get(), "loading"), nullptr);
    EXPECT_EQ(decoder_of(stack), kUpToDate);

    // Walks over the busiest account, every type, small pages: each event once.
    const std::string account =
        pg.query("SELECT a.name FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                 " GROUP BY a.name ORDER BY count(*) FILTER (WHERE e.wide) DESC, count(*) DESC, a.name LIMIT 1").at(0);
    const std::int64_t stored = number(pg, "SELECT count(*) FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                                           " WHERE a.name = '" + account + "'");
    std::set<std::tuple<std::int64_t, std::int64_t, std::string>> seen;
    std::int64_t items = 0;
    std::string cursor;
    for (int page = 0; page < 10000; ++page) {
        JsonPtr result = stack.result("wallet_history.get_wallet_history",
                                      R"({"account":")" + account + R"(","scope":"all","limit":7)" +
                                          (cursor.empty() ? "" : R"(,"cursor":")" + cursor + "\"") + "}");
        json_t* list = json_object_get(result.get(), "items");
        for (std::size_t i = 0; i < json_array_size(list); ++i) {
            json_t* item = json_array_get(list, i);
            ++items;
            seen.emplace(integer(item, "block_num"), integer(item, "block_seq"), api_test::str(item, "role"));
        }
        EXPECT_EQ(integer(json_object_get(result.get(), "indexer"), "indexed_block"), kLastBlock);
        json_t* next = json_object_get(result.get(), "next_cursor");
        if (!json_is_string(next)) break;
        cursor = json_string_value(next);
    }
    EXPECT_GT(stored, 7);
    EXPECT_EQ(items, stored);
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), stored);
}

TEST(BackfillDecoderVersion, IndexedBlockStaysBelowHistoryStillMissing) {
    ApiStack stack;
    PostgresServer& pg = stack.pg();
    NodeSimulator sim(chain_args(kHead));
    stack.start_nginx();
    // History 1..300 by the backfill, the tail 301.. by the indexer.
    auto loaded = run_backfill(pg, sim.url(), 1, 300);
    ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
    TempDir dir("wallet-indexed-block");
    Process indexer = start_indexer(pg, sim.url(), dir.path() / "indexer.log", 301);
    ASSERT_TRUE(wait_until([&] { return indexed_through_last_block(pg); }, 60s))
        << indexer.log();
    indexer.stop();
    const auto full = table_digest(pg);
    JsonPtr status = stack.result("wallet_history.get_status");
    EXPECT_EQ(integer(status.get(), "indexed_block"), kLastBlock);
    EXPECT_EQ(json_object_get(status.get(), "loading"), nullptr);
    EXPECT_EQ(pg.query("SELECT first_block, last_block, decoder_version FROM indexer_ranges"),
              std::vector<std::string>{"301\t" + std::to_string(kLastBlock) + "\t2"});

    // A shard below the checkpoint not loaded yet (as while wallet-backfill
    // is still running): blocks 101..200 missing.
    pg.query("DELETE FROM wallet_events WHERE block_num BETWEEN 101 AND 200;"
             "DELETE FROM wallet_blocks WHERE block_num BETWEEN 101 AND 200;"
             "UPDATE backfill_shards SET state = 'pending', next_block = start_block, owner = NULL WHERE start_block = 101;"
             "SELECT 1");
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(integer(status.get(), "indexed_block"), 100);
    EXPECT_EQ(dump(json_object_get(status.get(), "loading")), R"({"blocks":100,"from":101,"shards_from":101,"to":200})");
    EXPECT_EQ(api_test::str(status.get(), "indexed_time"),
              pg.query("SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM wallet_blocks"
                       " WHERE block_num <= 100 ORDER BY block_num DESC LIMIT 1").at(0));
    // Half of it loaded: the rest holds indexed_block back.
    pg.query("UPDATE backfill_shards SET next_block = 151 WHERE start_block = 101");
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(integer(status.get(), "indexed_block"), 150);
    // The shard's start stays where the span of what is loading starts.
    EXPECT_EQ(dump(json_object_get(status.get(), "loading")), R"({"blocks":50,"from":151,"shards_from":101,"to":200})");
    // Pages say the same.
    JsonPtr page = stack.result("wallet_history.get_wallet_history", R"({"account":"nobody.here"})");
    EXPECT_EQ(integer(json_object_get(page.get(), "indexer"), "indexed_block"), 150);
    pg.query("UPDATE backfill_shards SET next_block = 101 WHERE start_block = 101");

    // Shards over blocks the indexer stored are not missing.
    pg.query("INSERT INTO backfill_shards (start_block, end_block, next_block, decoder_version) VALUES (401, 500, 401, 2)");
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(dump(json_object_get(status.get(), "loading")), R"({"blocks":100,"from":101,"shards_from":101,"to":200})");

    // Loaded: indexed_block is the checkpoint again, the table complete.
    auto rerun = run_backfill(pg, sim.url(), 1, 300);
    ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(integer(status.get(), "indexed_block"), kLastBlock);
    EXPECT_EQ(json_object_get(status.get(), "loading"), nullptr);
    const auto digest = table_digest(pg);
    EXPECT_TRUE(digest == full) << "first difference: " << first_difference(full, digest);

    // The outdated run: versions 1 and 2 mixed, indexer and shards together.
    EXPECT_EQ(decoder_of(stack), kUpToDate);
    pg.query("UPDATE indexer_ranges SET decoder_version = 1");
    EXPECT_EQ(decoder_of(stack), outdated(301, kLastBlock));  // shard 401..500 is pending: those blocks are the indexer's
    pg.query("UPDATE backfill_shards SET state = 'done', next_block = 501 WHERE start_block = 401");
    EXPECT_EQ(decoder_of(stack), outdated(301, 400));
    pg.query("UPDATE backfill_shards SET decoder_version = 1 WHERE start_block IN (1, 201)");
    EXPECT_EQ(decoder_of(stack), outdated(1, 100));
    // An upgrade pass half way through shard 201..300: 201..250 current, 251..300 still version 1.
    pg.query("UPDATE backfill_shards SET decoder_version = 2, next_block = 251, stored_through = 300, stored_version = 1,"
             " state = 'running' WHERE start_block = 201;"
             "UPDATE backfill_shards SET decoder_version = 2 WHERE start_block = 1; SELECT 1");
    EXPECT_EQ(decoder_of(stack), outdated(251, 400));
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(integer(status.get(), "indexed_block"), kLastBlock);  // re-loading, not missing
}
