// The settings of one `jsonrpc_router` location, fixed at configuration
// time and shared by every unit of the router's runtime, and the health of
// its URLs in shared memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ngx_http_jsonrpc_router_clients.hpp"
#include "ngx_wallet_nginx.hpp"
#include "router_config.hpp"
#include "router_metrics.hpp"
#include "router_request.hpp"

namespace jsonrpc_router {

// nginx's cached wall clock, in milliseconds (expiries shared through Redis
// and shared memory are wall-clock times).
inline std::int64_t wall_clock_ms() {
    ngx_time_t* tp = ngx_timeofday();
    return static_cast<std::int64_t>(tp->sec) * 1000 + static_cast<std::int64_t>(tp->msec);
}

// The health of one URL of a target, in shared memory so that every worker
// sees it: consecutive failures (calls and polls), whether the URL is out,
// and for chain nodes what its last poll said. Polls run in the background:
// the worker that moves next_poll_ms forward (compare-and-swap) polls.
struct UrlHealth {
    std::atomic<std::int64_t> next_poll_ms{0};   // wall clock
    std::atomic<std::uint64_t> head{0};          // head block number last reported (0 = unknown)
    std::atomic<std::uint64_t> lib{0};           // last irreversible block last reported (0 = unknown)
    std::atomic<std::uint64_t> failures{0};      // consecutive failed calls or polls
    std::atomic<std::uint32_t> down{0};          // out of the pool until a poll succeeds
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "shared-memory counters must be lock-free");

// Settings of one `jsonrpc_router` location, fixed at configuration time.
struct RouterInstance {
    router::RoutingTable table;
    std::vector<std::vector<ngx_addr_t>> target_addrs;  // resolved at configuration time, per target and URL
    std::vector<std::size_t> first_url;     // per target: index of its first URL among all URLs
    std::vector<std::string> cache_key_heads;  // per target: jsonrpc_router_cache_prefix + router::target_cache_tag
    router::RequestLimits limits;
    ngx_addr_t redis_addr{};                 // sockaddr of Redis (TCP or unix)
    std::string redis_name;                  // for logs
    bool redis_enabled = true;
    ngx_msec_t redis_timeout = 100;          // one cache command
    ngx_msec_t redis_retry = 1000;           // back-off after Redis failed
    std::size_t memory_cache_bytes = 0;      // per-worker layer in front of Redis (0 = off)
    std::size_t keepalive = 32;              // idle upstream connections kept per target
    std::size_t upstream_connections = 64;   // per http(s):// URL and worker; then calls queue
    std::size_t upstream_queue = 1024;       // calls waiting per URL and worker; then error 1500
    std::size_t upstream_client_share = 50;  // percent of upstream_connections one client address may hold
    ngx_msec_t keepalive_timeout = 60000;
    std::size_t ws_upstream_connections = 2; // per ws:// target per worker
    std::size_t max_response = 16 << 20;     // the answer of one request (all its calls), and so of any target body
    std::size_t max_client_calls = 200;      // calls in flight per client address and worker (0 = no limit)
    std::size_t max_client_response = 32 << 20;  // answer bytes in flight per client address and worker
    std::size_t client_rate = 16 << 20;      // answer bytes per second per client address and worker (0 = no limit)

    // How long `client` waits before its next request is read: it took more
    // than max_client_response beyond client_rate per second.
    ngx_msec_t client_rate_wait(ClientRecord* client) const {
        if (client == nullptr) return 0;
        return static_cast<ngx_msec_t>(client->rate_wait_ms(ngx_current_msec, client_rate, max_client_response));
    }
    ngx_ssl_t* ssl = nullptr;                // client TLS context (https/wss targets)
    bool ssl_verify = true;
    ngx_cycle_t* cycle = nullptr;            // the configuration cycle this instance belongs to
    ngx_shm_zone_t* health_zone = nullptr;   // UrlHealth per URL; null without chain nodes and pools
    ngx_shm_zone_t* metrics_zone = nullptr;  // router::RouterMetrics counters of this routing table
    std::vector<router::Route> probe_routes; // per target: how a poll reaches it

    // Connections of a URL one client address may hold at once (at least one).
    std::size_t upstream_client_connections() const {
        return std::max<std::size_t>(1, upstream_connections * upstream_client_share / 100);
    }
    std::size_t url_count() const { return first_url.empty() ? 0 : first_url.back() + table.targets.back().urls.size(); }
    // Shared health of a URL of a chain node or a pool (nullptr otherwise).
    UrlHealth* url_health(std::size_t target, std::size_t url) const {
        const router::Target& t = table.targets[target];
        if (health_zone == nullptr || health_zone->data == nullptr || !(t.chain_node || t.pool())) return nullptr;
        return static_cast<UrlHealth*>(health_zone->data) + first_url[target] + url;
    }
    // The shared counters (nullopt before the zone is mapped).
    std::optional<router::RouterMetrics> metrics() const {
        if (metrics_zone == nullptr || metrics_zone->data == nullptr) return std::nullopt;
        return router::RouterMetrics::attach(metrics_zone->data, table);
    }
};

}  // namespace jsonrpc_router
