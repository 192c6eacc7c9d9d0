// A per-worker pool of asynchronous libpq connections driven by nginx's event
// loop (the pattern of nginx-module.md section 5.1): each PGconn's socket is
// wrapped in an ngx_connection_t registered level-triggered, statements are
// prepared statements sent with PQsendQueryPrepared and flushed until done,
// and results are read with PQconsumeInput/PQisBusy. Nothing here blocks.
//
// Connections run in libpq's pipeline mode, each statement followed by its
// own sync, so one statement's error never touches another's. A statement
// goes to an idle connection, or to a new one while the pool may grow; only
// when every connection is open and busy does it queue behind the statement a
// connection is running, and only behind one that started moments ago: the
// server then takes it up without waiting for the worker's round trip. Should
// that running statement turn out slow, the statements queued behind it are
// sent again elsewhere (they only read; the late answers are dropped), so a
// slow statement delays no other request by more than kPipelineStallMs.
//
// A statement is prepared on a connection the first time that connection
// runs it (sent just ahead of it), so a connection serving one statement
// never waits on locks that only another statement's tables hold.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ngx_wallet_nginx.hpp"
#include "wallet/handles.hpp"

namespace wallet::ngx {

enum class PgOutcome {
    Rows,         // the statement returned rows (result set)
    Timeout,      // statement_timeout cancelled it (SQLSTATE 57014)
    Failed,       // the statement failed
    Unavailable,  // no connection could be made or the connection broke
};

struct PgConnection;
class PgPool;

// One statement call. The owner (a request) keeps it alive until `done` runs
// or until it calls PgPool::cancel.
struct PgOp {
    using Done = void (*)(PgOp* op, PgOutcome outcome, PGresult* rows);

    const char* statement = "";
    std::vector<std::optional<std::string>> params;
    Done done = nullptr;
    void* data = nullptr;

    // Pool state.
    ngx_queue_t queue{};
    PgConnection* connection = nullptr;  // set while sent on a connection
    bool queued = false;
    bool retried = false;
};

// Pipelining: at most this many statements on one connection, queued only
// behind a statement younger than kPipelineJoinMs, and taken back to be sent
// elsewhere once the statement ahead has run kPipelineStallMs.
inline constexpr std::size_t kPipelineDepth = 4;
inline constexpr ngx_msec_t kPipelineJoinMs = 5;
inline constexpr ngx_msec_t kPipelineStallMs = 20;

struct PgPoolSettings {
    std::map<std::string, std::string> conninfo;  // libpq keywords (see api::nonblocking_conninfo)
    std::map<std::string, std::string> statements;  // name -> "(types) AS sql" for PREPARE
    std::size_t max_connections = 10;
    ngx_msec_t connect_timeout_ms = 5000;
};

class PgPool {
public:
    PgPool(PgPoolSettings settings, ngx_log_t* log);
    ~PgPool();
    PgPool(const PgPool&) = delete;
    PgPool& operator=(const PgPool&) = delete;

    // Runs op on an idle connection, opens a new one, pipelines it, or queues it.
    void submit(PgOp* op);
    // Forgets op: it leaves the queue, or its answer will be dropped; a
    // connection that runs nothing else is closed instead (a running
    // statement cannot be cancelled without blocking in PG15).
    void cancel(PgOp* op);

    // False after a connection attempt failed while none is open.
    bool healthy() const { return healthy_; }
    std::size_t open_connections() const { return connections_.size(); }

    // Used by the connections' event handlers.
    void on_connected(PgConnection* connection);
    void on_idle(PgConnection* connection);
    void on_broken(PgConnection* connection, bool during_connect);
    void on_kick();
    void on_stall_check();
    const PgPoolSettings& settings() const { return settings_; }
    ngx_log_t* log() const { return log_; }

private:
    void dispatch();
    bool open_connection();
    void close(PgConnection* connection);
    void requeue_or_fail(PgOp* op);
    void post_kick();
    PgConnection* idle_connection();
    PgConnection* pipeline_candidate();
    void send_or_requeue(PgConnection* connection, PgOp* op);
    void watch_stalls();

    PgPoolSettings settings_;
    ngx_log_t* log_;
    std::vector<std::unique_ptr<PgConnection>> connections_;
    ngx_queue_t waiting_{};
    std::vector<PgOp*> failed_;  // completed with Unavailable by the next kick
    ngx_event_t kick_{};
    ngx_event_t stall_check_{};  // armed while statements wait behind others
    std::vector<const char*> keywords_;
    std::vector<const char*> values_;
    bool healthy_ = true;
};

}  // namespace wallet::ngx
