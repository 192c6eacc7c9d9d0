// The bulk-load mode of wallet-backfill (--bulk; migration 0005,
// backfill/README.md): a fresh store is loaded without per-row index and
// aggregate maintenance, which is then built set-based, one step per
// transaction, so that a re-run after a kill at any point finishes the job.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include <libpq-fe.h>

#include "shards.hpp"
#include "wallet/result.hpp"

namespace wallet::backfill::bulk {

enum class State { Loading, Building, Done };

struct Entry {
    // Why this store cannot be bulk-loaded now (exit status 2); the rest is
    // meaningless when set.
    std::optional<std::string> refusal;
    State state = State::Loading;
    BlockRange range;  // the bulk load's range (the union of its runs' ranges)
    bool started = false;  // this run started the bulk load
};

// One transaction under the writers' lock (wallet/bulk_load.hpp): refuses a
// store that is served (see backfill/README.md, "Bulk load": a session of
// wallet_api_reader connected, a writer connected, an indexer checkpoint, or
// rows not loaded by this bulk load); on a fresh store drops wallet_events'
// indexes and disables the reward triggers (both kept in wallet_bulk_load);
// resumes an unfinished bulk load; a finished one is Done when `range` is
// complete, refused otherwise.
Result<Entry> enter(PGconn* conn, const BlockRange& range);

// Every shard of the bulk load's range is done: 'loading' becomes 'building'.
Result<bool> finish_loading(PGconn* conn);

struct BuildOptions {
    std::string database_url;
    // maintenance_work_mem and work_mem of the build (shared by the steps running at once)
    std::string maintenance_work_mem = "1GB";
    int parallel_workers = 2;  // max_parallel_maintenance_workers of each build session
    // Test-only (WALLET_BACKFILL_TEST_BUILD_PAUSE_MS): a pause inside every
    // step's transaction, before its commit, so that tests can kill there.
    std::chrono::milliseconds test_pause{0};
};

// Runs the build steps not committed yet, one transaction each, logging each
// with its time: the unique index, CLUSTER on it (the history in account
// order), the other indexes and the reward sums (wallet_reward_rebuild; all
// at once, in sessions of their own, committing in order) with the triggers
// enabled again, ANALYZE and 'done'. One process builds at a
// time (a session advisory lock; others wait). A stop cancels the running
// statement (its transaction rolls back). True when the state is 'done'.
Result<bool> build(const BuildOptions& options, std::stop_token stop);

}  // namespace wallet::backfill::bulk
