// The router's per-worker runtime (see the header). Re-entrancy rule: a
// transport never completes a Call from inside submit(); failures found there
// are posted (Call::fail_later) so that an Exchange is never completed while
// it is still starting its calls.
#include "ngx_http_jsonrpc_router_exchange.hpp"

#include <hiredis/hiredis.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

#include "jsonrpc_json.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/handles.hpp"
#include "router_http.hpp"
#include "router_websocket.hpp"

namespace jsonrpc_router {

namespace {

std::int64_t wall_clock_ms() {
    ngx_time_t* tp = ngx_timeofday();
    return static_cast<std::int64_t>(tp->sec) * 1000 + static_cast<std::int64_t>(tp->msec);
}

// A stored expiry of 0 means none (a final answer about an irreversible block).
std::int64_t memory_expiry(std::int64_t stored_expiry) {
    return stored_expiry == 0 ? std::numeric_limits<std::int64_t>::max() : stored_expiry;
}

ngx_str_t view_str(const std::string& s) {
    return ngx_str_t{s.size(), reinterpret_cast<u_char*>(const_cast<char*>(s.data()))};
}

// One read buffer per worker process (the event loop is single-threaded).
std::array<u_char, 64 * 1024> read_buffer;

struct ReaderDeleter {
    void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

std::string resp_command(std::initializer_list<std::string_view> args) {
    // Appended, not "*" + ...: GCC 12 -Wrestrict false positive at -O3 (bug 105329).
    std::string out(1, '*');
    out += std::to_string(args.size());
    out += "\r\n";
    for (std::string_view a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
    return out;
}

}  // namespace

// ---- Stream --------------------------------------------------------------------

Stream::~Stream() { close(); }

bool Stream::open(const ngx_addr_t& addr, ngx_ssl_t* ssl, const std::string& tls_host, bool verify,
                  ngx_msec_t connect_timeout) {
    close();
    ssl_ = ssl;
    tls_host_ = tls_host;
    verify_ = verify;
    ready_ = false;
    parked_ = false;
    out_.clear();
    out_sent_ = 0;
    peer_ = ngx_peer_connection_t{};
    peer_.sockaddr = addr.sockaddr;
    peer_.socklen = addr.socklen;
    peer_.name = const_cast<ngx_str_t*>(&addr.name);
    peer_.get = ngx_event_get_peer;
    peer_.log = log_;
    peer_.log_error = NGX_ERROR_ERR;
    ngx_int_t rc = ngx_event_connect_peer(&peer_);
    if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
        if (peer_.connection != nullptr) ngx_close_connection(peer_.connection);
        peer_.connection = nullptr;
        return false;
    }
    c_ = peer_.connection;
    c_->data = this;
    c_->log = log_;
    c_->read->log = log_;
    c_->write->log = log_;
    c_->read->handler = read_handler;
    c_->write->handler = write_handler;
    if (ssl_ != nullptr) {
        c_->pool = ngx_create_pool(1024, log_);
        if (c_->pool == nullptr) {
            close();
            return false;
        }
    }
    // A connect that hangs (a blackholed address) fails on its own; the
    // timer does not hold up a graceful shutdown.
    c_->write->cancelable = 1;
    ngx_add_timer(c_->write, connect_timeout);
    // Connected at once (unix sockets usually are): continue from the event
    // loop, never from inside the caller.
    if (rc == NGX_OK) post_event(c_->write);
    return true;
}

void Stream::close() {
    if (c_ == nullptr) return;
    if (c_->ssl != nullptr) {
        c_->ssl->no_wait_shutdown = 1;
        (void)ngx_ssl_shutdown(c_);
    }
    ngx_pool_t* pool = c_->pool;
    ngx_close_connection(c_);
    if (pool != nullptr) ngx_destroy_pool(pool);
    c_ = nullptr;
    ready_ = false;
    parked_ = false;
    out_.clear();
    out_sent_ = 0;
}

bool Stream::write(std::string_view data) {
    out_.append(data);
    if (!ready_ || c_ == nullptr || c_->write->posted) return c_ != nullptr;
    // Sent at once when the socket takes it; a failure is only noticed here
    // and reported from the event loop (posted), never inside the caller.
    while (out_sent_ < out_.size()) {
        ssize_t n = c_->send(c_, reinterpret_cast<u_char*>(out_.data() + out_sent_), out_.size() - out_sent_);
        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(c_->write, 0) != NGX_OK) post_event(c_->write);
            return true;
        }
        if (n == NGX_ERROR) {
            post_event(c_->write);
            return true;
        }
        out_sent_ += static_cast<std::size_t>(n);
    }
    out_.clear();
    out_sent_ = 0;
    return true;
}

void Stream::park(ngx_msec_t timeout) {
    if (c_ == nullptr) return;
    parked_ = true;
    c_->idle = 1;
    c_->read->handler = parked_handler;
    c_->write->handler = parked_handler;
    c_->read->cancelable = 1;
    ngx_add_timer(c_->read, timeout);
    if (c_->read->ready) post_event(c_->read);
}

void Stream::unpark() {
    if (c_ == nullptr) return;
    parked_ = false;
    c_->idle = 0;
    c_->read->cancelable = 0;
    if (c_->read->timer_set) ngx_del_timer(c_->read);
    unpost_event(c_->read);
    c_->read->handler = read_handler;
    c_->write->handler = write_handler;
}

bool Stream::fail(const char* what) {
    bool during_connect = !ready_;
    close();
    return on_closed(during_connect, what);
}

void Stream::parked_handler(ngx_event_t* ev) {
    auto* c = static_cast<ngx_connection_t*>(ev->data);
    auto* s = static_cast<Stream*>(c->data);
    if (ev->write) return;
    // Data, EOF, idle timeout or worker shutdown: a parked stream closes.
    s->fail(ev->timedout ? "idle timeout" : "closed while idle");
}

void Stream::write_handler(ngx_event_t* ev) {
    auto* c = static_cast<ngx_connection_t*>(ev->data);
    auto* s = static_cast<Stream*>(c->data);
    if (ev->timedout) {
        s->fail("connect timed out");
        return;
    }
    if (!s->ready_) {
        if (c->ssl == nullptr) s->connected_event();
        return;
    }
    s->flush();
}

void Stream::read_handler(ngx_event_t* ev) {
    auto* c = static_cast<ngx_connection_t*>(ev->data);
    auto* s = static_cast<Stream*>(c->data);
    if (c->close) {
        s->fail("worker is shutting down");
        return;
    }
    if (!s->ready_) {
        if (c->ssl == nullptr) s->connected_event();
        return;
    }
    s->read_available();
}

bool Stream::connected_event() {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c_->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1) err = ngx_socket_errno;
    if (err != 0) {
        ngx_log_error(NGX_LOG_ERR, log_, err, "jsonrpc_router: connect() to %V failed", peer_.name);
        return fail("connect failed");
    }
    if (ssl_ != nullptr) return start_tls();
    return became_ready();
}

