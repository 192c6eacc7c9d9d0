// The asynchronous PostgreSQL pool of the wallet_history module (see the
// header). Ops are completed only from event handlers (never from inside
// submit), so a request is never finalized underneath its own caller.
#include "ngx_http_wallet_history_pg.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <string_view>

#include "ngx_wallet_connection.hpp"
#include "ngx_wallet_guard.hpp"

namespace wallet::ngx {

struct PgConnection {
    enum class State { Connecting, Idle, Preparing, Executing };

    PgPool* pool = nullptr;
    std::size_t server = 0;  // index in the pool's databases
    PgConnPtr pg;
    EventConnection c;  // declared after pg: released before PQfinish closes the socket
    State state = State::Connecting;
    ino_t socket_id = 0;  // the watched socket's inode: a new socket may reuse the number
    PgOp* op = nullptr;
    std::set<std::string, std::less<>> prepared;
    PgResultPtr result;
};

namespace {

void pg_socket_ready(ngx_event_t* ev);
// nginx calls these guarded (ngx_wallet_guard) without a recovery: a
// statement caught in an exception ends by its request's deadline.
constexpr auto pg_event_handler = guarded<"wallet_history: database socket", pg_socket_ready>;

// The inode of a socket, 0 when it cannot be read.
ino_t socket_inode(int fd) {
    struct stat st {};
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// Watches the socket libpq currently uses (libpq owns and closes it).
bool watch_socket(PgConnection* conn, ngx_log_t* log) {
    const int fd = PQsocket(conn->pg.get());
    conn->socket_id = socket_inode(fd);
    return conn->c.watch_foreign(fd, conn, pg_event_handler, log);
}

// Whether libpq moved to another socket: sslmode allow or prefer connect
// again, with or without TLS, after the server refused the first try. The
// new socket often gets the closed one's number, and closing took the old
// one out of epoll: the identity says more than the number.
bool socket_changed(PgConnection* conn) {
    const int fd = PQsocket(conn->pg.get());
    return fd != conn->c->fd || socket_inode(fd) != conn->socket_id;
}

// libpq's own message (no password in it), on one line.
std::string pg_error_text(const PGconn* pg) {
    std::string text = pg != nullptr ? PQerrorMessage(pg) : "out of memory";
    std::replace(text.begin(), text.end(), '\n', ' ');
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text;
}

void log_connect_failure(const PgPool& pool, const PgConnection* conn, const char* why) {
    const std::string label = pool.server_label(conn->server);
    const std::string detail = why != nullptr ? why : pg_error_text(conn->pg.get());
    ngx_log_error(NGX_LOG_ERR, pool.log(), 0, "wallet_history: database connect to %s failed: %s", label.c_str(),
                  detail.c_str());
}

// Errors another database (or the same one, a moment later) would not give:
// a standby cancelling the statement for a recovery conflict (40001, or
// 40P01 for a buffer-pin deadlock), a server shutting down or still starting
// (57P01-57P03), a broken connection (class 08).
bool retryable(PGresult* result) {
    const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    if (state == nullptr) return false;
    return std::strcmp(state, "40001") == 0 || std::strcmp(state, "40P01") == 0 || std::strncmp(state, "57P0", 4) == 0 ||
           std::strncmp(state, "08", 2) == 0;
}

PgOutcome outcome_of(PGresult* result) {
    if (result == nullptr) return PgOutcome::Failed;
    const ExecStatusType status = PQresultStatus(result);
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return PgOutcome::Rows;
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    if (state != nullptr && std::strcmp(state, "57014") == 0) return PgOutcome::Timeout;
    return PgOutcome::Failed;
}

// Flushes the outgoing buffer; a write interest stays only while data waits.
bool flush(PgConnection* conn) {
    const int rc = PQflush(conn->pg.get());
    if (rc < 0) return false;
    conn->c.want_write(rc == 1);
    return true;
}

bool send_current(PgConnection* conn) {
    PgOp* op = conn->op;
    PGconn* pg = conn->pg.get();
    int sent = 0;
    if (!conn->prepared.contains(std::string_view(op->statement))) {
        auto it = conn->pool->settings().statements.find(op->statement);
        if (it == conn->pool->settings().statements.end()) return false;
        const std::string sql = std::string("PREPARE ") + op->statement + " " + it->second;
        conn->state = PgConnection::State::Preparing;
        sent = PQsendQuery(pg, sql.c_str());
    } else {
        // The statements take a handful of parameters: no allocation for them.
        std::array<const char*, 16> values;
        if (op->params.size() > values.size()) return false;
        for (std::size_t i = 0; i < op->params.size(); ++i) values[i] = op->params[i] ? op->params[i]->c_str() : nullptr;
        conn->state = PgConnection::State::Executing;
        sent = PQsendQueryPrepared(pg, op->statement, static_cast<int>(op->params.size()), values.data(), nullptr,
                                   nullptr, 0);
    }
    return sent == 1 && flush(conn);
}

void drive_connect(PgConnection* conn, ngx_event_t* ev) {
    PgPool* pool = conn->pool;
    if (ev->timedout) {
        log_connect_failure(*pool, conn, "timed out");
        pool->on_broken(conn, true);
        return;
    }
    const PostgresPollingStatusType status = PQconnectPoll(conn->pg.get());
    // libpq may move to another socket while connecting; follow it.
    if (status != PGRES_POLLING_FAILED && socket_changed(conn)) {
        const ngx_msec_t remaining = conn->c->read->timer_set ? conn->c->read->timer.key - ngx_current_msec : 0;
        if (!watch_socket(conn, pool->log())) {
            pool->on_broken(conn, true);
            return;
        }
        ngx_add_timer(conn->c->read, remaining > 0 ? remaining : 1);
    }
    // Only the readiness libpq asks for: during the TLS handshake a
    // readable socket while it waits to write would wake the worker for nothing.
    switch (status) {
    case PGRES_POLLING_READING:
        conn->c.want_read(true);
        conn->c.want_write(false);
        return;
    case PGRES_POLLING_WRITING:
        conn->c.want_write(true);
        conn->c.want_read(false);
        return;
    case PGRES_POLLING_OK:
        if (conn->c->read->timer_set) ngx_del_timer(conn->c->read);
        conn->c.want_read(true);
        conn->c.want_write(false);
        conn->state = PgConnection::State::Idle;
        pool->on_connected(conn);
        return;
    default:
        log_connect_failure(*pool, conn, nullptr);
        pool->on_broken(conn, true);
        return;
    }
}

// A command finished (PQgetResult returned NULL).
void command_done(PgConnection* conn) {
    PgPool* pool = conn->pool;
    PgOp* op = conn->op;
    PgResultPtr result = std::move(conn->result);
    const PgOutcome outcome = outcome_of(result.get());
    if (conn->state == PgConnection::State::Preparing && outcome == PgOutcome::Rows) {
        conn->prepared.insert(op->statement);
        if (!send_current(conn)) pool->on_broken(conn, false);
        return;
    }
    if (outcome == PgOutcome::Failed && result) {
        // The SQLSTATE only: messages may quote values from the request.
        const char* state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
        const bool again = !op->retried && retryable(result.get());
        const ngx_uint_t level = again ? NGX_LOG_WARN : NGX_LOG_ERR;
        ngx_log_error(level, pool->log(), 0,
                      "wallet_history: statement %s failed with SQLSTATE %s%s", op->statement,
                      state != nullptr ? state : "?", again ? ", run again" : "");
        if (again) {
            if (PQstatus(conn->pg.get()) == CONNECTION_BAD) {
                pool->on_broken(conn, false);
            } else {
                pool->on_retryable(conn, op);
            }
            return;
        }
    }
    conn->op = nullptr;
    op->connection = nullptr;
    op->server = conn->server;
    const char* hot_standby = PQparameterStatus(conn->pg.get(), "in_hot_standby");
    op->from_standby = hot_standby != nullptr && std::strcmp(hot_standby, "on") == 0;
    conn->state = PgConnection::State::Idle;
    // The next waiting statement goes out before this answer is written, so
    // the server works on it meanwhile.
    pool->on_idle(conn);
    op->done(op, outcome, result.get());
}

void drive_query(PgConnection* conn, ngx_event_t* ev) {
    PGconn* pg = conn->pg.get();
    if (ev->write) {
        if (!flush(conn)) conn->pool->on_broken(conn, false);
        return;
    }
    if (PQconsumeInput(pg) == 0) {
        conn->pool->on_broken(conn, false);
        return;
    }
    const PgPoolSettings& settings = conn->pool->settings();
    while (PGnotify* notify = PQnotifies(pg)) {
        if (settings.notified != nullptr) settings.notified(settings.listener, notify->extra);
        PQfreemem(notify);
    }
    if (conn->state == PgConnection::State::Idle) {
        // Input on an idle connection: the server is closing it, or it sent
        // a notice. A broken connection is dropped now, not at its next use.
        if (PQstatus(pg) == CONNECTION_BAD) conn->pool->on_broken(conn, false);
        return;
    }
    while (PQisBusy(pg) == 0) {
        PGresult* next = PQgetResult(pg);
        if (next == nullptr) {
            command_done(conn);
            return;
        }
        // Keep the first result, or the first error.
        if (!conn->result || (outcome_of(conn->result.get()) == PgOutcome::Rows && outcome_of(next) != PgOutcome::Rows)) {
            conn->result.reset(next);
        } else {
            PQclear(next);
        }
    }
}

void pg_socket_ready(ngx_event_t* ev) {
    auto* c = static_cast<ngx_connection_t*>(ev->data);
    auto* conn = static_cast<PgConnection*>(c->data);
    if (conn->state == PgConnection::State::Connecting) {
        drive_connect(conn, ev);
    } else {
        drive_query(conn, ev);
    }
}

void pool_kicked(ngx_event_t* ev);
constexpr auto kick_handler = guarded<"wallet_history: database pool", pool_kicked>;

}  // namespace

PgPool::PgPool(PgPoolSettings settings, ngx_log_t* log) : settings_(std::move(settings)), log_(log) {
    ngx_queue_init(&waiting_);
    servers_.resize(settings_.servers.size());
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        PgServer& server = servers_[i];
        for (const auto& [key, value] : settings_.servers[i]) {
            server.keywords.push_back(key.c_str());
            server.values.push_back(value.c_str());
        }
        server.keywords.push_back(nullptr);
        server.values.push_back(nullptr);
        const auto& info = settings_.servers[i];
        const auto host = info.count("host") ? info.at("host") : info.count("hostaddr") ? info.at("hostaddr") : "";
        server.label = host + ":" + (info.count("port") ? info.at("port") : "5432");
        server.name = server.label + "/" + (info.count("dbname") ? info.at("dbname") : "");
    }
    kick_.handler = kick_handler;
    kick_.data = this;
    kick_.log = log_;
}

PgPool::~PgPool() {
    unpost_event(&kick_);
    connections_.clear();
}

void PgPool::submit(PgOp* op) {
    op->queued = true;
    ngx_queue_insert_tail(&waiting_, &op->queue);
    dispatch();
}

void PgPool::cancel(PgOp* op) {
    std::erase(failed_, op);
    if (op->queued) {
        ngx_queue_remove(&op->queue);
        op->queued = false;
    }
    if (op->connection != nullptr) {
        PgConnection* conn = op->connection;
        conn->op = nullptr;
        op->connection = nullptr;
        close(conn);
        // The slot is free again for queued work.
        post_kick();
    }
}

bool PgPool::backing_off(std::size_t server) const {
    const PgServer& s = servers_[server];
    return s.failures > 0 && static_cast<ngx_msec_int_t>(s.retry_at - ngx_current_msec) > 0;
}

bool PgPool::usable_other(std::size_t server) const {
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (i != server && !backing_off(i)) return true;
    }
    return false;
}

