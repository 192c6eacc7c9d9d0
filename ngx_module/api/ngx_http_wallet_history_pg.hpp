// A per-worker pool of asynchronous libpq connections driven by nginx's event
// loop (the pattern of nginx-module.md section 5.1): each PGconn's socket is
// wrapped in an ngx_connection_t registered level-triggered, queries are
// prepared statements sent with PQsendQueryPrepared and flushed until done,
// and results are read with PQconsumeInput/PQisBusy. Nothing here blocks.
//
// A statement is prepared on a connection the first time that connection
// runs it (one extra round trip), so a connection serving one statement never
// waits on locks that only another statement's tables hold.
//
// The pool may serve from several databases (a primary and its hot standbys,
// docs/scaling-out.md): new connections go to the database with the fewest,
// idle ones are handed out in turn, and a database whose connection failed or
// broke gets no new connection until its backoff passes (unless every one is
// backing off). A statement cancelled by a recovery conflict or cut by a lost
// connection is run once more, on another database when there is one.
//
// A statement may be bound to one database (PgOp::only: the workers' probes
// of each database, ngx_http_wallet_history_probe.hpp): it waits for an idle
// connection to that database (opening one when it has none) and fails at
// once while that database is backing off without a connection.
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

// No database: PgOp::avoid when none is to be avoided.
inline constexpr std::size_t kNoServer = static_cast<std::size_t>(-1);

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
    std::size_t server = kNoServer;  // the database that ran it last
    std::size_t avoid = kNoServer;   // a database not to run it on, while another can
    std::size_t only = kNoServer;    // the database it must run on (kNoServer: any)
    bool from_standby = false;       // that database said in_hot_standby (PostgreSQL 14+ reports it)
};

struct PgPoolSettings {
    // libpq keywords of each database (see api::nonblocking_conninfo).
    std::vector<std::map<std::string, std::string>> servers;
    std::map<std::string, std::string> statements;  // name -> "(types) AS sql" for PREPARE
    std::size_t max_connections = 10;               // per database
    ngx_msec_t connect_timeout_ms = 5000;
    ngx_msec_t backoff_min_ms = 100;                // after a database's first failure
    ngx_msec_t backoff_max_ms = 5000;               // doubling up to this
    // A pool that LISTENs (the push listener, ngx_http_wallet_history_push.hpp):
    // `notified` runs once per notification (its payload), `lost` when a
    // connection broke (a new one listens to nothing until told to again).
    void (*notified)(void* data, const char* payload) = nullptr;
    void (*lost)(void* data) = nullptr;
    void* listener = nullptr;
};

// One database of the pool and its connection failures.
struct PgServer {
    std::vector<const char*> keywords;
    std::vector<const char*> values;
    std::string label;  // host:port, for the log
    std::string name;   // host:port/dbname, the metrics' label (no user, no password)
    unsigned failures = 0;
    ngx_msec_t retry_at = 0;  // ngx_current_msec before which no connection is opened
    bool reachable = true;    // false while its last connection attempt failed
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

    // False while the last connection attempt to every database failed.
    bool healthy() const;
    std::size_t open_connections() const { return connections_.size(); }
    // Whether a database other than `server` can take statements now.
    bool has_alternative(std::size_t server) const;

    // Used by the connections' event handlers.
    void on_connected(PgConnection* connection);
    void on_idle(PgConnection* connection);
    void on_broken(PgConnection* connection, bool during_connect);
    // The statement failed in a way another database may not: run it again.
    void on_retryable(PgConnection* connection, PgOp* op);
    void on_kick();
    const PgPoolSettings& settings() const { return settings_; }
    const std::string& server_label(std::size_t server) const { return servers_[server].label; }
    std::size_t server_count() const { return servers_.size(); }
    const std::string& server_name(std::size_t server) const { return servers_[server].name; }
    ngx_log_t* log() const { return log_; }

private:
    void dispatch();
    bool open_connection(std::size_t server);
    void close(PgConnection* connection);
    void requeue_or_fail(PgOp* op);
    void post_kick();
    void server_failed(std::size_t server);
    bool backing_off(std::size_t server) const;
    bool usable_other(std::size_t server) const;
    std::size_t connections_to(std::size_t server) const;
    // The database for a new connection of `op`, or kNoServer when full.
    std::size_t server_for_new_connection(const PgOp* op) const;
    PgConnection* idle_connection(const PgOp* op);

    PgPoolSettings settings_;
    ngx_log_t* log_;
    std::vector<PgServer> servers_;
    std::vector<std::unique_ptr<PgConnection>> connections_;
    ngx_queue_t waiting_{};
    std::vector<PgOp*> failed_;  // completed with Unavailable by the next kick
    ngx_event_t kick_{};
    std::size_t next_idle_ = 0;  // where the search for an idle connection starts
};

}  // namespace wallet::ngx