bool Stream::start_tls() {
    if (ngx_ssl_create_connection(ssl_, c_, NGX_SSL_BUFFER | NGX_SSL_CLIENT) != NGX_OK) return fail("TLS setup failed");
    if (!tls_host_.empty()) SSL_set_tlsext_host_name(c_->ssl->connection, tls_host_.c_str());
    ngx_int_t rc = ngx_ssl_handshake(c_);
    if (rc == NGX_AGAIN) {
        c_->ssl->handler = tls_done;
        return true;
    }
    tls_done(c_);
    return true;
}

void Stream::tls_done(ngx_connection_t* c) {
    auto* s = static_cast<Stream*>(c->data);
    if (!c->ssl->handshaked) {
        s->fail("TLS handshake failed");
        return;
    }
    if (s->verify_) {
        long verify = SSL_get_verify_result(c->ssl->connection);
        if (verify != X509_V_OK) {
            ngx_log_error(NGX_LOG_ERR, s->log_, 0, "jsonrpc_router: upstream certificate of %V: %s", s->peer_.name,
                          X509_verify_cert_error_string(verify));
            s->fail("certificate verification failed");
            return;
        }
        ngx_str_t host = view_str(s->tls_host_);
        if (ngx_ssl_check_host(c, &host) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, s->log_, 0, "jsonrpc_router: upstream certificate does not match \"%V\"", &host);
            s->fail("certificate host mismatch");
            return;
        }
    }
    c->read->handler = read_handler;
    c->write->handler = write_handler;
    s->became_ready();
}

bool Stream::became_ready() {
    ready_ = true;
    if (c_->write->timer_set) ngx_del_timer(c_->write);
    c_->write->cancelable = 0;
    if (!on_open()) return false;
    if (!flush()) return false;
    return read_available();
}

bool Stream::flush() {
    while (out_sent_ < out_.size()) {
        ssize_t n = c_->send(c_, reinterpret_cast<u_char*>(out_.data() + out_sent_), out_.size() - out_sent_);
        if (n == NGX_ERROR) return fail("send failed");
        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(c_->write, 0) != NGX_OK) return fail("send failed");
            return true;
        }
        out_sent_ += static_cast<std::size_t>(n);
    }
    out_.clear();
    out_sent_ = 0;
    return true;
}

bool Stream::read_available() {
    for (;;) {
        ssize_t n = c_->recv(c_, read_buffer.data(), read_buffer.size());
        if (n > 0) {
            if (!on_data(std::string_view(reinterpret_cast<const char*>(read_buffer.data()), static_cast<std::size_t>(n)))) {
                return false;
            }
            if (c_ == nullptr || parked_) return false;
            continue;
        }
        if (n == 0) return fail("closed by peer");
        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(c_->read, 0) != NGX_OK) return fail("recv failed");
            return true;
        }
        return fail("recv failed");
    }
}

// ---- HTTP(S) and unix-socket targets: keep-alive pool ---------------------------

class HttpUpstream;

class HttpConn final : public Stream {
public:
    HttpConn(HttpUpstream& upstream, ngx_log_t* log, std::size_t max_body)
        : Stream(log), upstream_(upstream), parser_(router::HttpMessageParser::Kind::Response, max_body),
          max_body_(max_body) {}
    void start(Call& call, std::string request, bool reused);
    void drop_call() { call_ = nullptr; }
    std::list<std::unique_ptr<HttpConn>>::iterator self;

private:
    bool on_open() override { return true; }
    bool on_data(std::string_view data) override;
    bool on_closed(bool during_connect, const char* what) override;
    bool complete();

    HttpUpstream& upstream_;
    router::HttpMessageParser parser_;
    Call* call_ = nullptr;
    bool reused_ = false;
    bool got_bytes_ = false;
    std::size_t max_body_ = 0;
};

class HttpUpstream final : public Upstream {
public:
    HttpUpstream(const RouterInstance& instance, std::size_t target, std::size_t url)
        : instance_(instance), target_(instance.table.targets[target]), endpoint_(target_.urls[url]),
          addr_(instance.target_addrs[target][url]) {}
    ~HttpUpstream() override = default;

    void submit(Call& call) override {
        call.upstream = this;
        call.upstream_id = Worker::get().next_upstream_id();
        std::string body = call.plan().upstream_body(call.upstream_id);
        std::string request;
        request.reserve(body.size() + 160);
        request += "POST ";
        request += endpoint_.path;
        request += " HTTP/1.1\r\nHost: ";
        request += endpoint_.host_header;
        request += "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: ";
        request += std::to_string(body.size());
        request += "\r\n\r\n";
        request += body;
        while (!idle_.empty()) {
            HttpConn* conn = idle_.back();
            idle_.pop_back();
            if (conn->is_open()) {
                conn->unpark();
                conn->start(call, std::move(request), true);
                return;
            }
            destroy(conn);
        }
        conns_.push_back(std::make_unique<HttpConn>(*this, ngx_cycle->log, instance_.max_response));
        HttpConn* conn = conns_.back().get();
        conn->self = std::prev(conns_.end());
        if (!conn->open(addr_, endpoint_.tls() ? instance_.ssl : nullptr, endpoint_.host, instance_.ssl_verify,
                        static_cast<ngx_msec_t>(target_.timeout_ms))) {
            destroy(conn);
            call.upstream = nullptr;
            call.fail_later(jsonrpc::code::upstream_unavailable, "connect failed");
            return;
        }
        conn->start(call, std::move(request), false);
    }

    void cancel(Call& call) override {
        auto* conn = static_cast<HttpConn*>(call.upstream_link);
        call.upstream = nullptr;
        call.upstream_link = nullptr;
        if (conn == nullptr) return;
        conn->drop_call();
        destroy(conn);  // an unfinished exchange leaves the connection unusable
    }

    void release(HttpConn* conn) {
        if (idle_.size() >= instance_.keepalive) {
            destroy(conn);
            return;
        }
        conn->park(instance_.keepalive_timeout);
        idle_.push_back(conn);
    }

    void destroy(HttpConn* conn) {
        for (auto it = idle_.begin(); it != idle_.end(); ++it) {
            if (*it == conn) {
                idle_.erase(it);
                break;
            }
        }
        conns_.erase(conn->self);
    }

private:
    const RouterInstance& instance_;
    const router::Target& target_;
    const router::Endpoint& endpoint_;
    const ngx_addr_t& addr_;
    std::list<std::unique_ptr<HttpConn>> conns_;
    std::vector<HttpConn*> idle_;
};

void HttpConn::start(Call& call, std::string request, bool reused) {
    call_ = &call;
    call.upstream_link = this;
    reused_ = reused;
    got_bytes_ = false;
    parser_ = router::HttpMessageParser(router::HttpMessageParser::Kind::Response, max_body_);
    write(request);
}

bool HttpConn::on_data(std::string_view data) {
    got_bytes_ = true;
    if (call_ == nullptr) {
        upstream_.destroy(this);  // an answer nobody waits for: not reusable
        return false;
    }
    auto state = parser_.feed(data);
    if (state == router::HttpMessageParser::State::Incomplete) return true;
    if (state == router::HttpMessageParser::State::Error) {
        Call* call = call_;
        call_ = nullptr;
        call->upstream = nullptr;
        call->upstream_link = nullptr;
        std::string reason = "bad HTTP response: " + parser_.error();
        upstream_.destroy(this);
        call->upstream_failed(jsonrpc::code::bad_upstream_response, reason);
        return false;
    }
    return complete();
}

