#include "loader.hpp"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "wallet/decoder.hpp"
#include "wallet/log.hpp"
#include "wallet/pg.hpp"

namespace wallet::backfill {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kWriteAttempts = 8;
constexpr milliseconds kMaxDatabaseBackoff{5000};
constexpr milliseconds kIdlePoll{500};
// Freed heap memory glibc keeps mapped, and the step it grows a heap by.
constexpr int kKeptHeapBytes = 256 << 20;
constexpr int kHeapGrowthBytes = 64 << 20;

std::int64_t now_ms() {
    return std::chrono::duration_cast<milliseconds>(Clock::now().time_since_epoch()).count();
}

std::string shard_name(std::int64_t start, std::int64_t end) {
    return "shard " + std::to_string(start) + ".." + std::to_string(end);
}

bool connection_ok(PGconn* conn) { return conn != nullptr && PQstatus(conn) == CONNECTION_OK; }

}  // namespace

std::string make_owner_prefix() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    std::random_device random;
    char token[17];
    std::snprintf(token, sizeof token, "%08x%08x", random(), random());
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + token;
}

Loader::Loader(LoaderOptions options, NodePool& pool, std::stop_token stop)
    : options_(std::move(options)), pool_(pool), outer_stop_(std::move(stop)) {}

void Loader::fail(const std::string& why) {
    {
        std::lock_guard lock(mutex_);
        if (!failure_) failure_ = why;
    }
    log_error(why);
    job_stop_.request_stop();
}

std::vector<std::int64_t> Loader::failed_shards() const {
    std::lock_guard lock(mutex_);
    return failed_shards_;
}

void Loader::touch(WorkerState& state) { state.last_activity_ms = now_ms(); }

LoadOutcome Loader::run() {
    // Each batch's events (texts, tapes, rows) are freed together after its
    // write, and glibc gave that memory back to the kernel only to fault it in
    // again for the next batch: a trim threshold above a batch keeps it (1.28
    // million events: minor faults 137k -> 31k, loader CPU 9.01 -> 8.53 s;
    // 18 MB more resident).
    mallopt(M_TRIM_THRESHOLD, kKeptHeapBytes);
    mallopt(M_TOP_PAD, kHeapGrowthBytes);
    std::stop_callback forward(outer_stop_, [this] { job_stop_.request_stop(); });
    for (std::int64_t i = 0; i < options_.workers; ++i) {
        auto state = std::make_unique<WorkerState>();
        state->owner = options_.owner_prefix + "/w" + std::to_string(i);
        workers_.push_back(std::move(state));
    }
    {
        std::stop_source beats_stop;
        std::jthread beats([this, token = beats_stop.get_token()] { beat(token); });
        {
            std::vector<std::jthread> threads;
            for (std::size_t i = 0; i < workers_.size(); ++i) {
                threads.emplace_back([this, i, token = job_stop_.get_token()] { work(i, token); });
            }
        }  // joins the workers
        beats_stop.request_stop();
    }
    LoadOutcome outcome;
    outcome.stopped = outer_stop_.stop_requested();
    std::lock_guard lock(mutex_);
    outcome.failure = failure_;
    outcome.failed_shards = failed_shards_;
    return outcome;
}

PgConnPtr Loader::connect(std::stop_token stop) {
    milliseconds backoff{250};
    const auto started = Clock::now();
    while (!stop.stop_requested()) {
        auto conn = pg::connect(options_.database_url);
        if (conn) {
            // Rows and shard progress commit together, so a transaction lost
            // to a server crash is simply loaded again: no need to wait for
            // the WAL flush on every batch.
            auto set = pg::exec(conn->get(), "SET synchronous_commit = off");
            auto prepared = set ? store::prepare_session(conn->get()) : Result<bool>(make_error(set.error()));
            if (prepared) return std::move(conn).value();
            log_warning("database session setup failed: " + prepared.error());
        } else if (Clock::now() - started > pool_.options().give_up_after) {
            fail("database unavailable: " + conn.error());
            return nullptr;
        } else {
            log_warning(conn.error());
        }
        interruptible_sleep(backoff, stop);
        backoff = std::min(backoff * 2, kMaxDatabaseBackoff);
    }
    return nullptr;
}