bool PgPool::has_alternative(std::size_t server) const { return server < servers_.size() && usable_other(server); }

bool PgPool::healthy() const {
    for (const PgServer& s : servers_) {
        if (s.reachable) return true;
    }
    return servers_.empty();
}

std::size_t PgPool::connections_to(std::size_t server) const {
    std::size_t n = 0;
    for (const auto& conn : connections_) n += conn->server == server ? 1 : 0;
    return n;
}

// Idle connections are taken in turn across the pool, so statements spread
// over the databases; one the op avoids is taken only when no other
// database can serve it.
PgConnection* PgPool::idle_connection(const PgOp* op) {
    const bool avoid = op->only == kNoServer && op->avoid != kNoServer && usable_other(op->avoid);
    const std::size_t n = connections_.size();
    for (std::size_t k = 0; k < n; ++k) {
        PgConnection* conn = connections_[(next_idle_ + k) % n].get();
        if (conn->state != PgConnection::State::Idle || (avoid && conn->server == op->avoid) ||
            (op->only != kNoServer && conn->server != op->only)) {
            continue;
        }
        next_idle_ = (next_idle_ + k + 1) % n;
        return conn;
    }
    return nullptr;
}

// The database with the fewest connections among those not backing off
// (nor avoided by the op); when every database is backing off, the one due
// first, so that a lone database is retried as soon as a request needs it.
std::size_t PgPool::server_for_new_connection(const PgOp* op) const {
    std::size_t best = kNoServer;
    std::size_t due = kNoServer;
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (connections_to(i) >= settings_.max_connections) continue;
        if (backing_off(i)) {
            if (due == kNoServer || static_cast<ngx_msec_int_t>(servers_[i].retry_at - servers_[due].retry_at) < 0) due = i;
            continue;
        }
        if (i == op->avoid && usable_other(i)) continue;
        if (best == kNoServer || connections_to(i) < connections_to(best)) best = i;
    }
    if (best != kNoServer) return best;
    return usable_other(kNoServer) ? kNoServer : due;
}