bool HttpConn::complete() {
    Call* call = call_;
    call_ = nullptr;
    call->upstream = nullptr;
    call->upstream_link = nullptr;
    int status = parser_.status();
    std::string body = parser_.take_body();
    bool reusable = parser_.keep_alive() && parser_.take_leftover().empty() && is_open();
    if (reusable) {
        upstream_.release(this);
    } else {
        upstream_.destroy(this);
    }
    call->upstream_replied(status, std::move(body));
    return false;
}

bool HttpConn::on_closed(bool during_connect, const char* what) {
    Call* call = call_;
    if (call == nullptr) {
        upstream_.destroy(this);
        return false;
    }
    if (parser_.finish() == router::HttpMessageParser::State::Complete) return complete();
    call_ = nullptr;
    call->upstream = nullptr;
    call->upstream_link = nullptr;
    // A kept-alive connection the target closed meanwhile: one fresh try.
    if (reused_ && !got_bytes_ && !call->retried) {
        call->retried = true;
        HttpUpstream& upstream = upstream_;
        upstream.destroy(this);
        upstream.submit(*call);
        return false;
    }
    int code = (during_connect || !got_bytes_) ? jsonrpc::code::upstream_unavailable : jsonrpc::code::bad_upstream_response;
    std::string reason = std::string(what) + (got_bytes_ ? " in the middle of a response" : "");
    upstream_.destroy(this);
    call->upstream_failed(code, reason);
    return false;
}

// ---- ws:// and wss:// targets: multiplexed connections ----------------------------

class WsUpstream;

class WsConn final : public Stream {
public:
    WsConn(WsUpstream& upstream, ngx_log_t* log, std::size_t max_message)
        : Stream(log), upstream_(upstream), max_message_(max_message),
          decoder_(router::ws::Decoder::Role::Client, max_message) {}

    void send(Call& call, std::uint64_t id, const std::string& body);
    void forget(std::uint64_t id) { pending_.erase(id); }
    std::size_t load() const { return pending_.size(); }
    bool start(const ngx_addr_t& addr, const router::Endpoint& endpoint, std::int64_t timeout_ms,
               const RouterInstance& instance);

private:
    bool on_open() override;
    bool on_data(std::string_view data) override;
    bool on_closed(bool during_connect, const char* what) override;
    bool on_event(router::ws::Event& event);
    void fail_all(int code, const std::string& reason);

    WsUpstream& upstream_;
    std::size_t max_message_;
    enum class State { Closed, Handshake, Open } state_ = State::Closed;
    router::HttpMessageParser handshake_{router::HttpMessageParser::Kind::Response, 0};
    router::ws::Decoder decoder_;
    std::string key_;
    std::string path_;
    std::string host_header_;
    std::string queued_;  // frames waiting for the handshake
    std::unordered_map<std::uint64_t, Call*> pending_;
};

class WsUpstream final : public Upstream {
public:
    WsUpstream(const RouterInstance& instance, std::size_t target, std::size_t url)
        : instance_(instance), target_(instance.table.targets[target]), endpoint_(target_.urls[url]),
          addr_(instance.target_addrs[target][url]) {}

    void submit(Call& call) override {
        if (conns_.empty()) {
            for (std::size_t i = 0; i < std::max<std::size_t>(1, instance_.ws_upstream_connections); ++i) {
                conns_.push_back(std::make_unique<WsConn>(*this, ngx_cycle->log, instance_.max_response));
            }
        }
        // The least busy connection; a closed one is reopened.
        WsConn* best = nullptr;
        for (auto& conn : conns_) {
            if (best == nullptr || conn->load() < best->load()) best = conn.get();
        }
        call.upstream = this;
        call.upstream_link = best;
        call.upstream_id = Worker::get().next_upstream_id();
        if (!best->is_open() && !best->start(addr_, endpoint_, target_.timeout_ms, instance_)) {
            call.upstream = nullptr;
            call.upstream_link = nullptr;
            call.fail_later(jsonrpc::code::upstream_unavailable, "connect failed");
            return;
        }
        best->send(call, call.upstream_id, call.plan().upstream_body(call.upstream_id));
    }

    void cancel(Call& call) override {
        auto* conn = static_cast<WsConn*>(call.upstream_link);
        call.upstream = nullptr;
        call.upstream_link = nullptr;
        if (conn != nullptr) conn->forget(call.upstream_id);  // a late answer is dropped
    }

private:
    const RouterInstance& instance_;
    const router::Target& target_;
    const router::Endpoint& endpoint_;
    const ngx_addr_t& addr_;
    std::vector<std::unique_ptr<WsConn>> conns_;
};

bool WsConn::start(const ngx_addr_t& addr, const router::Endpoint& endpoint, std::int64_t timeout_ms,
                   const RouterInstance& instance) {
    state_ = State::Handshake;
    handshake_ = router::HttpMessageParser(router::HttpMessageParser::Kind::Response, 0);
    decoder_ = router::ws::Decoder(router::ws::Decoder::Role::Client, max_message_);
    queued_.clear();
    key_ = router::ws::make_client_key();
    path_ = endpoint.path;
    host_header_ = endpoint.host_header;
    if (!open(addr, endpoint.tls() ? instance.ssl : nullptr, endpoint.host, instance.ssl_verify,
              static_cast<ngx_msec_t>(timeout_ms))) {
        state_ = State::Closed;
        return false;
    }
    return true;
}

void WsConn::send(Call& call, std::uint64_t id, const std::string& body) {
    pending_[id] = &call;
    std::string frame = router::ws::encode_frame(router::ws::Opcode::Text, body, true);
    if (state_ == State::Open) {
        write(frame);
    } else {
        queued_ += frame;
    }
}

bool WsConn::on_open() {
    std::string request = "GET " + path_ + " HTTP/1.1\r\nHost: " + host_header_ +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                          "Sec-WebSocket-Key: " + key_ + "\r\n\r\n";
    write(request);
    return true;
}

bool WsConn::on_data(std::string_view data) {
    if (state_ == State::Handshake) {
        auto s = handshake_.feed(data);
        if (s == router::HttpMessageParser::State::Incomplete) return true;
        auto accept = handshake_.header("sec-websocket-accept");
        if (s == router::HttpMessageParser::State::Error || handshake_.status() != 101 || !accept ||
            *accept != router::ws::accept_key(key_)) {
            close();
            fail_all(jsonrpc::code::upstream_unavailable, "WebSocket handshake refused");
            return false;
        }
        state_ = State::Open;
        connection()->idle = 1;  // closed, not waited for, on a graceful worker shutdown
        write(queued_);
        queued_.clear();
        std::string rest = handshake_.take_leftover();
        if (rest.empty()) return true;
        decoder_.feed(rest);
    } else {
        decoder_.feed(data);
    }
    router::ws::Event event;
    for (;;) {
        auto status = decoder_.next(event);
        if (status == router::ws::Decoder::Status::NeedMore) return true;
        if (status == router::ws::Decoder::Status::Error) {
            ngx_log_error(NGX_LOG_ERR, log_, 0, "jsonrpc_router: bad frame from a WebSocket target: %s", decoder_.error().c_str());
            close();
            fail_all(jsonrpc::code::bad_upstream_response, "bad WebSocket frame");
            return false;
        }
        if (!on_event(event)) return false;
    }
}

