// What the backfill tests share: simulated nodes, the project's daemons as
// child processes, and a digest of the event table for whole-table
// comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "harness/harness.hpp"

namespace backfill_test {

using namespace harness;

// The simulator as built in this tree (or WALLET_SIM_BINARY).
inline fs::path simulator_path() {
    if (const char* custom = std::getenv("WALLET_SIM_BINARY")) return custom;
    return binary_dir() / "t" / "sim" / "hive-node-sim";
}

// A hive-node-sim on loopback serving a fixed synthetic chain: head `head`,
// last irreversible block head - 1.
class Sim {
public:
    Sim(std::uint32_t head, const std::vector<std::string>& extra_args = {}, const std::string& name = "sim") {
        port_ = free_port();
        std::vector<std::string> argv{simulator_path().string(), "--synthetic", "--seed", "11", "--length", std::to_string(head),
                                      "--block-interval-ms", "0", "--port", std::to_string(port_)};
        argv.insert(argv.end(), extra_args.begin(), extra_args.end());
        process_ = Process::start(argv, ProcessOptions{{}, {}, dir_.path() / (name + ".log"), {}, false});
        if (!wait_until([&] { return port_accepts(port_); })) throw std::runtime_error(name + " did not start");
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
    std::string status() const { return http_request("GET", url() + "sim/status").body; }

private:
    TempDir dir_{"wallet-sim"};
    std::uint16_t port_ = 0;
    Process process_;
};

// The environment of wallet-backfill / wallet-indexer against this database.
inline std::map<std::string, std::string> daemon_env(const PostgresServer& pg, std::map<std::string, std::string> extra) {
    auto env = pg.env();
    env.erase("DB_PASSWORD");  // the daemons work as wallet_writer, never as the superuser
    for (auto& [name, value] : extra) env[name] = value;
    return env;
}

inline fs::path backfill_binary() { return binary_dir() / "backfill" / "wallet-backfill"; }
inline fs::path indexer_binary() { return binary_dir() / "indexer" / "wallet-indexer"; }

// One line per block: block number, row count and the md5 of its rows (every
// column, payload included, in key order). Equal digests mean equal tables.
inline std::vector<std::string> table_digest(const PostgresServer& pg) {
    return pg.query(
        "SELECT block_num, count(*), md5(string_agg(concat_ws('|', trx_in_block, op_in_trx, virtual_op, account, role,"
        "   block_seq, op_type, coalesce(trx_id, '-'), extract(epoch FROM \"timestamp\")::bigint, coalesce(amount::text, '-'),"
        "   coalesce(symbol, '-'), coalesce(vesting_amount::text, '-'), coalesce(vesting_symbol, '-'),"
        "   coalesce(counterparty, '-'), coalesce(memo, '-'), coalesce(author, '-'), coalesce(permlink, '-'), assets::text,"
        "   payload::text), E'\\n' ORDER BY trx_in_block, op_in_trx, virtual_op, account, role))"
        " FROM wallet_operation_events GROUP BY block_num ORDER BY block_num");
}

// The first difference of two digests, for a readable failure.
inline std::string first_difference(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
    for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
        if (expected[i] != actual[i]) return "expected " + expected[i] + ", got " + actual[i];
    }
    if (expected.size() != actual.size()) {
        return "expected " + std::to_string(expected.size()) + " blocks with rows, got " + std::to_string(actual.size());
    }
    return "none";
}

}  // namespace backfill_test
