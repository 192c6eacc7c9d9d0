// wallet-backfill --bulk end to end, with real PostgreSQL and simulated
// nodes: killed (SIGKILL) at random moments while loading and inside every
// step of the index build, then re-run, it leaves exactly the store of a
// normal load of the same chain (every row through wallet_operation_events,
// the reward sums, the indexes valid and the same, the triggers enabled),
// with the history stored in account order; it refuses a served store; the
// indexer and a normal run refuse to start while it is unfinished.
//
// Sizes: the synthetic chain at mainnet density, blocks 1..2,000 (about 43,000 events), shards of
// 250 blocks, batches of 50.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <random>

#include "backfill_support.hpp"
#include "support/wide_column.hpp"
#include "wallet/pg.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kHead = 2001;
constexpr std::int64_t kLastBlock = kHead - 1;  // the simulator's last irreversible block
// The test-only pause inside every build step's transaction (bulk.hpp): a
// kill on a step's "starting" line lands inside that step's transaction.
constexpr const char* kBuildPause = "1000";

std::map<std::string, std::string> backfill_env(const PostgresServer& pg, const std::string& urls,
                                                const std::string& database = "wallet",
                                                std::map<std::string, std::string> extra = {}) {
    auto env = pg.env(database);
    env.erase("DB_PASSWORD");  // the daemons work as wallet_writer, never as the superuser
    for (auto& [name, value] : std::map<std::string, std::string>{{"BACKFILL_RPC_URLS", urls},
                                                                  {"BACKFILL_RPC_TIMEOUT_MS", "2000"},
                                                                  {"BACKFILL_START_BLOCK", "1"},
                                                                  {"BACKFILL_END_BLOCK", "0"},
                                                                  {"BACKFILL_SHARD_SIZE", "250"},
                                                                  {"BACKFILL_BATCH_SIZE", "50"},
                                                                  {"BACKFILL_WORKERS", "4"}}) {
        env[name] = value;
    }
    for (auto& [name, value] : extra) env[name] = value;
    return env;
}

std::vector<std::string> backfill_argv(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{backfill_binary().string(), "--heartbeat-timeout-ms=1500", "--progress=none",
                                  "--build-memory=64MB"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
}

// What must equal a normal load's, account ids aside (they are given in
// the order workers meet the names).
std::vector<std::string> reward_sums(const PostgresServer& pg, const std::string& database) {
    auto rows = pg.query("SELECT a.name, d.day, d.op_type, d.event_count, d.vesting_sum FROM wallet_reward_daily d"
                         " JOIN wallet_accounts a ON a.id = d.account_id ORDER BY 1, 2, 3",
                         database);
    for (auto& row : pg.query("SELECT a.name, d.day, d.op_type, d.symbol, d.amount_sum FROM wallet_reward_liquid_daily d"
                              " JOIN wallet_accounts a ON a.id = d.account_id ORDER BY 1, 2, 3, 4",
                              database)) {
        rows.push_back("liquid " + row);
    }
    return rows;
}

std::vector<std::string> event_indexes(const PostgresServer& pg, const std::string& database) {
    return pg.query("SELECT c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid, i.indisready FROM pg_index i"
                    " JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'wallet_events'::regclass ORDER BY 1",
                    database);
}

std::vector<std::string> event_triggers(const PostgresServer& pg, const std::string& database) {
    return pg.query("SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'wallet_events'::regclass"
                    " AND NOT tgisinternal ORDER BY 1",
                    database);
}

std::string bulk_state(const PostgresServer& pg) {
    const auto rows = pg.query("SELECT state || ' ' || build_step FROM wallet_bulk_load");
    return rows.empty() ? "none" : rows.at(0);
}

std::int64_t stored_rows(const PostgresServer& pg) { return std::stoll(pg.query("SELECT count(*) FROM wallet_events").at(0)); }

bool log_has(const Process& process, const std::string& text) { return process.log().find(text) != std::string::npos; }

}  // namespace

