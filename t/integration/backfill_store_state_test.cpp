// wallet_store_state.indexed_block (migration 0014; issue 15): the writers
// keep it equal to what wallet_indexed_block_computed() computes from the
// indexer's checkpoint and ranges and the loading shards, after every kind
// of write (the indexer's batches and fork rewinds, the backfill's plan,
// claims, progress and releases, and any statement on the three tables),
// exact when the indexer and two shard workers commit in overlapping
// transactions, and set by the migration on a populated store. Likewise the
// columns get_balances' readiness reads (migration 0019).
//
// Sizes: no chain; a few rows per table. About 4 s (four PostgreSQL servers).
#include <gtest/gtest.h>

#include <chrono>

#include "harness/harness.hpp"
#include "shards.hpp"
#include "wallet/event_store.hpp"
#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"

using namespace harness;
using namespace std::chrono_literals;
using wallet::BlockRef;
using wallet::EventStore;
using wallet::Timestamp;
namespace backfill = wallet::backfill;

namespace {

struct Store {
    explicit Store(std::optional<int> schema_version = std::nullopt) : settings(pg.provision("wallet", schema_version)) {}

    PostgresServer pg;
    wallet::Settings settings;

    wallet::PgConnPtr connect() const {
        auto conn = wallet::pg::connect(settings.db.indexer_url);
        if (!conn) throw std::runtime_error(conn.error());
        return std::move(conn).value();
    }
    // The row (what a page reads) and the computation it stands for, as text ("NULL": none).
    std::string row() const { return pg.query("SELECT coalesce(indexed_block::text, 'NULL') FROM wallet_store_state").at(0); }
    std::string computed() const { return pg.query("SELECT coalesce(wallet_indexed_block_computed()::text, 'NULL')").at(0); }
    // Every kept column (migration 0019 adds get_balances' readiness) and their computation.
    std::string kept_row() const {
        return pg.query("SELECT row(indexed_block, first_block, loading_from, stored_version)::text FROM wallet_store_state").at(0);
    }
    std::string kept_computed() const { return pg.query("SELECT row(c.*)::text FROM wallet_store_state_computed() c").at(0); }
    std::string status() const {
        return pg.query("SELECT coalesce(indexed_block::text, 'NULL') FROM wallet_store_status(2::smallint)").at(0);
    }
};

// The row equals the computation, and the value expected after the write.
void expect_kept(const Store& store, const std::string& expected, const std::string& after) {
    SCOPED_TRACE("after " + after);
    EXPECT_EQ(store.row(), store.computed());
    EXPECT_EQ(store.kept_row(), store.kept_computed());
    EXPECT_EQ(store.row(), expected);
    EXPECT_EQ(store.status(), expected);
}

BlockRef ref(std::int64_t num, char fill = 'a') {
    char prefix[9];
    std::snprintf(prefix, sizeof prefix, "%08llx", static_cast<unsigned long long>(num));
    return BlockRef{num, std::string(prefix) + std::string(32, fill), Timestamp::from_seconds(1458835500 + num * 3).value()};
}

// An indexer batch of blocks first..last without events (the row does not
// depend on them), as wallet-indexer commits it.
EventStore::Batch indexer_batch(std::int64_t first, std::int64_t last, char fill = 'a') {
    EventStore::Batch batch;
    for (std::int64_t num = first; num <= last; ++num) batch.blocks.push_back(ref(num, fill));
    batch.checkpoint = batch.blocks.back();
    batch.keep_block_ids = 26;
    return batch;
}

// A shard worker's batch: its progress in its own transaction (the events
// of the batch would be stored in it too).
void shard_progress(PGconn* conn, const backfill::Shard& shard, const std::string& owner, std::int64_t next_block) {
    auto tx = wallet::pg::Transaction::begin(conn);
    ASSERT_TRUE(tx) << tx.error();
    auto kept = backfill::record_progress(conn, shard, owner, next_block, 0);
    ASSERT_TRUE(kept && *kept) << (kept ? "shard lost" : kept.error());
    ASSERT_TRUE(tx.value().commit());
}

backfill::Shard claim(PGconn* conn, const std::string& owner, int decoder_version = wallet::kDecoderVersion) {
    auto claimed = backfill::claim_shard(conn, {1, 300}, owner, 60s, {}, decoder_version);
    if (!claimed || !*claimed) throw std::runtime_error("no shard claimed");
    return **claimed;
}

void exec(PGconn* conn, const std::string& sql) {
    auto result = wallet::pg::exec(conn, sql);
    ASSERT_TRUE(result) << sql << ": " << result.error();
}

}  // namespace

