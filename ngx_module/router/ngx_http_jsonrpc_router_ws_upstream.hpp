// WebSocket targets (ws://, wss://): a few connections per URL and worker,
// many calls in flight on each, answers matched by the id sent upstream.
#pragma once

#include <cstddef>
#include <memory>

#include "ngx_http_jsonrpc_router_exchange.hpp"

namespace jsonrpc_router {

std::unique_ptr<Upstream> make_ws_upstream(const RouterInstance& instance, std::size_t target, std::size_t url);

}  // namespace jsonrpc_router
