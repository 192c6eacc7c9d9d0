#include "ngx_wallet_connection.hpp"

#include <utility>

namespace wallet::ngx {

namespace {

void set_handlers(ngx_connection_t* c, void* data, ngx_event_handler_pt read, ngx_event_handler_pt write,
                  ngx_log_t* log) {
    c->data = data;
    c->log = log;
    c->read->log = log;
    c->write->log = log;
    c->read->handler = read;
    c->write->handler = write;
}

}  // namespace

void EventConnection::adopt(ngx_connection_t* c, void* data, ngx_event_handler_pt read, ngx_event_handler_pt write,
                            ngx_log_t* log) {
    close();
    c_ = c;
    foreign_ = false;
    set_handlers(c, data, read, write, log);
}

bool EventConnection::watch_foreign(ngx_socket_t fd, void* data, ngx_event_handler_pt handler, ngx_log_t* log) {
    close();
    ngx_connection_t* c = ngx_get_connection(fd, log);
    if (c == nullptr) return false;
    set_handlers(c, data, handler, handler, log);
    if (ngx_add_event(c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT) != NGX_OK) {
        ngx_free_connection(c);
        c->fd = static_cast<ngx_socket_t>(-1);
        return false;
    }
    c_ = c;
    foreign_ = true;
    return true;
}

namespace {

// Level-triggered interest in one direction of a foreign descriptor.
void set_interest(ngx_event_t* ev, ngx_int_t event, bool on) {
    if (on && !ev->active) {
        ngx_add_event(ev, event, NGX_LEVEL_EVENT);
    } else if (!on && ev->active) {
        ngx_del_event(ev, event, 0);
    }
}

}  // namespace

void EventConnection::want_write(bool on) {
    if (c_ != nullptr) set_interest(c_->write, NGX_WRITE_EVENT, on);
}

void EventConnection::want_read(bool on) {
    if (c_ != nullptr) set_interest(c_->read, NGX_READ_EVENT, on);
}

void EventConnection::close() {
    ngx_connection_t* c = std::exchange(c_, nullptr);
    if (c == nullptr) return;
    if (!foreign_) {
        if (c->ssl != nullptr) {
            c->ssl->no_wait_shutdown = 1;
            (void)ngx_ssl_shutdown(c);
        }
        ngx_pool_t* pool = c->pool;
        ngx_close_connection(c);  // timers, posted events, epoll, descriptor
        if (pool != nullptr) ngx_destroy_pool(pool);
        return;
    }
    if (c->read->timer_set) ngx_del_timer(c->read);
    if (c->write->timer_set) ngx_del_timer(c->write);
    unpost_event(c->read);
    unpost_event(c->write);
    // The owner closes (or closed) the descriptor, which removes it from
    // epoll: no epoll_ctl on a descriptor that may be gone already.
    if (c->read->active) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
    if (c->write->active) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    ngx_free_connection(c);
    c->fd = static_cast<ngx_socket_t>(-1);
}

}  // namespace wallet::ngx
