// Helpers of the indexer's integration tests: the node simulator and the
// wallet-indexer daemon as child processes, and the table compared as text.
#pragma once

#include <csignal>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/harness.hpp"
#include "harness/node_sim.hpp"
#include "wallet/decoder.hpp"
#include "wallet/event_store.hpp"
#include "wallet/json_util.hpp"
#include "wallet/node_client.hpp"
#include "wallet/pg.hpp"

namespace indexer_test {

using namespace harness;

inline fs::path indexer_binary() { return binary_dir() / "indexer" / "wallet-indexer"; }

using Simulator = NodeSimulator;

// A number of the simulator's status. Its fork salts are 64-bit numbers
// beyond jansson's int64: numbers are read as doubles (exact for blocks).
inline std::int64_t status_number(const Simulator& sim, const char* key) {
    const std::string text = sim.status();
    json_error_t error;
    wallet::JsonPtr status = wallet::json_own(json_loadb(text.data(), text.size(), JSON_DECODE_INT_AS_REAL, &error));
    if (!status) throw std::runtime_error("simulator status is not JSON: " + text);
    return static_cast<std::int64_t>(json_number_value(json_object_get(status.get(), key)));
}
inline std::int64_t sim_head(const Simulator& sim) { return status_number(sim, "head"); }
inline std::int64_t sim_last_irreversible(const Simulator& sim) { return status_number(sim, "last_irreversible_block_num"); }

// The settings every test run of the indexer shares: fast polls and retries.
inline std::map<std::string, std::string> indexer_env(const PostgresServer& pg, const std::string& database,
                                                      const std::string& node_url, std::uint16_t health_port) {
    auto env = pg.env(database);
    env["CHAIN_RPC_URL"] = node_url;
    env["CHAIN_RPC_TIMEOUT_MS"] = "2000";
    env["INDEXER_START_BLOCK"] = "1";
    env["INDEXER_POLL_INTERVAL_MS"] = "50";
    env["INDEXER_HEALTH_ADDR"] = "127.0.0.1:" + std::to_string(health_port);
    env["INDEXER_HEALTH_MAX_STALL_MS"] = "60000";
    return env;
}

// wallet-indexer as a child process, restartable with the same settings
// (its log accumulates over the runs).
class IndexerDaemon {
public:
    IndexerDaemon(std::map<std::string, std::string> env, std::uint16_t health_port, const std::string& label = "wallet-indexer")
        : dir_("wallet-indexer"), env_(std::move(env)), health_port_(health_port), log_path_(dir_.path() / (label + ".log")) {}

    void start(const std::vector<std::string>& args = {}) {
        std::vector<std::string> argv{indexer_binary().string()};
        argv.insert(argv.end(), args.begin(), args.end());
        ProcessOptions options;
        options.env = env_;
        options.log_path = log_path_;
        process_ = Process::start(argv, options);
    }
    // The exit status as from waitpid.
    int stop(int signal = SIGTERM, std::chrono::milliseconds grace = 10s) { return process_.stop(signal, grace); }
    bool running() { return process_.running(); }
    std::optional<int> wait_exit(std::chrono::milliseconds timeout) { return process_.wait_exit(timeout); }
    std::string log() const { return read_file(log_path_); }
    std::map<std::string, std::string>& env() { return env_; }

    HttpResponse health() { return http_request("GET", "http://127.0.0.1:" + std::to_string(health_port_) + "/health", "", {}, 5s); }
    HttpResponse metrics() { return http_request("GET", "http://127.0.0.1:" + std::to_string(health_port_) + "/metrics", "", {}, 5s); }

private:
    TempDir dir_;
    std::map<std::string, std::string> env_;
    std::uint16_t health_port_;
    fs::path log_path_;
    Process process_;
};

// The indexer's checkpoint (0 when none).
inline std::int64_t checkpoint_of(const PostgresServer& pg, const std::string& database) {
    return std::stoll(pg.query("SELECT coalesce((SELECT block_num FROM indexer_checkpoint), 0)", database).at(0));
}

inline bool wait_for_checkpoint(const PostgresServer& pg, const std::string& database, std::int64_t block,
                                std::chrono::milliseconds timeout = 60s) {
    return wait_until([&] { return checkpoint_of(pg, database) >= block; }, timeout, 50ms);
}

// Every row of wallet_operation_events, every column as text, in key order.
inline std::vector<std::string> table_rows(const PostgresServer& pg, const std::string& database,
                                           std::int64_t up_to_block = 2147483647) {
    return pg.query_analyzed(
        "SELECT block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq, op_type, trx_id, \"timestamp\","
        " amount, symbol, vesting_amount, vesting_symbol, counterparty, memo, author, permlink, assets::text, payload::text"
        " FROM wallet_operation_events WHERE block_num <= " + std::to_string(up_to_block) +
            " ORDER BY block_num, trx_in_block, op_in_trx, virtual_op, account, role",
        database);
}

// A clean one-pass index of blocks [first, last] of the node's chain into a
// database (provisioned here): the reference the daemon's tables must equal.
inline void index_reference(PostgresServer& pg, const std::string& database, const std::string& node_url, std::int64_t first,
                            std::int64_t last, wallet::OpsForm form = wallet::OpsForm::AccountHistory,
                            const wallet::AssetTable& assets = wallet::AssetTable::mainnet()) {
    auto settings = pg.provision(database);
    auto store = wallet::EventStore::connect(settings.db.indexer_url);
    ASSERT_TRUE(store) << store.error();
    wallet::NodeClientOptions options;
    options.url = node_url;
    auto node = wallet::NodeClient::create(options);
    ASSERT_TRUE(node) << node.error();
    std::vector<wallet::WalletEvent> events;
    for (std::int64_t from = first; from <= last; from += 100) {
        auto blocks = node.value().get_ops_in_blocks(from, std::min(last, from + 99), form);
        ASSERT_TRUE(blocks) << blocks.error();
        for (const auto& block : *blocks) {
            auto decoded = wallet::decode_block_entries(block.entries, assets);
            ASSERT_TRUE(decoded) << decoded.error();
            for (auto& event : *decoded) events.push_back(std::move(event));
        }
    }
    auto tx = wallet::pg::Transaction::begin(store.value().connection());
    ASSERT_TRUE(tx) << tx.error();
    auto written = wallet::store::insert_events(store.value().connection(), events);
    ASSERT_TRUE(written) << written.error();
    ASSERT_TRUE(tx.value().commit());
}

// The database's table equals a clean one-pass index of blocks [first, last]
// of the node's chain (built into "<database>_reference").
inline void expect_clean_index(PostgresServer& pg, const std::string& database, const std::string& node_url,
                               std::int64_t first, std::int64_t last, wallet::OpsForm form);

// Compares two tables row by row, reporting the first difference only.
inline void expect_same_rows(const std::vector<std::string>& actual, const std::vector<std::string>& expected) {
    EXPECT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
        if (actual[i] != expected[i]) {
            ADD_FAILURE() << "first different row " << i << ":\n  actual:   " << actual[i] << "\n  expected: " << expected[i];
            return;
        }
    }
}

inline void expect_clean_index(PostgresServer& pg, const std::string& database, const std::string& node_url,
                               std::int64_t first, std::int64_t last, wallet::OpsForm form) {
    const std::string reference = database + "_reference";
    index_reference(pg, reference, node_url, first, last, form);
    expect_same_rows(table_rows(pg, database), table_rows(pg, reference));
}

}  // namespace indexer_test