bool WsConn::on_event(router::ws::Event& event) {
    using Kind = router::ws::Event::Kind;
    switch (event.kind) {
        case Kind::Ping:
            write(router::ws::encode_frame(router::ws::Opcode::Pong, event.payload, true));
            return true;
        case Kind::Pong:
            return true;
        case Kind::Close:
            close();
            fail_all(jsonrpc::code::upstream_unavailable, "target closed the WebSocket");
            return false;
        case Kind::Message: {
            auto id = router::reply_upstream_id(event.payload);
            if (!id) {
                // Not attributable to one call on a multiplexed connection:
                // every call waiting on it fails, and it is reopened later.
                ngx_log_error(NGX_LOG_ERR, log_, 0, "jsonrpc_router: WebSocket target sent an answer without a request id");
                close();
                fail_all(jsonrpc::code::bad_upstream_response, "answer without a request id");
                return false;
            }
            auto it = pending_.find(*id);
            if (it == pending_.end()) {
                ngx_log_error(NGX_LOG_INFO, log_, 0, "jsonrpc_router: late WebSocket answer dropped");
                return true;
            }
            Call* call = it->second;
            pending_.erase(it);
            call->upstream = nullptr;
            call->upstream_link = nullptr;
            call->upstream_replied(200, std::move(event.payload));
            return is_open();
        }
    }
    return true;
}

bool WsConn::on_closed(bool during_connect, const char* what) {
    state_ = State::Closed;
    fail_all(jsonrpc::code::upstream_unavailable, during_connect ? std::string("connect failed") : std::string(what));
    return false;
}

void WsConn::fail_all(int code, const std::string& reason) {
    state_ = State::Closed;
    auto pending = std::move(pending_);
    pending_.clear();
    queued_.clear();
    for (auto& [id, call] : pending) {
        call->upstream = nullptr;
        call->upstream_link = nullptr;
        call->upstream_failed(code, reason);
    }
}

// ---- Redis: nginx owns the socket, hiredis only decodes replies ------------------

class RedisClient final : public Stream {
public:
    RedisClient(const RouterInstance& instance, ngx_log_t* log) : Stream(log), instance_(instance) {}

    // False when Redis is known to be down (back-off running) or cannot be reached.
    bool usable() {
        if (is_open()) return true;
        if (ngx_current_msec < retry_at_) return false;
        reader_.reset(redisReaderCreate());
        if (!reader_ || !open(instance_.redis_addr, nullptr, "", false, std::max<ngx_msec_t>(instance_.redis_timeout, 1000))) {
            back_off("connect failed");
            return false;
        }
        return true;
    }

    void get(Call& call, const std::string& key) {
        fifo_.push_back(&call);
        write(resp_command({"GET", key}));
    }

    // ttl 0: without expiry.
    void set(const std::string& key, const std::string& value, std::int64_t ttl) {
        fifo_.push_back(nullptr);
        write(ttl == 0 ? resp_command({"SET", key, value}) : resp_command({"SET", key, value, "EX", std::to_string(ttl)}));
    }

    void cancel(Call& call) {
        for (auto& pending : fifo_) {
            if (pending == &call) pending = nullptr;  // its reply is read and dropped
        }
    }

    // A lookup timed out: Redis is slow or gone; skip it for a while.
    void trip() {
        ngx_log_error(NGX_LOG_WARN, log_, 0, "jsonrpc_router: Redis %s did not answer in time; serving uncached",
                      instance_.redis_name.c_str());
        close();
        back_off("timeout");
    }

private:
    bool on_open() override {
        if (down_) {
            ngx_log_error(NGX_LOG_NOTICE, log_, 0, "jsonrpc_router: Redis %s is back", instance_.redis_name.c_str());
            down_ = false;
        }
        return true;
    }

    bool on_data(std::string_view data) override {
        if (redisReaderFeed(reader_.get(), data.data(), data.size()) != REDIS_OK) return fail("bad Redis reply");
        for (;;) {
            void* raw = nullptr;
            if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) return fail("bad Redis reply");
            if (raw == nullptr) return true;
            wallet::RedisReplyPtr reply(static_cast<redisReply*>(raw));
            if (fifo_.empty()) return fail("unexpected Redis reply");
            Call* call = fifo_.front();
            fifo_.pop_front();
            if (call == nullptr) continue;
            call->waiting_cache = false;
            if (reply->type == REDIS_REPLY_STRING) {
                call->cache_answered(CacheSource::Redis, std::string_view(reply->str, reply->len));
            } else {
                call->cache_answered(CacheSource::None, {});
            }
            if (!is_open()) return false;
        }
    }

    bool on_closed(bool, const char* what) override {
        back_off(what);
        return false;
    }

    void back_off(const char* what) {
        if (auto shared = instance_.metrics()) metrics::add(shared->head().redis_errors);
        if (!down_) {
            ngx_log_error(NGX_LOG_WARN, log_, 0, "jsonrpc_router: Redis %s unavailable (%s); serving uncached",
                          instance_.redis_name.c_str(), what);
            down_ = true;
        }
        retry_at_ = ngx_current_msec + instance_.redis_retry;
        // Every waiting lookup becomes a miss (fail-open).
        auto pending = std::move(fifo_);
        fifo_.clear();
        for (Call* call : pending) {
            if (call == nullptr) continue;
            call->waiting_cache = false;
            call->cache_answered(CacheSource::None, {});
        }
    }

    const RouterInstance& instance_;
    ReaderPtr reader_;
    std::deque<Call*> fifo_;
    ngx_msec_t retry_at_ = 0;
    bool down_ = false;
};

// ---- per-worker memory cache -------------------------------------------------------

class MemoryCache {
public:
    void configure(std::size_t capacity) { capacity_ = std::max(capacity_, capacity); }

    // The stored value, valid until the next store.
    const std::string* lookup(const std::string& key, std::int64_t now_ms) {
        auto it = entries_.find(key);
        if (it == entries_.end()) return nullptr;
        if (it->second.expires_ms <= now_ms) {
            erase(it);
            return nullptr;
        }
        lru_.splice(lru_.begin(), lru_, it->second.position);
        return &it->second.value;
    }

