// The asynchronous PostgreSQL pool of the wallet_history module (see the
// header). Ops are completed only from event handlers (never from inside
// submit), so a request is never finalized underneath its own caller.
#include "ngx_http_wallet_history_pg.hpp"

#include <array>
#include <cstring>
#include <set>
#include <string_view>

namespace wallet::ngx {

struct PgConnection {
    enum class State { Connecting, Idle, Preparing, Executing };

    PgPool* pool = nullptr;
    PgConnPtr pg;
    ngx_connection_t* c = nullptr;
    State state = State::Connecting;
    PgOp* op = nullptr;
    std::set<std::string, std::less<>> prepared;
    PgResultPtr result;
};

namespace {

void enable_write(ngx_connection_t* c) {
    if (!c->write->active) ngx_add_event(c->write, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);
}

// A level-triggered write interest left registered would make the worker spin.
void disable_write(ngx_connection_t* c) {
    if (c->write->active) ngx_del_event(c->write, NGX_WRITE_EVENT, 0);
}

// Stops watching a socket that libpq owns (and closes): nginx's
// ngx_connection_t is released without closing the descriptor.
void release_socket(ngx_connection_t* c) {
    if (c->read->timer_set) ngx_del_timer(c->read);
    if (c->write->timer_set) ngx_del_timer(c->write);
    // ngx_delete_posted_event is a multi-statement macro: braces required.
    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }
    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }
    // The descriptor is about to be closed, which removes it from epoll.
    if (c->read->active) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
    if (c->write->active) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    ngx_free_connection(c);
    c->fd = static_cast<ngx_socket_t>(-1);
}

void pg_event_handler(ngx_event_t* ev);

ngx_connection_t* wrap_socket(PgConnection* conn, ngx_log_t* log) {
    ngx_connection_t* c = ngx_get_connection(PQsocket(conn->pg.get()), log);
    if (c == nullptr) return nullptr;
    c->data = conn;
    c->log = log;
    c->read->log = log;
    c->write->log = log;
    c->read->handler = pg_event_handler;
    c->write->handler = pg_event_handler;
    // Level-triggered: libpq does not promise to drain the socket per call.
    if (ngx_add_event(c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT) != NGX_OK) {
        ngx_free_connection(c);
        return nullptr;
    }
    return c;
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
    if (rc == 1) {
        enable_write(conn->c);
    } else {
        disable_write(conn->c);
    }
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
        ngx_log_error(NGX_LOG_ERR, pool->log(), 0, "wallet_history: database connect timed out");
        pool->on_broken(conn, true);
        return;
    }
    const PostgresPollingStatusType status = PQconnectPoll(conn->pg.get());
    // libpq may move to another socket while connecting; follow it.
    if (status != PGRES_POLLING_FAILED && PQsocket(conn->pg.get()) != conn->c->fd) {
        const ngx_msec_t remaining = conn->c->read->timer_set ? conn->c->read->timer.key - ngx_current_msec : 0;
        release_socket(conn->c);
        conn->c = wrap_socket(conn, pool->log());
        if (conn->c == nullptr) {
            pool->on_broken(conn, true);
            return;
        }
        ngx_add_timer(conn->c->read, remaining > 0 ? remaining : 1);
    }
    switch (status) {
    case PGRES_POLLING_READING:
        disable_write(conn->c);
        return;
    case PGRES_POLLING_WRITING:
        enable_write(conn->c);
        return;
    case PGRES_POLLING_OK:
        if (conn->c->read->timer_set) ngx_del_timer(conn->c->read);
        disable_write(conn->c);
        conn->state = PgConnection::State::Idle;
        pool->on_connected(conn);
        return;
    default:
        ngx_log_error(NGX_LOG_ERR, pool->log(), 0, "wallet_history: database connect failed");
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
        ngx_log_error(NGX_LOG_ERR, pool->log(), 0, "wallet_history: statement %s failed with SQLSTATE %s",
                      op->statement, state != nullptr ? state : "?");
    }
    conn->op = nullptr;
    op->connection = nullptr;
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
    while (PGnotify* notify = PQnotifies(pg)) PQfreemem(notify);
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

void pg_event_handler(ngx_event_t* ev) {
    auto* c = static_cast<ngx_connection_t*>(ev->data);
    auto* conn = static_cast<PgConnection*>(c->data);
    if (conn->state == PgConnection::State::Connecting) {
        drive_connect(conn, ev);
    } else {
        drive_query(conn, ev);
    }
}

void kick_handler(ngx_event_t* ev);

}  // namespace

