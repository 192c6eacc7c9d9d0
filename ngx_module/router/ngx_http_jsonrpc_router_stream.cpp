// The router's stream sockets (see the header): connect, TLS with SNI and
// host check, buffered writes, parking of idle keep-alive connections.
#include "ngx_http_jsonrpc_router_stream.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <utility>

#include "ngx_wallet_guard.hpp"
#include "ngx_wallet_shared.hpp"

namespace jsonrpc_router {

using wallet::ngx::post_event;
using wallet::ngx::unpost_event;

namespace {

// One read buffer per worker process (the event loop is single-threaded).
std::array<u_char, 64 * 1024> read_buffer;

}  // namespace

// nginx calls these guarded (ngx_wallet_guard) without a recovery: after an
// exception the stream may be gone (a subclass destroys it before it hands
// an answer on), and the calls it served end by their own timers.
using wallet::ngx::guarded;
const ngx_event_handler_pt Stream::on_read = guarded<"jsonrpc_router: upstream read", Stream::read_handler>;
const ngx_event_handler_pt Stream::on_write = guarded<"jsonrpc_router: upstream write", Stream::write_handler>;
const ngx_event_handler_pt Stream::on_parked = guarded<"jsonrpc_router: idle upstream", Stream::parked_handler>;
const ngx_connection_handler_pt Stream::on_tls_done = guarded<"jsonrpc_router: upstream TLS", Stream::tls_done>;

Stream::~Stream() { close(); }

bool Stream::open(const ngx_addr_t& addr, ngx_ssl_t* ssl, const std::string& tls_host, bool verify,
                  ngx_msec_t connect_timeout) {
    close();
    ssl_ = ssl;
    tls_host_ = tls_host;
    verify_ = verify;
    peer_ = ngx_peer_connection_t{};
    peer_.sockaddr = addr.sockaddr;
    peer_.socklen = addr.socklen;
    peer_.name = const_cast<ngx_str_t*>(&addr.name);
    peer_.get = ngx_event_get_peer;
    peer_.log = log_;
    peer_.log_error = NGX_ERROR_ERR;
    ngx_int_t rc = ngx_event_connect_peer(&peer_);
    const ngx_err_t err = ngx_socket_errno;
    ngx_connection_t* c = std::exchange(peer_.connection, nullptr);
    if (c != nullptr) conn_.adopt(c, this, on_read, on_write, log_);
    if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
        // NGX_ERROR: socket(), ngx_get_connection() or the event module
        // failed here; EADDRNOTAVAIL: no local port left.
        failed_locally_ = rc == NGX_ERROR || (rc == NGX_DECLINED && err == EADDRNOTAVAIL);
        conn_.close();
        return false;
    }
    failed_locally_ = false;
    if (ssl_ != nullptr) {
        conn_->pool = ngx_create_pool(1024, log_);
        if (conn_->pool == nullptr) {
            close();
            return false;
        }
    }
    // A connect that hangs (a blackholed address) fails on its own; the
    // timer does not hold up a graceful shutdown.
    conn_->write->cancelable = 1;
    ngx_add_timer(conn_->write, connect_timeout);
    // Connected at once (unix sockets usually are): continue from the event
    // loop, never from inside the caller.
    if (rc == NGX_OK) post_event(conn_->write);
    return true;
}

void Stream::close() {
    conn_.close();
    ready_ = false;
    parked_ = false;
    out_.clear();
    out_sent_ = 0;
}

