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

// Calls in flight per client address in this worker (claimed by an
// Exchange when it starts, released when it ends: a worker that dies takes
// its counts with it), and the bytes of their answers (charged as each call
// is answered, released when the exchange ends).
class ClientCalls {
public:
    // Claims up to `wanted` calls under `limit` (0 = no limit); how many it got.
    std::size_t claim(const std::string& client, std::size_t wanted, std::size_t limit) {
        return in_flight_.claim(client, wanted, limit);
    }
    void release(const std::string& client, std::size_t count) { in_flight_.subtract(client, count); }
    std::size_t in_flight(const std::string& client) const { return in_flight_.of(client); }
    std::size_t clients() const { return in_flight_.clients(); }
    void charge_bytes(const std::string& client, std::size_t bytes) { answer_bytes_.add(client, bytes); }
    void release_bytes(const std::string& client, std::size_t bytes) { answer_bytes_.subtract(client, bytes); }
    std::size_t bytes(const std::string& client) const { return answer_bytes_.of(client); }

private:
    ClientTally in_flight_;
    ClientTally answer_bytes_;
};

class Worker {
public:
    static Worker& get();
    static void shutdown();  // exit_process

    // The transport of one URL of a target (HTTP or WebSocket by its scheme).
    Upstream& upstream(const RouterInstance& instance, std::size_t target, std::size_t url);
    ResponseCache& cache() { return cache_; }
    PoolHealth& pools() { return pools_; }
    ClientCalls& client_calls() { return client_calls_; }
    ClientConnections& client_connections() { return client_connections_; }
    ClientRate& client_rate() { return client_rate_; }
    WsOutput& ws_output() { return ws_output_; }
    std::uint64_t next_upstream_id() { return ++upstream_ids_; }
    RequestId next_request_id();

private:
    Worker();
    ~Worker();
    friend struct std::default_delete<Worker>;

    ClientCalls client_calls_;
    ClientConnections client_connections_;
    ClientRate client_rate_;
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
