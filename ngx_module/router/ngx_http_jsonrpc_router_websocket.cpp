// WebSocket clients on the router's endpoint (RFC 6455, inside the module):
// the upgrade is answered here, then the connection is read and written by
// this session on nginx's event loop. Each text message is one Exchange,
// routed and cached exactly like a POST body; several may be in flight and
// each answer is one text frame. Ping/pong, close, a maximum message size and
// an idle timeout apply.
#include <algorithm>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "api_metrics.hpp"
#include "ngx_http_jsonrpc_router_conf.hpp"
#include "ngx_http_jsonrpc_router_exchange.hpp"
#include "ngx_http_jsonrpc_router_metrics.hpp"
#include "ngx_http_jsonrpc_router_worker.hpp"
#include "ngx_http_wallet_history_push.hpp"
#include "ngx_wallet_client.hpp"
#include "ngx_wallet_connection.hpp"
#include "ngx_wallet_guard.hpp"
#include "ngx_wallet_shared.hpp"
#include "router_http.hpp"
#include "router_websocket.hpp"

using jsonrpc_router::ClientHold;
using jsonrpc_router::Exchange;
using jsonrpc_router::ExchangeOwner;
using jsonrpc_router::OutputQueue;
using jsonrpc_router::Worker;
using wallet::ngx::guarded;
using wallet::ngx::post_event;
using wallet::ngx::unpost_event;
namespace ws = router::ws;

namespace {

constexpr std::size_t kMaxInFlight = 256;          // messages per connection before reading pauses
constexpr std::size_t kMaxPendingOutput = 16 << 20;  // bytes queued to the client before reading pauses
// While the client's address has no calls left in its budget (held by its
// other connections), or more than jsonrpc_router_ws_client_output of
// answers wait for it, this connection reads nothing and looks again this
// often: a flood waits in its own TCP window instead of being read and
// refused message by message, which costs the worker the CPU its other
// clients need.
constexpr ngx_msec_t kClientBudgetRecheck = 50;
// Small frames are queued in buffers of up to this many bytes (one send for
// several answers); a larger frame is a buffer of its own.
constexpr std::size_t kCoalescedBytes = 64 * 1024;
// Past jsonrpc_router_ws_max_output queued bytes, or when what was waiting
// as the socket filled up is not all sent within jsonrpc_router_ws_send_timeout,
// the client is not reading: the connection is closed (a Close frame could
// not reach it either). Past jsonrpc_router_ws_worker_output queued in the
// whole worker, the connection with the most queued is closed with 1013.
constexpr std::uint16_t kCloseTryAgainLater = 1013;

class Session final : public ExchangeOwner, public OutputQueue, public wallet::push::Client {
public:
    Session(ngx_http_request_t* r, ngx_http_jsonrpc_router_loc_conf_t* conf)
        : r_(r), c_(r->connection), conf_(conf), client_(Worker::get().clients(), wallet::ngx::client_address(r), ngx_current_msec,
                  conf->instance->client_rate),
          decoder_(ws::Decoder::Role::Server, conf->max_body) {
        for (ngx_event_t* ev : {&idle_timer_, &ping_timer_, &send_timer_, &budget_timer_}) {
            ev->data = this;
            ev->log = c_->log;
            ev->cancelable = 1;  // a graceful shutdown does not wait for them
        }
        idle_timer_.handler = guarded<"jsonrpc_router: WebSocket idle timer", on_idle, fail_event>;
        ping_timer_.handler = guarded<"jsonrpc_router: WebSocket ping timer", on_ping, fail_event>;
        send_timer_.handler = guarded<"jsonrpc_router: WebSocket send timeout", on_send_timeout, fail_event>;
        budget_timer_.handler = guarded<"jsonrpc_router: WebSocket client budget", on_budget_recheck, fail_event>;
        Worker::get().ws_output().enter(*this);
    }

