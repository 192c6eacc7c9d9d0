// Who a client is, for the router's and the API's limits alike: the address
// nginx sees (the peer, or what nginx's realip module set from a trusted
// proxy's header), carried from the router to the API of the same nginx with
// a token no client knows (api_limits.hpp: kRouterClientHeader).
#pragma once

#include <string_view>

#include "ngx_wallet_nginx.hpp"

namespace wallet::ngx {

// The client address of a request (text form; "unix:" on a unix socket).
inline std::string_view client_address(const ngx_http_request_t* r) {
    return {reinterpret_cast<const char*>(r->connection->addr_text.data), r->connection->addr_text.len};
}

// Makes the token once per nginx master (at configuration, before the
// workers fork, so that they all share it; a reload keeps it). False when
// the system has no randomness to give.
bool make_router_token();
// The token (empty before make_router_token).
std::string_view router_token();

}  // namespace wallet::ngx
