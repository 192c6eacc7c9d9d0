// ngx_http_jsonrpc_router_module: the JSON-RPC router of spec 001. A location
// with `jsonrpc_router <routing file>;` answers JSON-RPC over POST and
// WebSocket, routes each call by its method to a target of the routing file,
// and caches results in Redis (with an optional per-worker memory layer).
//
//   location = / {
//       jsonrpc_router              /etc/wallet/routes.hive.json;
//       jsonrpc_router_redis        127.0.0.1:6379;
//   }
//   location = /metrics {
//       jsonrpc_router_metrics;     # Prometheus text of the router and the wallet_history API
//   }
#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "jsonrpc_error.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/json_util.hpp"
#include "ngx_http_jsonrpc_router_conf.hpp"
#include "ngx_http_jsonrpc_router_health.hpp"
#include "ngx_http_jsonrpc_router_metrics.hpp"
#include "ngx_http_jsonrpc_router_worker.hpp"
#include "ngx_wallet_client.hpp"
#include "ngx_wallet_guard.hpp"
#include "ngx_wallet_shared.hpp"

extern "C" {
#include <ngx_event_openssl.h>
}

using jsonrpc_router::RouterInstance;

static char* ngx_http_jsonrpc_router(ngx_conf_t* cf, ngx_command_t* cmd, void* conf);
static char* ngx_http_jsonrpc_router_metrics(ngx_conf_t* cf, ngx_command_t* cmd, void* conf);
static void* ngx_http_jsonrpc_router_create_loc_conf(ngx_conf_t* cf);
static char* ngx_http_jsonrpc_router_merge_loc_conf(ngx_conf_t* cf, void* parent, void* child);
static ngx_int_t ngx_http_jsonrpc_router_init_process(ngx_cycle_t* cycle);
static void ngx_http_jsonrpc_router_exit_process(ngx_cycle_t* cycle);

using LocConf = ngx_http_jsonrpc_router_loc_conf_t;
using DirectiveSetter = char* (*)(ngx_conf_t*, ngx_command_t*, void*);

// A directive allowed at http, server and location level that sets one field
// of the location configuration through one of nginx's slot setters (the
// merge gives a location what it does not set itself).
static constexpr ngx_command_t location_field(ngx_str_t name, ngx_uint_t arguments, DirectiveSetter set, std::size_t field) {
    return {name, NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | arguments, set, NGX_HTTP_LOC_CONF_OFFSET, field,
            nullptr};
}