bool Stream::write(std::string_view data) {
    if (data.empty()) return static_cast<bool>(conn_);
    if (out_.empty() && ready_ && conn_ && !conn_->write->posted) {
        // Nothing queued: straight from the caller's bytes, and only what
        // the socket does not take is copied.
        ssize_t n = conn_->send(conn_.get(), reinterpret_cast<u_char*>(const_cast<char*>(data.data())), data.size());
        if (n > 0) data.remove_prefix(static_cast<std::size_t>(n));
        if (data.empty()) return true;
        out_.append(data);
        if (n == NGX_ERROR) {
            post_event(conn_->write);
        } else if (ngx_handle_write_event(conn_->write, 0) != NGX_OK) {
            post_event(conn_->write);
        }
        return true;
    }
    out_.append(data);
    if (!ready_ || !conn_ || conn_->write->posted) return static_cast<bool>(conn_);
    // Sent at once when the socket takes it; a failure is only noticed here
    // and reported from the event loop (posted), never inside the caller.
    while (out_sent_ < out_.size()) {
        ssize_t n = conn_->send(conn_.get(), reinterpret_cast<u_char*>(out_.data() + out_sent_), out_.size() - out_sent_);
        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(conn_->write, 0) != NGX_OK) post_event(conn_->write);
            return true;
        }
        if (n == NGX_ERROR) {
            post_event(conn_->write);
            return true;
        }
        out_sent_ += static_cast<std::size_t>(n);
    }
    out_.clear();
    out_sent_ = 0;
    return true;
}

void Stream::park(ngx_msec_t timeout) {
    if (!conn_) return;
    parked_ = true;
    conn_->idle = 1;
    conn_->read->handler = on_parked;
    conn_->write->handler = on_parked;
    conn_->read->cancelable = 1;
    ngx_add_timer(conn_->read, timeout);
    if (conn_->read->ready) post_event(conn_->read);
}

void Stream::unpark() {
    if (!conn_) return;
    parked_ = false;
    conn_->idle = 0;
    conn_->read->cancelable = 0;
    if (conn_->read->timer_set) ngx_del_timer(conn_->read);
    unpost_event(conn_->read);
    conn_->read->handler = on_read;
    conn_->write->handler = on_write;
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
    if (getsockopt(conn_->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1) err = ngx_socket_errno;
    if (err != 0) {
        ngx_log_error(NGX_LOG_ERR, log_, err, "jsonrpc_router: connect() to %V failed", peer_.name);
        return fail("connect failed");
    }
    if (ssl_ != nullptr) return start_tls();
    return became_ready();
}

bool Stream::start_tls() {
    if (ngx_ssl_create_connection(ssl_, conn_.get(), NGX_SSL_BUFFER | NGX_SSL_CLIENT) != NGX_OK) return fail("TLS setup failed");
    if (!tls_host_.empty()) SSL_set_tlsext_host_name(conn_->ssl->connection, tls_host_.c_str());
    ngx_int_t rc = ngx_ssl_handshake(conn_.get());
    if (rc == NGX_AGAIN) {
        conn_->ssl->handler = on_tls_done;
        return true;
    }
    tls_done(conn_.get());
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
        ngx_str_t host = wallet::ngx::to_ngx_str(s->tls_host_);
        if (ngx_ssl_check_host(c, &host) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, s->log_, 0, "jsonrpc_router: upstream certificate does not match \"%V\"", &host);
            s->fail("certificate host mismatch");
            return;
        }
    }
    c->read->handler = on_read;
    c->write->handler = on_write;
    s->became_ready();
}

bool Stream::became_ready() {
    ready_ = true;
    if (conn_->write->timer_set) ngx_del_timer(conn_->write);
    conn_->write->cancelable = 0;
    if (!on_open()) return false;
    if (!flush()) return false;
    return read_available();
}

bool Stream::flush() {
    while (out_sent_ < out_.size()) {
        ssize_t n = conn_->send(conn_.get(), reinterpret_cast<u_char*>(out_.data() + out_sent_), out_.size() - out_sent_);
        if (n == NGX_ERROR) return fail("send failed");
        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(conn_->write, 0) != NGX_OK) return fail("send failed");
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
        ssize_t n = conn_->recv(conn_.get(), read_buffer.data(), read_buffer.size());
        if (n > 0) {
            if (!on_data(std::string_view(reinterpret_cast<const char*>(read_buffer.data()), static_cast<std::size_t>(n)))) {
                return false;
            }
            if (!conn_ || parked_) return false;
            continue;
        }
        if (n == 0) return fail("closed by peer");
        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(conn_->read, 0) != NGX_OK) return fail("recv failed");
            return true;
        }
        return fail("recv failed");
    }
}

}  // namespace jsonrpc_router
