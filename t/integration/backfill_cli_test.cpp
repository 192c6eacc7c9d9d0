// wallet-backfill as an operator meets it: --help, --version, bad settings,
// the dry-run plan, progress as a live bar on a terminal and as log lines
// otherwise, the summary, and the exit status (0 only when every shard of
// the range is done).
#include <gtest/gtest.h>

#include "backfill_support.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kHead = 3001;

std::map<std::string, std::string> env_for(const PostgresServer& pg, const std::string& urls,
                                           std::map<std::string, std::string> extra = {}) {
    std::map<std::string, std::string> env{{"BACKFILL_RPC_URLS", urls},   {"BACKFILL_RPC_TIMEOUT_MS", "2000"},
                                           {"BACKFILL_SHARD_SIZE", "250"}, {"BACKFILL_BATCH_SIZE", "50"},
                                           {"BACKFILL_WORKERS", "4"}};
    for (auto& [name, value] : extra) env[name] = value;
    return daemon_env(pg, env);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(BackfillCli, HelpVersionAndBadInput) {
    auto help = run_command({backfill_binary().string(), "--help"});
    EXPECT_EQ(help.exit_code, 0);
    for (const char* part : {"--dry-run", "BACKFILL_RPC_URLS", "BACKFILL_WORKERS", "BACKFILL_SHARD_SIZE", "Exit status"}) {
        EXPECT_TRUE(contains(help.output, part)) << part << "\n" << help.output;
    }
    auto version = run_command({backfill_binary().string(), "--version"});
    EXPECT_EQ(version.exit_code, 0);
    EXPECT_EQ(version.output, std::string("wallet-backfill ") + WALLET_VERSION + "\n");

    EXPECT_EQ(run_command({backfill_binary().string(), "--bogus"}).exit_code, 2);
    EXPECT_EQ(run_command({backfill_binary().string(), "--write-method=fast"}).exit_code, 2);
    PostgresServer pg;
    auto bad = run_command({backfill_binary().string()}, env_for(pg, "http://127.0.0.1:1/", {{"BACKFILL_WORKERS", "0"}}));
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_TRUE(contains(bad.output, "BACKFILL_WORKERS")) << bad.output;
    auto no_password = run_command({backfill_binary().string()}, {{"BACKFILL_RPC_URLS", "http://127.0.0.1:1/"}});
    EXPECT_EQ(no_password.exit_code, 2);
}

TEST(BackfillCli, DryRunPrintsThePlanAndWritesNothing) {
    PostgresServer pg;
    pg.provision();
    NodeSimulator sim(chain_args(kHead));
    auto plan = run_command({backfill_binary().string(), "--dry-run"}, env_for(pg, sim.url()));
    ASSERT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_TRUE(contains(plan.output, "dry run")) << plan.output;
    EXPECT_TRUE(contains(plan.output, "blocks 1..3,000 (3,000 blocks; BACKFILL_END_BLOCK=0")) << plan.output;
    EXPECT_TRUE(contains(plan.output, "12 to add")) << plan.output;
    EXPECT_TRUE(contains(plan.output, "to load:     3,000 blocks")) << plan.output;
    EXPECT_TRUE(contains(plan.output, "workers:     4, batches of 50 blocks")) << plan.output;
    EXPECT_FALSE(contains(plan.output, kWriterPassword)) << plan.output;
    EXPECT_EQ(pg.query("SELECT count(*) FROM backfill_shards").at(0), "0");
    EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_operation_events").at(0), "0");

    // After a load of part of the range, the plan shows what is left.
    auto part = run_command({backfill_binary().string()}, env_for(pg, sim.url(), {{"BACKFILL_END_BLOCK", "1000"}}));
    ASSERT_EQ(part.exit_code, 0) << part.output;
    plan = run_command({backfill_binary().string(), "--dry-run"}, env_for(pg, sim.url()));
    EXPECT_TRUE(contains(plan.output, "4 in the table (4 done, 0 running, 0 pending; 1,000 blocks stored), 8 to add")) << plan.output;
    EXPECT_TRUE(contains(plan.output, "to load:     2,000 blocks")) << plan.output;
}

TEST(BackfillCli, WithoutAWorkingNodeItFailsAndARerunLoadsWhatIsMissing) {
    PostgresServer pg;
    pg.provision();
    const std::string dead = "http://127.0.0.1:" + std::to_string(free_port()) + "/";
    auto failed = run_command({backfill_binary().string(), "--give-up-after-ms=1500", "--progress=none"},
                              env_for(pg, dead, {{"BACKFILL_END_BLOCK", "1200"}}));
    EXPECT_EQ(failed.exit_code, 1) << failed.output;
    EXPECT_TRUE(contains(failed.output, "NOT complete")) << failed.output;
    EXPECT_TRUE(contains(failed.output, "no node of the pool answered")) << failed.output;
    // Claimed shards were given back, not left running.
    EXPECT_EQ(pg.query("SELECT count(*) FROM backfill_shards WHERE state = 'running'").at(0), "0");

    NodeSimulator sim(chain_args(kHead));
    auto done = run_command({backfill_binary().string(), "--progress-interval-ms=100"},
                            env_for(pg, dead + "," + sim.url(), {{"BACKFILL_END_BLOCK", "1200"}}));
    EXPECT_EQ(done.exit_code, 0) << done.output;
    EXPECT_TRUE(contains(done.output, "summary: blocks 1..1200: complete (5 of 5 shards done)")) << done.output;
    EXPECT_TRUE(contains(done.output, "this run stored 1,200 blocks")) << done.output;
    EXPECT_TRUE(contains(done.output, "info: progress: ")) << done.output;  // log lines when not on a terminal
    EXPECT_EQ(pg.query("SELECT count(*) FROM backfill_shards WHERE state <> 'done'").at(0), "0");

    // A finished range is never loaded again.
    auto again = run_command({backfill_binary().string()}, env_for(pg, sim.url(), {{"BACKFILL_END_BLOCK", "1200"}}));
    EXPECT_EQ(again.exit_code, 0) << again.output;
    EXPECT_TRUE(contains(again.output, "this run stored 0 blocks")) << again.output;
}

TEST(BackfillCli, OnATerminalProgressIsALiveBar) {
    PostgresServer pg;
    pg.provision();
    NodeSimulator sim(chain_args(kHead));
    // script(1) gives the loader a terminal.
    auto env = env_for(pg, sim.url(), {{"BACKFILL_END_BLOCK", "2000"}, {"BACKFILL_WORKERS", "1"}});
    auto shown = run_command({"script", "-qefc", backfill_binary().string(), "/dev/null"}, env);
    EXPECT_EQ(shown.exit_code, 0) << shown.output;
    EXPECT_TRUE(contains(shown.output, "\r\x1b[2K[")) << shown.output;
    EXPECT_TRUE(contains(shown.output, "] 100.0%  2,000/2,000 blocks")) << shown.output;
    EXPECT_TRUE(contains(shown.output, "blocks/s")) << shown.output;
    EXPECT_TRUE(contains(shown.output, "ETA")) << shown.output;
    EXPECT_FALSE(contains(shown.output, "info: progress:")) << shown.output;
}
