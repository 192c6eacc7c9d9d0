// ngx_http_wallet_history_module: the read-only wallet_history.* JSON-RPC API
// (spec 000; decisions.md section 3) served from PostgreSQL through a
// per-worker asynchronous libpq pool.
//
// Directives:
//   wallet_history_api;              location: serves the JSON-RPC methods
//   wallet_history_health;           location: GET -> {"ok": true|false}
//   wallet_history_env_file PATH;    http: a settings file (KEY=VALUE lines, as
//                                    systemd's EnvironmentFile=); may repeat,
//                                    a later file wins; wins over the environment
//   wallet_history_set NAME VALUE;   http: overrides one WALLET_API_* / API_*
//                                    (or DB_*) variable of the files and the environment
//
// Settings are read when nginx loads its configuration (so `nginx -t`
// validates them and names a bad one or an unreadable file). The files are
// read by the master as it parses the configuration, so `nginx -t` from any
// shell sees the same secrets as the service; the environment is the
// fallback (conf/nginx/wallet-history-env.conf's `env` lines keep it).
#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "api_accounts.hpp"
#include "api_balances.hpp"
#include "api_config.hpp"
#include "api_inflight.hpp"
#include "api_limits.hpp"
#include "api_metrics.hpp"
#include "api_request.hpp"
#include "api_response.hpp"
#include "api_sql.hpp"
#include "jsonrpc_writer.hpp"
#include "ngx_http_wallet_history_pg.hpp"
#include "ngx_http_wallet_history_probe.hpp"
#include "ngx_http_wallet_history_push.hpp"
#include "ngx_wallet_client.hpp"
#include "ngx_wallet_guard.hpp"
#include "ngx_wallet_metrics.hpp"
#include "ngx_wallet_nginx.hpp"
#include "ngx_wallet_shared.hpp"

namespace api = wallet::api;
namespace rpc = wallet::jsonrpc;
using wallet::ngx::PgOp;
using wallet::ngx::PgOutcome;
using wallet::ngx::PgPool;

namespace {

constexpr std::size_t kRateLimitSlots = 16384;
constexpr std::size_t kSharedZoneSize = 2 * 1024 * 1024;

// Everything derived from the configuration, owned by the cycle's pool.
struct WalletHistoryRuntime {
    api::ApiConfig config;
    api::RequestLimits limits;
    wallet::CursorCodec cursors{""};
    wallet::ngx::PgPoolSettings pool_settings;
    api::PoolSize pool_size;  // known once the worker count is (init module)
};

// Counters and buckets shared by the workers of one nginx.
struct WalletHistoryShared {
    api::InflightTable inflight;
    std::size_t slots;
    api::ApiCounters counters;
    // followed by the rate limit table
};

}  // namespace

struct ngx_http_wallet_history_main_conf_t {
    ngx_flag_t used;
    ngx_array_t* env_files;  // of ngx_str_t, full paths
    ngx_array_t* overrides;  // of ngx_keyval_t
    ngx_shm_zone_t* shm_zone;
    WalletHistoryRuntime* runtime;
};

static char* ngx_http_wallet_history_api(ngx_conf_t* cf, ngx_command_t* cmd, void* conf);
static char* ngx_http_wallet_history_health(ngx_conf_t* cf, ngx_command_t* cmd, void* conf);
static char* ngx_http_wallet_history_set(ngx_conf_t* cf, ngx_command_t* cmd, void* conf);
static char* ngx_http_wallet_history_env_file(ngx_conf_t* cf, ngx_command_t* cmd, void* conf);
static void* ngx_http_wallet_history_create_main_conf(ngx_conf_t* cf);
static char* ngx_http_wallet_history_init_main_conf(ngx_conf_t* cf, void* conf);
static ngx_int_t ngx_http_wallet_history_init_module(ngx_cycle_t* cycle);
static ngx_int_t ngx_http_wallet_history_init_process(ngx_cycle_t* cycle);
static void ngx_http_wallet_history_exit_process(ngx_cycle_t* cycle);