static ngx_command_t ngx_http_jsonrpc_router_commands[] = {
    {ngx_string("jsonrpc_router"), NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1, ngx_http_jsonrpc_router, NGX_HTTP_LOC_CONF_OFFSET,
     0, nullptr},
    {ngx_string("jsonrpc_router_metrics"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, ngx_http_jsonrpc_router_metrics,
     NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    location_field(ngx_string("jsonrpc_router_redis"), NGX_CONF_TAKE1, ngx_conf_set_str_slot, offsetof(LocConf, redis)),
    location_field(ngx_string("jsonrpc_router_redis_timeout"), NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
                   offsetof(LocConf, redis_timeout)),
    location_field(ngx_string("jsonrpc_router_cache_prefix"), NGX_CONF_TAKE1, ngx_conf_set_str_slot,
                   offsetof(LocConf, cache_prefix)),
    location_field(ngx_string("jsonrpc_router_memory_cache"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, memory_cache)),
    location_field(ngx_string("jsonrpc_router_max_batch"), NGX_CONF_TAKE1, ngx_conf_set_num_slot, offsetof(LocConf, max_batch)),
    location_field(ngx_string("jsonrpc_router_max_body"), NGX_CONF_TAKE1, ngx_conf_set_size_slot, offsetof(LocConf, max_body)),
    location_field(ngx_string("jsonrpc_router_body_timeout"), NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
                   offsetof(LocConf, body_timeout)),
    location_field(ngx_string("jsonrpc_router_keepalive"), NGX_CONF_TAKE1, ngx_conf_set_num_slot, offsetof(LocConf, keepalive)),
    location_field(ngx_string("jsonrpc_router_keepalive_timeout"), NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
                   offsetof(LocConf, keepalive_timeout)),
    location_field(ngx_string("jsonrpc_router_ws_connections"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, ws_connections)),
    location_field(ngx_string("jsonrpc_router_websocket"), NGX_CONF_FLAG, ngx_conf_set_flag_slot, offsetof(LocConf, websocket)),
    location_field(ngx_string("jsonrpc_router_ws_idle_timeout"), NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
                   offsetof(LocConf, ws_idle_timeout)),
    location_field(ngx_string("jsonrpc_router_ws_ping_interval"), NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
                   offsetof(LocConf, ws_ping_interval)),
    location_field(ngx_string("jsonrpc_router_max_client_calls"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, max_client_calls)),
    location_field(ngx_string("jsonrpc_router_upstream_connections"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, upstream_connections)),
    location_field(ngx_string("jsonrpc_router_upstream_queue"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, upstream_queue)),
    location_field(ngx_string("jsonrpc_router_upstream_client_share"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, upstream_client_share)),
    location_field(ngx_string("jsonrpc_router_max_response"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, max_response)),
    location_field(ngx_string("jsonrpc_router_max_client_response"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, max_client_response)),
    location_field(ngx_string("jsonrpc_router_client_rate"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, client_rate)),
    location_field(ngx_string("jsonrpc_router_ws_max_output"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, ws_max_output)),
    location_field(ngx_string("jsonrpc_router_push_subscriptions"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, push_subscriptions)),
    location_field(ngx_string("jsonrpc_router_push_accounts"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, push_accounts)),
    location_field(ngx_string("jsonrpc_router_push_max_output"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, push_max_output)),
    location_field(ngx_string("jsonrpc_router_ws_send_timeout"), NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
                   offsetof(LocConf, ws_send_timeout)),
    location_field(ngx_string("jsonrpc_router_ws_client_output"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, ws_client_output)),
    location_field(ngx_string("jsonrpc_router_ws_worker_output"), NGX_CONF_TAKE1, ngx_conf_set_size_slot,
                   offsetof(LocConf, ws_worker_output)),
    location_field(ngx_string("jsonrpc_router_max_client_connections"), NGX_CONF_TAKE1, ngx_conf_set_num_slot,
                   offsetof(LocConf, max_client_connections)),
    location_field(ngx_string("jsonrpc_router_ssl_verify"), NGX_CONF_FLAG, ngx_conf_set_flag_slot, offsetof(LocConf, ssl_verify)),
    location_field(ngx_string("jsonrpc_router_ssl_trusted_certificate"), NGX_CONF_TAKE1, ngx_conf_set_str_slot,
                   offsetof(LocConf, ssl_trusted_certificate)),
    ngx_null_command};

static ngx_http_module_t ngx_http_jsonrpc_router_module_ctx = {
    nullptr,                                  // preconfiguration
    nullptr,                                  // postconfiguration
    nullptr,                                  // create main configuration
    nullptr,                                  // init main configuration
    nullptr,                                  // create server configuration
    nullptr,                                  // merge server configuration
    ngx_http_jsonrpc_router_create_loc_conf,  // create location configuration
    ngx_http_jsonrpc_router_merge_loc_conf,   // merge location configuration
};

extern "C" {
ngx_module_t ngx_http_jsonrpc_router_module = {
    NGX_MODULE_V1,
    &ngx_http_jsonrpc_router_module_ctx,
    ngx_http_jsonrpc_router_commands,
    NGX_HTTP_MODULE,
    nullptr,                               // init master
    nullptr,                               // init module
    ngx_http_jsonrpc_router_init_process,  // init process
    nullptr,                               // init thread
    nullptr,                               // exit thread
    ngx_http_jsonrpc_router_exit_process,  // exit process
    nullptr,                               // exit master
    NGX_MODULE_V1_PADDING};
}

// ---- requests ---------------------------------------------------------------------------

namespace {

// Every router instance of the configurations loaded in this process (a
// worker inherits those of older cycles too: each names its cycle).
std::vector<RouterInstance*>& instances() {
    static std::vector<RouterInstance*> all;
    return all;
}

}  // namespace

// A POST being read or answered, or a WebSocket session, holds a connection
// of its client address until its request is freed; past
// jsonrpc_router_max_client_connections of them in this worker, the request
// is refused: 503 with a JSON-RPC error, and the connection closes.
static void release_connection(void* data) {
    auto* client = static_cast<jsonrpc_router::ClientHold*>(data);
    jsonrpc_router::ClientRecord::subtract((*client)->connections, 1);
    std::destroy_at(client);
}

const jsonrpc_router::ClientHold* ngx_http_jsonrpc_router_connection_client(ngx_http_request_t* r) {
    for (const ngx_pool_cleanup_t* cleanup = r->pool->cleanup; cleanup != nullptr; cleanup = cleanup->next) {
        if (cleanup->handler == release_connection) return static_cast<const jsonrpc_router::ClientHold*>(cleanup->data);
    }
    return nullptr;
}

// Nothing when counted (until the request ends), else what the handler returns.
static std::optional<ngx_int_t> claim_connection(ngx_http_request_t* r, const ngx_http_jsonrpc_router_loc_conf_t& conf) {
    // The address's record, as counted, is held from the request's pool until the release.
    const std::string_view address = wallet::ngx::client_address(r);
    ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(r->pool, sizeof(jsonrpc_router::ClientHold));
    if (cleanup == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (address.empty()) return std::nullopt;  // no address: nothing to count
    auto* client = new (cleanup->data) jsonrpc_router::ClientHold(
        jsonrpc_router::Worker::get().clients(), address, ngx_current_msec,
        conf.instance != nullptr ? conf.instance->client_rate : 0);
    if (!(*client)->claim_connection(conf.max_client_connections)) {
        std::destroy_at(client);
        r->keepalive = 0;
        if (conf.instance != nullptr) jsonrpc_router::count_limited(*conf.instance, router::Limit::ClientConnections);
        return ngx_http_jsonrpc_router_reject(r, NGX_HTTP_SERVICE_UNAVAILABLE, jsonrpc::code::client_busy,
                                              "Too many connections from this client");
    }
    cleanup->handler = release_connection;
    return std::nullopt;
}

static ngx_int_t handle_request(ngx_http_request_t* r) {
    WALLET_FAULT_POINT("router.request");
    auto* conf = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(ngx_http_get_module_loc_conf(r, ngx_http_jsonrpc_router_module));
    if (r->internal && r->err_status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
        return ngx_http_jsonrpc_router_reject(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, wallet::jsonrpc::kInvalidRequest,
                                              "Invalid Request: request too large");
    }
    if (r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD)) {
        if (conf->websocket && ngx_http_jsonrpc_router_is_upgrade(r)) {
            if (auto refused = claim_connection(r, *conf)) return *refused;
            return ngx_http_jsonrpc_router_websocket(r, conf);
        }
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) return rc;
        static const std::string status_body = R"({"status":"OK","service":"jsonrpc_router"})";
        if (conf->instance == nullptr || conf->instance->health_zone == nullptr) {
            return wallet::ngx::send_json_unowned(r, NGX_HTTP_OK, status_body);
        }
        return wallet::ngx::send_json(r, NGX_HTTP_OK, jsonrpc_router::health_status(*conf->instance));
    }
    if (!(r->method & NGX_HTTP_POST)) {
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) return rc;
        return ngx_http_jsonrpc_router_reject(r, NGX_HTTP_NOT_ALLOWED, wallet::jsonrpc::kInvalidRequest,
                                              "Invalid Request: use POST or a WebSocket");
    }
    if (r->headers_in.content_length_n > static_cast<off_t>(conf->max_body)) {
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) return rc;
        return ngx_http_jsonrpc_router_reject(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, wallet::jsonrpc::kInvalidRequest,
                                              "Invalid Request: request too large");
    }
    if (auto refused = claim_connection(r, *conf)) return *refused;
    ngx_int_t rc = ngx_http_jsonrpc_router_read_body(r, *conf);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) return rc;
    return NGX_DONE;
}

