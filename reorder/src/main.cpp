// wallet-reorder: rewrites the irreversible history the indexer (or the
// normal backfill) appended in block order into account order, one range of
// blocks per transaction (wallet_reorder_step, migration 0010), until it
// reaches the last block that is both stored and irreversible; merges whole
// ranges of ordered blocks into one, a group of accounts per transaction
// (migration 0016: bounded write bursts for the standbys); then VACUUMs
// wallet_events so that the next run's rows reuse the space this one freed.
// Safe beside the indexer, the backfill and the API (docs/store-layout.md,
// "Locality"); a kill at any point loses at most the step in progress.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include <libpq-fe.h>

#include "wallet/cli_options.hpp"
#include "wallet/config.hpp"
#include "wallet/log.hpp"
#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"
#include "wallet/stop_signals.hpp"

namespace {

using wallet::log_error;
using wallet::log_info;
using wallet::number_option;

constexpr int kExitIncomplete = 1;
constexpr int kExitConfiguration = 2;
constexpr std::int64_t kMaxStepBlocks = 100'000'000;  // a PostgreSQL integer, with room

struct Arguments {
    std::int64_t step_blocks = 28800;    // a day of blocks
    std::int64_t merge_blocks = 864000;  // 30 days
    std::int64_t merge_rows = 500000;    // events per merge transaction, about a day's step; 0: no bound
    bool merge = true;
    std::optional<std::int64_t> max_steps;
    bool vacuum = true;
    std::int64_t standby_wait_ms = 60000;  // after each transaction, for the standbys' replay; 0: none
};

enum class Outcome { Moved, NothingToDo, Failed };

// One step, or one group of accounts of a merge (wallet_reorder_step): one
// statement, its own transaction, committed whole or not at all.
Outcome run_once(PGconn* conn, bool merge, std::int64_t blocks, std::int64_t merge_rows, std::int64_t& moved_total) {
    const std::string what = merge ? "merge" : "step";
    std::optional<std::string> max_rows;
    if (merge && merge_rows > 0) max_rows = std::to_string(merge_rows);
    auto moved = wallet::pg::exec_params(
        conn,
        "SELECT first_block, last_block, moved_rows, complete FROM wallet_reorder_step($1::integer, $2::boolean, $3::bigint)",
        {std::to_string(blocks), merge ? "true" : "false", max_rows});
    if (!moved) {
        log_error(what + ": " + moved.error());
        return Outcome::Failed;
    }
    PGresult* row = moved->get();
    if (PQgetisnull(row, 0, 1)) return Outcome::NothingToDo;
    moved_total += std::atoll(PQgetvalue(row, 0, 2));
    const bool part = std::strcmp(PQgetvalue(row, 0, 3), "f") == 0;
    log_info(what + ": blocks " + PQgetvalue(row, 0, 0) + ".." + PQgetvalue(row, 0, 1) + ", " + PQgetvalue(row, 0, 2) +
             " events rewritten in account order" + (part ? " (a group of accounts; more follow)" : ""));
    return Outcome::Moved;
}

// Waits until every standby streaming from this server has replayed what
// was written so far, at most `limit_ms`: the transactions then reach the
// standbys one bounded burst at a time instead of piling up in their replay.
// Needs pg_stat_replication's positions (pg_read_all_stats, which
// wallet-db-setup grants the writer); without them it does not wait.
void wait_for_standbys(PGconn* conn, std::int64_t limit_ms, const wallet::StopSignals& stop) {
    static bool told_hidden = false;
    auto written = wallet::pg::exec(conn, "SELECT pg_current_wal_insert_lsn()");
    if (!written) return;
    const std::string lsn = PQgetvalue(written->get(), 0, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    while (!stop.stop_requested()) {
        auto behind = wallet::pg::exec_params(
            conn,
            "SELECT count(*) FILTER (WHERE state IS NULL), count(*) FILTER (WHERE replay_lsn IS NULL OR replay_lsn < $1::pg_lsn)"
            " FROM pg_stat_replication",
            {lsn});
        if (!behind) return;
        if (std::strcmp(PQgetvalue(behind->get(), 0, 0), "0") != 0) {
            if (!told_hidden) log_info("standbys' replay positions are not visible to this role: not waiting for them");
            told_hidden = true;
            return;
        }
        if (std::strcmp(PQgetvalue(behind->get(), 0, 1), "0") == 0) return;
        if (std::chrono::steady_clock::now() >= deadline) {
            log_info("a standby is still replaying after " + std::to_string(limit_ms) + " ms: going on");
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void print_help() {
    std::cout << "usage: wallet-reorder [options]\n\n"
                 "Rewrites the events of irreversible blocks into account order, one range of blocks per\n"
                 "transaction, from where the last run stopped up to the last block that is stored and\n"
                 "irreversible; then VACUUMs wallet_events. Run it from a timer (conf/systemd/wallet-reorder.timer).\n\n"
                 "  --step-blocks=N   blocks per transaction (default 28800, a day); a page of an account\n"
                 "                    touches about one heap page per range its events span\n"
                 "  --merge-blocks=N  then ranges of N ordered blocks rewritten as one (default 864000, 30 days):\n"
                 "                    an account's events of a month on a few pages, not one page per day\n"
                 "  --merge-rows=N    events per merge transaction (default 500000, about a day's step): a merge\n"
                 "                    rewrites its range a group of accounts at a time, so standbys replay it in\n"
                 "                    bounded bursts; 0 rewrites the whole range in one transaction\n"
                 "  --no-merge        steps only\n"
                 "  --max-steps=N     stop after N transactions, steps and merges (default: until caught up)\n"
                 "  --standby-wait-ms=N  after each transaction, wait until the standbys have replayed it,\n"
                 "                    at most N ms (default 60000; 0: no waiting)\n"
                 "  --no-vacuum       leave the VACUUM to autovacuum\n\n"
                 "Exit status 0: caught up (or --max-steps done); 1: the database failed (run it again);\n"
                 "2: bad arguments or settings.\n\n"
                 "Settings: the indexer's (environment variables; every one it reads and validates at start):\n"
              << wallet::settings_help(wallet::Component::Indexer);
}

}  // namespace

int main(int argc, char** argv) {
    wallet::set_log_program("wallet-reorder");
    Arguments args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (wallet::answer_help_or_version(arg, "wallet-reorder", print_help)) return 0;
        if (auto blocks = number_option(arg, "--step-blocks="); blocks && *blocks <= kMaxStepBlocks) {
            args.step_blocks = *blocks;
        } else if (auto merge = number_option(arg, "--merge-blocks="); merge && *merge <= kMaxStepBlocks) {
            args.merge_blocks = *merge;
        } else if (auto rows = number_option(arg, "--merge-rows=")) {
            args.merge_rows = *rows;
        } else if (arg == "--merge-rows=0") {
            args.merge_rows = 0;
        } else if (arg == "--no-merge") {
            args.merge = false;
        } else if (auto steps = number_option(arg, "--max-steps=")) {
            args.max_steps = *steps;
        } else if (auto wait = number_option(arg, "--standby-wait-ms=")) {
            args.standby_wait_ms = *wait;
        } else if (arg == "--standby-wait-ms=0") {
            args.standby_wait_ms = 0;
        } else if (arg == "--no-vacuum") {
            args.vacuum = false;
        } else {
            std::cerr << "wallet-reorder: bad argument " << arg << " (try --help)\n";
            return kExitConfiguration;
        }
    }
    wallet::Settings settings;
    try {
        settings = wallet::load_settings(wallet::process_env(), wallet::Component::Indexer);
    } catch (const wallet::ConfigError& e) {
        log_error(e.what());
        return kExitConfiguration;
    }
    // A stop request ends the run after the step in progress commits.
    wallet::StopSignals stop("stopping after the step in progress");

    auto conn = wallet::pg::connect(settings.db.indexer_url);
    if (!conn) {
        log_error(conn.error());
        return kExitIncomplete;
    }
    PQsetNoticeProcessor(conn->get(), [](void*, const char*) {}, nullptr);
    if (auto migrated = wallet::apply_migrations(conn->get()); !migrated) {
        log_error("schema migration: " + migrated.error());
        return kExitIncomplete;
    }
    std::int64_t moved_total = 0;
    std::int64_t transactions = 0;
    const auto run_until_done = [&](bool merge, std::int64_t blocks) {
        while (!stop.stop_requested() && (!args.max_steps || transactions < *args.max_steps)) {
            const Outcome outcome = run_once(conn->get(), merge, blocks, args.merge_rows, moved_total);
            if (outcome != Outcome::Moved) return outcome;
            ++transactions;
            if (args.standby_wait_ms > 0) wait_for_standbys(conn->get(), args.standby_wait_ms, stop);
        }
        return Outcome::Moved;
    };
    // The steps first: the merges take what they ordered.
    Outcome steps = run_until_done(false, args.step_blocks);
    if (steps == Outcome::Failed) return kExitIncomplete;
    if (steps == Outcome::NothingToDo) log_info("caught up: every stored irreversible block is in account order");
    if (args.merge && run_until_done(true, args.merge_blocks) == Outcome::Failed) return kExitIncomplete;
    if (args.vacuum && moved_total > 0) {
        // The rows' old versions are dead now: free their space for the next run.
        if (auto vacuumed = wallet::pg::exec(conn->get(), "VACUUM wallet_events"); !vacuumed) {
            log_error("VACUUM wallet_events: " + vacuumed.error());
            return kExitIncomplete;
        }
    }
    auto state = wallet::pg::exec(conn->get(), "SELECT ordered_through, merged_through FROM wallet_reorder");
    if (!state) {
        log_error(state.error());
        return kExitIncomplete;
    }
    log_info("done: " + std::to_string(moved_total) + " events rewritten in account order; ordered through block " +
             PQgetvalue(state->get(), 0, 0) + ", merged through block " + PQgetvalue(state->get(), 0, 1));
    return 0;
}