static ngx_command_t ngx_http_wallet_history_commands[] = {
    {ngx_string("wallet_history_api"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, ngx_http_wallet_history_api, 0, 0,
     nullptr},
    {ngx_string("wallet_history_health"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, ngx_http_wallet_history_health, 0, 0,
     nullptr},
    {ngx_string("wallet_history_set"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE2, ngx_http_wallet_history_set,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("wallet_history_env_file"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_http_wallet_history_env_file,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    ngx_null_command};

static ngx_http_module_t ngx_http_wallet_history_module_ctx = {
    nullptr,                                    // preconfiguration
    nullptr,                                    // postconfiguration
    ngx_http_wallet_history_create_main_conf,  // create main configuration
    ngx_http_wallet_history_init_main_conf,    // init main configuration
    nullptr, nullptr, nullptr, nullptr,
};

extern "C" {
ngx_module_t ngx_http_wallet_history_module = {
    NGX_MODULE_V1,
    &ngx_http_wallet_history_module_ctx,
    ngx_http_wallet_history_commands,
    NGX_HTTP_MODULE,
    nullptr,                                 // init master
    ngx_http_wallet_history_init_module,    // init module
    ngx_http_wallet_history_init_process,   // init process
    nullptr,                                 // init thread
    nullptr,                                 // exit thread
    ngx_http_wallet_history_exit_process,   // exit process
    nullptr,                                 // exit master
    NGX_MODULE_V1_PADDING};
}

namespace {

// The worker's database pool (one per worker process).
std::unique_ptr<PgPool> worker_pool;
// Its probes of each database (WALLET_API_DB_PROBE_INTERVAL_MS; none at 0).
std::unique_ptr<wallet::ngx::DatabaseProbes> worker_probes;

// The account ids this worker remembers (WALLET_API_ACCOUNT_CACHE names).
std::unique_ptr<api::RememberedAccounts> worker_accounts;

std::optional<api::RememberedAccount> remembered_account(std::string_view name) {
    return worker_accounts ? worker_accounts->find(name) : std::nullopt;
}

bool is_page_method(api::Method method) {
    return method == api::Method::GetWalletHistory || method == api::Method::GetAuthorRewards ||
           method == api::Method::GetCurationRewards;
}

// Answers are written into a buffer that the request keeps until nginx frees
// it (the write may end later, from the event loop), so nginx sends them
// without a copy. Freed requests leave their buffers here for the next ones:
// once warm, a worker renders answers without allocating.
class SpareResponses {
public:
    std::unique_ptr<api::ResponseBuffer> take() {
        if (count_ == 0) return std::make_unique<api::ResponseBuffer>();
        return std::move(spares_[--count_]);
    }
    void give_back(std::unique_ptr<api::ResponseBuffer> buffer) noexcept {
        if (count_ < spares_.size()) spares_[count_++] = std::move(buffer);
    }

private:
    // About the answers a worker has in flight at once: a spare beyond that
    // would only hold memory.
    std::array<std::unique_ptr<api::ResponseBuffer>, 16> spares_;
    std::size_t count_ = 0;
};
SpareResponses spare_responses;

ngx_http_wallet_history_main_conf_t* main_conf(ngx_http_request_t* r) {
    return static_cast<ngx_http_wallet_history_main_conf_t*>(
        ngx_http_get_module_main_conf(r, ngx_http_wallet_history_module));
}

WalletHistoryShared* shared_state(ngx_http_wallet_history_main_conf_t* mcf) {
    return mcf->shm_zone != nullptr ? static_cast<WalletHistoryShared*>(mcf->shm_zone->data) : nullptr;
}

// This worker's part of the in-flight count (WALLET_API_MAX_INFLIGHT).
struct WorkerInflight {
    api::InflightTable* table = nullptr;  // null: no cap, or the worker gave its slot back
    api::InflightTable::Slot* slot = nullptr;
    ngx_msec_t last_reclaim = 0;
};
WorkerInflight worker_inflight;

bool process_alive(std::int64_t pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

// At most once a second per worker, when the cap is reached: the requests of
// workers that died meanwhile are not in flight any more.
bool reclaim_when_full(ngx_slab_pool_t* shpool) {
    WorkerInflight& w = worker_inflight;
    if (w.last_reclaim != 0 && ngx_current_msec - w.last_reclaim < 1000) return false;
    w.last_reclaim = ngx_current_msec;
    ngx_shmtx_lock(&shpool->mutex);
    const std::int64_t released = w.table->reclaim_dead(process_alive);
    ngx_shmtx_unlock(&shpool->mutex);
    if (released > 0) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "wallet_history: %L requests of workers that died no longer count as in flight", released);
    }
    return released > 0;
}

void leave_inflight() {
    if (worker_inflight.table != nullptr) worker_inflight.table->leave(worker_inflight.slot);
}

// One API request in flight. Lives in r->pool; its destructor (a pool
// cleanup) detaches it from the database pool, releases its in-flight slot
// and counts a request that ended without an answer in the metrics.
struct WalletHistoryRequest {
    ngx_http_request_t* r = nullptr;
    bool counted_inflight = false;
    PgOp op;
    api::Call call;
    std::string id_json = "null";
    ngx_event_t deadline{};
    ngx_event_t rerun{};  // runs the statement again after a standby was behind the cursor
    api::ApiCounters* counters = nullptr;
    std::uint64_t started_us = 0;
    std::optional<api::Method> method;  // known once the body is parsed
    bool settled = false;               // counted with its outcome
    bool retry_counted = false;         // the pool's retry of op is in the metrics
    std::unique_ptr<api::ResponseBuffer> response;  // the answer nginx is sending

    ~WalletHistoryRequest() {
        if (response) spare_responses.give_back(std::move(response));
        if (deadline.timer_set) ngx_del_timer(&deadline);
        if (rerun.timer_set) ngx_del_timer(&rerun);
        if (worker_pool) worker_pool->cancel(&op);
        if (counted_inflight) leave_inflight();
        if (!settled && counters != nullptr) counters->record(method, api::Outcome::Aborted, started_us);
    }
};

// Counts the request with its outcome, before its answer leaves: a client
// that has the answer finds it counted.
void settle(WalletHistoryRequest* ctx, api::Outcome outcome) {
    if (ctx->settled || ctx->counters == nullptr) return;
    ctx->settled = true;
    ctx->counters->record(ctx->method, outcome, ctx->started_us);
}

void destroy_request(void* data) { static_cast<WalletHistoryRequest*>(data)->~WalletHistoryRequest(); }

// Error responses: HTTP 200 except the statuses decisions.md section 3 names.
ngx_int_t send_error(ngx_http_request_t* r, ngx_uint_t status, std::string_view id_json, int code,
                     std::string_view message) {
    return wallet::ngx::send_json(r, status, rpc::error_response(id_json, code, message));
}

ngx_int_t send_result(ngx_http_request_t* r, std::string_view id_json, const std::string& result) {
    return wallet::ngx::send_json(r, NGX_HTTP_OK, rpc::result_response(id_json, result));
}

// The request's answer buffer, emptied.
api::ResponseBuffer& response_buffer(WalletHistoryRequest* ctx) {
    if (!ctx->response) ctx->response = spare_responses.take();
    ctx->response->clear();
    return *ctx->response;
}

// A result written in the request's answer buffer and sent from there.
ngx_int_t send_result_unowned(WalletHistoryRequest* ctx, std::string_view result) {
    api::ResponseBuffer& buffer = response_buffer(ctx);
    buffer.append(rpc::kResultHead);
    buffer.append(result);
    std::string tail;
    rpc::append_response_id(tail, ctx->id_json);
    buffer.append(tail);
    return wallet::ngx::send_json_unowned(ctx->r, NGX_HTTP_OK, buffer.view());
}

// Ends a request that waited for the database or a timer: runs outside the
// request's own handlers, so posted subrequests must be run here too.
void finish_async(ngx_http_request_t* r, ngx_int_t rc) {
    ngx_connection_t* c = r->connection;
    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}

ngx_int_t send_balances_answer(WalletHistoryRequest* ctx, const api::BalancesAnswer& answer) {
    if (answer.error) return send_error(ctx->r, NGX_HTTP_OK, ctx->id_json, answer.error->code, answer.error->message);
    return send_result_unowned(ctx, answer.result);
}

ngx_int_t respond_to_rows(WalletHistoryRequest* ctx, PGresult* rows) {
    const WalletHistoryRuntime& rt = *main_conf(ctx->r)->runtime;
    switch (ctx->call.method) {
    case api::Method::GetWalletHistory:
    case api::Method::GetAuthorRewards:
    case api::Method::GetCurationRewards:
        if (worker_accounts) worker_accounts->learn(ctx->call.page.account, api::read_page_header(rows).account);
        return wallet::ngx::send_json_unowned(ctx->r, NGX_HTTP_OK,
                                              api::write_page_response(response_buffer(ctx), ctx->id_json,
                                                                       ctx->call.method, ctx->call.page, rows,
                                                                       rt.cursors));
    case api::Method::GetRewardTotals:
        if (worker_accounts) worker_accounts->learn(ctx->call.page.account, api::totals_account(rows));
        return send_result_unowned(ctx, api::totals_result(ctx->call.page, rows));
    case api::Method::GetStatus:
        return send_result_unowned(ctx, api::status_result(rows, rt.pool_size));
    case api::Method::GetBalances:
        if (worker_accounts && !ctx->call.balances.time) {
            worker_accounts->learn(ctx->call.balances.account, api::balance_rows_account(rows));
        }
        return send_balances_answer(ctx, api::balances_answer(ctx->call.balances, rows, rt.config.balance_rules));
    case api::Method::GetDelegations:
        if (worker_accounts) worker_accounts->learn(ctx->call.balances.account, api::balance_rows_account(rows));
        return send_balances_answer(ctx, api::delegations_answer(ctx->call.balances, rows, rt.config.balance_rules));
    case api::Method::GetBalanceHistory:
        if (worker_accounts) worker_accounts->learn(ctx->call.history.account, api::balance_rows_account(rows));
        return send_balances_answer(
            ctx, api::balance_history_answer(ctx->call.history, rows, rt.config.balance_rules, rt.cursors));
    case api::Method::GetBalanceAggregation:
        return send_balances_answer(ctx, api::balance_aggregation_answer(ctx->call.history, rows, rt.config.balance_rules,
                                                                         rt.limits.max_range_days));
    case api::Method::GetMethods:
        break;
    }
    return send_result(ctx->r, ctx->id_json, api::methods_result());
}

void count_pg_error(WalletHistoryRequest* ctx, api::PgError error) {
    if (ctx->counters != nullptr) metrics::add(ctx->counters->pg_errors[static_cast<std::size_t>(error)]);
}

void count_rerun(WalletHistoryRequest* ctx, api::Rerun reason) {
    if (ctx->counters != nullptr) metrics::add(ctx->counters->reruns[static_cast<std::size_t>(reason)]);
}

// A next page answered by a database that has not yet replayed the block of
// the cursor's row (a standby behind the primary that served the previous
// page) could miss the events between the two: that answer is not used.
// Only a standby can be behind: a primary holds every committed row. The
// test is the highest block the database holds, not its indexed_block: a
// backfill loading below the checkpoint lowers indexed_block while newer
// history is stored and served (every next page above it would wait for the
// deadline on every database).
bool behind_cursor(const WalletHistoryRequest* ctx, PGresult* rows) {
    if (!ctx->op.from_standby) return false;
    const auto& after = ctx->call.page.after;
    if (!is_page_method(ctx->call.method) || !after) return false;
    return api::read_page_header(rows).stored_block.value_or(0) < after->block_num;
}

// Another database takes the statement now; with none, the same one after
// a pause (it replays in milliseconds). The deadline still bounds the wait.
constexpr ngx_msec_t kRerunDelayMs = 20;

void rerun_elsewhere(WalletHistoryRequest* ctx) {
    ctx->op.avoid = ctx->op.server;
    if (worker_pool->has_alternative(ctx->op.server)) {
        worker_pool->submit(&ctx->op);
    } else {
        ngx_add_timer(&ctx->rerun, kRerunDelayMs);
    }
}

// What every handler of a request does with an exception (ngx_wallet_guard):
// the request ends with a JSON-RPC internal error, or closes when its answer
// had begun. The rc for a content handler to return, or for finalize.
ngx_int_t internal_error(ngx_http_request_t* r) {
    auto* ctx = static_cast<WalletHistoryRequest*>(ngx_http_get_module_ctx(r, ngx_http_wallet_history_module));
    if (ctx != nullptr) {
        if (ctx->deadline.timer_set) ngx_del_timer(&ctx->deadline);
        if (ctx->rerun.timer_set) ngx_del_timer(&ctx->rerun);
        if (worker_pool) worker_pool->cancel(&ctx->op);
        settle(ctx, api::Outcome::InternalError);
    }
    if (r->header_sent) return NGX_ERROR;
    return send_error(r, NGX_HTTP_OK, ctx != nullptr ? ctx->id_json : "null", rpc::kInternalError, "internal error");
}

// The same for a request that waited (a statement, a timer).
void fail_waiting_request(WalletHistoryRequest* ctx) { finish_async(ctx->r, internal_error(ctx->r)); }
void fail_query(PgOp* op, PgOutcome, PGresult*) { fail_waiting_request(static_cast<WalletHistoryRequest*>(op->data)); }
void fail_timer(ngx_event_t* ev) { fail_waiting_request(static_cast<WalletHistoryRequest*>(ev->data)); }

void rerun(ngx_event_t* ev) {
    auto* ctx = static_cast<WalletHistoryRequest*>(ev->data);
    if (worker_pool) worker_pool->submit(&ctx->op);
}

void query_done(PgOp* op, PgOutcome outcome, PGresult* rows) {
    WALLET_FAULT_POINT("api.query_done");
    auto* ctx = static_cast<WalletHistoryRequest*>(op->data);
    ngx_http_request_t* r = ctx->r;
    // The pool ran it a second time after a retryable failure (once per
    // statement: the flag stays set).
    if (op->retried && !ctx->retry_counted) {
        ctx->retry_counted = true;
        count_rerun(ctx, api::Rerun::RetryableError);
    }
    if (outcome == PgOutcome::Rows && behind_cursor(ctx, rows)) {
        count_rerun(ctx, api::Rerun::BehindCursor);
        rerun_elsewhere(ctx);
        return;
    }
    if (ctx->deadline.timer_set) ngx_del_timer(&ctx->deadline);
    ngx_int_t rc = NGX_ERROR;
    switch (outcome) {
    case PgOutcome::Rows:
        settle(ctx, api::Outcome::Ok);
        rc = respond_to_rows(ctx, rows);
        break;
    case PgOutcome::Timeout:
        settle(ctx, api::Outcome::Timeout);
        count_pg_error(ctx, api::PgError::Timeout);
        rc = send_error(r, NGX_HTTP_OK, ctx->id_json, rpc::kInternalError, "request timeout");
        break;
    case PgOutcome::Failed:
    case PgOutcome::Unavailable:
        settle(ctx, api::Outcome::DatabaseError);
        count_pg_error(ctx, outcome == PgOutcome::Failed ? api::PgError::Failed : api::PgError::Unavailable);
        rc = send_error(r, NGX_HTTP_OK, ctx->id_json, rpc::kInternalError, "internal error");
        break;
    }
    finish_async(r, rc);
}

void deadline_passed(ngx_event_t* ev) {
    auto* ctx = static_cast<WalletHistoryRequest*>(ev->data);
    ngx_http_request_t* r = ctx->r;
    if (ctx->rerun.timer_set) ngx_del_timer(&ctx->rerun);
    if (worker_pool) worker_pool->cancel(&ctx->op);
    settle(ctx, api::Outcome::Timeout);
    finish_async(r, send_error(r, NGX_HTTP_OK, ctx->id_json, rpc::kInternalError, "request timeout"));
}

using wallet::ngx::guarded;
constexpr auto on_query_done = guarded<"wallet_history: statement completion", query_done, fail_query>;
constexpr auto on_deadline = guarded<"wallet_history: request deadline", deadline_passed, fail_timer>;
constexpr auto on_rerun = guarded<"wallet_history: statement rerun", rerun, fail_timer>;

// Parses the body and answers, or starts the statement.
ngx_int_t handle_body(ngx_http_request_t* r, WalletHistoryRequest* ctx) {
    ngx_http_wallet_history_main_conf_t* mcf = main_conf(r);
    const WalletHistoryRuntime& rt = *mcf->runtime;
    std::string scratch;
    std::string_view body;
    if (wallet::ngx::request_body_view(r, static_cast<std::size_t>(rt.config.api.max_body_bytes), scratch, body) ==
        wallet::ngx::BodyRead::TooLarge) {
        settle(ctx, api::Outcome::TooLarge);
        return send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, "null", rpc::kInvalidRequest, "request too large");
    }
    api::ParsedRequest parsed = api::parse_request(body, rt.limits, rt.cursors);
    ctx->id_json = std::move(parsed.id_json);
    ctx->method = parsed.method;
    if (parsed.error) {
        settle(ctx, api::outcome_of_error(parsed.error->code));
        return send_error(r, NGX_HTTP_OK, ctx->id_json, parsed.error->code, parsed.error->message);
    }
    ctx->call = std::move(*parsed.call);

    api::StatementCall statement;
    switch (ctx->call.method) {
    case api::Method::GetMethods:
        settle(ctx, api::Outcome::Ok);
        return send_result(r, ctx->id_json, api::methods_result());
    case api::Method::GetStatus:
        statement = api::status_statement(rt.config.node_max_stall_ms);
        break;
    case api::Method::GetRewardTotals:
        statement = api::totals_statement(ctx->call.page, remembered_account(ctx->call.page.account));
        break;
    case api::Method::GetBalances:
    case api::Method::GetDelegations:
        statement = api::balances_statement(ctx->call.balances, remembered_account(ctx->call.balances.account));
        break;
    case api::Method::GetBalanceHistory:
        statement = api::balance_history_statement(ctx->call.history, remembered_account(ctx->call.history.account));
        break;
    case api::Method::GetBalanceAggregation:
        statement = api::balance_periods_statement(ctx->call.history, rt.limits.max_range_days);
        break;
    default:
        statement = api::page_statement(ctx->call.page, remembered_account(ctx->call.page.account));
        break;
    }
    if (!worker_pool) {
        settle(ctx, api::Outcome::InternalError);
        return send_error(r, NGX_HTTP_OK, ctx->id_json, rpc::kInternalError, "internal error");
    }
    ctx->op.statement = statement.name;
    ctx->op.params = std::move(statement.params);
    ctx->op.done = on_query_done;
    ctx->op.data = ctx;
    ctx->deadline.handler = on_deadline;
    ctx->deadline.data = ctx;
    ctx->deadline.log = r->connection->log;
    ctx->rerun.handler = on_rerun;
    ctx->rerun.data = ctx;
    ctx->rerun.log = r->connection->log;
    ngx_add_timer(&ctx->deadline, static_cast<ngx_msec_t>(rt.config.api.request_deadline_ms));
    worker_pool->submit(&ctx->op);
    // Still queued: no idle connection of this worker's pool took it.
    if (ctx->op.queued && ctx->counters != nullptr) metrics::add(ctx->counters->pool_waits);
    return NGX_DONE;
}

void body_read(ngx_http_request_t* r) {
    auto* ctx = static_cast<WalletHistoryRequest*>(ngx_http_get_module_ctx(r, ngx_http_wallet_history_module));
    const ngx_int_t rc = handle_body(r, ctx);
    // NGX_DONE: the statement runs; its completion finalizes the request.
    if (rc != NGX_DONE) ngx_http_finalize_request(r, rc);
}
void fail_body_read(ngx_http_request_t* r) { ngx_http_finalize_request(r, internal_error(r)); }
constexpr auto on_body_read = guarded<"wallet_history: request body", body_read, fail_body_read>;

bool origin_allowed(const WalletHistoryRuntime& rt, const std::string& origin) {
    for (const auto& allowed : rt.config.api.allowed_origins) {
        if (allowed == origin) return true;
    }
    return false;
}

// The client `identity` is over its rate (WALLET_API_RATE_RPS): a request
// of the API, or a push subscribe.
bool identity_rate_limited(ngx_http_wallet_history_main_conf_t* mcf, std::string_view identity) {
    const auto& settings = mcf->runtime->config.api;
    WalletHistoryShared* shared = shared_state(mcf);
    if (settings.rate_rps <= 0 || shared == nullptr) return false;
    auto* shpool = reinterpret_cast<ngx_slab_pool_t*>(mcf->shm_zone->shm.addr);
    api::RateLimitTable table(shared + 1, shared->slots);
    ngx_shmtx_lock(&shpool->mutex);
    const bool allowed = table.allow(identity, ngx_current_msec, settings.rate_rps, settings.rate_burst);
    ngx_shmtx_unlock(&shpool->mutex);
    return !allowed;
}

bool rate_limited(ngx_http_request_t* r, ngx_http_wallet_history_main_conf_t* mcf) {
    const auto& settings = mcf->runtime->config.api;
    if (settings.rate_rps <= 0) return false;
    // A call the router of this nginx forwards is its client's; any other
    // request is its peer's (or a trusted proxy's X-Forwarded-For entry).
    std::string identity = api::router_client(wallet::ngx::request_header(r, api::kRouterClientHeader),
                                              wallet::ngx::router_token());
    if (identity.empty()) {
        identity = api::client_identity(wallet::ngx::client_address(r),
                                        settings.trust_proxy ? wallet::ngx::request_header(r, "X-Forwarded-For") : "",
                                        settings.trust_proxy, settings.trusted_proxy_hops);
    }
    return identity_rate_limited(mcf, identity);
}

// A place under WALLET_API_MAX_INFLIGHT (the workers' requests together):
// false when the cap is reached; `counted`: a place was taken (give it back
// with leave_inflight), not when there is no cap.
bool enter_inflight(ngx_http_wallet_history_main_conf_t* mcf, bool& counted) {
    counted = false;
    const std::int64_t max_inflight = mcf->runtime->config.api.max_inflight;
    if (max_inflight <= 0 || worker_inflight.table == nullptr) return true;
    auto* shpool = reinterpret_cast<ngx_slab_pool_t*>(mcf->shm_zone->shm.addr);
    counted = worker_inflight.table->try_enter(worker_inflight.slot, max_inflight) ||
              (reclaim_when_full(shpool) && worker_inflight.table->try_enter(worker_inflight.slot, max_inflight));
    return counted;
}

// Counts a request refused before it has a WalletHistoryRequest.
void count_refused(WalletHistoryShared* shared, api::Outcome outcome, std::uint64_t started_us) {
    if (shared != nullptr) shared->counters.record(std::nullopt, outcome, started_us);
}

ngx_int_t handle_api(ngx_http_request_t* r) {
    WALLET_FAULT_POINT("api.request");
    const std::uint64_t started_us = metrics::monotonic_us();
    ngx_http_wallet_history_main_conf_t* mcf = main_conf(r);
    const WalletHistoryRuntime& rt = *mcf->runtime;

    // CORS only for the configured origins (none by default).
    const std::string origin = wallet::ngx::request_header(r, "Origin");
    const bool cors = !origin.empty() && origin_allowed(rt, origin);
    if (cors && (!wallet::ngx::add_response_header(r, "Access-Control-Allow-Origin", origin) ||
                 !wallet::ngx::add_response_header(r, "Vary", "Origin"))) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (r->method == NGX_HTTP_OPTIONS && cors) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        wallet::ngx::add_response_header(r, "Access-Control-Allow-Methods", "POST");
        wallet::ngx::add_response_header(r, "Access-Control-Allow-Headers", "Content-Type");
        wallet::ngx::add_response_header(r, "Access-Control-Max-Age", "600");
        r->headers_out.status = NGX_HTTP_NO_CONTENT;
        r->header_only = 1;
        r->headers_out.content_length_n = 0;
        return ngx_http_send_header(r);
    }
    if (r->method != NGX_HTTP_POST) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        wallet::ngx::add_response_header(r, "Allow", "POST");
        count_refused(shared_state(mcf), api::Outcome::InvalidRequest, started_us);
        return send_error(r, NGX_HTTP_NOT_ALLOWED, "null", rpc::kInvalidRequest, "method not allowed");
    }
    if (rate_limited(r, mcf)) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        count_refused(shared_state(mcf), api::Outcome::RateLimited, started_us);
        return send_error(r, NGX_HTTP_TOO_MANY_REQUESTS, "null", rpc::kInvalidRequest, "rate limit exceeded");
    }
    WalletHistoryShared* shared = shared_state(mcf);
    bool counted = false;
    if (!enter_inflight(mcf, counted)) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        count_refused(shared, api::Outcome::Busy, started_us);
        return send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE, "null", rpc::kInternalError, "server busy");
    }

    ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(r->pool, sizeof(WalletHistoryRequest));
    if (cleanup == nullptr) {
        if (counted) leave_inflight();
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    auto* ctx = new (cleanup->data) WalletHistoryRequest();
    cleanup->handler = destroy_request;
    ctx->r = r;
    ctx->counted_inflight = counted;
    ctx->counters = shared != nullptr ? &shared->counters : nullptr;
    ctx->started_us = started_us;
    ngx_http_set_ctx(r, ctx, ngx_http_wallet_history_module);

    if (r->headers_in.content_length_n > rt.config.api.max_body_bytes) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        settle(ctx, api::Outcome::TooLarge);
        return send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, "null", rpc::kInvalidRequest, "request too large");
    }
    r->request_body_in_single_buf = 1;
    const ngx_int_t rc = ngx_http_read_client_request_body(r, on_body_read);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) return rc;
    return NGX_DONE;
}