PgPool::PgPool(PgPoolSettings settings, ngx_log_t* log) : settings_(std::move(settings)), log_(log) {
    ngx_queue_init(&waiting_);
    for (const auto& [key, value] : settings_.conninfo) {
        keywords_.push_back(key.c_str());
        values_.push_back(value.c_str());
    }
    keywords_.push_back(nullptr);
    values_.push_back(nullptr);
    kick_.handler = kick_handler;
    kick_.data = this;
    kick_.log = log_;
}

PgPool::~PgPool() {
    if (kick_.posted) {
        ngx_delete_posted_event(&kick_);
    }
    while (!connections_.empty()) {
        PgConnection* conn = connections_.back().get();
        if (conn->c != nullptr) release_socket(conn->c);
        connections_.pop_back();
    }
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

PgConnection* PgPool::idle_connection() {
    for (auto& conn : connections_) {
        if (conn->state == PgConnection::State::Idle) return conn.get();
    }
    return nullptr;
}

void PgPool::dispatch() {
    while (!ngx_queue_empty(&waiting_)) {
        PgConnection* conn = idle_connection();
        if (conn == nullptr) break;
        ngx_queue_t* head = ngx_queue_head(&waiting_);
        PgOp* op = ngx_queue_data(head, PgOp, queue);
        ngx_queue_remove(head);
        op->queued = false;
        conn->op = op;
        op->connection = conn;
        if (!send_current(conn)) {
            // The connection is unusable; the op goes back to the front and
            // is retried once, completed later from the event loop.
            conn->op = nullptr;
            op->connection = nullptr;
            close(conn);
            requeue_or_fail(op);
        }
    }
    std::size_t connecting = 0;
    std::size_t waiting = 0;
    for (auto& conn : connections_) connecting += conn->state == PgConnection::State::Connecting ? 1 : 0;
    for (ngx_queue_t* q = ngx_queue_head(&waiting_); q != ngx_queue_sentinel(&waiting_); q = ngx_queue_next(q)) ++waiting;
    while (waiting > connecting && connections_.size() < settings_.max_connections) {
        if (!open_connection()) break;
        ++connecting;
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
    if (!kick_.posted) {
        ngx_post_event(&kick_, &ngx_posted_events);
    }
}

bool PgPool::open_connection() {
    auto conn = std::make_unique<PgConnection>();
    conn->pool = this;
    conn->pg.reset(PQconnectStartParams(keywords_.data(), values_.data(), 0));
    if (!conn->pg || PQstatus(conn->pg.get()) == CONNECTION_BAD || PQsetnonblocking(conn->pg.get(), 1) != 0) {
        ngx_log_error(NGX_LOG_ERR, log_, 0, "wallet_history: database connect failed");
        healthy_ = false;
        post_kick();
        return false;
    }
    conn->c = wrap_socket(conn.get(), log_);
    if (conn->c == nullptr) {
        ngx_log_error(NGX_LOG_ERR, log_, 0, "wallet_history: no free nginx connection for the database");
        post_kick();
        return false;
    }
    enable_write(conn->c);
    ngx_add_timer(conn->c->read, settings_.connect_timeout_ms);
    connections_.push_back(std::move(conn));
    return true;
}

void PgPool::close(PgConnection* conn) {
    if (conn->c != nullptr) release_socket(conn->c);
    conn->c = nullptr;
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
        if (it->get() == conn) {
            connections_.erase(it);  // PQfinish closes the socket
            return;
        }
    }
}

void PgPool::on_connected(PgConnection*) {
    healthy_ = true;
    dispatch();
}

void PgPool::on_idle(PgConnection*) { dispatch(); }

void PgPool::on_broken(PgConnection* conn, bool during_connect) {
    PgOp* op = conn->op;
    if (op != nullptr) {
        conn->op = nullptr;
        op->connection = nullptr;
    }
    close(conn);
    if (during_connect) {
        healthy_ = false;
    } else {
        ngx_log_error(NGX_LOG_WARN, log_, 0, "wallet_history: database connection lost");
    }
    if (op != nullptr) requeue_or_fail(op);
    post_kick();
}

// Runs from the event loop: completes failed ops, fails waiting ones when no
// connection can be made, and hands out free connections.
void PgPool::on_kick() {
    std::vector<PgOp*> failed;
    failed.swap(failed_);
    for (PgOp* op : failed) op->done(op, PgOutcome::Unavailable, nullptr);
    if (!healthy_ && connections_.empty()) {
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

void kick_handler(ngx_event_t* ev) { static_cast<PgPool*>(ev->data)->on_kick(); }

}  // namespace

}  // namespace wallet::ngx
