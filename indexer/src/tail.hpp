// The live tail: reads blocks with get_ops_in_block from the checkpoint (or
// INDEXER_START_BLOCK on a fresh database) up to the node's last irreversible
// block (or head) minus INDEXER_TRAIL_BLOCKS, and stores their wallet events,
// block ids and the checkpoint in one transaction per batch. Forks within
// INDEXER_MAX_FORK_DEPTH are reconciled (rows above the fork point deleted
// and re-indexed in one transaction); a deeper one halts indexing loudly.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "liveness.hpp"
#include "systemd_notify.hpp"
#include "wallet/asset.hpp"
#include "wallet/config.hpp"
#include "wallet/event_store.hpp"
#include "wallet/node_client.hpp"

namespace wallet::indexer {

struct TailOptions {
    Settings settings;
    AssetTable assets = AssetTable::mainnet();
    store::WriteMethod write_method = store::WriteMethod::CopyMerge;
};

// Exit codes of wallet-indexer.
inline constexpr int kExitStopped = 0;        // stopped by a signal
inline constexpr int kExitConfiguration = 2;  // bad settings or arguments; a bulk load is unfinished
inline constexpr int kExitHalted = 3;         // a fork deeper than INDEXER_MAX_FORK_DEPTH

// A range read from the node and decoded, ready to be committed.
struct FetchedRange {
    std::int64_t first = 0;
    std::int64_t last = 0;
    BlockRefRange refs;
    std::vector<WalletEvent> events;
};

struct FetchOutcome {
    std::optional<FetchedRange> range;
    std::string kind;  // of the failure: "node", "decode", "chain_moving"
    std::string message;
    NodeClientStats stats;  // of the reading-ahead client, when it read

    FetchOutcome& fail(std::string failure_kind, std::string why) {
        kind = std::move(failure_kind);
        message = std::move(why);
        return *this;
    }
};

// Reads ids and operations of [first, last] and decodes them. `reversible`
// re-reads the ids afterwards to catch a fork that happened meanwhile.
// `known_to`: the highest block the node reported (NodeClient::get_ops_in_blocks).
FetchOutcome fetch_range(NodeClient& node, std::int64_t first, std::int64_t last, OpsForm form, bool reversible,
                         std::int64_t known_to, const AssetTable& assets);

class TailIndexer {
public:
    // The reading-ahead task refers to members: an indexer is not moved
    // once run() has started.
    TailIndexer(TailIndexer&&) = default;
    ~TailIndexer();

    static Result<TailIndexer> create(TailOptions options, Liveness& liveness, SystemdNotifier& notifier, std::stop_token stop);

    // Runs until stop is requested; returns the exit code.
    int run();

private:
    enum class Step { Progressed, Idle, Retry, Halted, Refused };

    TailIndexer(TailOptions options, NodeClient node, NodeClient prefetch_node, Liveness& liveness, SystemdNotifier& notifier,
                std::stop_token stop);

    Step step();
    bool ensure_store();
    // One period of the balance snapshot pass, up to the last irreversible
    // block seen; true when it advanced.
    bool advance_snapshots();
    store::BalanceRules balance_rules() const;
    Step index_range(std::int64_t first, std::int64_t last, const ChainHead& head, std::optional<BlockRef> fork_point);
    Step reconcile_fork(const ChainHead& head);
    std::int64_t target_of(const ChainHead& head) const;
    OpsForm ops_form() const;
    std::int64_t known_to(const ChainHead& head) const;
    // Reading ahead: the next range is fetched and decoded on another thread
    // (with its own connection) while the current batch is committed.
    void start_prefetch(std::int64_t first, std::int64_t last, std::int64_t known_to);
    void discard_prefetch();
    bool prefetched(std::int64_t first) const;
    NodeClientStats combined_node_stats() const;

    Step node_problem(const std::string& message);
    Step database_problem(const std::string& message);
    void report_problem(const std::string& kind, const std::string& message);
    void report_recovery();
    void report_progress(std::int64_t blocks, std::int64_t events, const ChainHead& head);
    void report_caught_up(const ChainHead& head);
    // Logs the liveness endpoint's turns between 200 and 503.
    void report_liveness();
    // The store's state for /metrics, read at most every kMonitorInterval.
    void read_monitored_state();

    TailOptions options_;
    NodeClient node_;
    NodeClient prefetch_node_;
    std::future<FetchOutcome> prefetch_;
    std::int64_t prefetch_first_ = 0;
    std::int64_t prefetch_last_ = 0;
    NodeClientStats prefetch_stats_;
    Liveness& liveness_;
    SystemdNotifier& notifier_;
    std::stop_token stop_;
    std::optional<EventStore> store_;
    std::optional<std::chrono::steady_clock::time_point> monitored_at_;
    std::optional<BlockRef> checkpoint_;  // mirrors indexer_checkpoint; nullopt on a fresh database
    std::int64_t last_irreversible_ = 0;  // the node's, at the last step: the snapshot pass's limit
    store::AccountIds snapshot_ids_;

    std::string last_problem_kind_;
    std::string last_problem_;
    std::chrono::steady_clock::time_point last_problem_logged_{};
    bool caught_up_logged_ = false;
    bool refused_ = false;  // the store is in a bulk load: never write
    bool stalled_ = false;
    bool ready_notified_ = false;
    std::chrono::milliseconds retry_delay_{0};
    // Catch-up rate over the current log window.
    std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
    std::int64_t window_blocks_ = 0;
    std::int64_t window_events_ = 0;
};

}  // namespace wallet::indexer
