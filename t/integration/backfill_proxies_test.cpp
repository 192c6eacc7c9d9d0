// wallet-backfill with its shipped defaults over a mixed pool of public-node
// personalities: Drone (batches up to 100), jussi (up to 50) and a node that
// lags (its head 3,000 blocks behind, its history another 2,000 behind that,
// answering [] for blocks it has not indexed). The table equals a clean load
// from a bare node (--proxy none), so not one block was stored empty that is
// not, and no range was asked of a node above its own irreversible block.
#include <gtest/gtest.h>

#include "backfill_support.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;

namespace {

// Blocks 1..head()-1 (each node's last irreversible block is its head - 1):
// 100,000 blocks, 10,000 in the sanitizer build.
std::uint32_t head() { return harness::sanitized_build() ? 10001 : 100001; }

// Every 100th block of mainnet density, the others with their producer_reward
// alone (a light block still proves the node has it): the run is about
// ranges, batches, refusals and lags over a long chain, not decoding.
std::vector<std::string> sparse_chain(std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--pathological-every", "0", "--full-block-every", "100"});
    return chain_args(head(), extra);
}

std::map<std::string, std::string> backfill_env(const PostgresServer& pg, const std::string& urls) {
    return daemon_env(pg, {{"BACKFILL_RPC_URLS", urls}, {"BACKFILL_START_BLOCK", "1"}, {"BACKFILL_END_BLOCK", "0"}});
}

std::int64_t status_number(const std::string& status, const std::string& key) {
    const auto at = status.find("\"" + key + "\":");
    if (at == std::string::npos) return -1;
    return std::stoll(status.substr(at + key.size() + 3));
}

}  // namespace

TEST(BackfillProxies, AMixedPoolWithALaggingNodeGivesTheTableOfACleanLoad) {
    PostgresServer pg;
    pg.provision("clean");
    pg.provision("mixed");
    const std::vector<std::string> argv{backfill_binary().string(), "--progress-interval-ms=5000"};
    {
        NodeSimulator bare(sparse_chain({"--proxy", "none"}));
        auto env = backfill_env(pg, bare.url());
        env["DB_NAME"] = "clean";
        const auto result = run_command(argv, env, 600s);
        ASSERT_EQ(result.exit_code, 0) << result.output;
    }
    NodeSimulator drone(sparse_chain({"--proxy", "drone"}));
    NodeSimulator jussi(sparse_chain({"--proxy", "jussi"}));
    NodeSimulator lagging(sparse_chain({"--head-offset", "-3000", "--history-lag", "2000"}));
    auto env = backfill_env(pg, lagging.url() + "," + drone.url() + "," + jussi.url());
    env["DB_NAME"] = "mixed";
    const auto result = run_command(argv, env, 600s);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("summary: blocks 1.." + std::to_string(head() - 1) + ": complete"), std::string::npos)
        << result.output;

    const auto clean = table_digest(pg, "clean");
    ASSERT_GT(clean.size(), static_cast<std::size_t>(head() - 2));
    const auto mixed = table_digest(pg, "mixed");
    EXPECT_TRUE(mixed == clean) << "first difference: " << first_difference(clean, mixed);
    // Every personality served, and the batch limits were learned from refusals.
    for (const NodeSimulator* node : {&drone, &jussi, &lagging}) {
        EXPECT_GT(status_number(node->status(), "rpc_requests"), 0) << node->status();
    }
    EXPECT_GE(status_number(drone.status(), "batches_refused"), 0);
    EXPECT_GE(status_number(jussi.status(), "batches_refused"), 1) << jussi.status();
}
