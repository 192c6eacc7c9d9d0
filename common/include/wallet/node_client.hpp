// JSON-RPC client of a Hive node (hived or HAfAH) for the indexer and the
// backfill loader: libcurl with a kept-alive connection, JSON-RPC batches,
// a per-request timeout, a response size cap, validation of every answer
// against its request, and retries with exponential backoff and jitter.
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
    // in one JSON-RPC batch. Every entry must carry its requested block
    // number. In the condenser form an empty list (which is also what a node
    // answers for a block it does not consider irreversible yet) is checked
    // once more with account_history_api and include_reversible=true.
    Result<std::vector<BlockOps>> get_ops_in_blocks(std::int64_t first, std::int64_t last, OpsForm form);

    // block_api.get_block_header for [first, last + 1] in one batch: the id of
    // block N is the `previous` of header N+1. When last is the head, its id
    // comes from block_api.get_block_range.
    Result<BlockRefRange> get_block_refs(std::int64_t first, std::int64_t last);

    // One JSON-RPC call with validation of the envelope only; the result.
    Result<JsonPtr> call(const std::string& method, JsonPtr params);

    const NodeClientStats& stats() const noexcept;
    // The kind of the last failed attempt of the last call (None after a success).
    NodeFailure last_failure() const noexcept;

    struct Impl;

private:
    explicit NodeClient(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace wallet
