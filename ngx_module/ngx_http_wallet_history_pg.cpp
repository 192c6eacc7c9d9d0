// The asynchronous PostgreSQL pool of the wallet_history module (see the
// header). Ops are completed only from event handlers (never from inside
// submit), so a request is never finalized underneath its own caller.
#include "ngx_http_wallet_history_pg.hpp"

#include <cstring>
#include <deque>
#include <set>

namespace wallet::ngx {

// One statement sent on a connection, its answer not yet complete.
struct PgCall {
    PgOp* op = nullptr;         // null once its request gave it up: the answer is dropped
    const char* statement = "";
    PgResultPtr result;         // the first error, or the rows
    bool prepares = false;      // a PREPARE of its statement went out just ahead of it
    bool prepared_ok = false;   // ... and succeeded
    ngx_msec_t started_at = 0;  // when the server took it up (it became the first call)
};

struct PgConnection {
    enum class State { Connecting, Ready };

    PgPool* pool = nullptr;
    PgConnPtr pg;
    ngx_connection_t* c = nullptr;
    State state = State::Connecting;
    std::deque<PgCall> calls;  // in the order the server answers them
    std::set<std::string> prepared;

    bool idle() const { return state == State::Ready && calls.empty(); }
    // Calls whose requests still wait for them, from the index `from` on.
    std::size_t live_calls(std::size_t from = 0) const {
        std::size_t n = 0;
        for (std::size_t i = from; i < calls.size(); ++i) n += calls[i].op != nullptr ? 1 : 0;
        return n;
    }
};

// A call whose answer is complete, handed to its op once the pool is settled.
struct PgCompletion {
    PgOp* op;
    PgOutcome outcome;
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

// Sends op's statement (after a PREPARE the first time this connection runs
// it) and a sync, so its errors stay its own. False: the connection broke.
bool send_call(PgConnection* conn, PgOp* op) {
    PGconn* pg = conn->pg.get();
    // Listed first: if sending fails, the connection's calls (this one too) are retried.
    PgCall& call = conn->calls.emplace_back();
    call.op = op;
    call.statement = op->statement;
    call.started_at = ngx_current_msec;
    op->connection = conn;
    if (conn->prepared.count(op->statement) == 0) {
        auto it = conn->pool->settings().statements.find(op->statement);
        if (it == conn->pool->settings().statements.end()) return false;
        const std::string sql = std::string("PREPARE ") + op->statement + " " + it->second;
        call.prepares = true;
        if (PQsendQueryParams(pg, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) return false;
        conn->prepared.insert(op->statement);
    }
    std::vector<const char*> values;
    values.reserve(op->params.size());
    for (const auto& p : op->params) values.push_back(p ? p->c_str() : nullptr);
    if (PQsendQueryPrepared(pg, op->statement, static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                            0) != 1 ||
        PQpipelineSync(pg) != 1) {
        return false;
    }
    return flush(conn);
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
        if (PQenterPipelineMode(conn->pg.get()) != 1) {
            pool->on_broken(conn, true);
            return;
        }
        conn->state = PgConnection::State::Ready;
        pool->on_connected(conn);
        return;
    default:
        ngx_log_error(NGX_LOG_ERR, pool->log(), 0, "wallet_history: database connect failed");
        pool->on_broken(conn, true);
        return;
    }
}

// One result of the first call: the first error is kept, else the latest rows.
void take_result(PgCall& call, PGresult* next) {
    const ExecStatusType status = PQresultStatus(next);
    if (call.prepares && status == PGRES_COMMAND_OK && std::strcmp(PQcmdStatus(next), "PREPARE") == 0) {
        call.prepared_ok = true;
    }
    if (call.result && outcome_of(call.result.get()) != PgOutcome::Rows) {
        PQclear(next);
    } else {
        call.result.reset(next);
    }
}

// The first call's answer is complete (its sync came back).
void finish_first_call(PgConnection* conn, std::vector<PgCompletion>& completed) {
    PgCall call = std::move(conn->calls.front());
    conn->calls.pop_front();
    if (!conn->calls.empty()) conn->calls.front().started_at = ngx_current_msec;
    const PgOutcome outcome = outcome_of(call.result.get());
    if (call.prepares && !call.prepared_ok) conn->prepared.erase(call.statement);
    if (call.op == nullptr) return;  // given up by its request
    if (outcome == PgOutcome::Failed && call.result) {
        // The SQLSTATE only: messages may quote values from the request.
        const char* state = PQresultErrorField(call.result.get(), PG_DIAG_SQLSTATE);
        ngx_log_error(NGX_LOG_ERR, conn->pool->log(), 0, "wallet_history: statement %s failed with SQLSTATE %s",
                      call.op->statement, state != nullptr ? state : "?");
    }
    call.op->connection = nullptr;
    completed.push_back({call.op, outcome, std::move(call.result)});
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
    if (conn->calls.empty()) {
        // Input on an idle connection: the server is closing it, or it sent
        // a notice. A broken connection is dropped now, not at its next use.
        if (PQstatus(pg) == CONNECTION_BAD) conn->pool->on_broken(conn, false);
        return;
    }
    // Everything libpq has read is taken now: the socket will not signal it again.
    std::vector<PgCompletion> completed;
    int nulls = 0;  // a NULL ends one command; two in a row: nothing more has arrived
    while (!conn->calls.empty() && PQisBusy(pg) == 0) {
        PGresult* next = PQgetResult(pg);
        if (next == nullptr) {
            if (++nulls > 1) break;
            continue;
        }
        nulls = 0;
        if (PQresultStatus(next) == PGRES_PIPELINE_SYNC) {
            PQclear(next);
            finish_first_call(conn, completed);
        } else {
            take_result(conn->calls.front(), next);
        }
    }
    if (completed.empty()) return;
    // Waiting statements go out before the answers are written, so the
    // server works on them meanwhile. (The connection may close in there.)
    conn->pool->on_idle(conn);
    for (auto& done : completed) done.op->done(done.op, done.outcome, done.result.get());
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
void stall_check_handler(ngx_event_t* ev);

PgOp* pop_waiting(ngx_queue_t* waiting) {
    ngx_queue_t* head = ngx_queue_head(waiting);
    PgOp* op = ngx_queue_data(head, PgOp, queue);
    ngx_queue_remove(head);
    op->queued = false;
    return op;
}

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
    stall_check_.handler = stall_check_handler;
    stall_check_.data = this;
    stall_check_.log = log_;
    stall_check_.cancelable = 1;  // never holds up a graceful shutdown
}

PgPool::~PgPool() {
    if (kick_.posted) {
        ngx_delete_posted_event(&kick_);
    }
    if (stall_check_.timer_set) ngx_del_timer(&stall_check_);
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
        op->connection = nullptr;
        for (auto& call : conn->calls) {
            if (call.op == op) call.op = nullptr;
        }
        if (conn->live_calls() == 0) {
            close(conn);
            // The slot is free again for queued work.
            post_kick();
        }
    }
}

PgConnection* PgPool::idle_connection() {
    for (auto& conn : connections_) {
        if (conn->idle()) return conn.get();
    }
    return nullptr;
}

// The connection with the fewest calls among those whose running statement
// is young and whose pipeline has room; none when no connection qualifies.
PgConnection* PgPool::pipeline_candidate() {
    PgConnection* best = nullptr;
    for (auto& conn : connections_) {
        if (conn->state != PgConnection::State::Ready || conn->calls.empty()) continue;
        if (conn->calls.size() >= kPipelineDepth) continue;
        if (ngx_current_msec - conn->calls.front().started_at >= kPipelineJoinMs) continue;
        if (best == nullptr || conn->calls.size() < best->calls.size()) best = conn.get();
    }
    return best;
}

void PgPool::send_or_requeue(PgConnection* conn, PgOp* op) {
    if (!send_call(conn, op)) {
        // The connection is unusable: its statements (this one too) go back
        // to the front and are retried once, completed later from the event loop.
        on_broken(conn, false);
    }
}

void PgPool::dispatch() {
    while (!ngx_queue_empty(&waiting_)) {
        PgConnection* conn = idle_connection();
        if (conn == nullptr) break;
        send_or_requeue(conn, pop_waiting(&waiting_));
    }
    std::size_t connecting = 0;
    std::size_t waiting = 0;
    for (auto& conn : connections_) connecting += conn->state == PgConnection::State::Connecting ? 1 : 0;
    for (ngx_queue_t* q = ngx_queue_head(&waiting_); q != ngx_queue_sentinel(&waiting_); q = ngx_queue_next(q)) ++waiting;
    while (waiting > connecting && connections_.size() < settings_.max_connections) {
        if (!open_connection()) break;
        ++connecting;
    }
    // Every connection open and busy: queue behind young statements.
    if (connecting == 0 && connections_.size() >= settings_.max_connections) {
        while (!ngx_queue_empty(&waiting_)) {
            PgConnection* conn = pipeline_candidate();
            if (conn == nullptr) break;
            send_or_requeue(conn, pop_waiting(&waiting_));
        }
    }
    watch_stalls();
}

// The stall check runs while some statement waits behind another.
void PgPool::watch_stalls() {
    if (stall_check_.timer_set) return;
    for (auto& conn : connections_) {
        if (conn->live_calls(1) > 0) {
            ngx_add_timer(&stall_check_, kPipelineStallMs / 2);
            return;
        }
    }
}

// Statements behind one that has run kPipelineStallMs are taken back and
// sent again elsewhere (in their order, ahead of the waiting ones).
void PgPool::on_stall_check() {
    bool moved = false;
    for (auto& conn : connections_) {
        if (conn->calls.size() < 2 || ngx_current_msec - conn->calls.front().started_at < kPipelineStallMs) continue;
        for (auto it = conn->calls.rbegin(); it + 1 != conn->calls.rend(); ++it) {
            PgOp* op = it->op;
            if (op == nullptr) continue;
            it->op = nullptr;
            op->connection = nullptr;
            op->queued = true;
            ngx_queue_insert_head(&waiting_, &op->queue);
            moved = true;
        }
    }
    if (moved) ngx_log_error(NGX_LOG_INFO, log_, 0, "wallet_history: statements moved away from a slow one");
    dispatch();
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
    std::vector<PgOp*> ops;
    for (auto& call : conn->calls) {
        if (call.op == nullptr) continue;
        call.op->connection = nullptr;
        ops.push_back(call.op);
    }
    close(conn);
    if (during_connect) {
        healthy_ = false;
    } else {
        ngx_log_error(NGX_LOG_WARN, log_, 0, "wallet_history: database connection lost");
    }
    // Back to the front in their order.
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) requeue_or_fail(*it);
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
            PgOp* op = pop_waiting(&waiting_);
            op->done(op, PgOutcome::Unavailable, nullptr);
        }
        return;
    }
    dispatch();
}

namespace {

void kick_handler(ngx_event_t* ev) { static_cast<PgPool*>(ev->data)->on_kick(); }
void stall_check_handler(ngx_event_t* ev) { static_cast<PgPool*>(ev->data)->on_stall_check(); }

}  // namespace

}  // namespace wallet::ngx