constexpr auto ngx_http_wallet_history_handler = guarded<"wallet_history: request", handle_api, internal_error>;

// GET /health: liveness for load balancers, answered without the database
// (a slow query must never delay it); ok is false while the worker's last
// attempt to reach the database failed.
ngx_int_t health(ngx_http_request_t* r) {
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        wallet::ngx::add_response_header(r, "Allow", "GET, HEAD");
        return wallet::ngx::send_json(r, NGX_HTTP_NOT_ALLOWED, R"({"ok":false})");
    }
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    const bool ok = !worker_pool || worker_pool->healthy();
    return wallet::ngx::send_json(r, ok ? NGX_HTTP_OK : NGX_HTTP_SERVICE_UNAVAILABLE,
                                  ok ? R"({"ok":true})" : R"({"ok":false})");
}
ngx_int_t health_failed(ngx_http_request_t*) { return NGX_HTTP_INTERNAL_SERVER_ERROR; }
constexpr auto ngx_http_wallet_history_health_handler = guarded<"wallet_history: health", health, health_failed>;

ngx_int_t init_shared_zone(ngx_shm_zone_t* zone, void* old_data) {
    if (old_data != nullptr) {  // reload: keep counters and buckets
        zone->data = old_data;
        return NGX_OK;
    }
    auto* shpool = reinterpret_cast<ngx_slab_pool_t*>(zone->shm.addr);
    const std::size_t bytes = sizeof(WalletHistoryShared) + api::RateLimitTable::bytes_for(kRateLimitSlots);
    void* memory = ngx_slab_calloc(shpool, bytes);
    if (memory == nullptr) return NGX_ERROR;
    auto* shared = static_cast<WalletHistoryShared*>(memory);
    shared->slots = kRateLimitSlots;
    new (&shared->inflight) api::InflightTable();
    new (&shared->counters) api::ApiCounters();
    zone->data = shared;
    return NGX_OK;
}

