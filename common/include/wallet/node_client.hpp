// JSON-RPC client of a Hive node (hived or HAfAH) for the indexer and the
// backfill loader: libcurl with a kept-alive connection, JSON-RPC batches,
// a per-request timeout, a response size cap, validation of every answer
// against its request, and retries with exponential backoff and jitter.
//
// Behind a public node's proxy (t/sim/README.md, "Proxy personalities"):
// batches are cut to the largest size the node accepts, learned from its
// refusals (Drone: HTTP 500 "Batch size too large, maximum allowed is 100";
// jussi: error 1600 "... exceeds 50") and halved after a timeout (Drone runs
// batch items one after another); HTTP 429 is honoured: no request goes to
// the node before its Retry-After has passed. Error bodies end up in the
// failure messages.
//
// Every retryable failure (timeout, transport error, HTTP error status,
// JSON-RPC error, malformed or truncated JSON, oversized response, an answer
// for the wrong block or id) is retried up to `max_attempts` times; after
// that the call returns the last error and the caller decides (the indexer
// waits and tries again, reporting the stall on its liveness endpoint).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "wallet/chain_types.hpp"
#include "wallet/decoder.hpp"
#include "wallet/handles.hpp"
#include "wallet/result.hpp"

namespace wallet {

// Sleeps, waking early when stop is requested; false when it was.
bool interruptible_sleep(std::chrono::milliseconds duration, const std::stop_token& stop);

struct NodeClientOptions {
    std::string url;
    std::chrono::milliseconds timeout{10000};       // CHAIN_RPC_TIMEOUT_MS, per HTTP request
    std::int64_t max_response_bytes = 64LL << 20;   // CHAIN_RPC_MAX_RESPONSE_BYTES
    int max_attempts = 4;                           // per call, the first included
    std::chrono::milliseconds initial_backoff{100};
    std::chrono::milliseconds max_backoff{5000};
    std::stop_token stop;                           // aborts transfers and backoff sleeps
    int max_batch = 1000;                           // items per JSON-RPC batch before any refusal
    // Every block after the first one with a producer_reward carries one
    // (mainnet, the synthetic chain): an empty answer for such a block means
    // the node has not indexed it yet and is refused (CHAIN_EVERY_BLOCK_REWARDED).
    bool every_block_rewarded = true;
};

// How get_ops_in_block is asked: the condenser form (legacy assets; never
// returns reversible blocks), or account_history_api with
// include_reversible=true (NAI assets; any block up to head).
enum class OpsForm { Condenser, AccountHistory };

// The kinds of failure, counted for metrics and for the caller's decisions
// (an oversized batch is worth splitting).
enum class NodeFailure { None, Timeout, Transport, HttpStatus, RpcError, Malformed, Oversized, WrongAnswer, Stopped };
const char* node_failure_name(NodeFailure failure) noexcept;

struct NodeClientStats {
    std::uint64_t calls = 0;         // logical calls (a batch is one)
    std::uint64_t attempts = 0;      // HTTP requests sent
    std::uint64_t failed_calls = 0;  // calls that gave up after all attempts
    std::uint64_t bytes_received = 0;
    std::uint64_t failures[9] = {};  // attempts failed, by NodeFailure
};

// One block's operations as the node listed them: the entries located in
// the answer's text (which `answer` keeps alive), parsed only by the decoder
// and only when they are wallet operations.
struct BlockOps {
    std::int64_t block_num = 0;
    std::vector<RawEntry> entries;
    std::shared_ptr<const std::string> answer;
};

// Ids and times of a block range, plus the id of the block before it (the
// `previous` of the first header), which fork detection compares.
struct BlockRefRange {
    std::string parent_id;
    std::vector<BlockRef> blocks;
    // Per block, its transactions' ids in order: what the operations read in
    // another call must match (a proxy's cache may hold another fork's).
    std::vector<std::vector<std::string>> transaction_ids;
};

class NodeClient {
public:
    static Result<NodeClient> create(NodeClientOptions options);
    NodeClient(NodeClient&&) noexcept;
    NodeClient& operator=(NodeClient&&) noexcept;
    ~NodeClient();

    // Head, head id and time, last irreversible block (database_api form).
    Result<ChainHead> get_dynamic_global_properties();

    // get_ops_in_block(only_virtual=false) for every block of [first, last],
    // in as few JSON-RPC batches as the node accepts. Every entry must carry
    // its requested block number. In the condenser form an empty list (which
    // is also what a node answers for a block it does not consider
    // irreversible yet) is checked once more with account_history_api and
    // include_reversible=true. An empty list is taken as an empty block only
    // for a block at or below `known_to`, the highest block this node itself
    // reported (its head, or its last irreversible block for the condenser
    // form), and never for a block after a producer_reward (see
    // every_block_rewarded): hived and HAfAH answer [] for blocks they do not
    // have yet.
    // Without `known_to` the node is asked for it first.
    Result<std::vector<BlockOps>> get_ops_in_blocks(std::int64_t first, std::int64_t last, OpsForm form,
                                                    std::optional<std::int64_t> known_to = std::nullopt);

    // Ids and times of [first, last] from block_api.get_block_range (whole
    // blocks, ids included; a call no proxy caches), up to 1000 blocks a call.
    Result<BlockRefRange> get_block_refs(std::int64_t first, std::int64_t last);

    // One JSON-RPC call with validation of the envelope only; the result.
    Result<JsonPtr> call(const std::string& method, JsonPtr params);

    const NodeClientStats& stats() const noexcept;
    // The kind of the last failed attempt of the last call (None after a success).
    NodeFailure last_failure() const noexcept;
    // The largest batch the node accepts, as learned so far.
    int batch_limit() const noexcept;
    // When the node, having answered 429, may be asked again (past: now).
    std::chrono::steady_clock::time_point not_before() const noexcept;

    struct Impl;

private:
    explicit NodeClient(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace wallet