    ~Session() {
        say_going_away();
        wallet::push::forget(*this);
        drop_output(false);
        Worker::get().ws_output().leave(*this);
        if (idle_timer_.timer_set) ngx_del_timer(&idle_timer_);
        if (ping_timer_.timer_set) ngx_del_timer(&ping_timer_);
        if (send_timer_.timer_set) ngx_del_timer(&send_timer_);
        if (budget_timer_.timer_set) ngx_del_timer(&budget_timer_);
        unpost_event(&write_posted_);
    }

    void begin(const std::string& accept) {
        enqueue("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
                accept + "\r\n\r\n");
        write_posted_.handler = guarded<"jsonrpc_router: WebSocket write", on_posted_write, fail_event>;
        write_posted_.data = this;
        write_posted_.log = c_->log;
        // Frames the client sent right behind its handshake are already read.
        ngx_buf_t* b = r_->header_in;
        if (b != nullptr && b->pos < b->last) {
            decoder_.feed(std::string_view(reinterpret_cast<const char*>(b->pos), static_cast<std::size_t>(b->last - b->pos)));
            b->pos = b->last;
        }
        r_->read_event_handler = guarded<"jsonrpc_router: WebSocket read", on_read, fail_request>;
        r_->write_event_handler = guarded<"jsonrpc_router: WebSocket write", on_write, fail_request>;
        c_->idle = 1;  // a graceful shutdown closes it
        ngx_add_timer(&idle_timer_, conf_->ws_idle_timeout);
        if (conf_->ws_ping_interval > 0) ngx_add_timer(&ping_timer_, conf_->ws_ping_interval);
        if (!flush()) return;
        process();
    }

    void exchange_done(Exchange& exchange) override {
        try {
            if (!closing_) enqueue(ws::encode_frame(ws::Opcode::Text, exchange.take_response()));
        } catch (...) {
            closing_ = true;
        }
        if (out_bytes_ > conf_->ws_max_output) {
            ngx_log_error(NGX_LOG_INFO, c_->log, 0, "jsonrpc_router: WebSocket client not reading: %uz bytes queued, closed",
                          out_bytes_);
            closing_ = true;
            drop_ = true;  // terminated from the posted write, once this call stack has unwound
            drop_output(true);
        }
        Worker::get().ws_output().enforce(conf_->ws_worker_output);
        jsonrpc_router::note_ws_output_peak(*conf_->instance);
        if (&exchange != starting_) inflight_calls_ -= std::min(inflight_calls_, exchange.plan().calls.size());
        auto it = inflight_index_.find(&exchange);
        if (it != inflight_index_.end()) {
            // Destroyed once the call stack that completed it has unwound.
            finished_.splice(finished_.end(), inflight_, it->second);
            inflight_index_.erase(it);
        }
        post_event(&write_posted_);
    }

    std::size_t queued_bytes() const override { return out_bytes_; }

    std::string_view address() const override { return wallet::ngx::client_address(r_); }

    void notify_when_drained() override { push_drained_wanted_ = true; }

    using wallet::push::Client::send_text;
    // A notification of a push subscription, `parts` in one frame written
    // straight into the queue. Past jsonrpc_router_push_max_output queued
    // the client does not keep up: what is not begun is dropped and a Close
    // (1008) follows; its subscriptions end with the connection.
    void send_text(std::span<const std::string_view> parts) override {
        if (closing_) return;
        std::size_t size = 0;
        for (const std::string_view part : parts) size += part.size();
        std::string& out = tail_buffer(size + ws::kMaxFrameHeader);
        const std::size_t before = out.size();
        ws::append_frame_header(out, ws::Opcode::Text, size);
        for (const std::string_view part : parts) out += part;
        queued(out.size() - before);
        if (out_bytes_ > conf_->push_max_output) {
            ngx_log_error(NGX_LOG_INFO, c_->log, 0,
                          "jsonrpc_router: WebSocket subscriber not reading: %uz bytes queued, closed with 1008",
                          out_bytes_);
            wallet::push::dropped(*this, wallet::api::PushDrop::SlowConsumer);
            drop_unbegun();
            close_with(ws::close_code::policy_violation, "notifications not read fast enough");
        }
        Worker::get().ws_output().enforce(conf_->ws_worker_output);  // the worker's budget, as for answers
        jsonrpc_router::note_ws_output_peak(*conf_->instance);
        post_event(&write_posted_);
    }

