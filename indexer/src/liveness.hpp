// The indexer's liveness state (decisions.md section 4), shared between the
// tail loop (which records) and the HTTP endpoint (which reports):
//   GET /health   200 {"ok":true,...} while progressing,
//                 503 {"ok":false,"reason":...} after INDEXER_HEALTH_MAX_STALL_MS
//                 without progress, or at once when indexing halted;
//   GET /metrics  Prometheus text format.
// Progress means a committed batch, or a poll that finds the index caught up
// with the node's target; a node without a last irreversible block, an
// unreachable node or database, or undecodable data is not progress.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "wallet/chain_types.hpp"
#include "wallet/event_store.hpp"
#include "wallet/http_server.hpp"
#include "wallet/node_client.hpp"

namespace wallet::indexer {

class Liveness {
public:
    using Clock = std::chrono::steady_clock;

    explicit Liveness(std::chrono::milliseconds max_stall);

    void set_indexed(std::int64_t block);
    // A committed batch; `at_target` when it reached the node's current target.
    void record_batch(std::int64_t indexed_block, std::int64_t blocks, std::int64_t events_offered, std::int64_t rows_inserted,
                      bool at_target, std::int64_t balance_undecodable = 0);
    void record_caught_up(std::int64_t indexed_block);
    void record_head(const ChainHead& head);
    // The current obstacle to progress (shown in /health), cleared by progress.
    void record_problem(std::string problem);
    void record_fork(std::int64_t depth);
    void record_database_error();
    void set_node_stats(const NodeClientStats& stats);
    // The store's state for monitoring (the backfill's shards, the standbys).
    void set_monitored_state(EventStore::MonitoredState state);
    // Indexing stopped for good (a fork deeper than INDEXER_MAX_FORK_DEPTH).
    void halt(std::string reason);

    bool healthy() const;
    // Why /health answers 503 ("" while healthy).
    std::string unhealthy_reason() const;
    // The body and status of GET /health.
    std::pair<int, std::string> health() const;
    std::string metrics() const;

    // The HTTP handler of the endpoint.
    void handle(const HttpRequest& request, HttpResponse& response) const;

private:
    bool healthy_locked(Clock::time_point now) const;
    std::string reason_locked(Clock::time_point now) const;

    const std::chrono::milliseconds max_stall_;
    const Clock::time_point started_ = Clock::now();
    mutable std::mutex mutex_;
    std::int64_t indexed_block_ = 0;
    std::optional<ChainHead> head_;
    Clock::time_point last_progress_ = started_;
    std::string problem_;
    std::optional<std::string> halted_;
    bool caught_up_ = false;
    std::uint64_t blocks_total_ = 0;
    std::uint64_t batches_total_ = 0;
    std::uint64_t events_total_ = 0;
    std::uint64_t rows_inserted_total_ = 0;
    std::uint64_t balance_undecodable_total_ = 0;
    std::uint64_t forks_total_ = 0;
    std::int64_t deepest_fork_ = 0;
    std::uint64_t database_errors_total_ = 0;
    NodeClientStats node_stats_;
    EventStore::MonitoredState monitored_;
};

}  // namespace wallet::indexer