char* mark_used(ngx_conf_t* cf, ngx_http_handler_pt handler) {
    auto* clcf = static_cast<ngx_http_core_loc_conf_t*>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = handler;
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_wallet_history_module));
    mcf->used = 1;
    if (!wallet::ngx::add_guard_zone(cf)) return static_cast<char*>(NGX_CONF_ERROR);
    return NGX_CONF_OK;
}

void destroy_runtime(void* data) { static_cast<WalletHistoryRuntime*>(data)->~WalletHistoryRuntime(); }

char* load_runtime(ngx_conf_t* cf, ngx_http_wallet_history_main_conf_t* mcf) {
    std::map<std::string, std::string> overrides;
    if (mcf->env_files != nullptr) {
        auto* files = static_cast<ngx_str_t*>(mcf->env_files->elts);
        for (ngx_uint_t i = 0; i < mcf->env_files->nelts; ++i) {
            auto values = wallet::read_env_file(std::string(reinterpret_cast<char*>(files[i].data), files[i].len));
            if (!values) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "wallet_history_env_file: %s", values.error().c_str());
                return static_cast<char*>(NGX_CONF_ERROR);
            }
            for (auto& [name, value] : *values) overrides[name] = std::move(value);
        }
    }
    if (mcf->overrides != nullptr) {
        auto* kv = static_cast<ngx_keyval_t*>(mcf->overrides->elts);
        for (ngx_uint_t i = 0; i < mcf->overrides->nelts; ++i) {
            overrides[std::string(reinterpret_cast<char*>(kv[i].key.data), kv[i].key.len)] =
                std::string(reinterpret_cast<char*>(kv[i].value.data), kv[i].value.len);
        }
    }
    auto config = api::load_api_config(wallet::process_env(), overrides);
    if (!config) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "wallet_history: %s", config.error().c_str());
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    auto conninfo = api::nonblocking_conninfo(config->database_url);
    if (!conninfo) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "wallet_history: %s", conninfo.error().c_str());
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(cf->pool, sizeof(WalletHistoryRuntime));
    if (cleanup == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    auto* rt = new (cleanup->data) WalletHistoryRuntime();
    cleanup->handler = destroy_runtime;
    rt->config = std::move(config).value();
    const auto& s = rt->config.api;
    rt->limits = api::RequestLimits{s.default_limit, s.max_limit, s.max_range_days, s.max_op_types};
    rt->cursors = wallet::CursorCodec(s.cursor_secret);
    auto& ps = rt->pool_settings;
    ps.servers = std::move(conninfo).value();
    for (auto& server : ps.servers) {
        // The statement timeout and UTC are session settings of every connection;
        // jit off: the prepared plans are kept, and JIT would compile one
        // with a high estimate again on every call (migration 0021).
        std::string options = server.count("options") ? server["options"] + " " : "";
        server["options"] = options + "-c statement_timeout=" + std::to_string(s.statement_timeout_ms) +
                            " -c TimeZone=UTC -c default_transaction_read_only=on -c jit=off";
        server["application_name"] = "wallet_history_api";
    }
    ps.statements = api::prepared_statements();
    ps.connect_timeout_ms = static_cast<ngx_msec_t>(std::min<std::int64_t>(s.request_deadline_ms, 10000));
    mcf->runtime = rt;

    static ngx_str_t zone_name = ngx_string("wallet_history_api");
    mcf->shm_zone = ngx_shared_memory_add(cf, &zone_name, kSharedZoneSize, &ngx_http_wallet_history_module);
    if (mcf->shm_zone == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    mcf->shm_zone->init = init_shared_zone;
    return NGX_CONF_OK;
}

}  // namespace