static constexpr auto ngx_http_jsonrpc_router_handler =
    wallet::ngx::guarded<"jsonrpc_router: request", handle_request, ngx_http_jsonrpc_router_internal_error>;

// ---- metrics ----------------------------------------------------------------------------

static ngx_int_t metrics_page(ngx_http_request_t* r) {
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) return NGX_HTTP_NOT_ALLOWED;
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) return rc;
    return wallet::ngx::send_text(r, NGX_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", jsonrpc_router::metrics_page(instances()));
}
static ngx_int_t metrics_failed(ngx_http_request_t* r) { return r->header_sent ? NGX_ERROR : NGX_HTTP_INTERNAL_SERVER_ERROR; }
static constexpr auto ngx_http_jsonrpc_router_metrics_handler =
    wallet::ngx::guarded<"jsonrpc_router: metrics", metrics_page, metrics_failed>;

// `jsonrpc_router_metrics`: this location answers GET with the Prometheus
// text of the module (restrict it with allow/deny: it is not for clients).
static char* ngx_http_jsonrpc_router_metrics(ngx_conf_t* cf, ngx_command_t*, void*) {
    auto* clcf = static_cast<ngx_http_core_loc_conf_t*>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = ngx_http_jsonrpc_router_metrics_handler;
    return NGX_CONF_OK;
}

