// What the backfill tests share: simulated nodes, the project's daemons as
// child processes, and a digest of the event table for whole-table
// comparisons.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "harness/harness.hpp"
#include "harness/node_sim.hpp"

namespace backfill_test {

using namespace harness;

// Arguments of hive-node-sim for a fixed synthetic chain: head `head`, last
// irreversible block head - 1, the same blocks in every simulator.
inline std::vector<std::string> chain_args(std::uint32_t head, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"--synthetic", "--seed", "11", "--length", std::to_string(head), "--block-interval-ms", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// The environment of wallet-backfill / wallet-indexer against this database.
inline std::map<std::string, std::string> daemon_env(const PostgresServer& pg, std::map<std::string, std::string> extra) {
    auto env = pg.env();
    env.erase("DB_PASSWORD");  // the daemons work as wallet_writer, never as the superuser
    for (auto& [name, value] : extra) env[name] = value;
    return env;
}

inline fs::path backfill_binary() { return binary_dir() / "backfill" / "wallet-backfill"; }
inline fs::path indexer_binary() { return binary_dir() / "indexer" / "wallet-indexer"; }

// wallet-indexer from block start_block of the node at `url`, following its
// last irreversible block, in batches of up to 1,000 blocks.
inline Process start_indexer(const PostgresServer& pg, const std::string& url, const fs::path& log,
                             std::int64_t start_block = 1) {
    return Process::start({indexer_binary().string()},
                          ProcessOptions{daemon_env(pg, {{"CHAIN_RPC_URL", url},
                                                         {"INDEXER_START_BLOCK", std::to_string(start_block)},
                                                         {"INDEXER_TRAIL_BLOCKS", "0"},
                                                         {"INDEXER_HEALTH_ADDR", ""},
                                                         {"INDEXER_POLL_INTERVAL_MS", "100"},
                                                         {"INDEXER_MAX_BATCH_BLOCKS", "1000"}}),
                                         {},
                                         log,
                                         {},
                                         false});
}

// One line per block: block number, row count and the md5 of its rows (every
// column, payload included, in key order). Equal digests mean equal tables.
inline std::vector<std::string> table_digest(const PostgresServer& pg, const std::string& database = "wallet") {
    return pg.query_analyzed(
        "SELECT block_num, count(*), md5(string_agg(concat_ws('|', trx_in_block, op_in_trx, virtual_op, account, role,"
        "   block_seq, op_type, coalesce(trx_id, '-'), extract(epoch FROM \"timestamp\")::bigint, coalesce(amount::text, '-'),"
        "   coalesce(symbol, '-'), coalesce(vesting_amount::text, '-'), coalesce(vesting_symbol, '-'),"
        "   coalesce(counterparty, '-'), coalesce(memo, '-'), coalesce(author, '-'), coalesce(permlink, '-'), assets::text,"
        "   payload::text), E'\\n' ORDER BY trx_in_block, op_in_trx, virtual_op, account, role))"
        " FROM wallet_operation_events GROUP BY block_num ORDER BY block_num",
        database);
}

// A statement-level AFTER INSERT trigger with a transition table, like the
// API's reward aggregates (migration 0002): it tallies the rows every insert
// statement added. Equal to count(*) at the end, it shows that every stored
// row went through the table's triggers exactly once (COPY included).
inline void install_insert_tally(const PostgresServer& pg) {
    pg.query("CREATE TABLE insert_tally (rows bigint NOT NULL);"
             "GRANT INSERT ON insert_tally TO wallet_writer;"
             "CREATE FUNCTION insert_tally_add() RETURNS trigger LANGUAGE plpgsql AS $$"
             " BEGIN INSERT INTO insert_tally SELECT count(*) FROM added_rows; RETURN NULL; END $$;"
             "CREATE TRIGGER insert_tally AFTER INSERT ON wallet_events REFERENCING NEW TABLE AS added_rows"
             " FOR EACH STATEMENT EXECUTE FUNCTION insert_tally_add();"
             "SELECT 1");
}
inline std::string tallied_rows(const PostgresServer& pg) {
    return pg.query("SELECT coalesce(sum(rows), 0) FROM insert_tally").at(0);
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