static char* ngx_http_wallet_history_api(ngx_conf_t* cf, ngx_command_t*, void*) {
    if (!wallet::ngx::make_router_token()) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "wallet_history_api: no random bytes for the router token");
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    return mark_used(cf, ngx_http_wallet_history_handler);
}

static char* ngx_http_wallet_history_health(ngx_conf_t* cf, ngx_command_t*, void*) {
    return mark_used(cf, ngx_http_wallet_history_health_handler);
}

static char* ngx_http_wallet_history_set(ngx_conf_t* cf, ngx_command_t*, void* conf) {
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(conf);
    auto* args = static_cast<ngx_str_t*>(cf->args->elts);
    const std::string name(reinterpret_cast<char*>(args[1].data), args[1].len);
    bool known = false;
    for (const auto& doc : wallet::setting_docs()) known = known || name == doc.name;
    if (!known) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "wallet_history_set: unknown setting \"%V\"", &args[1]);
        return static_cast<char*>(NGX_CONF_ERROR);
    }
    if (mcf->overrides == nullptr) {
        mcf->overrides = ngx_array_create(cf->pool, 8, sizeof(ngx_keyval_t));
        if (mcf->overrides == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    }
    auto* kv = static_cast<ngx_keyval_t*>(ngx_array_push(mcf->overrides));
    if (kv == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    kv->key = args[1];
    kv->value = args[2];
    return NGX_CONF_OK;
}

static char* ngx_http_wallet_history_env_file(ngx_conf_t* cf, ngx_command_t*, void* conf) {
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(conf);
    ngx_str_t path = static_cast<ngx_str_t*>(cf->args->elts)[1];
    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) return static_cast<char*>(NGX_CONF_ERROR);
    if (mcf->env_files == nullptr) {
        mcf->env_files = ngx_array_create(cf->pool, 2, sizeof(ngx_str_t));
        if (mcf->env_files == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    }
    auto* slot = static_cast<ngx_str_t*>(ngx_array_push(mcf->env_files));
    if (slot == nullptr) return static_cast<char*>(NGX_CONF_ERROR);
    *slot = path;
    return NGX_CONF_OK;
}

static void* ngx_http_wallet_history_create_main_conf(ngx_conf_t* cf) {
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_wallet_history_main_conf_t));
}