// ---- configuration --------------------------------------------------------------------

static void* ngx_http_jsonrpc_router_create_loc_conf(ngx_conf_t* cf) {
    auto* conf = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(ngx_pcalloc(cf->pool, sizeof(ngx_http_jsonrpc_router_loc_conf_t)));
    if (conf == nullptr) return nullptr;
    conf->redis_timeout = NGX_CONF_UNSET_MSEC;
    conf->memory_cache = NGX_CONF_UNSET_SIZE;
    conf->max_batch = NGX_CONF_UNSET_UINT;
    conf->max_body = NGX_CONF_UNSET_SIZE;
    conf->body_timeout = NGX_CONF_UNSET_MSEC;
    conf->keepalive = NGX_CONF_UNSET_UINT;
    conf->keepalive_timeout = NGX_CONF_UNSET_MSEC;
    conf->ws_connections = NGX_CONF_UNSET_UINT;
    conf->websocket = NGX_CONF_UNSET;
    conf->ws_idle_timeout = NGX_CONF_UNSET_MSEC;
    conf->ws_ping_interval = NGX_CONF_UNSET_MSEC;
    conf->max_client_calls = NGX_CONF_UNSET_UINT;
    conf->max_response = NGX_CONF_UNSET_SIZE;
    conf->max_client_response = NGX_CONF_UNSET_SIZE;
    conf->client_rate = NGX_CONF_UNSET_SIZE;
    conf->upstream_connections = NGX_CONF_UNSET_UINT;
    conf->upstream_queue = NGX_CONF_UNSET_UINT;
    conf->upstream_client_share = NGX_CONF_UNSET_UINT;
    conf->ws_max_output = NGX_CONF_UNSET_SIZE;
    conf->push_subscriptions = NGX_CONF_UNSET;
    conf->push_accounts = NGX_CONF_UNSET;
    conf->push_max_output = NGX_CONF_UNSET_SIZE;
    conf->ws_send_timeout = NGX_CONF_UNSET_MSEC;
    conf->ws_client_output = NGX_CONF_UNSET_SIZE;
    conf->ws_worker_output = NGX_CONF_UNSET_SIZE;
    conf->max_client_connections = NGX_CONF_UNSET_UINT;
    conf->ssl_verify = NGX_CONF_UNSET;
    return conf;
}

static void delete_instance(void* data) {
    std::unique_ptr<RouterInstance> owned(static_cast<RouterInstance*>(data));
    std::erase(instances(), owned.get());
}

// The URL health zone: a UrlHealth per URL. A reload with the same targets
// (same zone name) keeps what the old workers learned.
static ngx_int_t init_health_zone(ngx_shm_zone_t* zone, void* old_data) {
    if (old_data != nullptr) {
        zone->data = old_data;
        return NGX_OK;
    }
    auto* instance = static_cast<RouterInstance*>(zone->data);
    auto* pool = reinterpret_cast<ngx_slab_pool_t*>(zone->shm.addr);
    std::size_t count = instance->url_count();
    void* memory = ngx_slab_calloc(pool, sizeof(jsonrpc_router::UrlHealth) * count);
    if (memory == nullptr) return NGX_ERROR;
    auto* slots = static_cast<jsonrpc_router::UrlHealth*>(memory);
    for (std::size_t i = 0; i < count; ++i) new (slots + i) jsonrpc_router::UrlHealth();
    zone->data = slots;
    return NGX_OK;
}

// The metrics zone: the counters of one routing table. A reload with the
// same routes and targets (same zone name) keeps counting where it was.
static ngx_int_t init_metrics_zone(ngx_shm_zone_t* zone, void* old_data) {
    if (old_data != nullptr) {
        zone->data = old_data;
        return NGX_OK;
    }
    auto* instance = static_cast<RouterInstance*>(zone->data);
    auto* pool = reinterpret_cast<ngx_slab_pool_t*>(zone->shm.addr);
    void* memory = ngx_slab_calloc(pool, router::RouterMetrics::bytes_for(instance->table));
    if (memory == nullptr) return NGX_ERROR;
    router::RouterMetrics::construct(memory, instance->table);
    zone->data = memory;
    return NGX_OK;
}