    void store(const std::string& key, const std::string& value, std::int64_t expires_ms) {
        if (capacity_ == 0 || value.size() + key.size() > capacity_ / 8) return;
        auto it = entries_.find(key);
        if (it != entries_.end()) erase(it);
        lru_.push_front(key);
        entries_.emplace(key, Entry{value, expires_ms, lru_.begin()});
        bytes_ += key.size() + value.size();
        while (bytes_ > capacity_ && !lru_.empty()) erase(entries_.find(lru_.back()));
    }

private:
    struct Entry {
        std::string value;
        std::int64_t expires_ms;
        std::list<std::string>::iterator position;
    };
    void erase(std::unordered_map<std::string, Entry>::iterator it) {
        bytes_ -= it->first.size() + it->second.value.size();
        lru_.erase(it->second.position);
        entries_.erase(it);
    }

    std::size_t capacity_ = 0;
    std::size_t bytes_ = 0;
    std::list<std::string> lru_;
    std::unordered_map<std::string, Entry> entries_;
};

// ---- coalesced misses ---------------------------------------------------------------

// Identical cacheable misses of one worker: the first (the leader) asks the
// target, the others wait for its answer. A call leaves its group when it
// is destroyed (client gone) or times out on its own; a leader that leaves
// hands the upstream request to the next member.
struct MissGroup : std::enable_shared_from_this<MissGroup> {
    std::string key;
    std::vector<Call*> members;  // in joining order; leavers become nullptr
    Call* leader = nullptr;      // the member whose request is with the target
    std::unordered_map<std::string, MissGroup*>* index = nullptr;  // the worker's open groups

    ~MissGroup() { close(); }
    // Late identical misses start a group of their own from now on.
    void close() {
        if (index == nullptr) return;
        auto it = index->find(key);
        if (it != index->end() && it->second == this) index->erase(it);
        index = nullptr;
    }
};

// What the leader's upstream request gave: an answer (every member gets it
// with its own id) or a failure (every member fails with it).
struct MissOutcome {
    std::string answer_head;  // the response up to the id; empty for a failure
    int code = 0;
    std::string message;
    std::string detail;
};

// ---- URL health and polls ----------------------------------------------------------

// Counts an answer (ok) or a failure of a URL; a URL of a pool goes out
// after kFailuresToDown consecutive failures and comes back with an answer.
// Returns the failures counted before.
std::uint64_t record_health(UrlHealth* health, const router::Target& target, std::size_t url, bool ok) {
    if (health == nullptr) return 0;
    const router::Endpoint& endpoint = target.urls[url];
    if (ok) {
        std::uint64_t before = health->failures.load(std::memory_order_relaxed);
        if (before != 0) health->failures.store(0);
        if (health->down.load(std::memory_order_relaxed) != 0 && health->down.exchange(0) != 0) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0, "jsonrpc_router: target %s: %s is back in",
                          target.name.c_str(), endpoint.url.c_str());
        }
        return before;
    }
    std::uint64_t before = health->failures.fetch_add(1);
    if (target.pool() && before + 1 >= kFailuresToDown && health->down.exchange(1) == 0) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "jsonrpc_router: target %s: %s is out after %uL consecutive failures; probing it",
                      target.name.c_str(), endpoint.url.c_str(), before + 1);
    }
    return before;
}

// Polls one URL of a chain node (get_dynamic_global_properties: head and
// last irreversible block) or of a pool (any JSON-RPC answer means alive;
// only while the URL is out). Every worker runs one per URL; a poll is due
// when the shared next_poll_ms passed, and the worker that moves it
// forward polls.
class UrlPoller final : public ExchangeOwner {
public:
    UrlPoller(const RouterInstance& instance, std::size_t target, std::size_t url, UrlHealth& health)
        : instance_(instance), target_(instance.table.targets[target]), target_index_(target), url_(url),
          health_(health) {
        timer_.handler = on_timer;
        timer_.data = this;
        timer_.log = ngx_cycle->log;
        timer_.cancelable = 1;  // never holds up a graceful shutdown
        ngx_add_timer(&timer_, 1);
    }
    ~UrlPoller() {
        if (timer_.timer_set) ngx_del_timer(&timer_);
    }
    UrlPoller(const UrlPoller&) = delete;
    UrlPoller& operator=(const UrlPoller&) = delete;

    void exchange_done(Exchange& exchange) override {
        std::string response = exchange.take_response();
        std::optional<router::ChainHead> head;
        if (target_.chain_node) head = router::chain_head(response);
        bool ok = target_.chain_node ? head.has_value() : exchange.answered_by_target();
        if (head) {
            health_.head.store(head->head);
            health_.lib.store(head->lib);
        }
        std::uint64_t failures_before = record_health(&health_, target_, url_, ok);
        const char* url = target_.urls[url_].url.c_str();
        if (ok && failures_before != 0 && head) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "jsonrpc_router: chain node %s (%s) answers again: head %uL, last irreversible %uL",
                          target_.name.c_str(), url, head->head, head->lib);
        } else if (!ok && failures_before == 0) {
            // Once per outage; the last irreversible block learned stays valid.
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0, "jsonrpc_router: target %s (%s): poll failed: %s",
                          target_.name.c_str(), url, response.substr(0, 300).c_str());
        }
        inflight_.reset();  // destroys `exchange`: nothing after this
    }

private:
    static void on_timer(ngx_event_t* ev) { static_cast<UrlPoller*>(ev->data)->tick(); }

    void tick() {
        ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target_.poll_ms));
        if (inflight_ || ngx_exiting || ngx_terminate || ngx_quit) return;
        if (!target_.chain_node && health_.down.load(std::memory_order_relaxed) == 0) return;
        std::int64_t now = wall_clock_ms();
        std::int64_t due = health_.next_poll_ms.load();
        if (now < due || !health_.next_poll_ms.compare_exchange_strong(due, now + target_.poll_ms)) return;
        inflight_ = std::make_unique<Exchange>(instance_, ngx_cycle->log, *this);
        inflight_->start_poll(target_index_, url_);
    }

    const RouterInstance& instance_;
    const router::Target& target_;
    std::size_t target_index_;
    std::size_t url_;
    UrlHealth& health_;
    ngx_event_t timer_{};
    std::unique_ptr<Exchange> inflight_;
};

// ---- Worker -----------------------------------------------------------------------

struct Worker::Impl {
    struct InstanceState {
        std::vector<std::unique_ptr<Upstream>> upstreams;
        std::unique_ptr<RedisClient> redis;
        std::unordered_map<std::string, MissGroup*> misses;  // open miss groups by cache key
        std::vector<std::size_t> next_url;                   // per target: round robin position
    };
    std::unordered_map<const RouterInstance*, InstanceState> instances;
    MemoryCache memory;
    // Destroyed first (declared last): their calls still use the upstreams.
    std::vector<std::unique_ptr<UrlPoller>> pollers;

    InstanceState& state(const RouterInstance& instance) {
        InstanceState& s = instances[&instance];
        if (s.upstreams.empty()) {
            s.upstreams.resize(instance.url_count());
            s.next_url.resize(instance.table.targets.size());
        }
        return s;
    }
};

namespace {
std::unique_ptr<Worker> the_worker;
}

Worker::Worker() : impl_(std::make_unique<Impl>()) {
    std::random_device rd;
    request_id_seed_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ (static_cast<std::uint64_t>(ngx_pid) << 16);
}

Worker::~Worker() = default;

