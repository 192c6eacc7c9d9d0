// The shard table against a real PostgreSQL: plans that add each shard once
// however many processes plan at once, claims that never overlap, takeover
// of silent workers only, progress that survives, done shards never reloaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include "harness/harness.hpp"
#include "shards.hpp"
#include "wallet/pg.hpp"

using namespace harness;
using namespace wallet::backfill;
using std::chrono::milliseconds;

namespace {

struct Database {
    PostgresServer pg;
    wallet::Settings settings = pg.provision();

    wallet::PgConnPtr connect() const {
        auto conn = wallet::pg::connect(settings.db.indexer_url);
        if (!conn) throw std::runtime_error(conn.error());
        return std::move(conn).value();
    }
    std::vector<std::string> shards() const {
        return pg.query("SELECT start_block, end_block, state, next_block, rows_written FROM backfill_shards ORDER BY 1");
    }
};

constexpr milliseconds kLongTimeout{600000};

}  // namespace

TEST(BackfillShards, ConcurrentPlannersAddEachShardOnce) {
    Database db;
    std::vector<std::thread> planners;
    std::mutex mutex;
    std::int64_t added = 0;
    for (int i = 0; i < 6; ++i) {
        planners.emplace_back([&] {
            auto conn = db.connect();
            auto planned = plan_shards(conn.get(), {1, 95000}, 10000);
            ASSERT_TRUE(planned) << planned.error();
            std::lock_guard lock(mutex);
            added += planned->added;
        });
    }
    for (auto& t : planners) t.join();
    EXPECT_EQ(added, 10);
    const auto rows = db.shards();
    ASSERT_EQ(rows.size(), 10u);
    EXPECT_EQ(rows.front(), "1\t10000\tpending\t1\t0");
    EXPECT_EQ(rows.back(), "90001\t95000\tpending\t90001\t0");

    // A later run over a longer range adds only the new part.
    auto conn = db.connect();
    auto again = plan_shards(conn.get(), {1, 120000}, 10000);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->existing, 10);
    EXPECT_EQ(again->added, 3);
    auto status = range_status(conn.get(), {1, 120000});
    ASSERT_TRUE(status);
    EXPECT_EQ(status->shards, 13);
    EXPECT_EQ(status->pending, 13);
    EXPECT_EQ(status->blocks_total, 120000);
    EXPECT_EQ(status->uncovered_blocks, 0);
    EXPECT_FALSE(status->complete());
}

TEST(BackfillShards, ConcurrentClaimsNeverShareAShard) {
    Database db;
    {
        auto conn = db.connect();
        ASSERT_TRUE(plan_shards(conn.get(), {1, 40000}, 1000));
    }
    std::mutex mutex;
    std::vector<std::int64_t> claimed;
    std::vector<std::thread> workers;
    for (int w = 0; w < 8; ++w) {
        workers.emplace_back([&, w] {
            auto conn = db.connect();
            const std::string owner = "test/w" + std::to_string(w);
            for (;;) {
                auto shard = claim_shard(conn.get(), {1, 40000}, owner, kLongTimeout);
                ASSERT_TRUE(shard) << shard.error();
                if (!*shard) return;
                EXPECT_FALSE((*shard)->previous_owner);
                {
                    std::lock_guard lock(mutex);
                    claimed.push_back((*shard)->start_block);
                }
                auto tx = wallet::pg::Transaction::begin(conn.get());
                ASSERT_TRUE(tx);
                auto kept = record_progress(conn.get(), **shard, owner, (*shard)->end_block + 1, 5);
                ASSERT_TRUE(kept && *kept);
                ASSERT_TRUE(tx.value().commit());
            }
        });
    }
    for (auto& t : workers) t.join();
    std::sort(claimed.begin(), claimed.end());
    ASSERT_EQ(claimed.size(), 40u);
    EXPECT_EQ(std::set<std::int64_t>(claimed.begin(), claimed.end()).size(), 40u);
    auto conn = db.connect();
    auto status = range_status(conn.get(), {1, 40000});
    ASSERT_TRUE(status);
    EXPECT_TRUE(status->complete());
    EXPECT_EQ(status->blocks_done, 40000);
    EXPECT_EQ(status->rows_written, 200);
    EXPECT_EQ(db.pg.query("SELECT count(*) FROM backfill_shards WHERE attempts <> 1"), std::vector<std::string>{"0"});
    // Done shards are never claimed again.
    auto none = claim_shard(conn.get(), {1, 40000}, "test/late", milliseconds(1));
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
}

