// An nginx connection (ngx_connection_t) around a socket, for both project
// modules: the router's upstream and Redis sockets (opened by nginx, closed
// with the connection) and the wallet_history API's libpq sockets (opened
// and closed by libpq, only watched by nginx). One RAII owner, so that every
// user releases a connection the same way: timers and posted events gone,
// events unregistered, the descriptor closed only by whoever owns it.
#pragma once

#include "ngx_wallet_nginx.hpp"

namespace wallet::ngx {

// nginx's posted-event macros, as functions (they expand to bare ifs).
inline void post_event(ngx_event_t* ev) { ngx_post_event(ev, &ngx_posted_events); }
inline void unpost_event(ngx_event_t* ev) {
    if (ev->posted) {
        ngx_delete_posted_event(ev);
    }
}

class EventConnection {
public:
    EventConnection() = default;
    ~EventConnection() { close(); }
    EventConnection(const EventConnection&) = delete;
    EventConnection& operator=(const EventConnection&) = delete;

    // Takes over a connection nginx opened (ngx_event_connect_peer): close()
    // closes its descriptor, shuts TLS down and frees its pool (c->pool).
    void adopt(ngx_connection_t* c, void* data, ngx_event_handler_pt read, ngx_event_handler_pt write, ngx_log_t* log);

    // Watches a descriptor another library owns (libpq, hiredis), reads
    // registered level-triggered (such libraries do not promise to drain the
    // socket per call). close() leaves the descriptor open: call it before
    // the owner closes it, or after the owner moved to another one. False
    // (nothing to release) when nginx has no free connection or epoll refuses.
    bool watch_foreign(ngx_socket_t fd, void* data, ngx_event_handler_pt handler, ngx_log_t* log);

    // Level-triggered write interest of a foreign descriptor: on only while
    // output waits (left registered, it would make the worker spin).
    void want_write(bool on);
    // Read interest of a foreign descriptor (on after watch_foreign): off
    // while its owner waits only for writing (libpq's TLS handshake).
    void want_read(bool on);

    // Releases the connection as described above; nothing when empty.
    void close();

    ngx_connection_t* get() const { return c_; }
    ngx_connection_t* operator->() const { return c_; }
    explicit operator bool() const { return c_ != nullptr; }

private:
    ngx_connection_t* c_ = nullptr;
    bool foreign_ = false;
};

}  // namespace wallet::ngx