Worker& Worker::get() {
    if (!the_worker) the_worker.reset(new Worker());  // private constructor: the one instance per worker
    return *the_worker;
}

void Worker::shutdown() { the_worker.reset(); }

std::string Worker::next_request_id() {
    std::uint64_t v = request_id_seed_ + 0x9E3779B97F4A7C15ULL * ++request_ids_;
    v ^= v >> 29;
    char text[17];
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; --i) {
        text[i] = hex[v & 0xF];
        v >>= 4;
    }
    text[16] = '\0';
    return text;
}

Upstream& Worker::upstream(const RouterInstance& instance, std::size_t target, std::size_t url) {
    auto& slot = impl_->state(instance).upstreams[instance.first_url[target] + url];
    if (!slot) {
        if (instance.table.targets[target].urls[url].websocket()) {
            slot = std::make_unique<WsUpstream>(instance, target, url);
        } else {
            slot = std::make_unique<HttpUpstream>(instance, target, url);
        }
    }
    return *slot;
}

std::optional<std::size_t> Worker::pick_url(const RouterInstance& instance, std::size_t target,
                                            std::optional<std::size_t> exclude) {
    const router::Target& t = instance.table.targets[target];
    const std::size_t count = t.urls.size();
    if (count == 1) return exclude ? std::nullopt : std::optional<std::size_t>(0);
    // Chain nodes: a URL whose head lags the best URL in by more than max_lag is avoided.
    std::uint64_t best_head = 0;
    if (t.chain_node) {
        for (std::size_t u = 0; u < count; ++u) {
            const UrlHealth* h = instance.url_health(target, u);
            if (h != nullptr && h->down.load(std::memory_order_relaxed) == 0) {
                best_head = std::max(best_head, h->head.load(std::memory_order_relaxed));
            }
        }
    }
    std::size_t& next = impl_->state(instance).next_url[target];
    std::optional<std::size_t> fallback;
    for (std::size_t k = 0; k < count; ++k) {
        std::size_t u = (next + k) % count;
        if (exclude == u) continue;
        if (!fallback) fallback = u;
        const UrlHealth* h = instance.url_health(target, u);
        if (h != nullptr) {
            if (h->down.load(std::memory_order_relaxed) != 0) continue;
            if (best_head > 0 && h->head.load(std::memory_order_relaxed) + t.max_lag < best_head) continue;
        }
        next = u + 1;
        return u;
    }
    if (exclude) return std::nullopt;
    // Nothing healthy: one of them still gets the call rather than none.
    if (fallback) next = *fallback + 1;
    return fallback;
}

void Worker::start_polls(const RouterInstance& instance) {
    for (std::size_t t = 0; t < instance.table.targets.size(); ++t) {
        for (std::size_t u = 0; u < instance.table.targets[t].urls.size(); ++u) {
            if (UrlHealth* health = instance.url_health(t, u)) {
                impl_->pollers.push_back(std::make_unique<UrlPoller>(instance, t, u, *health));
            }
        }
    }
}

bool Worker::join_miss(Call& call) {
    auto& misses = impl_->state(call.exchange().instance()).misses;
    const std::string& key = call.plan().cache_key;
    auto it = misses.find(key);
    if (it != misses.end()) {
        it->second->members.push_back(&call);
        call.miss_group = it->second->shared_from_this();
        return true;
    }
    auto group = std::make_shared<MissGroup>();
    group->key = key;
    group->members.push_back(&call);
    group->leader = &call;
    group->index = &misses;
    misses.emplace(key, group.get());
    call.miss_group = std::move(group);
    return false;
}

void Worker::cache_lookup(Call& call) {
    const RouterInstance& instance = call.exchange().instance();
    std::string key = instance.cache_prefix + call.plan().cache_key;
    if (instance.memory_cache_bytes > 0) {
        impl_->memory.configure(instance.memory_cache_bytes);
        if (const std::string* value = impl_->memory.lookup(key, wall_clock_ms())) {
            call.cache_answered(CacheSource::Memory, *value);
            return;
        }
    }
    if (!instance.redis_enabled) {
        call.cache_answered(CacheSource::None, {});
        return;
    }
    auto& redis = impl_->state(instance).redis;
    if (!redis) redis = std::make_unique<RedisClient>(instance, ngx_cycle->log);
    if (!redis->usable()) {
        call.cache_answered(CacheSource::None, {});
        return;
    }
    call.wait_for_redis();
    redis->get(call, key);
}

void Worker::cache_cancel(Call& call) {
    call.waiting_cache = false;
    auto& redis = impl_->state(call.exchange().instance()).redis;
    if (redis) redis->cancel(call);
}

void Worker::cache_trip(Call& call) {
    auto& redis = impl_->state(call.exchange().instance()).redis;
    if (redis) redis->trip();
}

void Worker::cache_store(const Call& call, const std::string& result, std::int64_t lifetime) {
    const RouterInstance& instance = const_cast<Call&>(call).exchange().instance();
    std::string key = instance.cache_prefix + call.plan().cache_key;
    // The stored value carries its expiry (0: none), so that a worker's
    // memory copy of an entry read from Redis never outlives the Redis entry.
    std::int64_t expires = lifetime == 0 ? 0 : wall_clock_ms() + lifetime * 1000;
    std::string value = std::to_string(expires) + " " + result;
    if (instance.memory_cache_bytes > 0) impl_->memory.store(key, value, memory_expiry(expires));
    if (!instance.redis_enabled) return;
    auto& redis = impl_->state(instance).redis;
    if (!redis) redis = std::make_unique<RedisClient>(instance, ngx_cycle->log);
    if (redis->usable()) redis->set(key, value, lifetime);
}

void Worker::remember(const Call& call, std::string_view stored) {
    const RouterInstance& instance = const_cast<Call&>(call).exchange().instance();
    if (instance.memory_cache_bytes == 0) return;
    auto space = stored.find(' ');
    if (space == std::string_view::npos) return;
    std::int64_t expires = std::strtoll(std::string(stored.substr(0, space)).c_str(), nullptr, 10);
    impl_->memory.store(instance.cache_prefix + call.plan().cache_key, std::string(stored), memory_expiry(expires));
}

// ---- Call ---------------------------------------------------------------------------

Call::Call(Exchange& exchange, std::size_t index) : exchange_(exchange), index_(index) {
    timer_.handler = on_timer;
    timer_.data = this;
    timer_.log = exchange.log();
}

Call::~Call() {
    if (timer_.timer_set) ngx_del_timer(&timer_);
    unpost_event(&timer_);
    if (waiting_cache) Worker::get().cache_cancel(*this);
    if (upstream != nullptr) upstream->cancel(*this);
    leave_group();
}

const router::CallPlan& Call::plan() const { return exchange_.plan().calls[index_]; }
ngx_log_t* Call::log() const { return exchange_.log(); }

void Call::start() {
    const router::CallPlan& p = plan();
    if (!exchange_.quiet()) {
        if (auto shared = exchange_.instance().metrics()) shared->count_call(p.error ? nullptr : p.route, exchange_.transport());
    }
    if (p.error) {
        fail(p.error->code, p.error->message, "");
        return;
    }
    if (p.cache_key.empty()) {
        go_upstream();
        return;
    }
    cache_status = "MISS";
    Worker::get().cache_lookup(*this);
}

