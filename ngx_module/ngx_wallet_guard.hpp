// The one door from nginx into the project's C++. nginx's event loop is C: an
// exception that reached it would abort the worker (and every request it
// serves). Every function nginx calls (content and body handlers, event and
// timer handlers, the TLS handshake callback) and every callback that ends a
// request (a statement's completion, a transport's answer to a call) is made
// by guarded<> or runs through guard(): an exception is logged, counted in
// /metrics (wallet_module_handler_exceptions_total) and handed to the
// handler's recovery, which answers a JSON-RPC error or closes the connection.
//
// Fault injection (tests only): with the CMake option WALLET_FAULT_INJECTION
// (on in the presets, off in the package build), WALLET_FAULT_POINT(name)
// throws std::bad_alloc the first time a worker process reaches it when the
// environment variable WALLET_FAULT_INJECT (kept for workers by an `env`
// directive) lists `name` (comma-separated). Without the option the macro is
// nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <type_traits>

#include "metrics_text.hpp"
#include "ngx_wallet_nginx.hpp"

namespace wallet::ngx {

// A handler's name in logs, as a template argument ("router: WebSocket read").
template <std::size_t N>
struct Where {
    char text[N];
    constexpr Where(const char (&s)[N]) { std::copy_n(s, N, text); }
};

// Logs and counts an exception caught at `where`; never throws.
void report_exception(ngx_log_t* log, const char* where, std::exception_ptr error) noexcept;

// Runs body(); on an exception, reports it and runs recover() (whose own
// exceptions are reported and dropped). What guarded<> is made of, for the
// callbacks that are not plain function pointers.
template <typename Body, typename Recover>
auto guard(ngx_log_t* log, const char* where, Body&& body, Recover&& recover) noexcept -> decltype(body()) {
    using R = decltype(body());
    try {
        return body();
    } catch (...) {
        report_exception(log, where, std::current_exception());
    }
    try {
        return recover();
    } catch (...) {
        report_exception(log, where, std::current_exception());
    }
    if constexpr (!std::is_void_v<R>) return R(NGX_ERROR);
}

// The log of a handler's first argument.
inline ngx_log_t* log_of_arg(ngx_event_t* ev) { return ev->log; }
inline ngx_log_t* log_of_arg(ngx_http_request_t* r) { return r->connection->log; }
inline ngx_log_t* log_of_arg(ngx_connection_t* c) { return c->log; }
template <typename T>
ngx_log_t* log_of_arg(T) {
    return ngx_cycle->log;
}
template <typename First, typename... Rest>
ngx_log_t* log_of(First first, Rest...) {
    return log_of_arg(first);
}

template <Where Name, auto Handler, auto Recover>
struct Guarded;

template <Where Name, typename R, typename... A, R (*Handler)(A...), auto Recover>
struct Guarded<Name, Handler, Recover> {
    static R call(A... args) noexcept {
        return guard(
            log_of(args...), Name.text, [&]() -> R { return Handler(args...); },
            [&]() -> R {
                if constexpr (std::is_same_v<decltype(Recover), std::nullptr_t>) {
                    if constexpr (!std::is_void_v<R>) return R(NGX_ERROR);
                } else {
                    return Recover(args...);
                }
            });
    }
};

// The nginx handler (a plain function pointer) that runs Handler guarded;
// Recover takes the same arguments and ends what Handler served. Without
// one, the worker survives and nothing more: for handlers whose objects may
// be gone when the exception arrives (what they served ends by its timer).
template <Where Name, auto Handler, auto Recover = nullptr>
inline constexpr auto guarded = &Guarded<Name, Handler, Recover>::call;

// The counter's shared memory: registered by each directive that installs
// guarded handlers (all of them share the one zone).
bool add_guard_zone(ngx_conf_t* cf);
// wallet_module_handler_exceptions_total (every worker's).
void write_guard_metrics(metrics::TextWriter& out);

#ifdef WALLET_FAULT_INJECTION
void fault_point(const char* name);
#define WALLET_FAULT_POINT(name) ::wallet::ngx::fault_point(name)
#else
#define WALLET_FAULT_POINT(name) ((void)0)
#endif

}  // namespace wallet::ngx
