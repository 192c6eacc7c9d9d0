// ngx_http_jsonrpc_router_module: the JSON-RPC router (routing file, Redis cache, WebSocket).
// (Skeleton: directives and handlers arrive with the router issue.)
#include "ngx_wallet_nginx.hpp"

static ngx_http_module_t ngx_http_jsonrpc_router_module_ctx = {
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

extern "C" {
ngx_module_t ngx_http_jsonrpc_router_module = {
    NGX_MODULE_V1,
    &ngx_http_jsonrpc_router_module_ctx,
    nullptr,
    NGX_HTTP_MODULE,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    NGX_MODULE_V1_PADDING};
}