void Call::wait_for_redis() {
    waiting_cache = true;
    ngx_add_timer(&timer_, exchange_.instance().redis_timeout);
}

void Call::cache_answered(CacheSource source, std::string_view stored) {
    if (done_) return;
    waiting_cache = false;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    if (source != CacheSource::None) {
        // "<expiry ms, 0 = none> <result>"; anything else is not ours and is a miss.
        auto space = stored.find(' ');
        if (space != std::string_view::npos && space > 0) {
            std::int64_t expires = std::strtoll(std::string(stored.substr(0, space)).c_str(), nullptr, 10);
            if (expires == 0 || expires > wall_clock_ms()) {
                if (source == CacheSource::Redis) Worker::get().remember(*this, stored);
                cache_status = "HIT";
                count_cache(router::CacheResult::Hit);
                finish(router::render_cached(stored.substr(space + 1), plan().id));
                return;
            }
        }
    }
    go_upstream();
}

void Call::go_upstream() {
    if (!plan().cache_key.empty() && Worker::get().join_miss(*this)) {
        // An identical miss is already with the target: wait for its answer.
        cache_status = "COALESCED";
        count_cache(router::CacheResult::Coalesced);
        const router::Target& target = exchange_.instance().table.targets[plan().route->target];
        ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target.timeout_ms));
        return;
    }
    if (!plan().cache_key.empty()) count_cache(router::CacheResult::Miss);
    send_upstream();
}

void Call::count_cache(router::CacheResult result) const {
    if (auto shared = exchange_.instance().metrics()) {
        metrics::add(shared->route(static_cast<std::size_t>(plan().route - exchange_.instance().table.routes.data()))
                         .cache[static_cast<std::size_t>(result)]);
    }
}

void Call::upstream_sent() {
    if (!exchange_.quiet()) upstream_sent_us_ = metrics::monotonic_us();
}

void Call::upstream_ended(std::optional<router::UpstreamError> error) {
    if (upstream_sent_us_ == 0) return;
    const std::uint64_t sent = std::exchange(upstream_sent_us_, 0);
    const RouterInstance& instance = exchange_.instance();
    auto shared = instance.metrics();
    if (!shared) return;
    const std::uint64_t now = metrics::monotonic_us();
    router::UrlCounters& counters = shared->url(instance.first_url[plan().route->target] + url);
    counters.latency.observe(now > sent ? now - sent : 0);
    if (error) metrics::add(counters.errors[static_cast<std::size_t>(*error)]);
}

void Call::send_upstream() {
    const RouterInstance& instance = exchange_.instance();
    const router::Route& route = *plan().route;
    const router::Target& target = instance.table.targets[route.target];
    url = pinned_url ? *pinned_url : Worker::get().pick_url(instance, route.target, std::nullopt).value_or(0);
    ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target.timeout_ms));
    upstream_sent();
    Worker::get().upstream(instance, route.target, url).submit(*this);
}

bool Call::fail_over(const char* what) {
    if (exchange_.quiet()) return false;  // a poll counts its own outcome
    const RouterInstance& instance = exchange_.instance();
    const std::size_t target_index = plan().route->target;
    const router::Target& target = instance.table.targets[target_index];
    record_health(instance.url_health(target_index, url), target, url, false);
    // A broadcast may have reached the node before the failure: never twice.
    if (failed_over_ || !target.pool() || router::is_write(plan().path)) return false;
    auto other = Worker::get().pick_url(instance, target_index, url);
    if (!other) return false;
    failed_over_ = true;
    ngx_log_error(NGX_LOG_WARN, log(), 0, "jsonrpc_router: request_id=%s method=%s: %s failed (%s), retried on %s",
                  exchange_.request_id().c_str(), plan().path.c_str(), target.urls[url].url.c_str(), what,
                  target.urls[*other].url.c_str());
    url = *other;
    retried = false;
    ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target.timeout_ms));
    upstream_sent();
    Worker::get().upstream(instance, target_index, url).submit(*this);
    return true;
}

void Call::lead() {
    cache_status = "MISS";
    send_upstream();
}

void Call::leave_group() {
    if (!miss_group) return;
    std::shared_ptr<MissGroup> group = std::move(miss_group);
    miss_group.reset();
    for (Call*& member : group->members) {
        if (member == this) member = nullptr;
    }
    if (group->leader != this) return;
    // The leader's client went away: the next member asks the target.
    group->leader = nullptr;
    for (Call* member : group->members) {
        if (member != nullptr) {
            group->leader = member;
            member->lead();
            return;
        }
    }
}

void Call::answer_group(const MissOutcome& outcome) {
    std::shared_ptr<MissGroup> group = std::move(miss_group);
    miss_group.reset();
    group->close();
    group->leader = nullptr;
    // Each member is detached before it is answered: an answer may end an
    // exchange and destroy its calls (this one too); members still waiting
    // leave the group on their own then. Only locals are used here.
    for (std::size_t i = 0; i < group->members.size(); ++i) {
        Call* member = group->members[i];
        if (member == nullptr) continue;
        group->members[i] = nullptr;
        member->miss_group.reset();
        member->deliver(outcome);
    }
}

void Call::deliver(const MissOutcome& outcome) {
    if (done_) return;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    if (outcome.code == 0) {
        finish(outcome.answer_head + plan().id + "}");
    } else {
        fail(outcome.code, outcome.message, outcome.detail);
    }
}

void Call::fail_later(int code, std::string reason) {
    deferred_code_ = code;
    deferred_reason_ = std::move(reason);
    post_event(&timer_);
}

void Call::on_timer(ngx_event_t* ev) {
    auto* call = static_cast<Call*>(ev->data);
    if (call->done_) return;
    if (call->deferred_code_ != 0) {
        int code = call->deferred_code_;
        call->deferred_code_ = 0;
        call->upstream_failed(code, call->deferred_reason_);
        return;
    }
    if (!ev->timedout) return;
    ev->timedout = 0;
    if (call->waiting_cache) {
        // Redis is slow: serve this call uncached, and skip Redis for a while.
        Worker::get().cache_cancel(*call);
        Worker::get().cache_trip(*call);
        call->go_upstream();
        return;
    }
    if (call->miss_group && call->miss_group->leader != call) {
        // A waiting member times out alone; the leader's timeout is the group's.
        call->leave_group();
    } else {
        if (call->upstream != nullptr) call->upstream->cancel(*call);
        call->upstream_ended(router::UpstreamError::Timeout);
        if (call->fail_over("timeout")) return;
    }
    const router::Target& target = call->exchange_.instance().table.targets[call->plan().route->target];
    MissOutcome outcome;
    outcome.code = jsonrpc::code::upstream_timeout;
    outcome.message = "Request Timeout: target " + target.name + " did not answer within " +
                      std::to_string(target.timeout_ms) + " ms";
    outcome.detail = "timeout";
    call->answer(outcome);
}

