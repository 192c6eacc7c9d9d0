// The backfill job: BACKFILL_WORKERS threads, each with its own PostgreSQL
// connection and node clients, claim shards of the range and load them
// batch by batch (BACKFILL_BATCH_SIZE blocks per JSON-RPC batch): fetch from
// the node pool, decode with the indexer's decoder, and store the events and
// the shard's progress in one transaction. A heartbeat thread keeps the
// claims of live workers fresh.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "node_pool.hpp"
#include "shards.hpp"
#include "wallet/asset.hpp"
#include "wallet/config.hpp"
#include "wallet/event_store.hpp"

namespace wallet::backfill {

struct LoaderOptions {
    std::string database_url;
    BlockRange range;
    std::int64_t batch_size = 100;  // BACKFILL_BATCH_SIZE
    std::int64_t workers = 6;       // BACKFILL_WORKERS
    AssetTable assets = AssetTable::mainnet();
    HardforkSchedule forks = HardforkSchedule::mainnet();  // CHAIN_HARDFORKS
    std::chrono::milliseconds heartbeat_timeout{60000};
    store::WriteMethod write_method = store::WriteMethod::CopyMerge;
    std::string owner_prefix;       // unique per process: host, pid, random
};

// Live figures of this process, read by the progress display.
struct LoadCounters {
    std::atomic<std::int64_t> blocks{0};         // blocks stored by this process
    std::atomic<std::int64_t> events{0};         // events decoded and offered to the table
    std::atomic<std::int64_t> rows_inserted{0};  // of them, rows new to the table (the rest were stored already)
    std::atomic<std::int64_t> balance_undecodable{0};  // rows stored without balance changes (wallet_balance_undecodable)
    std::atomic<std::int64_t> shards_done{0};
    std::atomic<std::int64_t> takeovers{0};      // shards taken over from silent workers
    std::atomic<std::int64_t> lost_shards{0};    // shards another worker took over from us
    std::atomic<std::int64_t> write_retries{0};
};

struct LoadOutcome {
    bool stopped = false;                // a stop was requested
    std::optional<std::string> failure;  // why the job could not finish
    std::vector<std::int64_t> failed_shards;  // start blocks of shards this run gave up on
};

class Loader {
public:
    Loader(LoaderOptions options, NodePool& pool, std::stop_token stop);

    // Runs the workers until every shard of the range is done, or nothing
    // more can be done by this process, or stop is requested.
    LoadOutcome run();

    const LoadCounters& counters() const noexcept { return counters_; }

private:
    struct WorkerState {
        std::string owner;
        std::atomic<bool> holds_shard{false};
        std::atomic<std::int64_t> last_activity_ms{0};  // steady clock
        store::AccountIds account_ids;                  // the worker's cache of account ids
    };

    void work(std::size_t index, std::stop_token stop);
    void beat(std::stop_token stop);
    // Loads one claimed shard; false when the job must end (fatal failure).
    bool load_shard(WorkerState& state, PGconn*& conn, PgConnPtr& owned, PoolClient& client, Shard shard,
                    std::stop_token stop);
    Result<store::WriteCounts> write_batch(PGconn* conn, store::AccountIds& account_ids, const Shard& shard,
                                           const std::string& owner, const std::vector<WalletEvent>& events,
                                           std::int64_t next_block, bool& lost);
    PgConnPtr connect(std::stop_token stop);
    void fail(const std::string& why);
    void touch(WorkerState& state);
    std::vector<std::int64_t> failed_shards() const;

    LoaderOptions options_;
    NodePool& pool_;
    std::stop_token outer_stop_;
    std::stop_source job_stop_;  // stops the workers: outer stop or a fatal failure
    LoadCounters counters_;
    std::vector<std::unique_ptr<WorkerState>> workers_;
    mutable std::mutex mutex_;
    std::optional<std::string> failure_;
    std::vector<std::int64_t> failed_shards_;
};

// A token unique to this process: host name, process id and random bits.
std::string make_owner_prefix();

}  // namespace wallet::backfill