TEST(BackfillBulk, KilledWhileLoadingAndInEveryBuildStepThenRerunGivesTheStoreOfANormalLoad) {
    PostgresServer pg;
    pg.provision();
    pg.provision("reference");
    NodeSimulator sim_a(chain_args(kHead));
    NodeSimulator sim_b(chain_args(kHead));
    const std::string urls = sim_a.url() + "," + sim_b.url();
    TempDir dir("wallet-backfill-bulk");

    // The reference: a normal load of the same chain.
    const auto normal = run_command(backfill_argv(), backfill_env(pg, urls, "reference"), 180s);
    ASSERT_EQ(normal.exit_code, 0) << normal.output;
    const std::int64_t total = std::stoll(pg.query("SELECT count(*) FROM wallet_events", "reference").at(0));
    ASSERT_GT(total, 10000);

    // Loading: kills at random shares of the rows still missing (not of
    // wall time, which depends on the machine).
    const auto env = backfill_env(pg, urls, "wallet", {{"WALLET_BACKFILL_TEST_BUILD_PAUSE_MS", kBuildPause}});
    std::mt19937 random(20261125);
    std::uniform_real_distribution<double> share_of_missing(0.05, 0.3);
    int killed_while_loading = 0;
    for (int round = 0; round < 4; ++round) {
        const std::int64_t before = stored_rows(pg);
        const auto target =
            before + std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(total - before) * share_of_missing(random)));
        Process loader = Process::start(backfill_argv({"--bulk"}),
                                        ProcessOptions{env, {}, dir.path() / ("load-" + std::to_string(round) + ".log"), {}, false});
        wait_until([&] { return !loader.running() || stored_rows(pg) >= target; }, 60s, 5ms);
        if (loader.running() && !log_has(loader, "build step")) ++killed_while_loading;
        loader.stop(SIGKILL);
    }
    EXPECT_GE(killed_while_loading, 3);
    EXPECT_EQ(bulk_state(pg), "loading 0");
    // Nothing was stored twice: every batch's rows commit with its shard's progress.
    EXPECT_EQ(pg.query("SELECT sum(rows_written) FROM backfill_shards").at(0), std::to_string(stored_rows(pg)));
    EXPECT_TRUE(event_indexes(pg, "wallet").empty());
    const auto plan = run_command(backfill_argv({"--dry-run"}), env, 60s);
    EXPECT_NE(plan.output.find("bulk load:   state loading (blocks 1.." + std::to_string(kLastBlock) + "), 0 build steps done"),
              std::string::npos)
        << plan.output;

    // Meanwhile the indexer and a normal run refuse to start.
    {
        Process indexer = start_indexer(pg, sim_a.url(), dir.path() / "indexer-refused.log");
        const auto status = indexer.wait_exit(30s);
        ASSERT_TRUE(status.has_value()) << indexer.log();
        EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << *status << indexer.log();
        EXPECT_TRUE(log_has(indexer, "refusing to start: a bulk load")) << indexer.log();
        const auto refused = run_command(backfill_argv(), backfill_env(pg, urls), 60s);
        EXPECT_EQ(refused.exit_code, 2) << refused.output;
        EXPECT_NE(refused.output.find("refusing to start: a bulk load"), std::string::npos) << refused.output;
        EXPECT_EQ(pg.query("SELECT count(*) FROM indexer_checkpoint").at(0), "0");
    }

    // Building: a kill inside each step's transaction (on its "starting"
    // line; the step is then in its statement or in the test pause before
    // the commit). The step rolls back; the re-run does it again. Steps 3
    // to 6 run at once (each in its own session) and commit in order: a kill
    // on the line of any of them finds none of them committed (they start
    // together, and each pauses before its commit).
    const int steps = 7;  // keyset index, CLUSTER, BRIN, type keyset, day sums, liquid sums, statistics
    const auto committed_before = [](int step) { return step >= 3 && step <= 6 ? 2 : step - 1; };
    for (int step = 1; step <= steps; ++step) {
        Process builder = Process::start(backfill_argv({"--bulk"}),
                                         ProcessOptions{env, {}, dir.path() / ("build-" + std::to_string(step) + ".log"), {}, false});
        const std::string line = "build step " + std::to_string(step) + "/" + std::to_string(steps) + " (";
        ASSERT_TRUE(wait_until([&] { return !builder.running() || log_has(builder, line); }, 120s, 5ms)) << builder.log();
        ASSERT_TRUE(builder.running()) << builder.log();
        builder.stop(SIGKILL);
        EXPECT_EQ(bulk_state(pg), "building " + std::to_string(committed_before(step))) << builder.log();
    }
    const auto finished = run_command(backfill_argv({"--bulk"}), env, 180s);
    ASSERT_EQ(finished.exit_code, 0) << finished.output;
    EXPECT_NE(finished.output.find("the first " + std::to_string(steps - 1) + " done already"), std::string::npos)
        << finished.output;
    EXPECT_EQ(bulk_state(pg), "done " + std::to_string(steps));

    // The store of the normal load.
    const auto digest = table_digest(pg);
    const auto reference = table_digest(pg, "reference");
    EXPECT_TRUE(digest == reference) << "first difference: " << first_difference(reference, digest);
    EXPECT_EQ(stored_rows(pg), total);
    EXPECT_EQ(reward_sums(pg, "wallet"), reward_sums(pg, "reference"));
    EXPECT_GT(reward_sums(pg, "wallet").size(), 100u);
    // Both loads wrote `wide` (migration 0015) as the op types' class.
    for (const std::string database : {"wallet", "reference"}) {
        const std::string counts = store_test::wide_column_counts(pg, database);
        EXPECT_TRUE(store_test::wide_column_is_the_op_types_class(counts)) << database << ": " << counts;
    }
    const auto indexes = event_indexes(pg, "wallet");
    EXPECT_EQ(indexes, event_indexes(pg, "reference"));
    ASSERT_EQ(indexes.size(), 3u);
    for (const auto& index : indexes) EXPECT_EQ(index.substr(index.size() - 4), "\tt\tt") << index;
    EXPECT_EQ(event_triggers(pg, "wallet"), event_triggers(pg, "reference"));
    EXPECT_EQ(pg.query("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'wallet_events'::regclass AND tgenabled <> 'O'").at(0), "0");
    EXPECT_EQ(pg.query("SELECT count(*) FROM backfill_shards WHERE state <> 'done'").at(0), "0");
    EXPECT_EQ(pg.query("SELECT sum(rows_written) FROM backfill_shards").at(0), std::to_string(total));
    // The history is stored in account order.
    EXPECT_EQ(pg.query("SELECT count(*) FROM (SELECT account_id < lag(account_id) OVER (ORDER BY ctid) AS back"
                       " FROM wallet_events) t WHERE back")
                  .at(0),
              "0");
    // A further run has nothing to do; the indexer now starts and writes.
    const auto again = run_command(backfill_argv({"--bulk"}), env, 60s);
    EXPECT_EQ(again.exit_code, 0) << again.output;
    EXPECT_NE(again.output.find("done already, nothing to do"), std::string::npos) << again.output;
    Process indexer = start_indexer(pg, sim_a.url(), dir.path() / "indexer.log");
    EXPECT_TRUE(wait_until([&] { return pg.query("SELECT count(*) FROM indexer_checkpoint").at(0) == "1"; }, 60s))
        << indexer.log();
    indexer.stop();
}

