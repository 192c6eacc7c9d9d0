#include "liveness.hpp"

#include <jansson.h>

#include "wallet/decoder_version.hpp"
#include "wallet/handles.hpp"
#include "wallet/json_util.hpp"

namespace wallet::indexer {

Liveness::Liveness(std::chrono::milliseconds max_stall) : max_stall_(max_stall) {}

void Liveness::set_indexed(std::int64_t block) {
    std::lock_guard lock(mutex_);
    indexed_block_ = block;
}

void Liveness::record_batch(std::int64_t indexed_block, std::int64_t blocks, std::int64_t events_offered,
                            std::int64_t rows_inserted, bool at_target, std::int64_t balance_undecodable) {
    std::lock_guard lock(mutex_);
    indexed_block_ = indexed_block;
    last_progress_ = Clock::now();
    problem_.clear();
    caught_up_ = at_target;
    ++batches_total_;
    blocks_total_ += static_cast<std::uint64_t>(blocks);
    events_total_ += static_cast<std::uint64_t>(events_offered);
    rows_inserted_total_ += static_cast<std::uint64_t>(rows_inserted);
    balance_undecodable_total_ += static_cast<std::uint64_t>(balance_undecodable);
}

void Liveness::record_caught_up(std::int64_t indexed_block) {
    std::lock_guard lock(mutex_);
    indexed_block_ = indexed_block;
    last_progress_ = Clock::now();
    problem_.clear();
    caught_up_ = true;
}

void Liveness::record_head(const ChainHead& head) {
    std::lock_guard lock(mutex_);
    head_ = head;
}

void Liveness::record_problem(std::string problem) {
    std::lock_guard lock(mutex_);
    problem_ = std::move(problem);
}

void Liveness::record_fork(std::int64_t depth) {
    std::lock_guard lock(mutex_);
    ++forks_total_;
    deepest_fork_ = std::max(deepest_fork_, depth);
}

void Liveness::record_database_error() {
    std::lock_guard lock(mutex_);
    ++database_errors_total_;
}

void Liveness::set_node_stats(const NodeClientStats& stats) {
    std::lock_guard lock(mutex_);
    node_stats_ = stats;
}

void Liveness::halt(std::string reason) {
    std::lock_guard lock(mutex_);
    halted_ = std::move(reason);
}

bool Liveness::healthy_locked(Clock::time_point now) const {
    return !halted_ && now - last_progress_ <= max_stall_;
}

bool Liveness::healthy() const {
    std::lock_guard lock(mutex_);
    return healthy_locked(Clock::now());
}

std::string Liveness::reason_locked(Clock::time_point now) const {
    if (healthy_locked(now)) return {};
    if (halted_) return *halted_;
    const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_progress_).count();
    std::string reason = "no progress for " + std::to_string(since) + " ms";
    if (!problem_.empty()) reason += ": " + problem_;
    return reason;
}

std::string Liveness::unhealthy_reason() const {
    std::lock_guard lock(mutex_);
    return reason_locked(Clock::now());
}

std::pair<int, std::string> Liveness::health() const {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    const bool ok = healthy_locked(now);
    const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_progress_).count();
    JsonPtr body = json_own(json_object());
    json_t* b = body.get();
    json_object_set_new(b, "ok", json_boolean(ok));
    if (!ok) json_object_set_new(b, "reason", json_string(reason_locked(now).c_str()));
    const char* state = halted_ ? "halted" : !problem_.empty() ? "stalled" : caught_up_ ? "following" : "catching_up";
    json_object_set_new(b, "state", json_string(state));
    json_object_set_new(b, "indexed_block", json_integer(indexed_block_));
    json_object_set_new(b, "head_block", head_ ? json_integer(head_->head_block) : json_null());
    json_object_set_new(b, "last_irreversible_block",
                        head_ && head_->last_irreversible ? json_integer(*head_->last_irreversible) : json_null());
    json_object_set_new(b, "lag_blocks", head_ ? json_integer(head_->head_block - indexed_block_) : json_null());
    json_object_set_new(b, "ms_since_progress", json_integer(since));
    if (!problem_.empty()) json_object_set_new(b, "problem", json_string(problem_.c_str()));
    return {ok ? 200 : 503, json::dump_compact(b)};
}

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, const std::string& value) {
    out += std::string("# HELP ") + name + ' ' + help + "\n# TYPE " + name + ' ' + type + '\n' + name + ' ' + value + '\n';
}

}  // namespace

void Liveness::set_monitored_state(EventStore::MonitoredState state) {
    std::lock_guard lock(mutex_);
    monitored_ = std::move(state);
}

