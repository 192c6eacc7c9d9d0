// The simulated node: a chain (real-data or synthetic), a head that advances,
// irreversibility, forks and injected faults, answering hived's JSON-RPC.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy.hpp"
#include "real_chain.hpp"
#include "synthetic_chain.hpp"
#include "wallet/http_server.hpp"
#include "wallet/result.hpp"

namespace sim {

enum class FaultKind { none, delay, hang, http_500, http_503, rpc_error, truncated, malformed, oversized, wrong_block };
std::optional<FaultKind> parse_fault_kind(std::string_view name);
std::string_view fault_kind_name(FaultKind kind);

struct FaultOptions {
    std::uint32_t per_million = 0;  // share of JSON-RPC requests that fail
    std::vector<FaultKind> kinds;   // chosen per faulty request, deterministically
    std::uint64_t seed = 1;
    std::chrono::milliseconds delay{2000};
    std::chrono::milliseconds hang{std::chrono::minutes(10)};
    std::size_t oversize_bytes = 64 * 1024 * 1024;  // oversized responses exceed this
    std::vector<std::string> methods;               // only requests calling one of these (empty: all)
    std::optional<std::uint64_t> count;             // only this many faults, then none
};

struct NodeOptions {
    std::filesystem::path fixtures;                  // real-data chain; empty: synthetic chain
    SyntheticOptions synthetic;                      // seed and naming of the synthetic chain (and of fork content)
    std::uint32_t initial_head = 0;                  // synthetic: chain length at start; real: 0 = the fixtures' head
    std::chrono::milliseconds block_interval{3000};  // 0: the head moves only on command
    // The instant the head starts advancing, shared by the processes of a node pool.
    std::optional<std::chrono::system_clock::time_point> epoch;
    std::optional<std::uint32_t> lib_lag;  // default: 20 on the real chain (as its fixture), 1 otherwise
    bool irreversible = true;              // false: the node reports no last irreversible block
    FaultOptions faults;
    std::uint32_t history_blocks = 20000;  // synthetic chain: account history covers the latest blocks only
    // A pool member's own view: head = the shared head + head_offset (negative:
    // lagging), and its history (HAfAH) this many blocks behind its head,
    // answering an empty list for blocks above (as hived and HAfAH do).
    std::int64_t head_offset = 0;
    std::uint32_t history_lag = 0;
    ProxyOptions proxy;
};

class Node {
public:
    static wallet::Result<std::unique_ptr<Node>> create(NodeOptions options);
    ~Node();

    // POST / (JSON-RPC), POST /sim/control, GET /sim/status.
    void handle(const wallet::HttpRequest& request, wallet::HttpResponse& response);

    std::string status_json();
    // A one-line description for the start-up log.
    std::string describe() const;

    struct Impl;

private:
    explicit Node(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sim