// The writers' own code: EventStore::commit_batch (wallet-indexer) and the
// shard functions of wallet-backfill, in the order of a store whose indexer
// tails while the backfill loads the history below it.
TEST(BackfillStoreState, EveryWriterPathKeepsTheRow) {
    Store store;
    expect_kept(store, "NULL", "provisioning");
    auto opened = EventStore::connect(store.settings.db.indexer_url);
    ASSERT_TRUE(opened) << opened.error();
    EventStore indexer = std::move(opened).value();

    ASSERT_TRUE(indexer.commit_batch(indexer_batch(301, 310)));
    expect_kept(store, "310", "the indexer's first batch");

    auto conn = store.connect();
    ASSERT_TRUE(backfill::plan_shards(conn.get(), {1, 300}, 100));
    expect_kept(store, "0", "the backfill's plan");

    auto shard = claim(conn.get(), "worker-1");
    EXPECT_EQ(shard.start_block, 1);
    expect_kept(store, "0", "a claim");
    shard_progress(conn.get(), shard, "worker-1", 51);
    expect_kept(store, "50", "a shard's progress");
    ASSERT_TRUE(backfill::heartbeat(conn.get(), {"worker-1"}));
    ASSERT_TRUE(backfill::release_shard(conn.get(), shard.start_block, "worker-1"));
    expect_kept(store, "50", "a heartbeat and a release");

    shard = claim(conn.get(), "worker-2");
    shard_progress(conn.get(), shard, "worker-2", 101);
    expect_kept(store, "100", "a shard done");
    for (const char* owner : {"worker-3", "worker-4"}) {
        shard = claim(conn.get(), owner);
        shard_progress(conn.get(), shard, owner, shard.end_block + 1);
    }
    expect_kept(store, "310", "every shard done");

    ASSERT_TRUE(indexer.commit_batch(indexer_batch(311, 320)));
    expect_kept(store, "320", "the indexer's next batch");

    // Fork rewinds lower it: onto another block 316, and back to 312 alone
    // (as wallet-indexer does when the node's chain is shorter).
    EventStore::Batch fork = indexer_batch(316, 316, 'b');
    fork.rewind_above = 315;
    ASSERT_TRUE(indexer.commit_batch(fork));
    expect_kept(store, "316", "a fork rewind with a new block");
    EventStore::Batch rewind;
    rewind.rewind_above = 312;
    rewind.checkpoint = ref(312);
    rewind.keep_block_ids = 26;
    ASSERT_TRUE(indexer.commit_batch(rewind));
    expect_kept(store, "312", "a fork rewind alone");

    // A newer decoder's pass starts a done shard over; what the older one
    // stored still counts (stored_through), until the shard is deleted.
    shard = claim(conn.get(), "worker-5", wallet::kDecoderVersion + 1);
    EXPECT_EQ(shard.next_block, 1);
    EXPECT_EQ(store.pg.query("SELECT stored_through FROM backfill_shards WHERE start_block = 1").at(0), "100");
    expect_kept(store, "312", "a newer decoder's claim");
    exec(conn.get(), "DELETE FROM backfill_shards WHERE start_block = 1");
    expect_kept(store, "312", "a done shard deleted");
}

// Any statement on the three tables (also by hand, or by a writer added
// later): each one changes the value, and the row follows. A write path
// without a refresh leaves the row behind in one of these steps.
TEST(BackfillStoreState, EveryStatementOnTheThreeTablesRefreshesTheRow) {
    Store store;
    auto conn = store.connect();
    const std::vector<std::pair<std::string, std::string>> steps{
        {"INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (500, 'aa', now())", "500"},
        {"INSERT INTO backfill_shards (start_block, end_block, next_block) VALUES (1, 200, 1), (201, 400, 201)", "0"},
        {"UPDATE backfill_shards SET next_block = 101 WHERE start_block = 1", "100"},
        {"UPDATE backfill_shards SET stored_through = 150, stored_version = 1 WHERE start_block = 1", "150"},
        {"UPDATE backfill_shards SET state = 'done' WHERE start_block = 1", "200"},
        {"UPDATE backfill_shards SET state = 'pending' WHERE start_block = 1", "150"},
        {"UPDATE backfill_shards SET end_block = 140 WHERE start_block = 1", "200"},
        {"INSERT INTO indexer_ranges (first_block, last_block, decoder_version) VALUES (201, 500, 2)", "500"},
        {"UPDATE indexer_ranges SET first_block = 301", "200"},
        {"UPDATE backfill_shards SET start_block = 251, next_block = 301 WHERE start_block = 201", "500"},
        {"UPDATE indexer_ranges SET first_block = 302", "300"},
        {"UPDATE indexer_ranges SET first_block = 301", "500"},
        {"DELETE FROM indexer_ranges", "300"},
        {"DELETE FROM backfill_shards WHERE start_block = 251", "500"},
        {"UPDATE indexer_checkpoint SET block_num = 1050", "1050"},
        {"INSERT INTO backfill_shards (start_block, end_block, next_block) VALUES (1001, 1100, 1001)", "1000"},
        {"TRUNCATE backfill_shards", "1050"},
        {"BEGIN; UPDATE indexer_checkpoint SET block_num = 1060;"
         " INSERT INTO backfill_shards (start_block, end_block, next_block) VALUES (1, 100, 51); COMMIT",
         "50"},
        {"INSERT INTO indexer_ranges (first_block, last_block, decoder_version) VALUES (1, 1060, 2)", "1060"},
        {"TRUNCATE indexer_ranges", "50"},
        {"DELETE FROM indexer_checkpoint", "NULL"},
        {"INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (7, 'aa', now())", "7"},
        {"TRUNCATE indexer_checkpoint", "NULL"},
    };
    for (const auto& [sql, expected] : steps) {
        exec(conn.get(), sql);
        expect_kept(store, expected, sql);
    }
}