TEST(BackfillBulk, RefusesAStoreWithAReaderConnected) {
    PostgresServer pg;
    pg.provision();
    NodeSimulator sim(chain_args(kHead));
    auto reader = wallet::pg::connect(pg.url("wallet_api_reader", kReaderPassword, "wallet"));
    ASSERT_TRUE(reader) << reader.error();
    const auto refused = run_command(backfill_argv({"--bulk"}), backfill_env(pg, sim.url()), 60s);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("session(s) of wallet_api_reader are connected"), std::string::npos) << refused.output;
    // Nothing changed.
    EXPECT_EQ(bulk_state(pg), "none");
    EXPECT_EQ(event_indexes(pg, "wallet").size(), 3u);
    EXPECT_EQ(stored_rows(pg), 0);
}

TEST(BackfillBulk, RefusesAStoreWithAnIndexerOrRowsOfANormalLoad) {
    PostgresServer pg;
    pg.provision();
    pg.provision("normal");
    NodeSimulator sim(chain_args(kHead));
    TempDir dir("wallet-backfill-bulk-refusals");
    {
        // A running indexer holds the writers' lock; once stopped, its checkpoint stays.
        Process indexer = start_indexer(pg, sim.url(), dir.path() / "indexer.log");
        ASSERT_TRUE(wait_until([&] { return pg.query("SELECT count(*) FROM indexer_checkpoint").at(0) == "1"; }, 60s))
            << indexer.log();
        const auto beside = run_command(backfill_argv({"--bulk"}), backfill_env(pg, sim.url()), 60s);
        EXPECT_EQ(beside.exit_code, 2) << beside.output;
        EXPECT_NE(beside.output.find("refusing --bulk: a writer is connected"), std::string::npos) << beside.output;
        indexer.stop();
    }
    const auto after = run_command(backfill_argv({"--bulk"}), backfill_env(pg, sim.url()), 60s);
    EXPECT_EQ(after.exit_code, 2) << after.output;
    EXPECT_NE(after.output.find("the indexer has a checkpoint"), std::string::npos) << after.output;
    EXPECT_EQ(bulk_state(pg), "none");
    EXPECT_EQ(event_indexes(pg, "wallet").size(), 3u);

    // Rows of a normal run.
    const auto normal = run_command(backfill_argv(), backfill_env(pg, sim.url(), "normal", {{"BACKFILL_END_BLOCK", "300"}}), 60s);
    ASSERT_EQ(normal.exit_code, 0) << normal.output;
    const auto refused = run_command(backfill_argv({"--bulk"}), backfill_env(pg, sim.url(), "normal"), 60s);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("wallet_events holds rows that no bulk load wrote"), std::string::npos) << refused.output;
    EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_bulk_load", "normal").at(0), "0");
}