    // The worker holds too much output and this connection the most: the
    // answers not begun are dropped, the one begun is finished and a Close
    // (1013) follows; a connection shed before (or closing) drops everything.
    void shed() override {
        if (closing_) {
            drop_output(true);
        } else {
            ngx_log_error(NGX_LOG_WARN, c_->log, 0,
                          "jsonrpc_router: WebSocket output of the worker over jsonrpc_router_ws_worker_output (%uz): "
                          "closing the client with the most queued (%uz bytes), 1013",
                          conf_->ws_worker_output, out_bytes_);
            wallet::push::dropped(*this, wallet::api::PushDrop::WorkerOutput);
            drop_unbegun();
            close_with(kCloseTryAgainLater, "too many answers waiting to be read");
        }
        post_event(&write_posted_);
    }

private:
    static void on_read(ngx_http_request_t* r) { session(r)->process(); }
    static void on_write(ngx_http_request_t* r) { session(r)->after_write(); }

    static void on_posted_write(ngx_event_t* ev) { static_cast<Session*>(ev->data)->after_write(); }

    // After an exception (ngx_wallet_guard): no answer can be matched to the
    // message that failed, so the connection closes (1011) once what is
    // queued is sent; the exchanges in flight end with the session.
    void fail_internal() { close_with(ws::close_code::internal_error, "internal error"); }
    static void fail_request(ngx_http_request_t* r) { session(r)->fail_internal(); }
    static void fail_event(ngx_event_t* ev) { static_cast<Session*>(ev->data)->fail_internal(); }

    static void on_idle(ngx_event_t* ev) {
        auto* s = static_cast<Session*>(ev->data);
        s->close_with(ws::close_code::going_away, "idle timeout");
    }

    static void on_ping(ngx_event_t* ev) {
        auto* s = static_cast<Session*>(ev->data);
        if (s->closing_) return;
        s->enqueue(ws::encode_frame(ws::Opcode::Ping, ""));
        ngx_add_timer(&s->ping_timer_, s->conf_->ws_ping_interval);
        if (s->flush()) s->after_write_checks();
    }

    static void on_budget_recheck(ngx_event_t* ev) { static_cast<Session*>(ev->data)->after_write_checks(); }

    static void on_send_timeout(ngx_event_t* ev) {
        auto* s = static_cast<Session*>(ev->data);
        ngx_log_error(NGX_LOG_INFO, s->c_->log, 0,
                      "jsonrpc_router: WebSocket client did not read its answers within %M ms (%uz bytes queued), closed",
                      s->conf_->ws_send_timeout, s->out_bytes_);
        wallet::push::dropped(*s, wallet::api::PushDrop::SendTimeout);
        s->terminate();
    }

    static Session* session(ngx_http_request_t* r);

    void after_write() {
        finished_.clear();
        if (drop_) {
            terminate();
            return;
        }
        if (!flush()) return;
        after_write_checks();
    }

    void after_write_checks() {
        if (closing_ && out_.empty()) {
            terminate();
            return;
        }
        if (push_drained_wanted_ && !closing_ && out_bytes_ <= conf_->push_max_output / 2) {
            push_drained_wanted_ = false;
            wallet::push::drained(*this);  // a paced catch-up reads its next page
        }
        if (paused_ && !should_pause()) {
            paused_ = false;
            process();
        } else if (paused_) {
            pause();
        }
    }

    // Calls in flight on this connection stay within the client's budget
    // even with a full batch more (reading pauses and the client waits,
    // rather than getting errors).
    bool should_pause() const {
        return inflight_.size() >= kMaxInFlight || out_bytes_ > kMaxPendingOutput ||
               (conf_->max_client_calls > 0 && inflight_calls_ > 0 &&
                inflight_calls_ + conf_->max_batch > conf_->max_client_calls) ||
               client_budget_spent() || client_output_over() || client_over_rate();
    }