static char* ngx_http_wallet_history_init_main_conf(ngx_conf_t* cf, void* conf) {
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(conf);
    // A configuration that loads the module without serving the API (the
    // router alone) needs none of the API's settings.
    if (!mcf->used) return NGX_CONF_OK;
    try {
        return load_runtime(cf, mcf);
    } catch (const std::exception& e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "wallet_history: %s", e.what());
        return static_cast<char*>(NGX_CONF_ERROR);
    }
}

// The pool's size needs the worker count, known once the whole
// configuration is read; the workers inherit it.
static ngx_int_t ngx_http_wallet_history_init_module(ngx_cycle_t* cycle) {
    if (cycle->conf_ctx[ngx_http_module.index] == nullptr) return NGX_OK;
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_wallet_history_module));
    if (mcf == nullptr || !mcf->used || mcf->runtime == nullptr) return NGX_OK;
    auto* ccf = reinterpret_cast<ngx_core_conf_t*>(ngx_get_conf(cycle->conf_ctx, ngx_core_module));
    WalletHistoryRuntime& rt = *mcf->runtime;
    const auto& s = rt.config.api;
    rt.pool_size = api::pool_size(s, ccf->worker_processes);
    rt.pool_settings.max_connections = static_cast<std::size_t>(rt.pool_size.per_worker);
    const bool over = rt.pool_size.per_database() > s.db_max_conns_total;
    const ngx_uint_t level = over ? NGX_LOG_WARN : NGX_LOG_NOTICE;
    ngx_log_error(level, cycle->log, 0,
                  "wallet_history: at most %L database connections per database: %L workers x %L (%s)%s",
                  static_cast<int64_t>(rt.pool_size.per_database()), static_cast<int64_t>(rt.pool_size.workers),
                  static_cast<int64_t>(rt.pool_size.per_worker),
                  rt.pool_size.derived ? "WALLET_API_DB_MAX_CONNS_TOTAL shared among the workers"
                                       : "WALLET_API_DB_MAX_CONNS",
                  over ? ", more than WALLET_API_DB_MAX_CONNS_TOTAL: check PostgreSQL's max_connections" : "");
    return NGX_OK;
}

