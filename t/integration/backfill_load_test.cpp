// wallet-backfill end to end, with real PostgreSQL and simulated nodes: the
// table it builds equals the indexer's for the same chain (compared row by
// row through per-block digests of every column), with a faulty node in the
// pool, after SIGKILLs at random moments, with two loaders at once, and
// beside the tailing indexer.
//
// Sizes: a synthetic chain at mainnet density, blocks 1..kLastBlock
// (3,000 blocks: 12 shards of 250 blocks for 6 workers, batches of 50, enough
// for kills, takeovers and two loaders to meet; 2,000 blocks, 8 shards, in
// the sanitizer build, where every block costs three times as much); the full
// 200,000 blocks are the benchmark's (t/bench/backfill.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <random>
#include <sstream>
#include <thread>

#include "backfill_support.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;

namespace {

const std::uint32_t kHead = harness::sanitized_build() ? 2001 : 3001;
const std::int64_t kLastBlock = kHead - 1;  // the simulator's last irreversible block

std::map<std::string, std::string> backfill_env(const PostgresServer& pg, const std::string& urls,
                                                std::map<std::string, std::string> extra = {}) {
    std::map<std::string, std::string> env{{"BACKFILL_RPC_URLS", urls},      {"BACKFILL_RPC_TIMEOUT_MS", "2000"},
                                           {"BACKFILL_START_BLOCK", "1"},    {"BACKFILL_END_BLOCK", "0"},
                                           {"BACKFILL_SHARD_SIZE", "250"},   {"BACKFILL_BATCH_SIZE", "50"},
                                           {"BACKFILL_WORKERS", "6"}};
    for (auto& [name, value] : extra) env[name] = value;
    return daemon_env(pg, env);
}

std::vector<std::string> backfill_argv(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{backfill_binary().string(), "--heartbeat-timeout-ms=1500", "--progress-interval-ms=2000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
}

bool indexed_through(const PostgresServer& pg, std::int64_t block) {
    const auto rows = pg.query("SELECT block_num FROM indexer_checkpoint");
    return !rows.empty() && std::stoll(rows[0]) >= block;
}

// Size and modification time of a file: changes when it is rebuilt.
std::string binary_stamp(const fs::path& path) {
    const auto time = fs::last_write_time(path).time_since_epoch().count();
    return std::to_string(fs::file_size(path)) + "." + std::to_string(time);
}

// The indexer's table for the chain, built once for every test.
class BackfillLoad : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // ctest runs every test in its own process: the reference is kept in
        // the build tree, under a name that changes with the binaries making it.
        const fs::path cache = binary_dir() / "t" / ("backfill-reference-" + std::to_string(kHead) + "-" +
                                                     binary_stamp(indexer_binary()) + "-" + binary_stamp(NodeSimulator::binary()) + ".txt");
        if (fs::exists(cache)) {
            std::istringstream lines(read_file(cache));
            reference_ = new std::vector<std::string>();
            std::getline(lines, reference_rows_);
            for (std::string line; std::getline(lines, line);) reference_->push_back(line);
            return;
        }
        PostgresServer pg;
        pg.provision();
        NodeSimulator sim(chain_args(kHead));
        TempDir dir("wallet-indexer-ref");
        Process indexer = start_indexer(pg, sim.url(), dir.path() / "indexer.log");
        ASSERT_TRUE(wait_until([&] { return indexed_through(pg, kLastBlock); }, 120s)) << indexer.log();
        indexer.stop();
        reference_ = new std::vector<std::string>(table_digest(pg));
        reference_rows_ = pg.query("SELECT count(*) FROM wallet_operation_events").at(0);
        std::string text = reference_rows_ + "\n";
        for (const auto& line : *reference_) text += line + "\n";
        const fs::path partial = cache.string() + ".partial-" + std::to_string(getpid());
        write_file(partial, text);
        fs::rename(partial, cache);
    }
    static void TearDownTestSuite() {
        delete reference_;
        reference_ = nullptr;
    }

