// The router's metrics: the counters of one routing table in one block of
// shared memory (every worker adds to them with relaxed atomics, no lock),
// and their Prometheus text. Labels come from the routing file only (route
// pattern, target name, target URL) or are fixed words: a method name sent
// by a client never becomes a label, so the number of series is bounded by
// the file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "metrics_text.hpp"
#include "router_config.hpp"

namespace router {

enum class ClientTransport : std::size_t { Http, WebSocket };
enum class CacheResult : std::size_t { Hit, Miss, Coalesced };
enum class UpstreamError : std::size_t { Timeout, BadAnswer, Unavailable };
// A client budget that refused something: a connection (503), a call (an
// error in its place), an answer (response_too_large). One per directive
// jsonrpc_router_max_client_connections, _max_client_calls, _max_response, _max_client_response.
enum class Limit : std::size_t { ClientConnections, ClientCalls, Response, ClientResponse };

struct RouteCounters {
    std::array<metrics::Counter, 2> calls{};  // by ClientTransport
    std::array<metrics::Counter, 3> cache{};  // by CacheResult
};

struct UrlCounters {
    metrics::Histogram latency;               // every upstream attempt, failed ones too
    std::array<metrics::Counter, 3> errors{};  // by UpstreamError
    // Requests sent and not yet ended (every worker adds and takes back its own).
    metrics::Counter in_flight{0};
};

struct RouterCountersHead {
    std::array<metrics::Counter, 2> requests{};        // bodies: HTTP POSTs, WebSocket messages
    std::array<metrics::Counter, 2> unrouted_calls{};  // no route, or not a valid call
    metrics::Counter redis_errors{0};
    std::array<metrics::Counter, 4> limited{};  // by Limit
    // WebSocket answers queued to clients (bytes, all workers: each adds
    // and takes back its own), and the highest that sum has been.
    metrics::Counter ws_output_bytes{0};
    metrics::Counter ws_output_peak_bytes{0};
};

// A view of the counters of one routing table: the head, one RouteCounters
// per route, one UrlCounters per URL (targets in file order).
class RouterMetrics {
public:
    static std::size_t bytes_for(const RoutingTable& table);
    // Constructs zeroed counters in `memory` (bytes_for(table) bytes, aligned for atomics).
    static RouterMetrics construct(void* memory, const RoutingTable& table);
    // A view of counters constructed before (by any process sharing the memory).
    static RouterMetrics attach(void* memory, const RoutingTable& table);

    RouterCountersHead& head() const { return *head_; }
    // `route`: index into table.routes.
    RouteCounters& route(std::size_t route) const { return routes_[route]; }
    // `url`: index among all URLs (the target's first URL + its index).
    UrlCounters& url(std::size_t url) const { return urls_[url]; }

    void count_call(const Route* route, ClientTransport transport) const;

private:
    RouterMetrics(void* memory, const RoutingTable& table);
    const RoutingTable* table_;
    RouterCountersHead* head_;
    RouteCounters* routes_;
    UrlCounters* urls_;
};

// What the text of one routing table needs besides its counters: whether
// each URL (all URLs, targets in file order) is in its pool (1), out (0),
// or not watched (-1: a target with one URL that is not a chain node), and
// for chain nodes the head and last irreversible block its last poll
// reported (0: not known yet; empty vectors: none known).
struct RouterScrape {
    const RoutingTable* table;
    RouterMetrics metrics;
    std::vector<int> url_in;
    std::vector<std::uint64_t> url_head{};
    std::vector<std::uint64_t> url_lib{};
};

// The families of every routing table, each family once.
void write_router_metrics(metrics::TextWriter& out, const std::vector<RouterScrape>& routers);

}  // namespace router
