// SIGKILL at 20 random moments (10 in the sanitizer build, whose restarts
// cost seconds each) while indexing a synthetic chain: after the restarts
// the table equals a clean one-pass index of the same chain (same
// rows, no duplicates, no gaps) and the checkpoint is the last block.
#include <cstdlib>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "indexer_support.hpp"

using namespace indexer_test;

TEST(IndexerCrash, KillsAtRandomMomentsLeaveTheTableOfACleanIndex) {
    constexpr std::int64_t kChainLength = 3000;
    constexpr std::int64_t kTarget = kChainLength - 1 - 2;  // last irreversible minus the trailing blocks
    const int kKills = harness::sanitized_build() ? 10 : 20;
    // WALLET_TEST_SEED replays a run; the seed is printed either way.
    const char* seed_text = std::getenv("WALLET_TEST_SEED");
    const std::uint64_t seed = seed_text != nullptr ? std::strtoull(seed_text, nullptr, 10) : std::random_device{}();
    std::mt19937_64 random(seed);
    std::cout << "crash moments from seed " << seed << std::endl;

    PostgresServer pg;
    pg.provision("crashed");
    Simulator sim({"--synthetic", "--seed", "31", "--length", std::to_string(kChainLength), "--block-interval-ms", "0"});
    const auto health_port = free_port();
    auto env = indexer_env(pg, "crashed", sim.url(), health_port);
    env["INDEXER_MAX_BATCH_BLOCKS"] = "25";  // many commits: kills land before, inside and after them
    IndexerDaemon indexer(env, health_port);

    // A kill moment is measured from the run's first commit, not from the
    // process start: however slow the build (sanitizers) or the machine, every
    // run does real work and is then killed before, inside or after a commit.
    std::vector<std::int64_t> checkpoints;
    std::uniform_int_distribution<int> moment_ms(0, 150);
    std::int64_t previous = 0;
    for (int kill = 0; kill < kKills; ++kill) {
        indexer.start();
        ASSERT_TRUE(wait_until([&] {
            const auto now = checkpoint_of(pg, "crashed");
            return now > previous || now >= kTarget;
        }, 120s, 5ms)) << indexer.log();
        std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(random)));
        indexer.stop(SIGKILL);
        previous = checkpoint_of(pg, "crashed");
        checkpoints.push_back(previous);
    }
    std::string progress;
    for (auto c : checkpoints) progress += std::to_string(c) + " ";
    std::cout << "checkpoints after each kill: " << progress << std::endl;
    // The kills interrupted real work: some progress, not all of it.
    EXPECT_GT(checkpoints.back(), 0);
    EXPECT_LT(checkpoints.front(), kTarget);

    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "crashed", kTarget, 120s)) << indexer.log();
    EXPECT_EQ(indexer.stop(SIGTERM, 5s), 0);
    EXPECT_EQ(checkpoint_of(pg, "crashed"), kTarget);

    expect_clean_index(pg, "crashed", sim.url(), 1, kTarget, wallet::OpsForm::Condenser);
    EXPECT_EQ(pg.query("SELECT count(DISTINCT block_num) FROM wallet_operation_events", "crashed"),
              pg.query("SELECT count(DISTINCT block_num) FROM wallet_operation_events", "crashed_reference"));
    // Counted, not read again: expect_clean_index compared every row already.
    EXPECT_GT(std::stoll(pg.query("SELECT count(*) FROM wallet_operation_events", "crashed").at(0)), 50000);
}
