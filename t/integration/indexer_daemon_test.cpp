// wallet-indexer against the node simulator and a real PostgreSQL: catch-up,
// following the head, restart from the checkpoint, start block, both target
// modes, the missing irreversible block, PostgreSQL going away, clean stop,
// liveness and metrics, the command line.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "indexer_support.hpp"

using namespace indexer_test;

namespace {

bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

wallet::JsonPtr health_body(IndexerDaemon& indexer) {
    auto response = indexer.health();
    auto parsed = wallet::json::parse(response.body);
    if (!parsed) return wallet::json_own(json_object());
    return std::move(parsed).value();
}

}  // namespace

TEST(IndexerDaemon, CatchesUpFollowsStopsCleanlyAndResumes) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim({"--synthetic", "--seed", "3", "--length", "600", "--block-interval-ms", "0"});
    const auto health_port = free_port();
    IndexerDaemon indexer(indexer_env(pg, "wallet", sim.url(), health_port), health_port);
    indexer.start();
    // Irreversible mode: last irreversible (head - 1) minus 2 trailing blocks.
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 597)) << indexer.log();
    ASSERT_TRUE(wait_until([&] { return indexer.health().status == 200; }, 10s));
    auto body = health_body(indexer);
    EXPECT_TRUE(json_is_true(json_object_get(body.get(), "ok")));
    EXPECT_EQ(json_integer_value(json_object_get(body.get(), "indexed_block")), 597);
    EXPECT_EQ(json_integer_value(json_object_get(body.get(), "head_block")), 600);
    EXPECT_EQ(pg.query("SELECT head_block, last_irreversible FROM node_observation"), std::vector<std::string>{"600\t599"});

    sim.control(R"({"advance":50})");
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 647)) << indexer.log();
    const auto metrics = indexer.metrics();
    EXPECT_EQ(metrics.status, 200);
    EXPECT_NE(metrics.body.find("wallet_indexer_indexed_block 647\n"), std::string::npos) << metrics.body;
    EXPECT_NE(metrics.body.find("wallet_indexer_blocks_indexed_total 647\n"), std::string::npos) << metrics.body;

    // SIGTERM: a clean exit well within 5 s, at the committed checkpoint.
    EXPECT_TRUE(exited_cleanly(indexer.stop(SIGTERM, 5s)));
    EXPECT_NE(indexer.log().find("stopped at block 647"), std::string::npos) << indexer.log();
    EXPECT_EQ(checkpoint_of(pg, "wallet"), 647);

    // A restart resumes from the checkpoint and keeps following.
    sim.control(R"({"advance":10})");
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 657)) << indexer.log();
    EXPECT_NE(indexer.log().find("resuming after block 647"), std::string::npos);
    EXPECT_TRUE(exited_cleanly(indexer.stop(SIGTERM, 5s)));

    expect_clean_index(pg, "wallet", sim.url(), 1, 657, wallet::OpsForm::Condenser);
    EXPECT_GT(table_rows(pg, "wallet").size(), 10000u);
    // Only the ids a fork check can compare are kept: INDEXER_MAX_FORK_DEPTH + 1.
    EXPECT_EQ(pg.query("SELECT count(*), min(block_num), max(block_num) FROM indexer_block_ids"),
              std::vector<std::string>{"26\t632\t657"});
}

TEST(IndexerDaemon, FreshDatabaseStartsAtTheStartBlockAndHeadModeIndexesReversibleBlocks) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim({"--synthetic", "--seed", "4", "--length", "900", "--block-interval-ms", "0", "--lib-lag", "20"});
    const auto health_port = free_port();
    auto env = indexer_env(pg, "wallet", sim.url(), health_port);
    env["INDEXER_START_BLOCK"] = "700";
    env["INDEXER_TARGET_IRREVERSIBLE"] = "false";
    env["INDEXER_TRAIL_BLOCKS"] = "0";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    // Up to the head, 20 blocks past the last irreversible one.
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 900)) << indexer.log();
    EXPECT_NE(indexer.log().find("fresh database: starting at block 700"), std::string::npos);
    EXPECT_EQ(pg.query("SELECT min(block_num), max(block_num) FROM wallet_operation_events"), std::vector<std::string>{"700\t900"});
    EXPECT_TRUE(exited_cleanly(indexer.stop(SIGTERM, 5s)));
    expect_clean_index(pg, "wallet", sim.url(), 700, 900, wallet::OpsForm::AccountHistory);
}