void PgPool::dispatch() {
    ngx_queue_t* q = ngx_queue_head(&waiting_);
    while (q != ngx_queue_sentinel(&waiting_)) {
        ngx_queue_t* next = ngx_queue_next(q);
        PgOp* op = ngx_queue_data(q, PgOp, queue);
        PgConnection* conn = idle_connection(op);
        if (conn == nullptr) {
            if (op->only != kNoServer && connections_to(op->only) == 0 && backing_off(op->only)) {
                // Bound to a database that cannot be reached now: it fails
                // (from the event loop) rather than waits for the backoff.
                ngx_queue_remove(q);
                op->queued = false;
                failed_.push_back(op);
                post_kick();
                q = next;
                continue;
            }
            // No idle connection at all (this op avoids no database and may
            // run on any): the ops behind it would find none either. Under
            // load most of the queue waits, and a dispatch runs for every statement.
            if (connections_.empty() || (op->avoid == kNoServer && op->only == kNoServer)) break;
            q = next;
            continue;
        }
        ngx_queue_remove(q);
        op->queued = false;
        conn->op = op;
        op->connection = conn;
        op->avoid = kNoServer;
        if (!send_current(conn)) {
            // The connection is unusable; the op goes back to the front and
            // is retried once, completed later from the event loop.
            conn->op = nullptr;
            op->connection = nullptr;
            op->avoid = conn->server;
            close(conn);
            requeue_or_fail(op);
        }
        q = next;
    }
    // One new connection per waiting op beyond those already connecting.
    std::size_t connecting = 0;
    for (auto& conn : connections_) connecting += conn->state == PgConnection::State::Connecting ? 1 : 0;
    for (q = ngx_queue_head(&waiting_); q != ngx_queue_sentinel(&waiting_); q = ngx_queue_next(q)) {
        const PgOp* op = ngx_queue_data(q, PgOp, queue);
        if (op->only != kNoServer) {
            // Bound to a database: a connection to it, when it has none.
            if (connections_to(op->only) == 0 && !backing_off(op->only)) open_connection(op->only);
            continue;
        }
        if (connecting > 0) {
            --connecting;
            continue;
        }
        const std::size_t server = server_for_new_connection(op);
        if (server == kNoServer || !open_connection(server)) break;
    }
    // Once the pool is in use, every database that can be reached holds a
    // connection, so that idle ones are taken in turn across the databases
    // even at low load, and a database back from its backoff is tried again.
    if (servers_.size() > 1 && !connections_.empty()) {
        for (std::size_t i = 0; i < servers_.size(); ++i) {
            if (connections_to(i) == 0 && !backing_off(i)) open_connection(i);
        }
    }
}

