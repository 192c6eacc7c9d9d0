// The backfill's node pool (BACKFILL_RPC_URLS): every worker holds one node
// client per URL (its own kept-alive connection) and spreads its batches
// over the pool; the health of each node is shared by all workers.
//
// A failed request (timeout, HTTP or JSON-RPC error, a malformed, truncated,
// oversized or wrong answer: the node client's checks) is retried at once on
// the next node, and the failing node is avoided for a while, longer after
// each consecutive failure, and at least as long as its Retry-After.
//
// Each node is asked only for blocks at or below its own last irreversible
// block (learned from it, asked again when a range lies above it): a node
// whose history lags never answers for blocks it does not have. The pool keeps working while one node answers;
// it gives up only after no node has answered for `give_up_after`.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "wallet/chain_types.hpp"
#include "wallet/node_client.hpp"
#include "wallet/result.hpp"

namespace wallet::backfill {

struct NodePoolOptions {
    std::vector<std::string> urls;
    std::chrono::milliseconds timeout{30000};      // BACKFILL_RPC_TIMEOUT_MS, per request
    std::int64_t max_response_bytes = 64LL << 20;  // CHAIN_RPC_MAX_RESPONSE_BYTES
    bool every_block_rewarded = true;              // CHAIN_EVERY_BLOCK_REWARDED
    std::chrono::milliseconds first_avoid{1000};   // after one failure
    std::chrono::milliseconds max_avoid{60000};
    std::chrono::milliseconds give_up_after{std::chrono::minutes(10)};
    std::chrono::milliseconds log_interval{10000};
};

struct NodeHealth {
    std::string url;  // without credentials
    std::uint64_t requests = 0;
    std::uint64_t failures = 0;
    std::uint64_t blocks = 0;
    std::uint64_t failures_by_kind[9] = {};  // by NodeFailure
};

// Shared by the workers of one process.
class NodePool {
public:
    using Clock = std::chrono::steady_clock;
    explicit NodePool(NodePoolOptions options);

    const NodePoolOptions& options() const noexcept { return options_; }
    std::size_t size() const noexcept { return options_.urls.size(); }

    // The first node at or after `preferred` (in pool order) that is not
    // avoided; otherwise nullopt and the time the first one may be tried again.
    struct Pick {
        std::optional<std::size_t> node;
        Clock::time_point retry_at;
    };
    Pick pick(std::size_t preferred) const;

    void report_success(std::size_t node, std::uint64_t blocks);
    // Avoids the node for a while (at least until `not_before`). Returns the
    // failures of the node since its last log line when one is due (at most
    // one per node per log_interval).
    std::optional<std::uint64_t> report_failure(std::size_t node, NodeFailure kind, const std::string& message,
                                                Clock::time_point not_before = {});

    // The node's last irreversible block as it last reported it, and whether
    // that report is recent enough not to ask again.
    std::optional<std::int64_t> known_lib(std::size_t node) const;
    bool lib_recent(std::size_t node) const;
    void record_lib(std::size_t node, std::int64_t lib);
    // The last failure of any node, for the give-up message.
    std::string last_error() const;

    // When some node last answered (the pool's creation before any did).
    Clock::time_point last_success() const;
    std::vector<NodeHealth> health() const;

private:
    struct State {
        NodeHealth health;
        int consecutive_failures = 0;
        Clock::time_point avoid_until{};
        std::optional<std::int64_t> lib;
        Clock::time_point lib_checked{};
        Clock::time_point last_logged{};
        std::uint64_t unlogged_failures = 0;
    };
    NodePoolOptions options_;
    mutable std::mutex mutex_;
    std::vector<State> nodes_;
    Clock::time_point last_success_;
    std::string last_error_ = "no node answered yet";
};

// A worker's clients of the pool's nodes.
class PoolClient {
public:
    // `first_node` spreads the workers' first choices over the pool.
    static Result<PoolClient> create(NodePool& pool, std::size_t first_node, std::stop_token stop);

    // get_ops_in_block for [first, last] (condenser form, as the indexer reads
    // irreversible blocks), from whichever node has them irreversible and
    // answers; an oversized answer is asked again in halves.
    Result<std::vector<BlockOps>> get_ops_in_blocks(std::int64_t first, std::int64_t last);

    // The highest last irreversible block among the nodes that answer (each
    // node's own is recorded in the pool).
    Result<std::int64_t> highest_lib();

private:
    PoolClient(NodePool& pool, std::vector<NodeClient> clients, std::size_t first_node, std::stop_token stop);

    // Runs `call` on nodes in turn until one succeeds, stop is requested, or
    // the pool gives up. `call` returns the result and the blocks it read, or
    // nullopt when the node cannot serve the request (yet): the next is tried.
    template <typename T, typename Call>
    Result<T> on_some_node(const std::string& what, Call call);
    std::string client_url(std::size_t node) const;

    NodePool* pool_;
    std::vector<NodeClient> clients_;
    std::size_t next_node_;
    std::stop_token stop_;
};

}  // namespace wallet::backfill