    // The address took more answer bytes than jsonrpc_router_client_rate allows.
    bool client_over_rate() const { return conf_->instance->client_rate_wait(client_.get()) > 0; }

    // The answers waiting for the address (on all its connections) are over its budget.
    bool client_output_over() const {
        return client_ && client_->ws_output > conf_->ws_client_output;
    }

    // Every call of the address's budget is in flight (on any of its connections).
    bool client_budget_spent() const {
        return conf_->max_client_calls > 0 && client_ && client_->calls >= conf_->max_client_calls;
    }

    void pause() {
        paused_ = true;
        // Nothing of this connection may end to resume it: look again later.
        if ((client_budget_spent() || client_output_over() || client_over_rate()) && !budget_timer_.timer_set) {
            ngx_add_timer(&budget_timer_, kClientBudgetRecheck);
        }
    }

    // Reads what is available and handles every complete frame.
    void process() {
        if (closing_) return;
        if (!handle_frames()) return;
        for (;;) {
            if (should_pause()) {
                pause();
                return;
            }
            u_char buffer[16384];
            ssize_t n = c_->recv(c_, buffer, sizeof(buffer));
            if (n == NGX_AGAIN) {
                if (ngx_handle_read_event(c_->read, 0) != NGX_OK) terminate();
                return;
            }
            if (n == 0 || n == NGX_ERROR) {
                terminate();  // the client went away
                return;
            }
            ngx_add_timer(&idle_timer_, conf_->ws_idle_timeout);
            decoder_.feed(std::string_view(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n)));
            if (!handle_frames()) return;
        }
    }

    // False when the session is closing or gone.
    bool handle_frames() {
        ws::Event event;
        for (;;) {
            if (closing_) return false;  // an answer of this loop may have closed it (budgets)
            if (should_pause()) return true;
            auto status = decoder_.next(event);
            if (status == ws::Decoder::Status::NeedMore) return true;
            if (status == ws::Decoder::Status::Error) {
                ngx_log_error(NGX_LOG_INFO, c_->log, 0, "jsonrpc_router: WebSocket client error: %s", decoder_.error().c_str());
                close_with(decoder_.error_code(), decoder_.error());
                return false;
            }
            switch (event.kind) {
                case ws::Event::Kind::Ping:
                    enqueue(ws::encode_frame(ws::Opcode::Pong, event.payload));
                    break;
                case ws::Event::Kind::Pong:
                    break;
                case ws::Event::Kind::Close:
                    close_with(ws::close_code::normal, "");
                    return false;
                case ws::Event::Kind::Message:
                    if (event.opcode != ws::Opcode::Text) {
                        close_with(ws::close_code::unsupported_data, "JSON-RPC needs text messages");
                        return false;
                    }
                    // wallet_history.subscribe and .unsubscribe are answered here (push).
                    if (auto answer = wallet::push::handle(*this, event.payload, push_limits())) {
                        enqueue(ws::encode_frame(ws::Opcode::Text, *answer));
                    } else {
                        start_exchange(std::move(event.payload));
                    }
                    break;
            }
            post_event(&write_posted_);
        }
    }

    wallet::push::Limits push_limits() const {
        return {static_cast<std::size_t>(conf_->push_subscriptions), static_cast<std::int64_t>(conf_->push_accounts),
                static_cast<std::size_t>(conf_->push_max_output)};
    }

    void start_exchange(std::string message) {
        inflight_.push_back(std::make_unique<Exchange>(*conf_->instance, c_->log, *this, router::ClientTransport::WebSocket,
                                                       client_.get()));
        auto it = std::prev(inflight_.end());
        Exchange* exchange = it->get();
        inflight_index_.emplace(exchange, it);
        starting_ = exchange;
        exchange->start(message);  // may finish at once (cache hit, error)
        starting_ = nullptr;
        if (!exchange->done()) inflight_calls_ += exchange->plan().calls.size();
    }