void PgPool::requeue_or_fail(PgOp* op) {
    if (op->retried) {
        failed_.push_back(op);
    } else {
        op->retried = true;
        op->queued = true;
        ngx_queue_insert_head(&waiting_, &op->queue);
    }
    post_kick();
}

void PgPool::post_kick() {
    if (!kick_.posted) post_event(&kick_);
}

bool PgPool::open_connection(std::size_t server) {
    auto conn = std::make_unique<PgConnection>();
    conn->pool = this;
    conn->server = server;
    conn->pg.reset(PQconnectStartParams(servers_[server].keywords.data(), servers_[server].values.data(), 0));
    if (!conn->pg || PQstatus(conn->pg.get()) == CONNECTION_BAD || PQsetnonblocking(conn->pg.get(), 1) != 0) {
        log_connect_failure(*this, conn.get(), nullptr);
        servers_[server].reachable = false;
        server_failed(server);
        post_kick();
        return false;
    }
    if (!watch_socket(conn.get(), log_)) {
        ngx_log_error(NGX_LOG_ERR, log_, 0, "wallet_history: no free nginx connection for the database");
        post_kick();
        return false;
    }
    // A connect in progress: libpq waits for the socket to be writable.
    conn->c.want_write(true);
    conn->c.want_read(false);
    ngx_add_timer(conn->c->read, settings_.connect_timeout_ms);
    connections_.push_back(std::move(conn));
    return true;
}

