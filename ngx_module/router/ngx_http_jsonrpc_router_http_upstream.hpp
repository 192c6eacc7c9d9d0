// HTTP/1.1 targets (http://, https://, sock://): a keep-alive pool of
// connections per URL and worker, one call at a time on each.
#pragma once

#include <cstddef>
#include <memory>

#include "ngx_http_jsonrpc_router_exchange.hpp"

namespace jsonrpc_router {

std::unique_ptr<Upstream> make_http_upstream(const RouterInstance& instance, std::size_t target, std::size_t url);

}  // namespace jsonrpc_router