// A zone of `bytes` (plus the slab pool's own pages) named after `identity`:
// a location whose identity differs gets its own state; locations (and
// reloads) with the same identity share it.
static ngx_shm_zone_t* add_instance_zone(ngx_conf_t* cf, RouterInstance& instance, std::string_view prefix,
                                         const std::string& identity, std::size_t bytes, ngx_shm_zone_init_pt init) {
    std::string name = std::string(prefix) + std::to_string(std::hash<std::string>{}(identity));
    auto* copy = static_cast<u_char*>(ngx_pnalloc(cf->pool, name.size()));
    if (copy == nullptr) return nullptr;
    ngx_memcpy(copy, name.data(), name.size());
    ngx_str_t zone_name{name.size(), copy};
    ngx_shm_zone_t* zone = ngx_shared_memory_add(cf, &zone_name, 8 * ngx_pagesize + bytes, &ngx_http_jsonrpc_router_module);
    if (zone == nullptr) return nullptr;
    if (zone->init == nullptr) {
        zone->init = init;
        zone->data = &instance;
    }
    return zone;
}

static std::string targets_identity(const RouterInstance& instance) {
    std::string identity;
    for (const router::Target& t : instance.table.targets) {
        identity += t.name + (t.chain_node ? "*=" : "=");
        for (const router::Endpoint& e : t.urls) identity += e.url + " ";
        identity += ";";
    }
    return identity;
}

static bool add_health_zone(ngx_conf_t* cf, RouterInstance& instance) {
    instance.health_zone = add_instance_zone(cf, instance, "jsonrpc_router_health_", targets_identity(instance),
                                             sizeof(jsonrpc_router::UrlHealth) * instance.url_count(), init_health_zone);
    return instance.health_zone != nullptr;
}

static bool add_metrics_zone(ngx_conf_t* cf, RouterInstance& instance) {
    std::string identity = targets_identity(instance) + "routes:";
    for (const router::Route& route : instance.table.routes) identity += route.pattern.text() + '\n';
    instance.metrics_zone = add_instance_zone(cf, instance, "jsonrpc_router_metrics_", identity,
                                              router::RouterMetrics::bytes_for(instance.table), init_metrics_zone);
    return instance.metrics_zone != nullptr;
}

// `jsonrpc_router <file>`: loads and validates the routing file now, so that
// `nginx -t` fails on a bad one with the file, the key and the reason.
static char* ngx_http_jsonrpc_router(ngx_conf_t* cf, ngx_command_t* cmd, void* conf_ptr) {
    auto* conf = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(conf_ptr);
    if (conf->instance != nullptr) return const_cast<char*>("is duplicate");
    if (!wallet::ngx::make_router_token()) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "jsonrpc_router: no random bytes for the client token");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    ngx_str_t* value = static_cast<ngx_str_t*>(cf->args->elts);
    conf->routes_file = value[1];
    if (ngx_conf_full_name(cf->cycle, &conf->routes_file, 1) != NGX_OK) return static_cast<char*>(NGX_CONF_ERROR);
    try {
        auto table = router::load_routing_file(std::string(wallet::ngx::to_view(conf->routes_file)));
        if (!table) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid routing file: %s", table.error().c_str());
            return static_cast<char*>(NGX_CONF_ERROR);
        }
        ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(cf->pool, 0);
        if (cleanup == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
        auto instance = std::make_unique<RouterInstance>();
        instance->table = std::move(table).value();
        instance->cycle = cf->cycle;
        bool watched = false;  // chain nodes or pools: their URLs have a health
        std::size_t urls = 0;
        for (std::size_t i = 0; i < instance->table.targets.size(); ++i) {
            const router::Target& target = instance->table.targets[i];
            instance->probe_routes.push_back(router::Route{router::RoutePattern{}, i, std::nullopt, 0, false, false});
            instance->first_url.push_back(urls);
            urls += target.urls.size();
            watched = watched || target.chain_node || target.pool();
        }
        if (watched && !add_health_zone(cf, *instance)) return static_cast<char*>(NGX_CONF_ERROR);
        if (!add_metrics_zone(cf, *instance)) return static_cast<char*>(NGX_CONF_ERROR);
        conf->instance = instance.get();
        instances().push_back(instance.get());
        cleanup->handler = delete_instance;
        cleanup->data = instance.release();
    } catch (const std::exception& e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "routing file: %s", e.what());
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (!wallet::ngx::add_guard_zone(cf)) return static_cast<char*>(NGX_CONF_ERROR);
    auto* clcf = static_cast<ngx_http_core_loc_conf_t*>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = ngx_http_jsonrpc_router_handler;
    return NGX_CONF_OK;
}