TEST(IndexerDaemon, NoIrreversibleBlockStallsAndLivenessTurnsUnhealthy) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim({"--synthetic", "--length", "300", "--block-interval-ms", "0", "--no-irreversible"});
    const auto health_port = free_port();
    auto env = indexer_env(pg, "wallet", sim.url(), health_port);
    env["INDEXER_HEALTH_MAX_STALL_MS"] = "1000";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    ASSERT_TRUE(wait_until([&] { return indexer.health().status == 503; }, 20s)) << indexer.log();
    auto body = health_body(indexer);
    EXPECT_TRUE(json_is_false(json_object_get(body.get(), "ok")));
    const std::string reason = json_string_value(json_object_get(body.get(), "reason"));
    EXPECT_NE(reason.find("no last irreversible block"), std::string::npos) << reason;
    EXPECT_EQ(checkpoint_of(pg, "wallet"), 0);
    EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_operation_events"), std::vector<std::string>{"0"});
    EXPECT_NE(indexer.log().find("no last irreversible block"), std::string::npos);
    // Still observed for get_status: head known, irreversible block not.
    EXPECT_EQ(pg.query("SELECT head_block, last_irreversible FROM node_observation"), std::vector<std::string>{"300\tNULL"});

    EXPECT_TRUE(wait_until([&] { return indexer.log().find("warning: liveness unhealthy: no progress for") != std::string::npos; },
                           10s))
        << indexer.log();

    // The node recovers: so does the indexer.
    sim.control(R"({"irreversible":true})");
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 297)) << indexer.log();
    ASSERT_TRUE(wait_until([&] { return indexer.health().status == 200; }, 10s));
    EXPECT_NE(indexer.log().find("recovered from: the node reports no last irreversible block"), std::string::npos);
    EXPECT_TRUE(wait_until([&] { return indexer.log().find("info: liveness healthy again") != std::string::npos; }, 10s));
}

TEST(IndexerDaemon, SteemEraNodeNamesSymbolsAndVirtualOpCounters) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim({"--synthetic", "--seed", "6", "--length", "300", "--block-interval-ms", "0", "--naming", "legacy"});
    const auto health_port = free_port();
    IndexerDaemon indexer(indexer_env(pg, "wallet", sim.url(), health_port), health_port);
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 297)) << indexer.log();
    EXPECT_TRUE(exited_cleanly(indexer.stop(SIGTERM, 5s)));
    // Symbols as the node printed them.
    EXPECT_EQ(pg.query("SELECT string_agg(DISTINCT symbol, ',' ORDER BY symbol) FROM wallet_operation_events"),
              std::vector<std::string>{"SBD,STEEM"});
    // Old field names decoded: sbd_payout in assets, comment_author as author.
    EXPECT_EQ(pg.query("SELECT count(*) > 0 FROM wallet_operation_events WHERE op_type = 'author_reward'"
                       " AND assets @> '[{\"field\": \"sbd_payout\"}]'"),
              std::vector<std::string>{"t"});
    EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_operation_events WHERE op_type = 'curation_reward'"
                       " AND (author IS NULL OR author <> payload->'op'->1->>'comment_author')"),
              std::vector<std::string>{"0"});
    // A node's positive virtual_op counter is kept; real operations are 0.
    EXPECT_EQ(pg.query("SELECT count(*) FROM wallet_operation_events WHERE (payload->>'virtual_op')::int > 0"
                       " AND virtual_op <> (payload->>'virtual_op')::int"),
              std::vector<std::string>{"0"});
    EXPECT_EQ(pg.query("SELECT count(*) > 0, bool_and(virtual_op > 0) FROM wallet_operation_events"
                       " WHERE op_type IN ('author_reward', 'curation_reward', 'fill_vesting_withdraw')"),
              std::vector<std::string>{"t\tt"});
    expect_clean_index(pg, "wallet", sim.url(), 1, 297, wallet::OpsForm::Condenser);
}