    // nginx shuts the worker down (a reload, a stop) and closes this
    // connection: the client is told so with 1001 when nothing else is half
    // sent, in one try that never waits (push subscribers resubscribe with
    // their last cursor, docs/wallet-history-api.md).
    void say_going_away() noexcept {
        if (!ngx_exiting || closing_ || !out_.empty() || c_->error) return;
        try {
            std::string frame = ws::encode_close(ws::close_code::going_away, "server shutting down");
            (void)c_->send(c_, reinterpret_cast<u_char*>(frame.data()), frame.size());
        } catch (...) {
            // Only the Close frame is lost: the connection ends all the same.
        }
    }

    void close_with(std::uint16_t code, const std::string& reason) {
        if (closing_) return;
        closing_ = true;
        enqueue(ws::encode_close(code, reason));
        post_event(&write_posted_);
    }

    // Queues bytes to send, counted in the worker's output (and its metrics).
    void enqueue(std::string bytes) {
        const std::size_t n = bytes.size();
        if (n == 0) return;
        if (!out_.empty() && out_.back().size() + n <= kCoalescedBytes) {
            out_.back() += bytes;
        } else {
            out_.push_back(std::move(bytes));
        }
        queued(n);
    }

    // The buffer of the queue that `n` more bytes are appended to (the
    // last one while small frames coalesce); queued() counts them.
    std::string& tail_buffer(std::size_t n) {
        if (out_.empty() || out_.back().size() + n > kCoalescedBytes) {
            out_.emplace_back().reserve(n);
        }
        return out_.back();
    }

    // `n` bytes were appended to the queue.
    void queued(std::size_t n) {
        out_bytes_ += n;
        queued_total_ += n;
        Worker::get().ws_output().add(client_.get(), n);
        jsonrpc_router::count_ws_output(*conf_->instance, static_cast<std::int64_t>(n));
    }

    // `n` bytes of the queue are gone (sent or dropped).
    void release(std::size_t n) {
        out_bytes_ -= n;
        Worker::get().ws_output().remove(client_.get(), n);
        jsonrpc_router::count_ws_output(*conf_->instance, -static_cast<std::int64_t>(n));
    }

    // Drops the queued buffers not begun (the one being sent is finished).
    void drop_unbegun() {
        while (out_.size() > (out_sent_ > 0 ? 1u : 0u)) {
            release(out_.back().size());
            out_.pop_back();
        }
    }

    // Forgets everything queued; `terminate`: the session ends from its posted write.
    void drop_output(bool terminate) {
        release(out_bytes_);
        out_.clear();
        out_sent_ = 0;
        if (terminate) {
            closing_ = true;
            drop_ = true;
        }
    }

    // A new deadline for what waits now: all of it must be sent within
    // jsonrpc_router_ws_send_timeout. Sending part of it does not move the
    // deadline (a client that reads a little now and then cannot hold its
    // output for ever); once it is all out, what waits then gets the next.
    void start_send_deadline() {
        deadline_mark_ = queued_total_;
        ngx_add_timer(&send_timer_, conf_->ws_send_timeout);
    }

    // False when the connection failed (and the session is gone).
    bool flush() {
        while (!out_.empty()) {
            std::string& front = out_.front();
            ssize_t n = c_->send(c_, reinterpret_cast<u_char*>(front.data() + out_sent_), front.size() - out_sent_);
            if (n == NGX_ERROR) {
                terminate();
                return false;
            }
            if (n == NGX_AGAIN) {
                if (ngx_handle_write_event(c_->write, 0) != NGX_OK) {
                    terminate();
                    return false;
                }
                if (!send_timer_.timer_set) start_send_deadline();
                return true;
            }
            out_sent_ += static_cast<std::size_t>(n);
            sent_total_ += static_cast<std::uint64_t>(n);
            if (out_sent_ == front.size()) {
                release(front.size());
                out_.pop_front();
                out_sent_ = 0;
            }
            if (send_timer_.timer_set && sent_total_ >= deadline_mark_) start_send_deadline();
        }
        if (send_timer_.timer_set) ngx_del_timer(&send_timer_);
        return true;
    }

