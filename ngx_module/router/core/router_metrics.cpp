#include "router_metrics.hpp"

#include <algorithm>
#include <new>

namespace router {

namespace {

std::size_t url_count(const RoutingTable& table) {
    std::size_t n = 0;
    for (const Target& t : table.targets) n += t.urls.size();
    return n;
}

constexpr std::array<const char*, 2> kTransports = {"http", "ws"};
constexpr std::array<const char*, 3> kCacheResults = {"hit", "miss", "coalesced"};
constexpr std::array<const char*, 3> kUpstreamErrors = {"timeout", "bad_answer", "unavailable"};
constexpr std::array<const char*, 4> kLimits = {"client_connections", "client_calls", "response", "client_response"};
constexpr const char* kUnrouted = "unrouted";

// Calls `f(target, endpoint, url index)` for every URL of a table.
template <typename F>
void each_url(const RoutingTable& table, F f) {
    std::size_t index = 0;
    for (const Target& t : table.targets) {
        for (const Endpoint& e : t.urls) f(t, e, index++);
    }
}

}  // namespace

std::size_t RouterMetrics::bytes_for(const RoutingTable& table) {
    return sizeof(RouterCountersHead) + sizeof(RouteCounters) * table.routes.size() +
           sizeof(UrlCounters) * url_count(table);
}

RouterMetrics::RouterMetrics(void* memory, const RoutingTable& table)
    : table_(&table),
      head_(static_cast<RouterCountersHead*>(memory)),
      routes_(reinterpret_cast<RouteCounters*>(head_ + 1)),
      urls_(reinterpret_cast<UrlCounters*>(routes_ + table.routes.size())) {}

RouterMetrics RouterMetrics::construct(void* memory, const RoutingTable& table) {
    RouterMetrics view(memory, table);
    new (view.head_) RouterCountersHead();
    for (std::size_t i = 0; i < table.routes.size(); ++i) new (view.routes_ + i) RouteCounters();
    for (std::size_t i = 0, n = url_count(table); i < n; ++i) new (view.urls_ + i) UrlCounters();
    return view;
}

RouterMetrics RouterMetrics::attach(void* memory, const RoutingTable& table) { return RouterMetrics(memory, table); }

void RouterMetrics::count_call(const Route* route, ClientTransport transport) const {
    const auto t = static_cast<std::size_t>(transport);
    if (route == nullptr) {
        metrics::add(head_->unrouted_calls[t]);
    } else {
        metrics::add(routes_[static_cast<std::size_t>(route - table_->routes.data())].calls[t]);
    }
}

void write_router_metrics(metrics::TextWriter& out, const std::vector<RouterScrape>& routers) {
    out.family("jsonrpc_router_requests_total", "counter",
               "Request bodies received: HTTP POSTs and WebSocket messages (a batch is one).");
    for (std::size_t t = 0; t < kTransports.size(); ++t) {
        std::uint64_t total = 0;
        for (const RouterScrape& r : routers) total += r.metrics.head().requests[t].load(std::memory_order_relaxed);
        out.sample("jsonrpc_router_requests_total", {{"transport", kTransports[t]}}, total);
    }
    out.family("jsonrpc_router_calls_total", "counter",
               "JSON-RPC calls (batch elements counted one by one) by the route pattern that matched; "
               "route=\"unrouted\": no route matched or the call was invalid.");
    for (std::size_t t = 0; t < kTransports.size(); ++t) {
        std::uint64_t unrouted = 0;
        for (const RouterScrape& r : routers) unrouted += r.metrics.head().unrouted_calls[t].load(std::memory_order_relaxed);
        out.sample("jsonrpc_router_calls_total", {{"route", kUnrouted}, {"transport", kTransports[t]}}, unrouted);
    }
    for (const RouterScrape& r : routers) {
        for (std::size_t i = 0; i < r.table->routes.size(); ++i) {
            for (std::size_t t = 0; t < kTransports.size(); ++t) {
                out.sample("jsonrpc_router_calls_total",
                           {{"route", r.table->routes[i].pattern.text()}, {"transport", kTransports[t]}},
                           r.metrics.route(i).calls[t].load(std::memory_order_relaxed));
            }
        }
    }
    out.family("jsonrpc_router_cache_total", "counter",
               "Cacheable calls by route and outcome: hit (memory or Redis), miss (asked the target), "
               "coalesced (waited for an identical miss of the same worker).");
    for (const RouterScrape& r : routers) {
        for (std::size_t i = 0; i < r.table->routes.size(); ++i) {
            for (std::size_t c = 0; c < kCacheResults.size(); ++c) {
                out.sample("jsonrpc_router_cache_total",
                           {{"route", r.table->routes[i].pattern.text()}, {"result", kCacheResults[c]}},
                           r.metrics.route(i).cache[c].load(std::memory_order_relaxed));
            }
        }
    }
    out.family("jsonrpc_router_upstream_duration_seconds", "histogram",
               "Upstream requests by target and URL, from sending to the answer, failure or timeout "
               "(a retry on another URL is a second request; polls are not counted).");
    for (const RouterScrape& r : routers) {
        each_url(*r.table, [&](const Target& t, const Endpoint& e, std::size_t u) {
            out.histogram("jsonrpc_router_upstream_duration_seconds", {{"target", t.name}, {"url", e.url}},
                          r.metrics.url(u).latency);
        });
    }
    out.family("jsonrpc_router_upstream_errors_total", "counter",
               "Failed upstream requests by target, URL and error: timeout, bad_answer (not a JSON-RPC "
               "response), unavailable (refused, dropped, TLS). A JSON-RPC error of the node is an answer.");
    for (const RouterScrape& r : routers) {
        each_url(*r.table, [&](const Target& t, const Endpoint& e, std::size_t u) {
            for (std::size_t k = 0; k < kUpstreamErrors.size(); ++k) {
                out.sample("jsonrpc_router_upstream_errors_total",
                           {{"target", t.name}, {"url", e.url}, {"error", kUpstreamErrors[k]}},
                           r.metrics.url(u).errors[k].load(std::memory_order_relaxed));
            }
        });
    }
    out.family("jsonrpc_router_upstream_in_flight", "gauge",
               "Upstream requests sent and not yet answered, failed or timed out, by target and URL "
               "(bounded by jsonrpc_router_upstream_connections and _upstream_queue per worker).");
    for (const RouterScrape& r : routers) {
        each_url(*r.table, [&](const Target& t, const Endpoint& e, std::size_t u) {
            out.sample("jsonrpc_router_upstream_in_flight", {{"target", t.name}, {"url", e.url}},
                       r.metrics.url(u).in_flight.load(std::memory_order_relaxed));
        });
    }
    out.family("jsonrpc_router_url_in", "gauge",
               "1 while a URL of a node pool or chain node is in (gets calls), 0 while it is out.");
    for (const RouterScrape& r : routers) {
        each_url(*r.table, [&](const Target& t, const Endpoint& e, std::size_t u) {
            if (u < r.url_in.size() && r.url_in[u] >= 0) {
                out.sample("jsonrpc_router_url_in", {{"target", t.name}, {"url", e.url}},
                           static_cast<std::uint64_t>(r.url_in[u]));
            }
        });
    }
    // The chain nodes' blocks as their last poll reported them: the chain's
    // head and last irreversible block, and each node's lag behind the best.
    const auto write_blocks = [&](const char* name, const char* help, std::vector<std::uint64_t> RouterScrape::*blocks) {
        out.family(name, "gauge", help);
        for (const RouterScrape& r : routers) {
            each_url(*r.table, [&](const Target& t, const Endpoint& e, std::size_t u) {
                const auto& known = r.*blocks;
                if (t.chain_node && u < known.size() && known[u] > 0) {
                    out.sample(name, {{"target", t.name}, {"url", e.url}}, known[u]);
                }
            });
        }
    };
    write_blocks("jsonrpc_router_url_head_block",
                 "Head block number a chain node's URL reported at its last successful poll.", &RouterScrape::url_head);
    write_blocks("jsonrpc_router_url_irreversible_block",
                 "Last irreversible block a chain node's URL reported at its last successful poll.",
                 &RouterScrape::url_lib);
    out.family("jsonrpc_router_redis_errors_total", "counter",
               "Redis failures (connect, timeout, broken connection, bad reply); each one serves uncached "
               "and skips Redis for a second.");
    std::uint64_t redis = 0;
    for (const RouterScrape& r : routers) redis += r.metrics.head().redis_errors.load(std::memory_order_relaxed);
    out.sample("jsonrpc_router_redis_errors_total", {}, redis);
    out.family("jsonrpc_router_limited_total", "counter",
               "What a client budget refused, by limit: client_connections (a connection, 503), client_calls "
               "(a call over the calls in flight), response and client_response (an answer over the bytes "
               "of one request or of one client's answers in flight: response_too_large).");
    for (std::size_t l = 0; l < kLimits.size(); ++l) {
        std::uint64_t limited = 0;
        for (const RouterScrape& r : routers) limited += r.metrics.head().limited[l].load(std::memory_order_relaxed);
        out.sample("jsonrpc_router_limited_total", {{"limit", kLimits[l]}}, limited);
    }
    out.family("jsonrpc_router_ws_output_bytes", "gauge",
               "WebSocket answers queued to clients that have not read them yet, bytes (every worker's).");
    std::uint64_t queued = 0;
    std::uint64_t peak = 0;
    for (const RouterScrape& r : routers) {
        queued += r.metrics.head().ws_output_bytes.load(std::memory_order_relaxed);
        peak = std::max(peak, r.metrics.head().ws_output_peak_bytes.load(std::memory_order_relaxed));
    }
    out.sample("jsonrpc_router_ws_output_bytes", {}, queued);
    out.family("jsonrpc_router_ws_output_peak_bytes", "gauge",
               "The highest jsonrpc_router_ws_output_bytes has been (after each answer is queued and the "
               "worker's budget enforced).");
    out.sample("jsonrpc_router_ws_output_peak_bytes", {}, peak);
}

}  // namespace router