    void SetUp() override {
        ASSERT_NE(reference_, nullptr) << "the indexer's reference table could not be built";
        ASSERT_GT(reference_->size(), 1000u);
    }

    static void expect_reference_table(const PostgresServer& pg) {
        const auto digest = table_digest(pg);
        EXPECT_TRUE(digest == *reference_) << "first difference: " << first_difference(*reference_, digest);
        EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_operation_events").at(0), reference_rows_);
        if (pg.query("SELECT to_regclass('insert_tally') IS NOT NULL").at(0) == "t") {
            EXPECT_EQ(tallied_rows(pg), reference_rows_);
        }
    }

    // Every shard of the range done, and every row stored was counted by
    // exactly one shard commit: nothing loaded twice, nothing lost.
    static void expect_all_shards_done(const PostgresServer& pg, bool sole_writer = true) {
        EXPECT_EQ(pg.query("SELECT count(*) FROM backfill_shards WHERE state <> 'done' OR next_block <> end_block + 1").at(0), "0");
        EXPECT_EQ(pg.query("SELECT min(start_block), max(end_block), sum(end_block - start_block + 1) FROM backfill_shards").at(0),
                  "1\t" + std::to_string(kLastBlock) + "\t" + std::to_string(kLastBlock));
        if (sole_writer) {
            EXPECT_EQ(pg.query("SELECT sum(rows_written) FROM backfill_shards").at(0), reference_rows_);
        }
    }

    static std::vector<std::string>* reference_;
    static std::string reference_rows_;
};

std::vector<std::string>* BackfillLoad::reference_ = nullptr;
std::string BackfillLoad::reference_rows_;

}  // namespace

TEST_F(BackfillLoad, SixWorkersOverThreeNodesOneFaultyGiveTheIndexersTable) {
    PostgresServer pg;
    pg.provision();
    install_insert_tally(pg);
    NodeSimulator good_a(chain_args(kHead));
    NodeSimulator good_b(chain_args(kHead));
    // Every kind of fault on a third of its requests; hangs outlast the timeout.
    NodeSimulator faulty(chain_args(
        kHead, {"--fault-rate", "0.33", "--fault-kinds",
                "delay,hang,http_500,http_503,rpc_error,truncated,malformed,oversized,wrong_block", "--fault-delay-ms", "300",
                "--fault-hang-ms", "5000", "--fault-oversize-bytes", "9000000", "--fault-methods",
                "condenser_api.get_ops_in_block"}));
    const auto result = run_command(backfill_argv(),
                                    backfill_env(pg, good_a.url() + "," + faulty.url() + "," + good_b.url(),
                                                 {{"CHAIN_RPC_MAX_RESPONSE_BYTES", "8388608"}}),
                                    180s);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_reference_table(pg);
    expect_all_shards_done(pg);
    // The faulty node was used, failed, and the job still completed.
    EXPECT_NE(faulty.status().find("\"faults_injected\":"), std::string::npos);
    EXPECT_EQ(faulty.status().find("\"faults_injected\":0,"), std::string::npos) << faulty.status();
    EXPECT_NE(result.output.find("summary: blocks 1.." + std::to_string(kLastBlock) + ": complete"), std::string::npos)
        << result.output;
}