std::string Liveness::metrics() const {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_progress_).count();
    std::string out;
    metric(out, "wallet_indexer_healthy", "gauge", "1 while the liveness endpoint answers 200.", healthy_locked(now) ? "1" : "0");
    metric(out, "wallet_indexer_halted", "gauge", "1 when indexing stopped for good (fork deeper than the bound).",
           halted_ ? "1" : "0");
    metric(out, "wallet_indexer_indexed_block", "gauge", "Last fully indexed block.", std::to_string(indexed_block_));
    metric(out, "wallet_indexer_head_block", "gauge", "Head block at the last observation of the node.",
           std::to_string(head_ ? head_->head_block : 0));
    metric(out, "wallet_indexer_last_irreversible_block", "gauge", "Last irreversible block reported by the node (0: none).",
           std::to_string(head_ && head_->last_irreversible ? *head_->last_irreversible : 0));
    metric(out, "wallet_indexer_lag_blocks", "gauge", "Head block minus indexed block.",
           std::to_string(head_ ? head_->head_block - indexed_block_ : 0));
    metric(out, "wallet_indexer_seconds_since_progress", "gauge", "Seconds since the last progress.", std::to_string(since));
    metric(out, "wallet_indexer_blocks_indexed_total", "counter", "Blocks indexed by this process.", std::to_string(blocks_total_));
    metric(out, "wallet_indexer_batches_total", "counter", "Batches committed by this process.", std::to_string(batches_total_));
    metric(out, "wallet_indexer_events_total", "counter", "Wallet events decoded and written (new or already stored).",
           std::to_string(events_total_));
    metric(out, "wallet_indexer_rows_inserted_total", "counter", "Rows new to the table.", std::to_string(rows_inserted_total_));
    metric(out, "wallet_indexer_balance_undecodable_total", "counter",
           "Events stored without balance changes: the decoder could not read them (wallet_balance_undecodable).",
           std::to_string(balance_undecodable_total_));
    metric(out, "wallet_indexer_forks_total", "counter", "Forks reconciled.", std::to_string(forks_total_));
    metric(out, "wallet_indexer_deepest_fork_blocks", "gauge", "Depth of the deepest fork reconciled.", std::to_string(deepest_fork_));
    metric(out, "wallet_indexer_database_errors_total", "counter", "Failed database operations.",
           std::to_string(database_errors_total_));
    metric(out, "wallet_indexer_node_calls_total", "counter", "JSON-RPC calls to the node (a batch is one).",
           std::to_string(node_stats_.calls));
    metric(out, "wallet_indexer_node_requests_total", "counter", "HTTP requests to the node, retries included.",
           std::to_string(node_stats_.attempts));
    metric(out, "wallet_indexer_node_failed_calls_total", "counter", "Node calls that failed after every retry.",
           std::to_string(node_stats_.failed_calls));
    metric(out, "wallet_indexer_node_received_bytes_total", "counter", "Bytes received from the node.",
           std::to_string(node_stats_.bytes_received));
    out += "# HELP wallet_indexer_node_failures_total Failed node requests by kind.\n"
           "# TYPE wallet_indexer_node_failures_total counter\n";
    for (int kind = 1; kind <= static_cast<int>(NodeFailure::Stopped); ++kind) {
        out += std::string("wallet_indexer_node_failures_total{kind=\"") + node_failure_name(static_cast<NodeFailure>(kind)) +
               "\"} " + std::to_string(node_stats_.failures[kind]) + '\n';
    }
    // The store, as last read (every INDEXER_MONITOR_INTERVAL: see tail.cpp).
    out += "# HELP wallet_store_backfill_shards Backfill shards by state.\n"
           "# TYPE wallet_store_backfill_shards gauge\n";
    const std::pair<const char*, std::int64_t> shard_states[] = {
        {"pending", monitored_.shards_pending}, {"running", monitored_.shards_running}, {"done", monitored_.shards_done}};
    for (const auto& [state, count] : shard_states) {
        out += std::string("wallet_store_backfill_shards{state=\"") + state + "\"} " + std::to_string(count) + '\n';
    }
    metric(out, "wallet_store_backfill_shards_stalled", "gauge",
           "Running backfill shards whose worker has not beaten for 60 s (died or hangs).",
           std::to_string(monitored_.shards_stalled));
    metric(out, "wallet_store_backfill_shard_attempts_max", "gauge",
           "The most claims of an unfinished backfill shard (more than 1: taken over after a failure).",
           std::to_string(monitored_.shard_attempts_max));
    metric(out, "wallet_store_decoder_version", "gauge",
           "The decoder version of this build (the version get_status compares the store's ranges with).",
           std::to_string(kDecoderVersion));
    metric(out, "wallet_store_decoder_outdated_blocks", "gauge",
           "Blocks of the lowest run an older decoder loaded (get_status's decoder.outdated; 0: every stored "
           "block is current). wallet-backfill over the run brings it up to date.",
           std::to_string(monitored_.outdated_to > 0 ? monitored_.outdated_to - monitored_.outdated_from + 1 : 0));
    metric(out, "wallet_store_standbys", "gauge", "Standbys streaming from the primary.",
           std::to_string(monitored_.standbys.size()));
    out += "# HELP wallet_store_standby_replay_lag_seconds How long ago the standby's last replayed WAL was "
           "written on the primary (pg_stat_replication.replay_lag; 0 when idle).\n"
           "# TYPE wallet_store_standby_replay_lag_seconds gauge\n";
    for (const auto& standby : monitored_.standbys) {
        out += "wallet_store_standby_replay_lag_seconds{standby=\"" + standby.name + "\"} " +
               std::to_string(standby.replay_seconds) + '\n';
    }
    out += "# HELP wallet_store_standby_replay_lag_bytes WAL written on the primary and not yet replayed by the standby.\n"
           "# TYPE wallet_store_standby_replay_lag_bytes gauge\n";
    for (const auto& standby : monitored_.standbys) {
        out += "wallet_store_standby_replay_lag_bytes{standby=\"" + standby.name + "\"} " +
               std::to_string(standby.replay_bytes) + '\n';
    }
    return out;
}

void Liveness::handle(const HttpRequest& request, HttpResponse& response) const {
    if (request.method != "GET" && request.method != "HEAD") {
        response.status = 405;
        response.headers.emplace_back("Allow", "GET, HEAD");
        response.body = R"({"ok":false,"reason":"method not allowed"})";
        return;
    }
    const auto path = request.path();
    if (path == "/health") {
        auto [status, body] = health();
        response.status = status;
        response.body = std::move(body);
    } else if (path == "/metrics") {
        response.content_type = "text/plain; version=0.0.4";
        response.body = metrics();
    } else {
        response.status = 404;
        response.body = R"({"ok":false,"reason":"not found: /health and /metrics only"})";
    }
    response.headers.emplace_back("Cache-Control", "no-store");
}

}  // namespace wallet::indexer
