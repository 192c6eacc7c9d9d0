// The router's per-worker state: the upstream transports of every URL, the
// response cache and the pool health, created on first use in each worker
// process and destroyed at its exit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ngx_http_jsonrpc_router_cache.hpp"
#include "ngx_http_jsonrpc_router_clients.hpp"
#include "ngx_http_jsonrpc_router_exchange.hpp"
#include "ngx_http_jsonrpc_router_health.hpp"

namespace jsonrpc_router {

class Worker {
public:
    static Worker& get();
    static void shutdown();  // exit_process

    // The transport of one URL of a target (HTTP or WebSocket by its scheme).
    Upstream& upstream(const RouterInstance& instance, std::size_t target, std::size_t url);
    ResponseCache& cache() { return cache_; }
    PoolHealth& pools() { return pools_; }
    // Per client address: connections, calls in flight and their answer
    // bytes (claimed by an Exchange when it starts, released when it ends),
    // WebSocket output and answer rate.
    ClientRecords& clients() { return clients_; }
    WsOutput& ws_output() { return ws_output_; }
    std::uint64_t next_upstream_id() { return ++upstream_ids_; }
    RequestId next_request_id();

private:
    Worker();
    ~Worker();
    friend struct std::default_delete<Worker>;

    ClientRecords clients_;
    WsOutput ws_output_;
    std::unordered_map<const RouterInstance*, std::vector<std::unique_ptr<Upstream>>> upstreams_;
    ResponseCache cache_;
    // Destroyed first (declared last): the polls' calls still use the upstreams.
    PoolHealth pools_;
    std::uint64_t upstream_ids_ = 0;
    std::uint64_t request_ids_ = 0;
    std::uint64_t request_id_seed_ = 0;
};

}  // namespace jsonrpc_router