void Loader::beat(std::stop_token stop) {
    // Three beats per timeout; a worker silent for longer than the timeout
    // (and than a node request may take) gets no beat, so its shard can be
    // taken over.
    const milliseconds interval = std::max(milliseconds(100), options_.heartbeat_timeout / 3);
    const std::int64_t silent_after = std::max(options_.heartbeat_timeout, 2 * pool_.options().timeout).count();
    PgConnPtr conn;
    while (interruptible_sleep(interval, stop)) {
        std::vector<std::string> owners;
        const std::int64_t now = now_ms();
        for (const auto& worker : workers_) {
            if (worker->holds_shard && now - worker->last_activity_ms < silent_after) owners.push_back(worker->owner);
        }
        if (owners.empty()) continue;
        if (!connection_ok(conn.get())) {
            auto opened = pg::connect(options_.database_url);
            if (!opened) continue;  // the workers report database trouble
            conn = std::move(opened).value();
        }
        if (auto beaten = heartbeat(conn.get(), owners); !beaten) log_warning(beaten.error());
    }
}

void Loader::work(std::size_t index, std::stop_token stop) {
    WorkerState& state = *workers_[index];
    auto client = PoolClient::create(pool_, index, stop);
    if (!client) {
        fail(client.error());
        return;
    }
    PgConnPtr owned = connect(stop);
    PGconn* conn = owned.get();
    while (conn != nullptr && !stop.stop_requested()) {
        touch(state);
        auto claimed = claim_shard(conn, options_.range, state.owner, options_.heartbeat_timeout, failed_shards());
        if (!claimed) {
            log_warning(claimed.error());
            if (!connection_ok(conn)) {
                owned = connect(stop);
                conn = owned.get();
            } else {
                interruptible_sleep(kIdlePoll, stop);
            }
            continue;
        }
        if (!*claimed) {
            // Nothing to claim: the range is done, or other workers (maybe of
            // other processes) hold its last shards; they finish them, or go
            // silent and their shards become claimable.
            auto status = range_status(conn, options_.range);
            const auto left_alone = static_cast<std::int64_t>(failed_shards().size());
            if (status && (status->complete() || (status->running == 0 && status->pending <= left_alone))) return;
            interruptible_sleep(kIdlePoll, stop);
            continue;
        }
        Shard shard = std::move(**claimed);
        if (shard.previous_owner) {
            ++counters_.takeovers;
            log_warning(shard_name(shard.start_block, shard.end_block) + ": taking over from silent worker " +
                        *shard.previous_owner + " at block " + std::to_string(shard.next_block));
        }
        state.holds_shard = true;
        const bool go_on = load_shard(state, conn, owned, client.value(), std::move(shard), stop);
        state.holds_shard = false;
        if (!go_on) return;
    }
}

