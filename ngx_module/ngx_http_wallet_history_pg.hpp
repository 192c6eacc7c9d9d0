// A per-worker pool of asynchronous libpq connections driven by nginx's event
// loop (the pattern of nginx-module.md section 5.1): each PGconn's socket is
// wrapped in an ngx_connection_t registered level-triggered, queries are
// prepared statements sent with PQsendQueryPrepared and flushed until done,
// and results are read with PQconsumeInput/PQisBusy. Nothing here blocks.
//
// A statement is prepared on a connection the first time that connection
// runs it (one extra round trip), so a connection serving one statement never
// waits on locks that only another statement's tables hold.
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
    PgConnection* connection = nullptr;
    bool queued = false;
    bool retried = false;
};

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

    // Runs op on an idle connection, opens a new one, or queues it.
    void submit(PgOp* op);
    // Forgets op: it leaves the queue, or its connection is closed (a
    // running statement cannot be cancelled without blocking in PG15).
    void cancel(PgOp* op);

    // False after a connection attempt failed while none is open.
    bool healthy() const { return healthy_; }
    std::size_t open_connections() const { return connections_.size(); }

    // Used by the connections' event handlers.
    void on_connected(PgConnection* connection);
    void on_idle(PgConnection* connection);
    void on_broken(PgConnection* connection, bool during_connect);
    void on_kick();
    const PgPoolSettings& settings() const { return settings_; }
    ngx_log_t* log() const { return log_; }

private:
    void dispatch();
    bool open_connection();
    void close(PgConnection* connection);
    void requeue_or_fail(PgOp* op);
    void post_kick();
    PgConnection* idle_connection();

    PgPoolSettings settings_;
    ngx_log_t* log_;
    std::vector<std::unique_ptr<PgConnection>> connections_;
    ngx_queue_t waiting_{};
    std::vector<PgOp*> failed_;  // completed with Unavailable by the next kick
    ngx_event_t kick_{};
    std::vector<const char*> keywords_;
    std::vector<const char*> values_;
    bool healthy_ = true;
};

}  // namespace wallet::ngx