static ngx_int_t ngx_http_wallet_history_init_process(ngx_cycle_t* cycle) {
    if (cycle->conf_ctx[ngx_http_module.index] == nullptr) return NGX_OK;
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_wallet_history_module));
    if (mcf == nullptr || !mcf->used || mcf->runtime == nullptr) return NGX_OK;
    if (mcf->runtime->config.api.max_inflight > 0 && mcf->shm_zone != nullptr && mcf->shm_zone->data != nullptr) {
        auto* shpool = reinterpret_cast<ngx_slab_pool_t*>(mcf->shm_zone->shm.addr);
        worker_inflight.table = &static_cast<WalletHistoryShared*>(mcf->shm_zone->data)->inflight;
        ngx_shmtx_lock(&shpool->mutex);
        worker_inflight.slot = worker_inflight.table->claim(ngx_pid, process_alive);
        ngx_shmtx_unlock(&shpool->mutex);
        if (worker_inflight.slot == nullptr) {
            ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                          "wallet_history: no free in-flight slot: this worker's requests count in the total only");
        }
    }
    try {
        worker_pool = std::make_unique<PgPool>(mcf->runtime->pool_settings, cycle->log);
        if (mcf->runtime->config.db_probe_interval_ms > 0) {
            worker_probes = std::make_unique<wallet::ngx::DatabaseProbes>(
                *worker_pool, static_cast<ngx_msec_t>(mcf->runtime->config.db_probe_interval_ms), cycle->log);
        }
        worker_accounts = std::make_unique<api::RememberedAccounts>(
            static_cast<std::size_t>(mcf->runtime->config.account_cache));
    } catch (const std::exception& e) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "wallet_history: %s", e.what());
        return NGX_ERROR;
    }
    return NGX_OK;
}

