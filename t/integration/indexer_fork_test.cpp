// Forks of the indexed blocks at depths 1, 2, 5 and INDEXER_MAX_FORK_DEPTH, in
// both INDEXER_TARGET_IRREVERSIBLE modes: the table ends equal to a clean index
// of the canonical chain. A deeper fork halts the indexer loudly (liveness
// 503 with the reason, an error line, exit status 3 on SIGTERM) and leaves
// the checkpoint where it was.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <thread>

#include "indexer_support.hpp"

using namespace indexer_test;

namespace {

constexpr std::int64_t kMaxForkDepth = 25;
constexpr std::int64_t kChainLength = 200;

struct ForkCase {
    std::int64_t depth;
    bool irreversible;
};

void PrintTo(const ForkCase& c, std::ostream* out) {
    *out << (c.irreversible ? "irreversible" : "head") << " mode, depth " << c.depth;
}

std::string case_name(const ::testing::TestParamInfo<ForkCase>& info) {
    return std::string(info.param.irreversible ? "Irreversible" : "Head") + "Depth" + std::to_string(info.param.depth);
}

PostgresServer& shared_postgres() {
    static PostgresServer server;
    return server;
}

// A caught-up indexer on a fresh database; returns its tip.
std::int64_t start_caught_up(bool irreversible, const std::string& database, Simulator& sim,
                             std::unique_ptr<IndexerDaemon>& indexer) {
    PostgresServer& pg = shared_postgres();
    pg.provision(database);
    const auto health_port = free_port();
    auto env = indexer_env(pg, database, sim.url(), health_port);
    env["INDEXER_TARGET_IRREVERSIBLE"] = irreversible ? "true" : "false";
    env["INDEXER_TRAIL_BLOCKS"] = "0";
    env["INDEXER_MAX_FORK_DEPTH"] = std::to_string(kMaxForkDepth);
    indexer = std::make_unique<IndexerDaemon>(env, health_port);
    indexer->start();
    const std::int64_t tip = irreversible ? sim_last_irreversible(sim) : sim_head(sim);
    EXPECT_TRUE(wait_for_checkpoint(pg, database, tip)) << indexer->log();
    EXPECT_TRUE(wait_until([&] { return indexer->log().find("caught up") != std::string::npos; }, 20s));
    return tip;
}

// Replaces the node's blocks so that the indexer's `depth` newest blocks are
// no longer on the chain.
void fork_indexed_blocks(Simulator& sim, std::int64_t tip, std::int64_t depth) {
    sim.control(R"({"fork":)" + std::to_string(depth + (sim_head(sim) - tip)) + "}");
}

class IndexerFork : public ::testing::TestWithParam<ForkCase> {};

TEST_P(IndexerFork, TableEndsEqualToACleanIndexOfTheCanonicalChain) {
    const ForkCase& c = GetParam();
    const std::string database = "fork_" + case_name({c, 0});
    PostgresServer& pg = shared_postgres();
    Simulator sim({"--synthetic", "--seed", std::to_string(10 + c.depth), "--length", std::to_string(kChainLength),
                   "--block-interval-ms", "0", "--lib-lag", "1"});
    std::unique_ptr<IndexerDaemon> indexer;
    const std::int64_t tip = start_caught_up(c.irreversible, database, sim, indexer);
    const auto before = table_rows(pg, database);

    fork_indexed_blocks(sim, tip, c.depth);
    ASSERT_TRUE(wait_until([&] { return indexer->log().find("fork reconciled") != std::string::npos; }, 30s)) << indexer->log();
    EXPECT_NE(indexer->log().find("fork point " + std::to_string(tip - c.depth) + " (depth " + std::to_string(c.depth) + ")"),
              std::string::npos)
        << indexer->log();
    sim.control(R"({"advance":5})");
    const std::int64_t target = tip + 5;
    ASSERT_TRUE(wait_for_checkpoint(pg, database, target)) << indexer->log();
    EXPECT_EQ(indexer->stop(SIGTERM, 5s), 0);
    // The blocks recorded as this decoder's (migration 0006) end at the checkpoint, in one range.
    EXPECT_EQ(pg.query("SELECT count(*), max(last_block), min(decoder_version) FROM indexer_ranges", database),
              std::vector<std::string>{"1\t" + std::to_string(target) + "\t2"});
    // The indexed block the pages read (migration 0014) followed the rewind and the batches after it.
    EXPECT_EQ(pg.query("SELECT indexed_block, wallet_indexed_block_computed() FROM wallet_store_state", database),
              std::vector<std::string>{std::to_string(target) + "\t" + std::to_string(target)});

    const std::string reference = "ref_" + case_name({c, 0});
    index_reference(pg, reference, sim.url(), 1, target,
                    c.irreversible ? wallet::OpsForm::Condenser : wallet::OpsForm::AccountHistory);
    const auto after = table_rows(pg, database);
    expect_same_rows(after, table_rows(pg, reference));
    // The fork did change rows: the test would fail if nothing were re-indexed.
    EXPECT_NE(table_rows(pg, database, tip), std::vector<std::string>(before.begin(), before.end()));
    EXPECT_EQ(table_rows(pg, database, tip - c.depth), table_rows(pg, reference, tip - c.depth));
}

class IndexerDeepFork : public ::testing::TestWithParam<bool> {};

TEST_P(IndexerDeepFork, HaltsLoudly) {
    const bool irreversible = GetParam();
    const std::string database = std::string("deep_") + (irreversible ? "irreversible" : "head");
    PostgresServer& pg = shared_postgres();
    Simulator sim({"--synthetic", "--seed", "77", "--length", std::to_string(kChainLength), "--block-interval-ms", "0",
                   "--lib-lag", "1"});
    std::unique_ptr<IndexerDaemon> indexer;
    const std::int64_t tip = start_caught_up(irreversible, database, sim, indexer);
    const auto before = table_rows(pg, database);

    fork_indexed_blocks(sim, tip, kMaxForkDepth + 1);
    ASSERT_TRUE(wait_until([&] { return indexer->health().status == 503; }, 30s)) << indexer->log();
    auto body = wallet::json::parse(indexer->health().body);
    ASSERT_TRUE(body);
    const std::string reason = json_string_value(json_object_get(body->get(), "reason"));
    EXPECT_NE(reason.find("fork deeper than INDEXER_MAX_FORK_DEPTH=25"), std::string::npos) << reason;
    EXPECT_NE(indexer->log().find("error: fork deeper than INDEXER_MAX_FORK_DEPTH=25"), std::string::npos) << indexer->log();
    EXPECT_NE(indexer->metrics().body.find("wallet_indexer_halted 1\n"), std::string::npos);
    // Halted: no further progress even when the node moves on.
    sim.control(R"({"advance":5})");
    std::this_thread::sleep_for(300ms);  // several poll intervals
    EXPECT_TRUE(indexer->running());
    EXPECT_EQ(checkpoint_of(pg, database), tip);
    EXPECT_EQ(table_rows(pg, database), before);
    const int status = indexer->stop(SIGTERM, 5s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
}

std::string mode_name(const ::testing::TestParamInfo<bool>& mode) { return mode.param ? "Irreversible" : "Head"; }

INSTANTIATE_TEST_SUITE_P(Modes, IndexerDeepFork, ::testing::Bool(), mode_name);

INSTANTIATE_TEST_SUITE_P(Depths, IndexerFork,
                         ::testing::Values(ForkCase{1, true}, ForkCase{2, true}, ForkCase{5, true}, ForkCase{kMaxForkDepth, true},
                                           ForkCase{1, false}, ForkCase{2, false}, ForkCase{5, false},
                                           ForkCase{kMaxForkDepth, false}),
                         case_name);

}  // namespace
