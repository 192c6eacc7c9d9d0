// The indexer behind the proxies of public API nodes (the simulator's
// --proxy personalities), with the shipped defaults: it catches up from a
// 10,000-block gap behind each (any gap over 99 blocks stalled it behind Drone
// before) and stores the table a direct node gives; a node whose history lags
// answers [] for blocks it has not indexed and not one of them is stored
// empty; rate-limited requests wait for Retry-After; a fork while Drone still
// caches the old fork's operations is not mixed in.
#include <gtest/gtest.h>

#include "backfill_support.hpp"
#include "indexer_support.hpp"

using namespace indexer_test;
using namespace std::chrono_literals;

namespace {

// The indexer's target is 10,000 (2,000 in the sanitizer build):
// INDEXER_TRAIL_BLOCKS (2) below the last irreversible block (head - 1).
std::uint32_t gap_head() { return harness::sanitized_build() ? 2003 : 10003; }

std::vector<std::string> chain(std::uint32_t head, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"--synthetic",          "--seed",          "21", "--length", std::to_string(head),
                                  "--block-interval-ms", "0", "--pathological-every", "0"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// The long gap's chain: every 100th block of mainnet density, the others with
// their producer_reward alone (a light block still proves the node has it),
// so that the run is about ranges, batches and refusals, not decoding.
std::vector<std::string> sparse_chain(std::uint32_t head, std::vector<std::string> more = {}) {
    more.insert(more.begin(), {"--full-block-every", "100"});
    return chain(head, std::move(more));
}

std::int64_t status_number(const std::string& status, const std::string& key) {
    const auto at = status.find("\"" + key + "\":");
    if (at == std::string::npos) return -1;
    return std::stoll(status.substr(at + key.size() + 3));
}

}  // namespace

TEST(IndexerProxies, CatchesUpAGapOfThousandsOfBlocksBehindEachPersonality) {
    PostgresServer pg;
    Simulator direct(sparse_chain(gap_head()));
    const std::int64_t target = gap_head() - 1 - 2;
    index_reference(pg, "reference", direct.url(), 1, target, wallet::OpsForm::Condenser);
    const auto reference = backfill_test::table_digest(pg, "reference");
    ASSERT_GT(reference.size(), static_cast<std::size_t>(target - 1));
    for (const std::string proxy : {"none", "drone", "jussi", "caddy"}) {
        SCOPED_TRACE(proxy);
        Simulator sim(sparse_chain(gap_head(), {"--proxy", proxy}));
        const std::uint16_t health_port = free_port();
        pg.provision(proxy);
        IndexerDaemon indexer(indexer_env(pg, proxy, sim.url(), health_port), health_port, "wallet-indexer-" + proxy);
        indexer.start();
        ASSERT_TRUE(wait_for_checkpoint(pg, proxy, target, 180s)) << indexer.log() << sim.status();
        indexer.stop();
        const auto digest = backfill_test::table_digest(pg, proxy);
        EXPECT_TRUE(digest == reference) << backfill_test::first_difference(reference, digest);
        const std::string status = sim.status();
        // jussi refused the default batch of 100 once per connection (the
        // indexer's and its read-ahead's); then they kept to 50.
        if (proxy == "jussi") {
            EXPECT_GE(status_number(status, "batches_refused"), 1) << status;
            EXPECT_LE(status_number(status, "batches_refused"), 2) << status;
        }
        EXPECT_EQ(status_number(status, "rate_limited_before_retry_after"), 0) << status;
    }
}

TEST(IndexerProxies, EmptyAnswersOfALaggingHistoryAreNeverStored) {
    PostgresServer pg;
    pg.provision("wallet");
    // Drone in front of a node whose HAfAH is 60 blocks behind its hived.
    Simulator sim(chain(2001, {"--proxy", "drone", "--history-lag", "60"}));
    const std::uint16_t health_port = free_port();
    IndexerDaemon indexer(indexer_env(pg, "wallet", sim.url(), health_port), health_port);
    indexer.start();
    ASSERT_TRUE(wait_until([&] { return indexer.log().find("not indexed there yet") != std::string::npos; }, 60s))
        << indexer.log();
    // Blocks 1942.. are answered [] although every block carries a producer_reward.
    EXPECT_LE(checkpoint_of(pg, "wallet"), 1941);
    EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_operation_events WHERE block_num > 1941", "wallet").at(0), "0");
    sim.control(R"({"history_lag": 0})");
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 1998, 60s)) << indexer.log();
    indexer.stop();
    Simulator direct(chain(2001));
    index_reference(pg, "reference", direct.url(), 1, 1998, wallet::OpsForm::Condenser);
    // Rows per block (the blocks once answered [] were read in the
    // account_history form, whose payload text differs from the condenser's).
    auto counts = [&](const std::string& database) {
        return pg.query("SELECT block_num, count(*) FROM wallet_operation_events GROUP BY 1 ORDER BY 1", database);
    };
    const auto reference = counts("reference");
    const auto stored = counts("wallet");
    ASSERT_EQ(reference.size(), 1998u);
    EXPECT_TRUE(stored == reference) << backfill_test::first_difference(reference, stored);
}

TEST(IndexerProxies, RateLimitedRequestsWaitForRetryAfter) {
    PostgresServer pg;
    pg.provision("wallet");
    // One request per 2 s window per address: the catch-up (about ten
    // requests: heads, block ids and operations of three batches) needs many
    // windows, however fast the indexer is (an ASan build sends fewer than 4 a second).
    Simulator sim(chain(301, {"--proxy", "caddy", "--rate-limit", "1", "--rate-window-ms", "2000"}));
    const std::uint16_t health_port = free_port();
    IndexerDaemon indexer(indexer_env(pg, "wallet", sim.url(), health_port), health_port);
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 298, 300s)) << indexer.log() << sim.status();
    indexer.stop();
    const std::string status = sim.status();
    EXPECT_GE(status_number(status, "rate_limited"), 1) << status;
    // The indexer's two connections share the address and the Retry-After:
    // only a request the other connection had already sent when the 429 came
    // may arrive early (at most one such race per 429 seen), never a retry.
    EXPECT_LE(status_number(status, "rate_limited_before_retry_after"), 2) << status;
}

TEST(IndexerProxies, AForkWhileDroneCachesTheOldForksOperationsIsNotMixedIn) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim(chain(400, {"--proxy", "drone", "--lib-lag", "30"}));
    const std::uint16_t health_port = free_port();
    auto env = indexer_env(pg, "wallet", sim.url(), health_port);
    env["INDEXER_TARGET_IRREVERSIBLE"] = "false";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 398, 60s)) << indexer.log();
    // Drone now holds blocks 389..398's operations (1 s) and headers (9 s).
    sim.control(R"({"fork": 12, "advance": 2})");
    ASSERT_TRUE(wait_until([&] { return indexer.log().find("fork reconciled") != std::string::npos; }, 60s)) << indexer.log();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 400, 60s)) << indexer.log();
    indexer.stop();
    // The table is the new chain's, as a direct reading of it gives.
    Simulator direct(chain(400, {"--lib-lag", "30"}));
    direct.control(R"({"fork": 12, "advance": 2})");
    index_reference(pg, "reference", direct.url(), 1, 400, wallet::OpsForm::AccountHistory);
    const auto reference = backfill_test::table_digest(pg, "reference");
    const auto digest = backfill_test::table_digest(pg, "wallet");
    EXPECT_TRUE(digest == reference) << backfill_test::first_difference(reference, digest);
}
