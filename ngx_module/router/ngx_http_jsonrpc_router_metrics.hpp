// Where the router's runtime counts into its metrics (router::RouterMetrics
// in a shared memory zone per routing table, router/core/router_metrics),
// and the Prometheus page of `jsonrpc_router_metrics`. Each is a no-op
// before the zone is mapped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ngx_http_jsonrpc_router_instance.hpp"

namespace jsonrpc_router {

// A request body (HTTP POST or WebSocket message); `unplanned`: the whole
// body was invalid, counted as one unrouted call.
void count_request(const RouterInstance& instance, router::ClientTransport transport, bool unplanned);
// A call of a client by its route (nullptr: unrouted or invalid).
void count_call(const RouterInstance& instance, const router::Route* route, router::ClientTransport transport);
void count_cache(const RouterInstance& instance, const router::Route& route, router::CacheResult result);
void count_redis_error(const RouterInstance& instance);
// WebSocket output queued (`delta` > 0) or gone (< 0) on a connection of this routing table.
void count_ws_output(const RouterInstance& instance, std::int64_t delta);
// Raises the peak of the queued WebSocket output to what is queued now.
void note_ws_output_peak(const RouterInstance& instance);
// A client budget refused `n` calls, a connection or an answer.
void count_limited(const RouterInstance& instance, router::Limit limit, std::uint64_t n = 1);
// An upstream request to URL `url` of `target` was sent (in flight until count_upstream or upstream_abandoned).
void count_upstream_sent(const RouterInstance& instance, std::size_t target, std::size_t url);
// An upstream request in flight was cancelled before it ended (its caller went away): not a request's latency.
void upstream_abandoned(const RouterInstance& instance, std::size_t target, std::size_t url);
// An upstream request to URL `url` of `target` sent at `sent_us`
// (metrics::monotonic_us) ended now: its latency, and its error if any.
void count_upstream(const RouterInstance& instance, std::size_t target, std::size_t url, std::uint64_t sent_us,
                    std::optional<router::UpstreamError> error);

// The Prometheus text of the router locations of the running configuration
// among `instances` (one zone per routing table), then the wallet_history
// API's.
std::string metrics_page(const std::vector<RouterInstance*>& instances);

}  // namespace jsonrpc_router