// An address for a target or Redis, resolved now (never at request time).
static bool resolve_address(ngx_conf_t* cf, const std::string& text, ngx_addr_t& out, std::string& error) {
    ngx_url_t url{};
    auto* copy = static_cast<u_char*>(ngx_pnalloc(cf->pool, text.size()));
    if (copy == nullptr) return false;
    ngx_memcpy(copy, text.data(), text.size());
    url.url = ngx_str_t{text.size(), copy};
    url.no_resolve = 0;
    if (ngx_parse_url(cf->pool, &url) != NGX_OK || url.naddrs == 0) {
        error = url.err ? url.err : "cannot be resolved";
        return false;
    }
    out = url.addrs[0];
    return true;
}

static char* setup_tls(ngx_conf_t* cf, ngx_http_jsonrpc_router_loc_conf_t* conf, RouterInstance& instance) {
    auto* ssl = static_cast<ngx_ssl_t*>(ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t)));
    if (ssl == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    ssl->log = cf->log;
    if (ngx_ssl_create(ssl, NGX_SSL_TLSv1_2 | NGX_SSL_TLSv1_3, nullptr) != NGX_OK) return static_cast<char*>(NGX_CONF_ERROR);
    ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(cf->pool, 0);
    if (cleanup == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    cleanup->handler = ngx_ssl_cleanup_ctx;
    cleanup->data = ssl;
    if (conf->ssl_verify) {
        if (conf->ssl_trusted_certificate.len > 0) {
            if (ngx_ssl_trusted_certificate(cf, ssl, &conf->ssl_trusted_certificate, 4) != NGX_OK) {
                return static_cast<char*>(NGX_CONF_ERROR);
            }
        } else if (SSL_CTX_set_default_verify_paths(ssl->ctx) != 1) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router: no system CA certificates");
            return static_cast<char*>(NGX_CONF_ERROR);
        }
    }
    instance.ssl = ssl;
    instance.ssl_verify = conf->ssl_verify != 0;
    return NGX_CONF_OK;
}

// `error_page 413` to this location itself, unless the operator set one:
// nginx refuses an oversized body before any handler runs, and the
// redirected request (err_status 413) is answered with a JSON-RPC error.
// Only exact and prefix locations can be redirected to by name.
static ngx_int_t add_too_large_page(ngx_conf_t* cf, ngx_http_core_loc_conf_t* clcf) {
    if (clcf->regex != nullptr || clcf->named || clcf->name.len == 0 || clcf->name.data[0] != '/') return NGX_OK;
    std::size_t existing = clcf->error_pages ? clcf->error_pages->nelts : 0;
    auto* old_pages = existing ? static_cast<ngx_http_err_page_t*>(clcf->error_pages->elts) : nullptr;
    for (std::size_t i = 0; i < existing; ++i) {
        if (old_pages[i].status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) return NGX_OK;
    }
    // A copy: the array may be the server's, inherited.
    ngx_array_t* pages = ngx_array_create(cf->pool, existing + 1, sizeof(ngx_http_err_page_t));
    if (pages == nullptr) return NGX_ERROR;
    for (std::size_t i = 0; i < existing; ++i) {
        auto* copy = static_cast<ngx_http_err_page_t*>(ngx_array_push(pages));
        *copy = old_pages[i];
    }
    auto* page = static_cast<ngx_http_err_page_t*>(ngx_array_push(pages));
    ngx_memzero(page, sizeof(ngx_http_err_page_t));
    page->status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    page->overwrite = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    page->value.value = clcf->name;
    clcf->error_pages = pages;
    return NGX_OK;
}

