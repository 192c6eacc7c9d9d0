// The wallet_history API's metrics: requests by method and outcome, latency
// by method, pool waits and PostgreSQL errors, as lock-free counters in the
// API's shared memory zone (every worker adds to them), and their Prometheus
// text. The method label is one of the API's own names or "unknown" (a
// request whose method is not one of them): never a client's string.
#pragma once

#include <array>
#include <cstddef>
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

struct ApiCounters {
    std::array<std::array<metrics::Counter, static_cast<std::size_t>(Outcome::Count)>, kMethodCount + 1> requests{};
    std::array<metrics::Histogram, kMethodCount + 1> latency{};
    metrics::Counter pool_waits{0};  // statements that queued for a free connection
    std::array<metrics::Counter, static_cast<std::size_t>(PgError::Count)> pg_errors{};
    std::array<metrics::Counter, static_cast<std::size_t>(Rerun::Count)> reruns{};

    // Counts one finished request; `started_us` from metrics::monotonic_us().
    void record(std::optional<Method> method, Outcome outcome, std::uint64_t started_us);
};

// The outcome of a request answered with a JSON-RPC error `code`.
Outcome outcome_of_error(int code);

void write_api_metrics(metrics::TextWriter& out, const ApiCounters& counters);

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