    void terminate() {
        ngx_connection_t* c = c_;
        ngx_http_finalize_request(r_, NGX_HTTP_CLOSE);  // frees the request and this session
        ngx_http_run_posted_requests(c);
    }

    ngx_http_request_t* r_;
    ngx_connection_t* c_;
    ngx_http_jsonrpc_router_loc_conf_t* conf_;
    ClientHold client_;  // the address whose budget of calls this connection shares
    ws::Decoder decoder_;
    std::deque<std::string> out_;      // bytes to send, small frames coalesced; the front partly sent
    std::size_t out_sent_ = 0;         // of the front
    std::size_t out_bytes_ = 0;        // held by out_, counted in the worker's output
    std::uint64_t queued_total_ = 0;   // bytes ever queued
    std::uint64_t sent_total_ = 0;     // bytes ever sent
    std::uint64_t deadline_mark_ = 0;  // queued_total_ when the send deadline started
    std::list<std::unique_ptr<Exchange>> inflight_;
    std::list<std::unique_ptr<Exchange>> finished_;
    std::unordered_map<Exchange*, std::list<std::unique_ptr<Exchange>>::iterator> inflight_index_;
    ngx_event_t idle_timer_{};
    ngx_event_t ping_timer_{};
    ngx_event_t write_posted_{};
    ngx_event_t send_timer_{};
    ngx_event_t budget_timer_{};
    Exchange* starting_ = nullptr;   // the exchange being started (its synchronous end is not counted down)
    std::size_t inflight_calls_ = 0;  // calls of the exchanges in flight
    bool drop_ = false;               // the client reads too little: close without a Close frame
    bool closing_ = false;
    bool paused_ = false;
    bool push_drained_wanted_ = false;  // a push catch-up waits for the queue to drain
};

void delete_session(void* data) { std::unique_ptr<Session> owned(static_cast<Session*>(data)); }

}  // namespace

Session* Session::session(ngx_http_request_t* r) {
    return static_cast<Session*>(ngx_http_get_module_ctx(r, ngx_http_jsonrpc_router_module));
}

bool ngx_http_jsonrpc_router_is_upgrade(ngx_http_request_t* r) {
    std::string upgrade = wallet::ngx::request_header(r, "Upgrade");
    return !upgrade.empty() && router::header_has_token(upgrade, "websocket");
}

ngx_int_t ngx_http_jsonrpc_router_websocket(ngx_http_request_t* r, ngx_http_jsonrpc_router_loc_conf_t* conf) {
    try {
        std::string connection = wallet::ngx::request_header(r, "Connection");
        std::string version = wallet::ngx::request_header(r, "Sec-WebSocket-Version");
        std::string key = wallet::ngx::request_header(r, "Sec-WebSocket-Key");
        if (r->method != NGX_HTTP_GET || r->http_version != NGX_HTTP_VERSION_11 ||
            !router::header_has_token(connection, "upgrade") || version != "13" || key.size() != 24) {
            return NGX_HTTP_BAD_REQUEST;
        }
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) return rc;
        ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(r->pool, 0);
        if (cleanup == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        auto owned = std::make_unique<Session>(r, conf);
        Session* session = owned.get();
        cleanup->handler = delete_session;
        cleanup->data = owned.release();
        ngx_http_set_ctx(r, session, ngx_http_jsonrpc_router_module);
        r->headers_out.status = NGX_HTTP_SWITCHING_PROTOCOLS;  // for the access log
        r->keepalive = 0;
        r->main->count++;  // the session holds the request until the connection closes
        session->begin(ws::accept_key(key));
        return NGX_DONE;
    } catch (...) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}