void PgPool::close(PgConnection* conn) {
    conn->c.close();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
        if (it->get() == conn) {
            connections_.erase(it);  // PQfinish closes the socket
            return;
        }
    }
}

void PgPool::server_failed(std::size_t server) {
    PgServer& s = servers_[server];
    const unsigned doublings = std::min(s.failures, 16u);
    const ngx_msec_t backoff = std::min<ngx_msec_t>(settings_.backoff_min_ms << doublings, settings_.backoff_max_ms);
    ++s.failures;
    s.retry_at = ngx_current_msec + backoff;
    if (servers_.size() > 1) {
        ngx_log_error(NGX_LOG_WARN, log_, 0, "wallet_history: database %s avoided for %M ms", s.label.c_str(),
                      backoff);
    }
}

void PgPool::on_connected(PgConnection* conn) {
    servers_[conn->server].failures = 0;
    servers_[conn->server].reachable = true;
    dispatch();
}

void PgPool::on_retryable(PgConnection* conn, PgOp* op) {
    conn->op = nullptr;
    op->connection = nullptr;
    conn->state = PgConnection::State::Idle;
    op->avoid = conn->server;
    requeue_or_fail(op);
    dispatch();
}

void PgPool::on_idle(PgConnection*) { dispatch(); }

void PgPool::on_broken(PgConnection* conn, bool during_connect) {
    PgOp* op = conn->op;
    if (op != nullptr) {
        conn->op = nullptr;
        op->connection = nullptr;
        op->avoid = conn->server;
    }
    const std::size_t server = conn->server;
    close(conn);
    if (during_connect) {
        servers_[server].reachable = false;
    } else {
        ngx_log_error(NGX_LOG_WARN, log_, 0, "wallet_history: database connection lost");
    }
    // A lost connection usually means the server went away: new connections
    // go elsewhere for a while (a lone database is still tried when needed).
    server_failed(server);
    if (op != nullptr) requeue_or_fail(op);
    post_kick();
    if (settings_.lost != nullptr) settings_.lost(settings_.listener);
}

// Runs from the event loop: completes failed ops, fails waiting ones when no
// connection can be made, and hands out free connections.
void PgPool::on_kick() {
    std::vector<PgOp*> failed;
    failed.swap(failed_);
    for (PgOp* op : failed) op->done(op, PgOutcome::Unavailable, nullptr);
    // Waiting ops fail once no database could be connected to; after a lost
    // connection they get a new one (to the same database if it is the only one).
    if (connections_.empty() && !healthy()) {
        while (!ngx_queue_empty(&waiting_)) {
            ngx_queue_t* head = ngx_queue_head(&waiting_);
            PgOp* op = ngx_queue_data(head, PgOp, queue);
            ngx_queue_remove(head);
            op->queued = false;
            op->done(op, PgOutcome::Unavailable, nullptr);
        }
        return;
    }
    dispatch();
}

namespace {

void pool_kicked(ngx_event_t* ev) { static_cast<PgPool*>(ev->data)->on_kick(); }

}  // namespace

}  // namespace wallet::ngx