static void ngx_http_wallet_history_exit_process(ngx_cycle_t* cycle) {
    // The requests still open (a fast shutdown) leave with the slot.
    if (worker_inflight.table != nullptr && worker_inflight.slot != nullptr) {
        auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(
            ngx_http_cycle_get_module_main_conf(cycle, ngx_http_wallet_history_module));
        auto* shpool = reinterpret_cast<ngx_slab_pool_t*>(mcf->shm_zone->shm.addr);
        ngx_shmtx_lock(&shpool->mutex);
        worker_inflight.table->release(worker_inflight.slot);
        ngx_shmtx_unlock(&shpool->mutex);
    }
    worker_inflight = {};
    wallet::push::shutdown();  // before the pool its statements are in
    worker_probes.reset();  // before the pool its statements are in
    worker_pool.reset();
    worker_accounts.reset();
}

namespace {
ngx_http_wallet_history_main_conf_t* used_main_conf() {
    auto* cycle = const_cast<ngx_cycle_t*>(ngx_cycle);
    if (cycle->conf_ctx[ngx_http_module.index] == nullptr || !worker_pool) return nullptr;
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_wallet_history_module));
    if (mcf == nullptr || !mcf->used || mcf->runtime == nullptr) return nullptr;
    return mcf;
}
}  // namespace

std::optional<wallet::push::ApiContext> wallet::push::api_context() {
    ngx_http_wallet_history_main_conf_t* mcf = used_main_conf();
    if (mcf == nullptr) return std::nullopt;
    WalletHistoryShared* shared = shared_state(mcf);
    api::PushCounters* counters = shared != nullptr ? &shared->counters.push : nullptr;
    return ApiContext{worker_pool.get(), &mcf->runtime->pool_settings, &mcf->runtime->cursors, &mcf->runtime->limits,
                      counters};
}

wallet::push::Admission wallet::push::admit(std::string_view client) {
    ngx_http_wallet_history_main_conf_t* mcf = used_main_conf();
    if (mcf == nullptr) return Admission::Admitted;
    if (identity_rate_limited(mcf, client)) return Admission::RateLimited;
    bool counted = false;
    if (!enter_inflight(mcf, counted)) return Admission::Busy;
    return counted ? Admission::Counted : Admission::Admitted;
}

void wallet::push::leave_inflight() { ::leave_inflight(); }

void ngx_http_wallet_history_write_metrics(metrics::TextWriter& out) {
    auto* cycle = const_cast<ngx_cycle_t*>(ngx_cycle);
    if (cycle->conf_ctx[ngx_http_module.index] == nullptr) return;
    auto* mcf = static_cast<ngx_http_wallet_history_main_conf_t*>(
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_wallet_history_module));
    if (mcf == nullptr || !mcf->used || mcf->shm_zone == nullptr || mcf->shm_zone->data == nullptr) return;
    api::write_api_metrics(out, static_cast<WalletHistoryShared*>(mcf->shm_zone->data)->counters);
    if (mcf->runtime != nullptr) {
        const api::PoolSize& size = mcf->runtime->pool_size;
        out.family("wallet_history_db_connections_max", "gauge",
                   "Most connections the API opens to each database, all nginx workers together.");
        out.sample("wallet_history_db_connections_max", {}, static_cast<std::uint64_t>(size.per_database()));
        out.family("wallet_history_db_connections_per_worker_max", "gauge",
                   "Most connections one nginx worker opens to each database.");
        out.sample("wallet_history_db_connections_per_worker_max", {}, static_cast<std::uint64_t>(size.per_worker));
    }
    // This worker's probes (the worker answering the scrape).
    if (worker_probes) api::write_database_metrics(out, worker_probes->gauges());
}
