// The shard plan's arithmetic and the progress texts (no servers needed).
#include <gtest/gtest.h>

#include "progress.hpp"
#include "shards.hpp"

using wallet::backfill::BlockRange;
using wallet::backfill::missing_shards;

namespace {

std::vector<std::pair<std::int64_t, std::int64_t>> pairs(const std::vector<BlockRange>& ranges) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& r : ranges) out.emplace_back(r.first, r.last);
    return out;
}

using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

}  // namespace

TEST(BackfillPlan, CutsAFreshRangeOnTheShardGrid) {
    EXPECT_EQ(pairs(missing_shards({1, 25000}, 10000, {})), (Pairs{{1, 10000}, {10001, 20000}, {20001, 25000}}));
    // Another start block agrees on the boundaries.
    EXPECT_EQ(pairs(missing_shards({15000, 31000}, 10000, {})), (Pairs{{15000, 20000}, {20001, 30000}, {30001, 31000}}));
    EXPECT_EQ(pairs(missing_shards({7, 7}, 10000, {})), (Pairs{{7, 7}}));
    EXPECT_EQ(pairs(missing_shards({1, 3}, 1, {})), (Pairs{{1, 1}, {2, 2}, {3, 3}}));
}

TEST(BackfillPlan, AddsOnlyWhatNoShardCovers) {
    const std::vector<BlockRange> existing{{1, 10000}, {10001, 20000}};
    EXPECT_TRUE(missing_shards({1, 20000}, 10000, existing).empty());
    EXPECT_TRUE(missing_shards({500, 15000}, 10000, existing).empty());
    // The head moved on: only the new part.
    EXPECT_EQ(pairs(missing_shards({1, 26000}, 10000, existing)), (Pairs{{20001, 26000}}));
    // A later run with a smaller shard size fills gaps around older shards.
    EXPECT_EQ(pairs(missing_shards({1, 30000}, 4000, {{5001, 12000}, {20001, 22000}})),
              (Pairs{{1, 4000}, {4001, 5000}, {12001, 16000}, {16001, 20000}, {22001, 24000}, {24001, 28000}, {28001, 30000}}));
}

TEST(BackfillProgress, BarAndLogLineShowRatesAndEta) {
    wallet::backfill::ProgressSnapshot s;
    s.blocks_total = 200000;
    s.blocks_done = 90400;
    s.blocks_this_run = 60000;
    s.events_this_run = 1230000;
    s.seconds = 20;
    EXPECT_EQ(wallet::backfill::progress_bar(s, 10), "[####......]  45.2%  90,400/200,000 blocks  3,000 blocks/s  61,500 rows/s  ETA 0:37");
    EXPECT_EQ(wallet::backfill::progress_log_line(s),
              "progress: 45.2% (90,400 of 200,000 blocks), 3,000 blocks/s, 61,500 rows/s, ETA 0:37");
    s.blocks_this_run = 0;
    s.events_this_run = 0;
    EXPECT_NE(wallet::backfill::progress_log_line(s).find("ETA ?"), std::string::npos);
    EXPECT_EQ(wallet::backfill::duration_text(3725), "1:02:05");
    EXPECT_EQ(wallet::backfill::with_thousands(-1234567), "-1,234,567");
    EXPECT_EQ(wallet::backfill::with_thousands(999), "999");
}
