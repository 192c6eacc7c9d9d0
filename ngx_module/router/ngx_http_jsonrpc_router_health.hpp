// The health of node pools and chain nodes: which URL of a target gets a
// call (round robin over the URLs that are in and not lagging), failures
// that take a URL out, and the background polls that learn a chain node's
// head and last irreversible block and probe a URL that is out back in.
// The state is UrlHealth in shared memory (ngx_http_jsonrpc_router_instance).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ngx_http_jsonrpc_router_instance.hpp"

namespace jsonrpc_router {

class UrlPoller;

// Counts an answer (ok) or a failure of a URL; a URL of a pool goes out
// after its target's `failures` consecutive failures and comes back with an
// answer. Returns the failures counted before. Nothing without health.
std::uint64_t record_health(UrlHealth* health, const router::Target& target, std::size_t url, bool ok);

// The status answer (`GET /`) with the health of every URL of the chain
// nodes and pools, and what their polls learned.
std::string health_status(const RouterInstance& instance);

// The per-worker part: round-robin positions and the pollers.
class PoolHealth {
public:
    PoolHealth();
    ~PoolHealth();
    PoolHealth(const PoolHealth&) = delete;
    PoolHealth& operator=(const PoolHealth&) = delete;

    // Starts polling the chain nodes and pools of an instance (init_process).
    void start_polls(const RouterInstance& instance);
    // The next URL of a target for a call: round robin over the URLs that
    // are in and not lagging; when none is, any but `exclude` (nullopt when
    // `exclude` is set: a retry goes only to a healthy URL).
    std::optional<std::size_t> pick_url(const RouterInstance& instance, std::size_t target,
                                        std::optional<std::size_t> exclude);

private:
    std::unordered_map<const RouterInstance*, std::vector<std::size_t>> next_url_;  // per target
    std::vector<std::unique_ptr<UrlPoller>> pollers_;
};

}  // namespace jsonrpc_router