void Call::upstream_replied(int status, std::string body) {
    if (done_) return;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    const RouterInstance& instance = exchange_.instance();
    router::UpstreamReply reply = router::rewrite_upstream_reply(body, plan().id, instance.limits);
    upstream_ended(reply.valid ? std::nullopt : std::optional(router::UpstreamError::BadAnswer));
    if (!reply.valid) {
        if (fail_over("bad answer")) return;
        MissOutcome outcome;
        outcome.code = jsonrpc::code::bad_upstream_response;
        outcome.message = "Upstream response error: " + reply.problem + " (HTTP " + std::to_string(status) + ")";
        outcome.detail = reply.problem;
        answer(outcome);
        return;
    }
    answered_by_target = true;
    const std::size_t target_index = plan().route->target;
    UrlHealth* health = instance.url_health(target_index, url);
    if (!exchange_.quiet()) record_health(health, instance.table.targets[target_index], url, true);
    if (reply.cacheable && !plan().cache_key.empty()) {
        // Final only at or below the LIB of the node that answered.
        std::uint64_t lib = health != nullptr ? health->lib.load(std::memory_order_relaxed) : 0;
        if (auto lifetime = router::cache_lifetime(plan(), reply.result, lib)) {
            Worker::get().cache_store(*this, reply.result, *lifetime);
        }
    }
    if (miss_group) {
        MissOutcome outcome;
        outcome.answer_head = reply.response.substr(0, reply.id_offset);
        answer_group(outcome);
        return;
    }
    finish(std::move(reply.response));
}

void Call::upstream_failed(int code, const std::string& reason) {
    if (done_) return;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    upstream_ended(code == jsonrpc::code::upstream_timeout         ? router::UpstreamError::Timeout
                   : code == jsonrpc::code::bad_upstream_response ? router::UpstreamError::BadAnswer
                                                                  : router::UpstreamError::Unavailable);
    if (fail_over(reason.c_str())) return;
    const router::Target& target = exchange_.instance().table.targets[plan().route->target];
    MissOutcome outcome;
    outcome.code = code;
    outcome.message = code == jsonrpc::code::upstream_unavailable ? "Upstream unavailable: target " + target.name
                                                                  : "Upstream response error: target " + target.name;
    outcome.detail = reason;
    answer(outcome);
}

void Call::answer(const MissOutcome& outcome) {
    if (miss_group) {
        answer_group(outcome);
    } else {
        deliver(outcome);
    }
}

void Call::fail(int code, const std::string& message, const std::string& detail) {
    const std::string& request_id = exchange_.request_id();
    std::string path = plan().path.empty() ? std::string("-") : plan().path;
    if (exchange_.quiet()) {
        // A chain-node poll: its poller reports the target's state.
    } else if (code >= 1000) {
        ngx_log_error(NGX_LOG_ERR, log(), 0, "jsonrpc_router: request_id=%s code=%d method=%s: %s (%s)",
                      request_id.c_str(), code, path.c_str(), message.c_str(), detail.c_str());
    } else {
        ngx_log_error(NGX_LOG_INFO, log(), 0, "jsonrpc_router: request_id=%s code=%d method=%s: %s", request_id.c_str(),
                      code, path.c_str(), message.c_str());
    }
    if (code != jsonrpc::code::upstream_timeout && code < 1000) cache_status = "BYPASS";
    finish(wallet::jsonrpc::error_response(plan().id, code, message, request_id));
}

void Call::finish(std::string text) {
    if (timer_.timer_set) ngx_del_timer(&timer_);
    unpost_event(&timer_);
    response = std::move(text);
    done_ = true;
    exchange_.call_finished();  // may destroy this Call: nothing after it
}

// ---- Exchange -------------------------------------------------------------------------

Exchange::Exchange(const RouterInstance& instance, ngx_log_t* log, ExchangeOwner& owner,
                   router::ClientTransport transport)
    : instance_(instance), log_(log), owner_(owner), transport_(transport), request_id_(Worker::get().next_request_id()) {}

Exchange::~Exchange() = default;

void Exchange::start(std::string body) {
    body_ = std::move(body);
    plan_ = router::plan_request(body_, instance_.table, instance_.limits);
    if (auto shared = instance_.metrics()) {
        metrics::add(shared->head().requests[static_cast<std::size_t>(transport_)]);
        if (plan_.error) shared->count_call(nullptr, transport_);
    }
    if (plan_.error) {
        ngx_log_error(NGX_LOG_INFO, log_, 0, "jsonrpc_router: request_id=%s code=%d: %s", request_id_.c_str(),
                      plan_.error->code, plan_.error->message.c_str());
        whole_error_ = wallet::jsonrpc::error_response("null", plan_.error->code, plan_.error->message, request_id_);
        done_ = true;
        owner_.exchange_done(*this);  // may destroy this Exchange
        return;
    }
    calls_.reserve(plan_.calls.size());
    for (std::size_t i = 0; i < plan_.calls.size(); ++i) calls_.push_back(std::make_unique<Call>(*this, i));
    pending_ = calls_.size();
    for (auto& call : calls_) call->start();
    started_ = true;
    if (pending_ == 0) {
        done_ = true;
        owner_.exchange_done(*this);  // may destroy this Exchange
    }
}

void Exchange::start_poll(std::size_t target, std::size_t url) {
    quiet_ = true;
    plan_.calls.push_back(router::chain_poll_plan(instance_.probe_routes[target]));
    calls_.push_back(std::make_unique<Call>(*this, 0));
    calls_[0]->pinned_url = url;
    pending_ = 1;
    calls_[0]->start();  // a transport never answers from inside start()
    started_ = true;
}

void Exchange::call_finished() {
    --pending_;
    if (started_ && pending_ == 0) {
        done_ = true;
        owner_.exchange_done(*this);  // may destroy this Exchange
    }
}

std::string Exchange::take_response() {
    if (!whole_error_.empty()) return std::move(whole_error_);
    if (!plan_.batch) return calls_.empty() ? std::string() : std::move(calls_[0]->response);
    std::vector<std::string> parts;
    parts.reserve(calls_.size());
    for (const auto& call : calls_) parts.push_back(call->response);
    return router::render_batch(parts);
}

std::string Exchange::cache_status() const {
    if (calls_.empty()) return "BYPASS";
    if (!plan_.batch) return calls_[0]->cache_status;
    std::size_t hits = 0;
    for (const auto& call : calls_) hits += std::strcmp(call->cache_status, "HIT") == 0 ? 1 : 0;
    return "BATCH hits=" + std::to_string(hits) + " calls=" + std::to_string(calls_.size());
}

const router::Route* Exchange::route() const {
    if (plan_.batch || plan_.calls.empty()) return nullptr;
    return plan_.calls[0].route;
}

std::string Exchange::target_name() const {
    const router::Route* r = route();
    return r ? instance_.table.targets[r->target].name : std::string();
}

std::string Exchange::path() const { return plan_.batch || plan_.calls.empty() ? std::string() : plan_.calls[0].path; }

}  // namespace jsonrpc_router