// The indexer and two shard workers commit in overlapping transactions, each
// change alone giving another value than all three together. The shard
// workers' commits wait for the row while the indexer's transaction holds
// it; whatever order they then take it in, the row ends exact. (A refresh
// computed from a snapshot taken before the wait would end at 49 or 149.)
TEST(BackfillStoreState, OverlappingWritersEndExact) {
    Store store;
    store.pg.query(
        "INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (300, 'aa', now());"
        "INSERT INTO indexer_ranges (first_block, last_block, decoder_version) VALUES (201, 300, 2);"
        "INSERT INTO backfill_shards (start_block, end_block, next_block, state, owner)"
        " VALUES (1, 100, 50, 'running', 'one'), (101, 200, 150, 'running', 'two')");
    expect_kept(store, "49", "the setup");
    auto indexer = store.connect();
    auto first = store.connect();
    auto second = store.connect();

    exec(indexer.get(), "BEGIN");
    exec(indexer.get(),
         "INSERT INTO indexer_checkpoint (singleton, block_num, block_id, block_time, updated_at)"
         " VALUES (true, 400, 'bb', now(), now()) ON CONFLICT (singleton) DO UPDATE SET block_num = EXCLUDED.block_num");
    exec(indexer.get(), "SELECT wallet_indexer_stored(301, 400, 2::smallint)");
    exec(first.get(), "BEGIN");
    exec(first.get(), "UPDATE backfill_shards SET next_block = 101, state = 'done' WHERE start_block = 1");
    exec(second.get(), "BEGIN");
    exec(second.get(), "UPDATE backfill_shards SET next_block = 201, state = 'done' WHERE start_block = 101");

    // The workers commit while the indexer's transaction holds the row.
    for (PGconn* worker : {first.get(), second.get()}) {
        ASSERT_EQ(PQsendQuery(worker, "COMMIT"), 1) << PQerrorMessage(worker);
        const std::string pid = std::to_string(PQbackendPID(worker));
        EXPECT_TRUE(wait_until([&] {
            return store.pg.query("SELECT cardinality(pg_blocking_pids(" + pid + "))").at(0) != "0";
        })) << "the commit of backend " << pid << " does not wait for the row";
    }
    EXPECT_EQ(store.row(), "49");
    exec(indexer.get(), "COMMIT");
    for (PGconn* worker : {first.get(), second.get()}) {
        while (PGresult* result = PQgetResult(worker)) {
            EXPECT_EQ(PQresultStatus(result), PGRES_COMMAND_OK) << PQresultErrorMessage(result);
            PQclear(result);
        }
    }
    expect_kept(store, "400", "the three commits");
}

// A store of schema version 13: its writers did not keep the row (0013 set it
// once, on the empty store); the migration sets it.
TEST(BackfillStoreState, TheMigrationSetsTheRowOfAPopulatedStore) {
    Store store(13);
    store.pg.query(
        "INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (300, 'aa', now());"
        "INSERT INTO indexer_ranges (first_block, last_block, decoder_version) VALUES (201, 300, 2);"
        "INSERT INTO backfill_shards (start_block, end_block, next_block, state) VALUES (1, 200, 120, 'running')");
    EXPECT_EQ(store.row(), "NULL");
    EXPECT_EQ(store.pg.query("SELECT wallet_indexed_block()").at(0), "119");
    auto conn = store.connect();
    auto migrated = wallet::apply_migrations(conn.get());
    ASSERT_TRUE(migrated) << migrated.error();
    EXPECT_GE(*migrated, 14);
    expect_kept(store, "119", "the migration");
    EXPECT_EQ(store.pg.query("SELECT wallet_indexed_block()").at(0), "119");
}
