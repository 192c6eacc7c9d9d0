#include "api_metrics.hpp"

#include "jsonrpc_writer.hpp"

namespace wallet::api {

namespace {

constexpr std::array<const char*, static_cast<std::size_t>(Outcome::Count)> kOutcomes = {
    "ok",        "parse_error",  "invalid_request", "method_not_found", "invalid_params", "too_large",
    "rate_limited", "busy",      "timeout",         "database_error",   "internal_error", "aborted"};
constexpr std::array<const char*, static_cast<std::size_t>(PgError::Count)> kPgErrors = {"timeout", "failed",
                                                                                          "unavailable"};
constexpr std::array<const char*, static_cast<std::size_t>(Rerun::Count)> kReruns = {"behind_cursor",
                                                                                     "retryable_error"};
constexpr std::array<const char*, static_cast<std::size_t>(PushDrop::Count)> kPushDrops = {
    "slow_consumer", "worker_output", "send_timeout"};

std::string_view method_label(std::size_t index) {
    return index < kMethodCount ? method_names()[index] : std::string_view("unknown");
}

// A counter family with one series per value of one label.
template <std::size_t N>
void write_counters_by(metrics::TextWriter& out, const char* name, const char* help, const char* label,
                       const std::array<const char*, N>& values, const std::array<metrics::Counter, N>& counters) {
    out.family(name, "counter", help);
    for (std::size_t k = 0; k < N; ++k) out.sample(name, {{label, values[k]}}, counters[k].load(std::memory_order_relaxed));
}

}  // namespace

void ApiCounters::record(std::optional<Method> method, Outcome outcome, std::uint64_t started_us) {
    const std::size_t m = method ? static_cast<std::size_t>(*method) : kMethodCount;
    metrics::add(requests[m][static_cast<std::size_t>(outcome)]);
    const std::uint64_t now = metrics::monotonic_us();
    latency[m].observe(now > started_us ? now - started_us : 0);
}

Outcome outcome_of_error(int code) {
    switch (code) {
    case jsonrpc::kParseError:
        return Outcome::ParseError;
    case jsonrpc::kInvalidRequest:
        return Outcome::InvalidRequest;
    case jsonrpc::kMethodNotFound:
        return Outcome::MethodNotFound;
    case jsonrpc::kInvalidParams:
        return Outcome::InvalidParams;
    default:
        return Outcome::InternalError;
    }
}

void write_api_metrics(metrics::TextWriter& out, const ApiCounters& counters) {
    out.family("wallet_history_requests_total", "counter",
               "wallet_history API requests by method (\"unknown\": not one of the API's methods) and outcome.");
    for (std::size_t m = 0; m <= kMethodCount; ++m) {
        for (std::size_t o = 0; o < kOutcomes.size(); ++o) {
            out.sample("wallet_history_requests_total", {{"method", method_label(m)}, {"outcome", kOutcomes[o]}},
                       counters.requests[m][o].load(std::memory_order_relaxed));
        }
    }
    out.family("wallet_history_request_duration_seconds", "histogram",
               "wallet_history API requests by method, from the request's handler to its end.");
    for (std::size_t m = 0; m <= kMethodCount; ++m) {
        out.histogram("wallet_history_request_duration_seconds", {{"method", method_label(m)}}, counters.latency[m]);
    }
    out.family("wallet_history_pool_waits_total", "counter",
               "Statements that waited for a free PostgreSQL connection of their worker's pool.");
    out.sample("wallet_history_pool_waits_total", {}, counters.pool_waits.load(std::memory_order_relaxed));
    write_counters_by(out, "wallet_history_postgresql_errors_total",
                      "Failed statements: timeout (statement_timeout), failed (an error of the statement), "
                      "unavailable (no connection, or it broke).",
                      "error", kPgErrors, counters.pg_errors);
    write_counters_by(out, "wallet_history_statement_reruns_total",
                      "Statements run once more: behind_cursor (a standby had not replayed the cursor's block), "
                      "retryable_error (recovery conflict, serialization failure or lost connection: run elsewhere).",
                      "reason", kReruns, counters.reruns);
    write_push_metrics(out, counters.push);
}

void write_push_metrics(metrics::TextWriter& out, const PushCounters& push) {
    out.family("wallet_history_push_subscribers", "gauge", "Live push subscriptions (wallet_history.subscribe), all workers.");
    out.sample("wallet_history_push_subscribers", {}, push.subscribers.load(std::memory_order_relaxed));
    out.family("wallet_history_push_connections", "gauge", "WebSocket connections holding push subscriptions, all workers.");
    out.sample("wallet_history_push_connections", {}, push.connections.load(std::memory_order_relaxed));
    out.family("wallet_history_push_notifications_total", "counter",
               "wallet_history.event notifications queued to subscribers (catch-up and live).");
    out.sample("wallet_history_push_notifications_total", {}, push.notifications.load(std::memory_order_relaxed));
    out.family("wallet_history_push_retractions_total", "counter",
               "wallet_history.retract notifications queued to subscribers (events of blocks a fork removed).");
    out.sample("wallet_history_push_retractions_total", {}, push.retractions.load(std::memory_order_relaxed));
    write_counters_by(out, "wallet_history_push_dropped_connections_total",
                      "Push subscribers' connections the server closed: slow_consumer (over "
                      "jsonrpc_router_push_max_output queued, 1008), worker_output (the worker's "
                      "jsonrpc_router_ws_worker_output reached, 1013), send_timeout (jsonrpc_router_ws_send_timeout).",
                      "reason", kPushDrops, push.dropped);
    out.family("wallet_history_push_delay_seconds", "histogram",
               "Live notifications: from the writers' NOTIFY reaching the nginx worker to the notification queued "
               "to its client.");
    out.histogram("wallet_history_push_delay_seconds", {}, push.delay);
}

void write_database_metrics(metrics::TextWriter& out, const std::vector<DatabaseGauges>& databases) {
    out.family("wallet_history_database_up", "gauge",
               "1 when the database answered this nginx worker's last probe (every WALLET_API_DB_PROBE_INTERVAL_MS), "
               "0 when it did not or was not probed yet. database: host:port/dbname of API_DATABASE_URL.");
    for (const auto& db : databases) out.sample("wallet_history_database_up", {{"database", db.name}}, db.reading ? 1u : 0u);
    out.family("wallet_history_database_standby", "gauge",
               "1 for a hot standby (pg_is_in_recovery()), 0 for a primary, of each database that answered the last probe.");
    for (const auto& db : databases) {
        if (db.reading) out.sample("wallet_history_database_standby", {{"database", db.name}}, db.reading->standby ? 1u : 0u);
    }
    out.family("wallet_history_database_replay_delay_seconds", "gauge",
               "How far a standby's replay is behind: now() - pg_last_xact_replay_timestamp() when WAL it received "
               "waits for replay, else 0 (and on a primary); of each database that answered the last probe.");
    for (const auto& db : databases) {
        if (db.reading) {
            out.sample("wallet_history_database_replay_delay_seconds", {{"database", db.name}},
                       metrics::seconds_text(db.reading->replay_delay_us));
        }
    }
}

}  // namespace wallet::api
