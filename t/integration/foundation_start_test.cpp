// The README's first command, limited to its database: the embedded default's
// PostgreSQL listens on DB_BIND_HOST (loopback) only, and Ctrl-C stops it.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/harness.hpp"
#include "wallet/config.hpp"
#include "wallet/pg.hpp"

using namespace harness;

namespace {

// Local addresses listening on the port, from the kernel's socket table.
std::vector<std::string> listening_addresses(std::uint16_t port) {
    auto out = run_command({"ss", "-ltnH", "sport = :" + std::to_string(port)}).output;
    std::vector<std::string> addresses;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string state, recvq, sendq, local;
        if (fields >> state >> recvq >> sendq >> local) addresses.push_back(local);
    }
    return addresses;
}

// scripts/start with only `services`, on a free database port, its state in
// `state`, the already built programs and generated secrets.
Process start_services(const TempDir& state, const std::string& services, std::uint16_t db_port,
                       const std::map<std::string, std::string>& more_env = {},
                       const std::vector<std::string>& more_unset = {}) {
    ProcessOptions options;
    options.log_path = state.path() / "start.log";
    options.env = {{"WALLET_STATE_DIR", (state.path() / "state").string()},
                   {"WALLET_START_SERVICES", services},
                   {"WALLET_NO_BUILD", "1"},
                   {"WALLET_BUILD_DIR", binary_dir().string()},
                   {"DB_BIND_PORT", std::to_string(db_port)}};
    options.env.insert(more_env.begin(), more_env.end());
    options.unset_env = {"DB_BIND_HOST", "DB_PASSWORD", "WALLET_WRITER_PASSWORD", "WALLET_API_READER_PASSWORD"};
    options.unset_env.insert(options.unset_env.end(), more_unset.begin(), more_unset.end());
    return Process::start({"bash", (source_dir() / "scripts" / "start").string()}, options);
}

}  // namespace

TEST(FoundationStart, EmbeddedPostgresListensOnLoopbackOnlyAndStopsOnInterrupt) {
    TempDir state("wallet-start");
    const auto port = free_port();
    auto start = start_services(state, "db", port);
    ASSERT_TRUE(wait_until([&] { return start.log().find("[start] ready") != std::string::npos || !start.running(); }, 120s))
        << start.log();
    ASSERT_TRUE(start.running()) << start.log();

    auto addresses = listening_addresses(port);
    ASSERT_FALSE(addresses.empty());
    for (const auto& address : addresses) {
        EXPECT_EQ(address, "127.0.0.1:" + std::to_string(port)) << "PostgreSQL must not listen beyond loopback";
    }

    // The provisioned reader role works over loopback with the generated secrets.
    auto secrets = read_file(state.path() / "state" / "secrets.env");
    auto reader_password = secrets.substr(secrets.find("WALLET_API_READER_PASSWORD=") + 27);
    reader_password = reader_password.substr(0, reader_password.find('\n'));
    auto conn = wallet::pg::connect(wallet::make_postgres_url("wallet_api_reader", reader_password, "127.0.0.1", port, "wallet"));
    ASSERT_TRUE(conn) << conn.error();
    auto listen = wallet::pg::exec(conn->get(), "SHOW listen_addresses");
    ASSERT_TRUE(listen);
    EXPECT_EQ(std::string(PQgetvalue(listen->get(), 0, 0)), "127.0.0.1");
    conn.value().reset();

    start.stop(SIGINT, 30s);
    EXPECT_NE(start.log().find("[start] stopped"), std::string::npos) << start.log();
    EXPECT_TRUE(wait_until([&] { return !port_accepts(port); }, 10s));
}

TEST(FoundationStart, RefusesANonLoopbackDatabaseAddress) {
    auto tool = (binary_dir() / "common" / "wallet-db-setup").string();
    auto result = run_command({tool}, {{"DB_BIND_HOST", "0.0.0.0"}, {"DB_PASSWORD", "superuser-password-1"},
                                       {"WALLET_WRITER_PASSWORD", "writer-password-12345"},
                                       {"WALLET_API_READER_PASSWORD", "reader-password-12345"}});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.output.find("DB_BIND_HOST"), std::string::npos) << result.output;
}

// The demo's backfill over the sparse fixture replay: between the fixtures'
// real blocks the simulator answers empty blocks, so the demo must not hold
// them to mainnet's "every block after the first producer_reward has one"
// (a shard stopped at block 334696 for good). The range crosses that block.
TEST(FoundationStart, DemoBackfillLoadsTheSparseFixtureReplayWithoutRefusals) {
    TempDir state("wallet-start");
    auto start = start_services(state, "db,sim,backfill", free_port(),
                                {{"SIM_PORT", std::to_string(free_port())},
                                 {"BACKFILL_START_BLOCK", "330001"},
                                 {"INDEXER_START_BLOCK", "340000"}},
                                {"CHAIN_EVERY_BLOCK_REWARDED", "CHAIN_RPC_URL", "BACKFILL_RPC_URLS"});
    const auto backfill_log = state.path() / "state" / "logs" / "backfill.log";
    auto backfill = [&] { return fs::exists(backfill_log) ? read_file(backfill_log) : std::string(); };
    const bool ended = wait_until(
        [&] { return backfill().find("summary: node") != std::string::npos || !start.running(); }, 120s);
    start.stop(SIGINT, 30s);
    ASSERT_TRUE(ended) << backfill() << start.log();
    const auto log = backfill();
    EXPECT_NE(log.find("blocks 330001..340000: complete"), std::string::npos) << log;
    EXPECT_NE(log.find("requests, 0 failed"), std::string::npos) << log;
}