bool Loader::load_shard(WorkerState& state, PGconn*& conn, PgConnPtr& owned, PoolClient& client, Shard shard,
                        std::stop_token stop) {
    const std::string name = shard_name(shard.start_block, shard.end_block);
    auto give_back = [&] {
        if (connection_ok(conn)) (void)release_shard(conn, shard.start_block, state.owner);
    };
    while (shard.next_block <= shard.end_block) {
        if (stop.stop_requested()) {
            give_back();
            return false;
        }
        const std::int64_t first = shard.next_block;
        const std::int64_t last = std::min(first + options_.batch_size - 1, shard.end_block);
        touch(state);
        auto blocks = client.get_ops_in_blocks(first, last);
        if (!blocks) {
            give_back();
            if (!stop.stop_requested()) fail(name + ": " + blocks.error());
            return false;
        }
        std::vector<WalletEvent> events;
        for (const auto& block : *blocks) {
            auto decoded = decode_block_entries(block.entries, options_.assets, &options_.forks);
            if (!decoded) {
                // Not a node hiccup: every node serves the same block. The
                // shard waits for an operator; the rest of the range goes on.
                log_error(name + ": cannot decode block " + std::to_string(block.block_num) + ": " + decoded.error() +
                          "; leaving the shard");
                give_back();
                std::lock_guard lock(mutex_);
                failed_shards_.push_back(shard.start_block);
                return true;
            }
            for (auto& event : *decoded) events.push_back(std::move(event));
        }
        touch(state);
        bool lost = false;
        Result<store::WriteCounts> written = make_error("not written");
        for (int attempt = 1; attempt <= kWriteAttempts && !stop.stop_requested(); ++attempt) {
            if (!connection_ok(conn)) {
                owned = connect(stop);
                conn = owned.get();
                if (conn == nullptr) return false;
            }
            written = write_batch(conn, state.account_ids, shard, state.owner, events, last + 1, lost);
            if (written || lost) break;
            // Deadlocks with concurrent writers, a restarted server: try again.
            ++counters_.write_retries;
            log_warning(name + ": storing blocks " + std::to_string(first) + ".." + std::to_string(last) +
                        " failed (attempt " + std::to_string(attempt) + "): " + written.error());
            interruptible_sleep(std::min(milliseconds(100) * (1 << std::min(attempt, 6)), kMaxDatabaseBackoff), stop);
        }
        if (lost) {
            ++counters_.lost_shards;
            log_warning(name + ": taken over by another worker; leaving it");
            return true;
        }
        if (!written) {
            give_back();
            if (!stop.stop_requested()) fail(name + ": cannot store blocks: " + written.error());
            return false;
        }
        shard.next_block = last + 1;
        counters_.blocks += last - first + 1;
        counters_.events += written->offered;
        counters_.rows_inserted += written->inserted;
        counters_.balance_undecodable += written->balance_undecodable;
    }
    ++counters_.shards_done;
    return true;
}

Result<store::WriteCounts> Loader::write_batch(PGconn* conn, store::AccountIds& account_ids, const Shard& shard,
                                               const std::string& owner, const std::vector<WalletEvent>& events,
                                               std::int64_t next_block, bool& lost) {
    // New accounts get their ids in their own short transaction, so that the
    // workers never wait for each other's batches.
    auto resolved = account_ids.resolve(conn, events);
    if (!resolved) return make_error(resolved.error());
    auto tx = pg::Transaction::begin(conn);
    if (!tx) return make_error(tx.error());
    auto counts = store::insert_events(conn, account_ids, events, options_.write_method,
                                       store::BalanceRules{options_.assets, options_.forks});
    if (!counts) return make_error(counts.error());
    // Push subscribers hear of the rows at commit (migration 0025); they
    // fetch only rows above what they delivered, so history far below the
    // head reaches none of them.
    if (!events.empty()) {
        const auto [low, high] = std::minmax_element(events.begin(), events.end(), [](const auto& a, const auto& b) {
            return a.block_num < b.block_num;
        });
        auto notified = pg::exec_params(conn, "SELECT wallet_events_committed($1::integer, $2::integer, NULL)",
                                        {std::to_string(low->block_num), std::to_string(high->block_num)});
        if (!notified) return make_error(notified.error());
    }
    // Last, so that the shard row is locked only for the commit.
    auto kept = record_progress(conn, shard, owner, next_block, counts->inserted);
    if (!kept) return make_error(kept.error());
    if (!*kept) {
        lost = true;
        return make_error("shard lost");
    }
    auto committed = tx.value().commit();
    if (!committed) return make_error(committed.error());
    return counts;
}

}  // namespace wallet::backfill