static char* ngx_http_jsonrpc_router_merge_loc_conf(ngx_conf_t* cf, void* parent_ptr, void* child_ptr) {
    auto* prev = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(parent_ptr);
    auto* conf = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(child_ptr);
    ngx_conf_merge_str_value(conf->redis, prev->redis, "127.0.0.1:6379");
    ngx_conf_merge_msec_value(conf->redis_timeout, prev->redis_timeout, 100);
    ngx_conf_merge_str_value(conf->cache_prefix, prev->cache_prefix, "jsonrpc:");
    ngx_conf_merge_size_value(conf->memory_cache, prev->memory_cache, 16 * 1024 * 1024);
    ngx_conf_merge_uint_value(conf->max_batch, prev->max_batch, 50);
    ngx_conf_merge_size_value(conf->max_body, prev->max_body, 1024 * 1024);
    ngx_conf_merge_msec_value(conf->body_timeout, prev->body_timeout, 30000);
    ngx_conf_merge_uint_value(conf->keepalive, prev->keepalive, 32);
    ngx_conf_merge_msec_value(conf->keepalive_timeout, prev->keepalive_timeout, 60000);
    ngx_conf_merge_uint_value(conf->ws_connections, prev->ws_connections, 2);
    ngx_conf_merge_value(conf->websocket, prev->websocket, 1);
    ngx_conf_merge_msec_value(conf->ws_idle_timeout, prev->ws_idle_timeout, 120000);
    ngx_conf_merge_msec_value(conf->ws_ping_interval, prev->ws_ping_interval, 30000);
    ngx_conf_merge_uint_value(conf->max_client_calls, prev->max_client_calls, 200);
    ngx_conf_merge_size_value(conf->max_response, prev->max_response, 16 * 1024 * 1024);
    ngx_conf_merge_size_value(conf->max_client_response, prev->max_client_response, 32 * 1024 * 1024);
    ngx_conf_merge_size_value(conf->client_rate, prev->client_rate, 16 * 1024 * 1024);
    ngx_conf_merge_size_value(conf->ws_max_output, prev->ws_max_output, 32 * 1024 * 1024);
    ngx_conf_merge_msec_value(conf->ws_send_timeout, prev->ws_send_timeout, 30000);
    ngx_conf_merge_size_value(conf->ws_client_output, prev->ws_client_output, 32 * 1024 * 1024);
    ngx_conf_merge_size_value(conf->ws_worker_output, prev->ws_worker_output, 128 * 1024 * 1024);
    ngx_conf_merge_uint_value(conf->max_client_connections, prev->max_client_connections, 64);
    ngx_conf_merge_value(conf->push_subscriptions, prev->push_subscriptions, 16);
    ngx_conf_merge_value(conf->push_accounts, prev->push_accounts, 100);
    // Not set in this block, it follows a smaller jsonrpc_router_ws_max_output
    // down, so that lowering that alone still passes nginx -t.
    const bool push_max_output_set_here = conf->push_max_output != NGX_CONF_UNSET_SIZE;
    ngx_conf_merge_size_value(conf->push_max_output, prev->push_max_output, 4 * 1024 * 1024);
    if (!push_max_output_set_here) conf->push_max_output = std::min(conf->push_max_output, conf->ws_max_output);
    if (conf->push_subscriptions < 1 || conf->push_subscriptions > 1000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_push_subscriptions must be from 1 to 1000");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->push_accounts < 1 || conf->push_accounts > 10000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_push_accounts must be from 1 to 10000");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->push_max_output < 16 * 1024 || conf->push_max_output > conf->ws_max_output) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jsonrpc_router_push_max_output must be at least 16k and at most jsonrpc_router_ws_max_output");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    ngx_conf_merge_uint_value(conf->upstream_connections, prev->upstream_connections, 64);
    ngx_conf_merge_uint_value(conf->upstream_queue, prev->upstream_queue, 1024);
    ngx_conf_merge_uint_value(conf->upstream_client_share, prev->upstream_client_share, 50);
    if (conf->upstream_connections == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_upstream_connections must be above 0");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->upstream_client_share == 0 || conf->upstream_client_share > 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_upstream_client_share must be a percent from 1 to 100");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->max_response < 64 * 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_max_response must be at least 64k");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->max_client_response < conf->max_response) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jsonrpc_router_max_client_response must be at least jsonrpc_router_max_response (one answer)");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->client_rate != 0 && conf->client_rate < 64 * 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_client_rate must be 0 (no limit) or at least 64k (bytes per second)");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->ws_max_output < conf->max_response) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jsonrpc_router_ws_max_output must be at least jsonrpc_router_max_response (one answer)");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->ws_worker_output < conf->ws_max_output) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jsonrpc_router_ws_worker_output must be at least jsonrpc_router_ws_max_output (one connection's)");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->ws_client_output == 0 || conf->ws_client_output > conf->ws_worker_output) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jsonrpc_router_ws_client_output must be above 0 and at most jsonrpc_router_ws_worker_output");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->body_timeout == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_body_timeout must be above 0");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (conf->ws_send_timeout == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_ws_send_timeout must be above 0");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    ngx_conf_merge_value(conf->ssl_verify, prev->ssl_verify, 1);
    ngx_conf_merge_str_value(conf->ssl_trusted_certificate, prev->ssl_trusted_certificate, "");
    if (conf->instance == nullptr) return NGX_CONF_OK;

    try {
        RouterInstance& instance = *conf->instance;
        instance.limits.max_batch = conf->max_batch;
        const std::string cache_prefix(wallet::ngx::to_view(conf->cache_prefix));
        instance.cache_key_heads.clear();
        for (const router::Target& target : instance.table.targets) {
            instance.cache_key_heads.push_back(cache_prefix + router::target_cache_tag(target));
        }
        instance.memory_cache_bytes = conf->memory_cache;
        instance.keepalive = conf->keepalive;
        instance.keepalive_timeout = conf->keepalive_timeout;
        instance.ws_upstream_connections = conf->ws_connections;
        instance.max_client_calls = conf->max_client_calls;
        instance.max_response = conf->max_response;
        instance.max_client_response = conf->max_client_response;
        instance.client_rate = conf->client_rate;
        instance.upstream_connections = conf->upstream_connections;
        instance.upstream_queue = conf->upstream_queue;
        instance.upstream_client_share = conf->upstream_client_share;
        instance.redis_timeout = conf->redis_timeout;
        std::string redis(wallet::ngx::to_view(conf->redis));
        instance.redis_enabled = redis != "off";
        instance.redis_name = redis;
        std::string error;
        if (instance.redis_enabled && !resolve_address(cf, redis, instance.redis_addr, error)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router_redis \"%s\": %s", redis.c_str(), error.c_str());
            return static_cast<char*>(NGX_CONF_ERROR);
        }
        bool needs_tls = false;
        instance.target_addrs.resize(instance.table.targets.size());
        for (std::size_t i = 0; i < instance.table.targets.size(); ++i) {
            const router::Target& t = instance.table.targets[i];
            instance.target_addrs[i].resize(t.urls.size());
            for (std::size_t u = 0; u < t.urls.size(); ++u) {
                const router::Endpoint& e = t.urls[u];
                std::string address = e.transport == router::Transport::Unix
                                          ? "unix:" + e.socket_path
                                          : (e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host) + ":" +
                                                std::to_string(e.port);
                if (!resolve_address(cf, address, instance.target_addrs[i][u], error)) {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid routing file: %V: targets.%s: %s: %s",
                                       &conf->routes_file, t.name.c_str(), e.url.c_str(), error.c_str());
                    return static_cast<char*>(NGX_CONF_ERROR);
                }
                needs_tls = needs_tls || e.tls();
            }
        }
        if (needs_tls) {
            char* rc = setup_tls(cf, conf, instance);
            if (rc != NGX_CONF_OK) return rc;
        }
        // The body stays in memory, and nginx enforces the limit while
        // reading (chunked bodies too); its 413 is answered as JSON-RPC.
        auto* clcf = static_cast<ngx_http_core_loc_conf_t*>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
        clcf->client_max_body_size = static_cast<off_t>(conf->max_body);
        clcf->client_body_buffer_size = std::max(clcf->client_body_buffer_size, conf->max_body);
        if (add_too_large_page(cf, clcf) != NGX_OK) return static_cast<char*>(NGX_CONF_ERROR);
    } catch (const std::exception& e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "jsonrpc_router: %s", e.what());
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

static ngx_int_t ngx_http_jsonrpc_router_init_process(ngx_cycle_t* cycle) {
    if (ngx_process != NGX_PROCESS_WORKER && ngx_process != NGX_PROCESS_SINGLE) return NGX_OK;
    try {
        for (RouterInstance* instance : instances()) {
            if (instance->cycle == cycle) jsonrpc_router::Worker::get().pools().start_polls(*instance);
        }
    } catch (const std::exception& e) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, 0, "jsonrpc_router: cannot start chain-node polls: %s", e.what());
        return NGX_ERROR;
    }
    return NGX_OK;
}

static void ngx_http_jsonrpc_router_exit_process(ngx_cycle_t*) { jsonrpc_router::Worker::shutdown(); }
