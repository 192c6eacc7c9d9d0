// A connected stream socket (TCP or unix, optionally TLS) on nginx's event
// loop: the router's upstream connections (HTTP, WebSocket) and its Redis
// connection are Streams.
#pragma once

#include <string>
#include <string_view>

#include "ngx_wallet_connection.hpp"
#include "ngx_wallet_nginx.hpp"

extern "C" {
#include <ngx_event_connect.h>
}

namespace jsonrpc_router {

// Subclasses get on_open/on_data/on_closed; each returns false when it
// destroyed the stream, which then touches nothing more.
class Stream {
public:
    // `log` must outlive the stream: pooled connections outlive the client
    // request that opened them, so they log to the cycle's log.
    explicit Stream(ngx_log_t* log) : log_(log) {}
    virtual ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Starts connecting; false (and nothing registered) on an immediate failure.
    bool open(const ngx_addr_t& addr, ngx_ssl_t* ssl, const std::string& tls_host, bool verify,
              ngx_msec_t connect_timeout);
    // Queues bytes and sends what the socket takes. False when the stream failed.
    bool write(std::string_view data);
    void close();
    bool connected() const { return ready_; }
    // The last open() failed on this host's own limits (worker_connections,
    // descriptors, local ports), not on the peer.
    bool failed_locally() const { return failed_locally_; }
    bool is_open() const { return static_cast<bool>(conn_); }
    ngx_connection_t* connection() const { return conn_.get(); }
    // Parks the connection: any event closes it (a peer's close or data, or
    // worker shutdown); timeout closes it too.
    void park(ngx_msec_t timeout);
    void unpark();

protected:
    virtual bool on_open() = 0;
    virtual bool on_data(std::string_view data) = 0;
    // The connection failed or was closed by the peer; `during_connect` when
    // it never opened.
    virtual bool on_closed(bool during_connect, const char* what) = 0;
    // Closes the connection and reports it through on_closed.
    bool fail(const char* what);
    ngx_log_t* log_;

private:
    static void read_handler(ngx_event_t* ev);
    static void write_handler(ngx_event_t* ev);
    static void parked_handler(ngx_event_t* ev);
    static void tls_done(ngx_connection_t* c);
    // The handlers above as nginx calls them (guarded).
    static const ngx_event_handler_pt on_read;
    static const ngx_event_handler_pt on_write;
    static const ngx_event_handler_pt on_parked;
    static const ngx_connection_handler_pt on_tls_done;
    bool connected_event();
    bool start_tls();
    bool became_ready();
    bool flush();
    bool read_available();

    ngx_peer_connection_t peer_{};
    wallet::ngx::EventConnection conn_;
    ngx_ssl_t* ssl_ = nullptr;
    std::string tls_host_;
    bool verify_ = false;
    bool ready_ = false;
    bool parked_ = false;
    bool failed_locally_ = false;
    std::string out_;
    std::size_t out_sent_ = 0;
};

}  // namespace jsonrpc_router
