// Location configuration of ngx_http_jsonrpc_router_module, shared by the
// module's glue files (HTTP handler, WebSocket endpoint).
#pragma once

#include "ngx_http_jsonrpc_router_instance.hpp"
#include "ngx_wallet_nginx.hpp"

extern "C" ngx_module_t ngx_http_jsonrpc_router_module;

struct ngx_http_jsonrpc_router_loc_conf_t {
    ngx_str_t routes_file;
    jsonrpc_router::RouterInstance* instance;  // owned by a cleanup of the configuration pool
    ngx_str_t redis;                           // host:port, unix:/path or off
    ngx_msec_t redis_timeout;
    ngx_str_t cache_prefix;
    size_t memory_cache;
    ngx_uint_t max_batch;
    size_t max_body;
    ngx_msec_t body_timeout;
    ngx_uint_t keepalive;
    ngx_msec_t keepalive_timeout;
    ngx_uint_t ws_connections;
    ngx_flag_t websocket;
    ngx_msec_t ws_idle_timeout;
    ngx_msec_t ws_ping_interval;
    ngx_uint_t max_client_calls;
    ngx_uint_t upstream_connections;
    ngx_uint_t upstream_queue;
    ngx_uint_t upstream_client_share;
    size_t max_response;
    size_t max_client_response;
    size_t client_rate;  // answer bytes per second per client address and worker (0 = no limit)
    size_t ws_max_output;
    ngx_msec_t ws_send_timeout;
    size_t ws_client_output;   // queued WebSocket answers per client address and worker (reading pauses past it)
    size_t ws_worker_output;   // queued WebSocket answers per worker (the largest queue is closed past it)
    ngx_uint_t max_client_connections;  // router requests holding a connection, per client address and worker
    ngx_int_t push_subscriptions;  // wallet_history.subscribe: subscriptions per WebSocket connection
    ngx_int_t push_accounts;       // accounts per subscription
    size_t push_max_output;        // notifications queued per connection past which it is closed (1008)
    ngx_flag_t ssl_verify;
    ngx_str_t ssl_trusted_certificate;
};

// Takes over a WebSocket upgrade request; returns what the content handler returns.
ngx_int_t ngx_http_jsonrpc_router_websocket(ngx_http_request_t* r, ngx_http_jsonrpc_router_loc_conf_t* conf);
bool ngx_http_jsonrpc_router_is_upgrade(ngx_http_request_t* r);
// Reads a POST's body (ngx_http_read_client_request_body) within
// jsonrpc_router_body_timeout and answers it; returns what the content handler returns.
// The client record a POST's connection is counted on (claimed before its
// body is read), or nullptr (no address).
const jsonrpc_router::ClientHold* ngx_http_jsonrpc_router_connection_client(ngx_http_request_t* r);
ngx_int_t ngx_http_jsonrpc_router_read_body(ngx_http_request_t* r, const ngx_http_jsonrpc_router_loc_conf_t& conf);
void ngx_http_jsonrpc_router_body_handler(ngx_http_request_t* r) noexcept;
// A request's JSON-RPC internal error after an exception (ngx_wallet_guard),
// or NGX_ERROR (a closed connection) when its answer had begun.
ngx_int_t ngx_http_jsonrpc_router_internal_error(ngx_http_request_t* r);
// A JSON-RPC error answer generated before any routing (bad method, too large).
ngx_int_t ngx_http_jsonrpc_router_reject(ngx_http_request_t* r, ngx_uint_t status, int code, const char* message);
