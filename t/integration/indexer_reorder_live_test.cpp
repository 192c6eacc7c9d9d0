// wallet-reorder beside the live indexer in head mode (reversible blocks
// stored): runs while the indexer writes and through a fork of reversible
// blocks, never orders a block above the last irreversible one, and the
// table ends equal to a clean index of the canonical chain.
#include <gtest/gtest.h>

#include "indexer_support.hpp"

using namespace indexer_test;

namespace {

CommandResult run_reorder(const PostgresServer& pg, const std::string& database) {
    auto env = pg.env(database);
    env.erase("DB_PASSWORD");
    return run_command({(binary_dir() / "reorder" / "wallet-reorder").string(), "--step-blocks=20"}, env);
}

std::int64_t ordered_through(const PostgresServer& pg, const std::string& database) {
    return std::stoll(pg.query("SELECT ordered_through FROM wallet_reorder", database).at(0));
}

std::int64_t observed_last_irreversible(const PostgresServer& pg, const std::string& database) {
    return std::stoll(pg.query("SELECT last_irreversible FROM node_observation", database).at(0));
}

}  // namespace

TEST(IndexerReorderLive, BesideTheIndexerThroughAForkTheTableEndsAsACleanIndex) {
    PostgresServer pg;
    const std::string database = "live";
    pg.provision(database);
    Simulator sim({"--synthetic", "--seed", "21", "--length", "150", "--block-interval-ms", "0", "--lib-lag", "10"});
    const auto health_port = free_port();
    auto env = indexer_env(pg, database, sim.url(), health_port);
    env["INDEXER_TARGET_IRREVERSIBLE"] = "false";
    env["INDEXER_TRAIL_BLOCKS"] = "0";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    const std::int64_t head = sim_head(sim);
    ASSERT_TRUE(wait_for_checkpoint(pg, database, head)) << indexer.log();

    // Ordered up to the last irreversible block, not above: the 10 newest stay.
    auto run = run_reorder(pg, database);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(ordered_through(pg, database), observed_last_irreversible(pg, database));
    EXPECT_LT(ordered_through(pg, database), head);

    // A fork of 5 reversible blocks, new blocks, and reorders meanwhile.
    sim.control(R"({"fork":5})");
    ASSERT_TRUE(wait_until([&] { return indexer.log().find("fork reconciled") != std::string::npos; }, 30s)) << indexer.log();
    sim.control(R"({"advance":30})");
    run = run_reorder(pg, database);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const std::int64_t target = head + 30;
    ASSERT_TRUE(wait_for_checkpoint(pg, database, target)) << indexer.log();
    run = run_reorder(pg, database);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(indexer.stop(SIGTERM, 5s), 0);
    EXPECT_EQ(ordered_through(pg, database), observed_last_irreversible(pg, database));
    EXPECT_GT(ordered_through(pg, database), head - 10);
    EXPECT_GT(std::stoll(pg.query("SELECT moved_rows FROM wallet_reorder", database).at(0)), 0);

    expect_clean_index(pg, database, sim.url(), 1, target, wallet::OpsForm::AccountHistory);
}