TEST(IndexerDaemon, PostgresGoingAwayLosesNothing) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim({"--synthetic", "--seed", "5", "--length", "1500", "--block-interval-ms", "0"});
    const auto health_port = free_port();
    auto env = indexer_env(pg, "wallet", sim.url(), health_port);
    env["INDEXER_MAX_BATCH_BLOCKS"] = "10";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 200)) << indexer.log();
    pg.stop();
    ASSERT_TRUE(wait_until([&] { return indexer.log().find("warning: database") != std::string::npos; }, 20s)) << indexer.log();
    pg.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "wallet", 1497)) << indexer.log();
    EXPECT_NE(indexer.log().find("database connection restored"), std::string::npos) << indexer.log();
    EXPECT_TRUE(exited_cleanly(indexer.stop(SIGTERM, 5s)));
    expect_clean_index(pg, "wallet", sim.url(), 1, 1497, wallet::OpsForm::Condenser);
}

// A unix datagram socket standing in for systemd's notify socket.
class NotifySocket {
public:
    NotifySocket() : path_(dir_.path() / "notify.sock") {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
        if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) throw std::runtime_error("bind");
    }
    ~NotifySocket() { ::close(fd_); }
    NotifySocket(const NotifySocket&) = delete;
    NotifySocket& operator=(const NotifySocket&) = delete;
    const fs::path& path() const { return path_; }
    // Every message received so far.
    const std::vector<std::string>& messages() {
        char buffer[512];
        ssize_t n = 0;
        while ((n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) messages_.emplace_back(buffer, static_cast<std::size_t>(n));
        return messages_;
    }
    bool received(const std::string& message) {
        const auto& all = messages();
        return std::find(all.begin(), all.end(), message) != all.end();
    }

private:
    TempDir dir_{"wallet-notify"};
    fs::path path_;
    int fd_ = -1;
    std::vector<std::string> messages_;
};

TEST(IndexerDaemon, TellsSystemdItIsReadyAliveAndStopping) {
    PostgresServer pg;
    pg.provision("wallet");
    Simulator sim({"--synthetic", "--length", "100", "--block-interval-ms", "0"});
    NotifySocket notify;
    const auto health_port = free_port();
    auto env = indexer_env(pg, "wallet", sim.url(), health_port);
    env["NOTIFY_SOCKET"] = notify.path().string();
    env["WATCHDOG_USEC"] = "100000";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    ASSERT_TRUE(wait_until([&] { return notify.received("READY=1"); }, 20s)) << indexer.log();
    EXPECT_TRUE(wait_until([&] { return notify.received("WATCHDOG=1"); }, 20s));
    EXPECT_TRUE(exited_cleanly(indexer.stop(SIGTERM, 5s)));
    EXPECT_TRUE(notify.received("STOPPING=1"));
}

TEST(IndexerDaemon, CommandLine) {
    auto version = run_command({indexer_binary().string(), "--version"});
    EXPECT_EQ(version.exit_code, 0);
    EXPECT_NE(version.output.find("wallet-indexer "), std::string::npos);
    auto help = run_command({indexer_binary().string(), "--help"});
    EXPECT_EQ(help.exit_code, 0);
    for (const char* name : {"INDEXER_TARGET_IRREVERSIBLE", "INDEXER_MAX_FORK_DEPTH", "CHAIN_RPC_URL", "INDEXER_HEALTH_ADDR"}) {
        EXPECT_NE(help.output.find(name), std::string::npos) << name;
    }
    auto unknown = run_command({indexer_binary().string(), "--frobnicate"});
    EXPECT_EQ(unknown.exit_code, 2);
    // A missing password is named; nothing starts.
    auto unconfigured = run_command({indexer_binary().string()}, {{"WALLET_WRITER_PASSWORD", ""}, {"INDEXER_DATABASE_URL", ""}});
    EXPECT_EQ(unconfigured.exit_code, 2);
    EXPECT_NE(unconfigured.output.find("WALLET_WRITER_PASSWORD"), std::string::npos) << unconfigured.output;
    auto bad = run_command({indexer_binary().string()},
                           {{"WALLET_WRITER_PASSWORD", "a-long-writer-password-1"}, {"INDEXER_TARGET_IRREVERSIBLE", "maybe"}});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.output.find("INDEXER_TARGET_IRREVERSIBLE"), std::string::npos) << bad.output;
}