TEST(BackfillShards, OnlyASilentShardIsTakenOverAndTheOldOwnerLosesIt) {
    Database db;
    auto conn = db.connect();
    ASSERT_TRUE(plan_shards(conn.get(), {1, 100}, 100));
    auto first = claim_shard(conn.get(), {1, 100}, "host:1:a/w0", kLongTimeout);
    ASSERT_TRUE(first && *first);
    {
        auto tx = wallet::pg::Transaction::begin(conn.get());
        ASSERT_TRUE(tx);
        ASSERT_TRUE(record_progress(conn.get(), **first, "host:1:a/w0", 41, 17).value());
        ASSERT_TRUE(tx.value().commit());
    }
    // Fresh heartbeat: nothing to claim.
    auto busy = claim_shard(conn.get(), {1, 100}, "host:2:b/w0", milliseconds(60000));
    ASSERT_TRUE(busy);
    EXPECT_FALSE(*busy);
    // A heartbeat keeps it; silence lets it go.
    ASSERT_EQ(heartbeat(conn.get(), {"host:1:a/w0", "other"}).value(), 1);
    db.pg.query("UPDATE backfill_shards SET heartbeat_at = now() - interval '2 minutes'");
    auto taken = claim_shard(conn.get(), {1, 100}, "host:2:b/w0", milliseconds(60000));
    ASSERT_TRUE(taken && *taken);
    EXPECT_EQ((*taken)->previous_owner.value_or(""), "host:1:a/w0");
    EXPECT_EQ((*taken)->next_block, 41);  // resumes where the silent worker got to
    EXPECT_EQ((*taken)->rows_written, 17);
    EXPECT_EQ((*taken)->attempts, 2);
    // The old owner can neither record progress nor release the shard.
    {
        auto tx = wallet::pg::Transaction::begin(conn.get());
        ASSERT_TRUE(tx);
        auto kept = record_progress(conn.get(), **first, "host:1:a/w0", 60, 3);
        ASSERT_TRUE(kept);
        EXPECT_FALSE(*kept);
    }
    EXPECT_FALSE(release_shard(conn.get(), 1, "host:1:a/w0").value());
    // The new owner releases it; a release keeps the progress.
    EXPECT_TRUE(release_shard(conn.get(), 1, "host:2:b/w0").value());
    EXPECT_EQ(db.shards(), std::vector<std::string>{"1\t100\tpending\t41\t17"});
    auto resumed = claim_shard(conn.get(), {1, 100}, "host:3:c/w0", kLongTimeout);
    ASSERT_TRUE(resumed && *resumed);
    EXPECT_FALSE((*resumed)->previous_owner);
    EXPECT_EQ((*resumed)->next_block, 41);
}

TEST(BackfillShards, SkippedShardsAreLeftAlone) {
    Database db;
    auto conn = db.connect();
    ASSERT_TRUE(plan_shards(conn.get(), {1, 30}, 10));
    auto shard = claim_shard(conn.get(), {1, 30}, "x/w0", kLongTimeout, {1, 21});
    ASSERT_TRUE(shard && *shard);
    EXPECT_EQ((*shard)->start_block, 11);
    auto none = claim_shard(conn.get(), {1, 30}, "x/w1", kLongTimeout, {1, 21});
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
}
