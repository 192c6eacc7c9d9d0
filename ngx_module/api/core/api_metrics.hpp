// The wallet_history API's metrics: requests by method and outcome, latency
// by method, pool waits and PostgreSQL errors, as lock-free counters in the
// API's shared memory zone (every worker adds to them), and their Prometheus
// text. The method label is one of the API's own names or "unknown" (a
// request whose method is not one of them): never a client's string.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api_request.hpp"
#include "metrics_text.hpp"

namespace wallet::api {

enum class Outcome : std::size_t {
    Ok,
    ParseError,      // -32700
    InvalidRequest,  // -32600 (not JSON-RPC, batch, wrong HTTP method)
    MethodNotFound,  // -32601
    InvalidParams,   // -32602
    TooLarge,        // 413
    RateLimited,     // 429
    Busy,            // 503: max in-flight requests reached
    Timeout,         // statement timeout or request deadline
    DatabaseError,   // the statement failed or no connection
    InternalError,   // anything else
    Aborted,         // the client went away before the answer
    Count
};

inline constexpr std::size_t kMethodCount = 10;  // Method's values; index kMethodCount is "unknown"

enum class PgError : std::size_t { Timeout, Failed, Unavailable, Count };

// Why a statement ran once more: a standby had not replayed the cursor's
// block, or the first database failed in a way another can answer
// (recovery conflict, serialization failure, lost connection).
enum class Rerun : std::size_t { BehindCursor, RetryableError, Count };

// Why the server closed a push subscriber's connection
// (docs/wallet-history-api.md, "Push over WebSocket"): slow_consumer (more
// than jsonrpc_router_push_max_output of notifications queued, 1008),
// worker_output (the worker's jsonrpc_router_ws_worker_output was reached
// and this connection held the most, 1013), send_timeout (what waited was
// not taken within jsonrpc_router_ws_send_timeout).
enum class PushDrop : std::size_t { SlowConsumer, WorkerOutput, SendTimeout, Count };

// Push over WebSocket. The two gauges are sums of what each worker adds and
// takes back (unsigned wrap-around; a worker exiting takes back all it holds).
struct PushCounters {
    metrics::Counter subscribers{0};  // gauge: live subscriptions
    metrics::Counter connections{0};  // gauge: WebSocket connections holding one or more
    metrics::Counter notifications{0};
    metrics::Counter retractions{0};
    std::array<metrics::Counter, static_cast<std::size_t>(PushDrop::Count)> dropped{};
    // From the writers' NOTIFY reaching the worker to the notification's
    // frame queued to its client (live events; a catch-up's are not counted).
    metrics::Histogram delay{};

    // `delta` subscriptions or connections more (> 0) or fewer (< 0).
    static void change(metrics::Counter& gauge, std::int64_t delta) {
        gauge.fetch_add(static_cast<std::uint64_t>(delta), std::memory_order_relaxed);
    }
};

struct ApiCounters {
    std::array<std::array<metrics::Counter, static_cast<std::size_t>(Outcome::Count)>, kMethodCount + 1> requests{};
    std::array<metrics::Histogram, kMethodCount + 1> latency{};
    metrics::Counter pool_waits{0};  // statements that queued for a free connection
    std::array<metrics::Counter, static_cast<std::size_t>(PgError::Count)> pg_errors{};
    std::array<metrics::Counter, static_cast<std::size_t>(Rerun::Count)> reruns{};
    PushCounters push;

    // Counts one finished request; `started_us` from metrics::monotonic_us().
    void record(std::optional<Method> method, Outcome outcome, std::uint64_t started_us);
};

// The outcome of a request answered with a JSON-RPC error `code`.
Outcome outcome_of_error(int code);

// The request counters, then write_push_metrics'.
void write_api_metrics(metrics::TextWriter& out, const ApiCounters& counters);
void write_push_metrics(metrics::TextWriter& out, const PushCounters& push);

// What a database of the pool answered to the database statement (api_sql.hpp).
struct DatabaseReading {
    bool standby = false;
    std::uint64_t replay_delay_us = 0;
};

// One database of a worker's pool as that worker's last probe found it
// (ngx_http_wallet_history_probe.hpp): no reading while it has not answered.
struct DatabaseGauges {
    std::string name;  // host:port/dbname
    std::optional<DatabaseReading> reading;
};

// wallet_history_database_up for every database; _standby and
// _replay_delay_seconds for those that answered.
void write_database_metrics(metrics::TextWriter& out, const std::vector<DatabaseGauges>& databases);

}  // namespace wallet::api