TEST_F(BackfillLoad, KillsAtRandomMomentsThenARerunGiveTheSameTable) {
    PostgresServer pg;
    pg.provision();
    install_insert_tally(pg);
    NodeSimulator sim_a(chain_args(kHead));
    NodeSimulator sim_b(chain_args(kHead));
    const auto env = backfill_env(pg, sim_a.url() + "," + sim_b.url());
    TempDir dir("wallet-backfill-kills");
    std::mt19937 random(20240611);
    // Kill moments are random points of each run's own progress (a share of
    // the rows still missing), not of wall time: a fast machine would finish
    // the few rows left for the later runs before a timed kill landed.
    std::uniform_real_distribution<double> share_of_missing(0.02, 0.15);
    const std::int64_t total = std::stoll(reference_rows_);
    // Polled every few ms: the events table itself, not the view of 0001
    // (which joins every block's raw operations).
    const auto stored = [&] { return std::stoll(pg.query("SELECT count(*) FROM wallet_events").at(0)); };
    int killed_while_running = 0;
    std::string logs;
    // Ten rounds; six in the sanitizer build, whose rounds cost seconds each.
    const int rounds = harness::sanitized_build() ? 6 : 10;
    for (int round = 0; round < rounds; ++round) {
        const std::int64_t before = stored();
        const auto target = before + std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(total - before) * share_of_missing(random)));
        Process loader = Process::start(backfill_argv(),
                                        ProcessOptions{env, {}, dir.path() / ("run-" + std::to_string(round) + ".log"), {}, false});
        wait_until([&] { return !loader.running() || stored() >= target; }, 60s, 5ms);
        if (loader.running()) {
            ++killed_while_running;
        } else {
            logs += "round " + std::to_string(round) + " ended by itself:\n" + loader.log() + "\n";
        }
        loader.stop(SIGKILL);
    }
    EXPECT_GE(killed_while_running, rounds - 2) << logs;
    // Some rounds stored something; none finished the range.
    EXPECT_NE(pg.query("SELECT count(*) FROM wallet_operation_events").at(0), "0");
    const auto result = run_command(backfill_argv(), env, 180s);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_reference_table(pg);
    expect_all_shards_done(pg);
    // Shards held by killed runs were claimed again (taken over once silent).
    EXPECT_NE(pg.query("SELECT count(*) FROM backfill_shards WHERE attempts > 1").at(0), "0");
}

TEST_F(BackfillLoad, TwoLoadersAtOnceGiveTheSameTable) {
    PostgresServer pg;
    pg.provision();
    NodeSimulator sim_a(chain_args(kHead));
    NodeSimulator sim_b(chain_args(kHead));
    const auto env = backfill_env(pg, sim_a.url() + "," + sim_b.url(), {{"BACKFILL_WORKERS", "3"}});
    TempDir dir("wallet-backfill-two");
    Process first = Process::start(backfill_argv(), ProcessOptions{env, {}, dir.path() / "first.log", {}, false});
    Process second = Process::start(backfill_argv(), ProcessOptions{env, {}, dir.path() / "second.log", {}, false});
    const auto first_status = first.wait_exit(180s);
    const auto second_status = second.wait_exit(180s);
    ASSERT_TRUE(first_status && second_status);
    EXPECT_EQ(*first_status, 0) << first.log();
    EXPECT_EQ(*second_status, 0) << second.log();
    expect_reference_table(pg);
    expect_all_shards_done(pg);
    // Both did part of the work.
    const auto owners = pg.query("SELECT count(DISTINCT split_part(owner, '/', 1)) FROM backfill_shards");
    EXPECT_EQ(owners.at(0), "2");
}

TEST_F(BackfillLoad, BesideTheTailingIndexerTheSameTableWithoutDuplicates) {
    PostgresServer pg;
    pg.provision();
    install_insert_tally(pg);
    NodeSimulator sim_a(chain_args(kHead));
    NodeSimulator sim_b(chain_args(kHead));
    TempDir dir("wallet-backfill-tail");
    Process indexer = start_indexer(pg, sim_a.url(), dir.path() / "indexer.log");
    Process loader = Process::start(backfill_argv(), ProcessOptions{backfill_env(pg, sim_a.url() + "," + sim_b.url()), {},
                                                                    dir.path() / "backfill.log", {}, false});
    const auto status = loader.wait_exit(180s);
    ASSERT_TRUE(status);
    EXPECT_EQ(*status, 0) << loader.log();
    ASSERT_TRUE(wait_until([&] { return indexed_through(pg, kLastBlock); }, 120s)) << indexer.log();
    indexer.stop();
    expect_reference_table(pg);
    expect_all_shards_done(pg, /*sole_writer=*/false);
    EXPECT_EQ(pg.query("SELECT count(*) FROM (SELECT 1 FROM wallet_operation_events GROUP BY block_num, trx_in_block,"
                       " op_in_trx, virtual_op, account, role HAVING count(*) > 1) AS d").at(0),
              "0");
}
