// wallet-backfill: the one-shot loader that fills wallet_operation_events
// with history, in parallel shards over a pool of nodes (spec 000, backfill
// loader; BACKFILL_* settings). Safe to re-run and to run beside the indexer
// or another backfill process.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "bulk.hpp"
#include "loader.hpp"
#include "node_pool.hpp"
#include "progress.hpp"
#include "shards.hpp"
#include "wallet/balance_snapshots.hpp"
#include "wallet/bulk_load.hpp"
#include "wallet/cli_options.hpp"
#include "wallet/config.hpp"
#include "wallet/log.hpp"
#include "wallet/loggable_url.hpp"
#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"
#include "wallet/stop_signals.hpp"

namespace {

using namespace wallet;
using namespace wallet::backfill;
using std::chrono::milliseconds;

constexpr int kExitComplete = 0;
constexpr int kExitIncomplete = 1;
constexpr int kExitConfiguration = 2;
constexpr int kExitStopped = 3;

enum class ProgressMode { Auto, Bar, Log, None };

struct Arguments {
    bool dry_run = false;
    bool bulk = false;
    bool write_method_given = false;
    std::string build_memory = "1GB";
    std::int64_t build_workers = 2;
    store::WriteMethod write_method = store::WriteMethod::CopyMerge;
    milliseconds heartbeat_timeout{60000};
    milliseconds give_up_after{std::chrono::minutes(10)};
    ProgressMode progress = ProgressMode::Auto;
    milliseconds log_interval{10000};
};

void print_help() {
    std::cout << "Usage: wallet-backfill [--dry-run] [--bulk] [options]\n\n"
                 "Loads the wallet events of blocks BACKFILL_START_BLOCK..BACKFILL_END_BLOCK into PostgreSQL:\n"
                 "the range is cut into shards (table backfill_shards) that BACKFILL_WORKERS workers claim and\n"
                 "load in batches of BACKFILL_BATCH_SIZE blocks from the nodes of BACKFILL_RPC_URLS. Rows are\n"
                 "decoded and shaped exactly as the indexer's, and written idempotently: a re-run loads only\n"
                 "what is missing, and running beside the indexer or another wallet-backfill is safe.\n\n"
                 "Options:\n"
                 "  --dry-run                   print the plan (range, shards, pool) and exit; writes nothing\n"
                 "  --bulk                      bulk load of a fresh store: no per-row index or aggregate upkeep;\n"
                 "                              once the range is loaded, the indexes are built, the table\n"
                 "                              rewritten in account order and the sums rebuilt. Re-run it after\n"
                 "                              any stop to finish. Refuses a served store (backfill/README.md);\n"
                 "                              the indexer and runs without --bulk refuse to start until it ends\n"
                 "  --build-memory=SIZE         maintenance_work_mem and work_mem of the build, shared by the\n"
                 "                              steps that run at once (default 1GB)\n"
                 "  --build-parallel-workers=N  max_parallel_maintenance_workers of the index build (default 2)\n"
                 "  --write-method=copy|insert  how rows reach the table (default copy: COPY into it, merging\n"
                 "                              through a staging table when some rows are already there;\n"
                 "                              insert: multi-row INSERT ... ON CONFLICT DO NOTHING)\n"
                 "  --heartbeat-timeout-ms=N    a running shard silent for this long is taken over (default 60000)\n"
                 "  --give-up-after-ms=N        stop when no node (or the database) answered for this long\n"
                 "                              (default 600000)\n"
                 "  --progress=auto|bar|log|none  live bar on a terminal, log lines otherwise (auto)\n"
                 "  --progress-interval-ms=N    time between progress log lines (default 10000)\n"
                 "  --help, --version\n\n"
                 "Settings (environment variables; every one it reads and validates at start):\n"
              << settings_help(Component::Backfill);
    std::cout << "\nExit status: 0 every shard of the range is done, 1 the range is not complete (a failure;\n"
                 "the log says which), 2 bad configuration or arguments, or a store that a bulk load refuses\n"
                 "(or, without --bulk, one in an unfinished bulk load), 3 stopped by SIGTERM or SIGINT.\n"
                 "Progress survives any stop: run it again to load what is missing.\n";
}

// Returns nullopt after printing why the arguments are bad.
std::optional<Arguments> parse_arguments(int argc, char** argv, bool& exit_now) {
    Arguments args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (answer_help_or_version(arg, "wallet-backfill", print_help)) {
            exit_now = true;
            return args;
        }
        if (arg == "--dry-run") {
            args.dry_run = true;
        } else if (arg == "--bulk") {
            args.bulk = true;
        } else if (arg.rfind("--build-memory=", 0) == 0 && arg.size() > std::strlen("--build-memory=")) {
            args.build_memory = arg.substr(std::strlen("--build-memory="));
        } else if (auto build_workers = number_option(arg, "--build-parallel-workers=")) {
            args.build_workers = *build_workers;
        } else if (arg == "--write-method=copy") {
            args.write_method = store::WriteMethod::CopyMerge;
            args.write_method_given = true;
        } else if (arg == "--write-method=insert") {
            args.write_method = store::WriteMethod::MultiRowInsert;
            args.write_method_given = true;
        } else if (auto timeout = number_option(arg, "--heartbeat-timeout-ms=")) {
            args.heartbeat_timeout = milliseconds(*timeout);
        } else if (auto give_up = number_option(arg, "--give-up-after-ms=")) {
            args.give_up_after = milliseconds(*give_up);
        } else if (auto interval = number_option(arg, "--progress-interval-ms=")) {
            args.log_interval = milliseconds(*interval);
        } else if (arg == "--progress=auto" || arg == "--progress=bar" || arg == "--progress=log" || arg == "--progress=none") {
            const std::string mode = arg.substr(std::strlen("--progress="));
            args.progress = mode == "bar" ? ProgressMode::Bar : mode == "log" ? ProgressMode::Log
                                                            : mode == "none" ? ProgressMode::None : ProgressMode::Auto;
        } else {
            std::cerr << "wallet-backfill: unknown or invalid argument '" << arg << "' (see --help)\n";
            return std::nullopt;
        }
    }
    if (args.bulk && args.write_method_given) {
        std::cerr << "wallet-backfill: --bulk writes with plain COPY; --write-method does not apply\n";
        return std::nullopt;
    }
    if (args.bulk) args.write_method = store::WriteMethod::CopyOnly;
    return args;
}

const char* write_method_name(store::WriteMethod method) {
    return method == store::WriteMethod::CopyMerge ? "copy"
           : method == store::WriteMethod::CopyOnly ? "bulk (plain COPY, indexes built at the end)"
                                                    : "insert";
}

// The build phase of a bulk load: its exit status.
int build_bulk_load(const Settings& settings, const Arguments& args, std::stop_token stop) {
    bulk::BuildOptions options;
    options.database_url = settings.db.indexer_url;
    options.maintenance_work_mem = args.build_memory;
    options.parallel_workers = static_cast<int>(args.build_workers);
    if (const char* pause = std::getenv("WALLET_BACKFILL_TEST_BUILD_PAUSE_MS")) {
        options.test_pause = milliseconds(std::strtoll(pause, nullptr, 10));
    }
    auto built = bulk::build(options, stop);
    if (built) return kExitComplete;
    log_error("bulk load: " + built.error() + (stop.stop_requested() ? "" : "; run it again to finish"));
    return stop.stop_requested() ? kExitStopped : kExitIncomplete;
}

// The balance pass over what is stored, up to `limit` (the range's end,
// irreversible): the store's fully loaded prefix gets its change runs before
// the indexer runs. Its exit status.
int run_snapshot_pass(PGconn* conn, const Settings& settings, const store::BalanceRules& rules, std::int64_t limit,
                      std::stop_token stop) {
    store::AccountIds ids;
    std::int64_t periods = 0, events = 0, runs = 0, through = 0;
    while (!stop.stop_requested()) {
        auto step = store::advance_balance_snapshots(conn, ids, rules, settings.chain.balance_snapshot_blocks, limit);
        if (!step) {
            log_error("balance snapshots: " + step.error());
            return kExitIncomplete;
        }
        through = step->through;
        if (!step->advanced) break;
        ++periods;
        events += step->events;
        runs += step->runs;
    }
    log_info("summary: balance snapshots through block " + std::to_string(through) + ": " + std::to_string(periods) +
             " periods, " + with_thousands(events) + " events replayed, " + with_thousands(runs) + " change runs");
    return stop.stop_requested() ? kExitStopped : kExitComplete;
}

std::string database_text(const std::string& url) { return loggable_url(url); }

std::string pool_text(const std::vector<std::string>& urls) {
    std::string out;
    for (const auto& url : urls) out += (out.empty() ? "" : ", ") + loggable_url(url);
    return out;
}

int dry_run(const Settings& settings, const BlockRange& range, bool end_from_node, const Arguments& args) {
    const auto& b = settings.backfill;
    std::cout << "wallet-backfill plan (dry run: nothing is written)\n"
              << "  range:       blocks " << with_thousands(range.first) << ".." << with_thousands(range.last) << " ("
              << with_thousands(range.size()) << " blocks"
              << (end_from_node ? "; BACKFILL_END_BLOCK=0: the node's last irreversible block" : "") << ")\n";
    std::vector<BlockRange> existing;
    std::optional<RangeStatus> status;
    std::string database_note;
    std::string bulk_line = "none";  // wallet_bulk_load, when the store has one
    auto conn = pg::connect(settings.db.indexer_url);
    if (!conn) {
        database_note = "unreachable (" + conn.error() + "): counting every shard as missing";
    } else if (auto version = current_schema_version(conn->get()); !version || *version < 1) {
        database_note = "no schema yet (it is created by the first run): every shard is missing";
    } else {
        auto shards = shards_overlapping(conn->get(), range);
        auto now = range_status(conn->get(), range);
        if (shards && now) {
            existing = std::move(shards).value();
            status = *now;
        } else {
            database_note = "cannot read backfill_shards: " + (shards ? now.error() : shards.error());
        }
        if (auto bulk_state = pg::exec(conn->get(),
                                       "SELECT format('state %s (blocks %s..%s), %s build steps done', state, first_block,"
                                       " last_block, build_step) FROM wallet_bulk_load");
            bulk_state && PQntuples(bulk_state->get()) == 1) {
            bulk_line = PQgetvalue(bulk_state->get(), 0, 0);
        }
    }
    const auto missing = missing_shards(range, b.shard_size, existing);
    std::cout << "  shards:      " << with_thousands(b.shard_size) << " blocks each; ";
    if (status) {
        std::cout << with_thousands(status->shards) << " in the table (" << with_thousands(status->done) << " done, "
                  << with_thousands(status->running) << " running, " << with_thousands(status->pending) << " pending; "
                  << with_thousands(status->blocks_done) << " blocks stored";
        if (status->outdated > 0) {
            std::cout << "; " << with_thousands(status->outdated) << " loaded by a decoder older than version "
                      << kDecoderVersion << ", loaded again";
        }
        std::cout << "), ";
    }
    std::cout << with_thousands(static_cast<std::int64_t>(missing.size())) << " to add\n";
    std::int64_t missing_blocks = 0;
    for (const auto& shard : missing) missing_blocks += shard.size();
    const std::int64_t to_load = missing_blocks + (status ? status->blocks_total - status->blocks_done : 0);
    std::cout << "  to load:     " << with_thousands(to_load) << " blocks\n"
              << "  workers:     " << b.workers << ", batches of " << b.batch_size << " blocks, node timeout "
              << b.rpc_timeout_ms << " ms, heartbeat timeout " << args.heartbeat_timeout.count() << " ms\n"
              << "  node pool:   " << pool_text(b.rpc_urls) << "\n"
              << "  database:    " << database_text(settings.db.indexer_url)
              << (database_note.empty() ? "" : " - " + database_note) << "\n"
              << "  write path:  " << write_method_name(args.write_method) << "\n"
              << "  bulk load:   " << bulk_line << "\n";
    return kExitComplete;
}

void log_summary(const Loader& loader, const NodePool& pool, const std::optional<RangeStatus>& status, const BlockRange& range,
                 double seconds) {
    const auto& c = loader.counters();
    const double rate_base = seconds > 0 ? seconds : 1;
    log_info("summary: blocks " + std::to_string(range.first) + ".." + std::to_string(range.last) + ": " +
             (!status ? std::string("state unknown (database unreachable)")
              : status->complete()
                  ? "complete (" + with_thousands(status->done) + " of " + with_thousands(status->shards) + " shards done)"
                  : "NOT complete (" + with_thousands(status->done) + " of " + with_thousands(status->shards) + " shards done, " +
                        with_thousands(status->blocks_total - status->blocks_done) + " blocks missing)"));
    log_info("summary: this run stored " + with_thousands(c.blocks) + " blocks, " + with_thousands(c.events) + " events (" +
             with_thousands(c.rows_inserted) + " new rows, " + with_thousands(c.events - c.rows_inserted) +
             " already stored) in " + duration_text(seconds) + ": " +
             with_thousands(static_cast<std::int64_t>(static_cast<double>(c.blocks) / rate_base)) + " blocks/s, " +
             with_thousands(static_cast<std::int64_t>(static_cast<double>(c.events) / rate_base)) + " rows/s; " +
             with_thousands(c.shards_done) + " shards finished, " + with_thousands(c.takeovers) + " taken over, " +
             with_thousands(c.lost_shards) + " lost to other workers, " + with_thousands(c.write_retries) + " write retries, " +
             with_thousands(c.balance_undecodable) + " events without readable balance changes");
    for (const auto& node : pool.health()) {
        std::string kinds;
        for (int kind = 1; kind < 9; ++kind) {
            if (node.failures_by_kind[kind] == 0) continue;
            kinds += (kinds.empty() ? "" : ", ") + std::string(node_failure_name(static_cast<NodeFailure>(kind))) + " " +
                     std::to_string(node.failures_by_kind[kind]);
        }
        log_info("summary: node " + node.url + ": " + with_thousands(static_cast<std::int64_t>(node.requests)) + " requests, " +
                 with_thousands(static_cast<std::int64_t>(node.failures)) + " failed" + (kinds.empty() ? "" : " (" + kinds + ")") +
                 ", " + with_thousands(static_cast<std::int64_t>(node.blocks)) + " blocks served");
    }
}

}  // namespace

int main(int argc, char** argv) {
    set_log_program("wallet-backfill");
    bool exit_now = false;
    auto args = parse_arguments(argc, argv, exit_now);
    if (!args) return kExitConfiguration;
    if (exit_now) return kExitComplete;

    Settings settings;
    try {
        settings = load_settings(process_env(), Component::Backfill);
    } catch (const ConfigError& error) {
        log_error(std::string("configuration: ") + error.what());
        return kExitConfiguration;
    }
    auto assets = AssetTable::from_setting(settings.chain.asset_table);
    if (!assets) {
        log_error("configuration: CHAIN_ASSET_TABLE: " + assets.error());
        return kExitConfiguration;
    }
    const auto& b = settings.backfill;

    StopSignals stop("stopping; open batches roll back, progress so far is kept");

    NodePoolOptions pool_options;
    pool_options.urls = b.rpc_urls;
    pool_options.timeout = milliseconds(b.rpc_timeout_ms);
    pool_options.max_response_bytes = settings.chain.max_response_bytes;
    pool_options.every_block_rewarded = settings.chain.every_block_rewarded;
    pool_options.give_up_after = args->give_up_after;
    NodePool pool(pool_options);

    // The range: BACKFILL_END_BLOCK=0 means the pool's last irreversible block.
    BlockRange range{b.start_block, b.end_block};
    const bool end_from_node = b.end_block == 0;
    if (end_from_node) {
        auto client = PoolClient::create(pool, 0, stop.token());
        if (!client) {
            log_error(client.error());
            return kExitConfiguration;
        }
        // Each node's own: the highest; ranges above a lagging node's go to the others.
        auto lib = client.value().highest_lib();
        if (!lib) {
            log_error("cannot learn the last irreversible block: " + lib.error());
            return stop.stop_requested() ? kExitStopped : kExitIncomplete;
        }
        if (*lib == 0) {
            log_error("the nodes report no last irreversible block: set BACKFILL_END_BLOCK or wait for the nodes");
            return kExitIncomplete;
        }
        range.last = *lib;
        if (range.last < range.first) {
            log_error("BACKFILL_START_BLOCK " + std::to_string(range.first) + " is above the last irreversible block " +
                      std::to_string(range.last));
            return kExitConfiguration;
        }
    }
    if (args->dry_run) return dry_run(settings, range, end_from_node, *args);

    auto conn = pg::connect(settings.db.indexer_url);
    if (!conn) {
        log_error(conn.error());
        return kExitIncomplete;
    }
    PQsetNoticeProcessor(conn->get(), [](void*, const char*) {}, nullptr);  // "already exists, skipping" is no news
    if (auto migrated = apply_migrations(conn->get()); !migrated) {
        log_error("schema migration: " + migrated.error());
        return kExitIncomplete;
    }
    // Writers and bulk loads exclude each other (wallet/bulk_load.hpp).
    if (!args->bulk) {
        auto bulk_load = bulk_load::join_writers(conn->get());
        if (!bulk_load) {
            log_error(bulk_load.error());
            return kExitIncomplete;
        }
        if (*bulk_load) {
            log_error("refusing to start: " + **bulk_load);
            return kExitConfiguration;
        }
    } else {
        auto entry = bulk::enter(conn->get(), range);
        if (!entry) {
            log_error("bulk load: " + entry.error());
            return kExitIncomplete;
        }
        if (entry->refusal) {
            log_error("refusing --bulk: " + *entry->refusal);
            return kExitConfiguration;
        }
        const std::string blocks = std::to_string(entry->range.first) + ".." + std::to_string(entry->range.last);
        if (entry->state == bulk::State::Done) {
            log_info("bulk load of blocks " + blocks + ": done already, nothing to do");
            return kExitComplete;
        }
        if (entry->state == bulk::State::Building) {
            log_info("bulk load of blocks " + blocks + ": loaded; resuming the build");
            return build_bulk_load(settings, *args, stop.token());
        }
        log_info("bulk load of blocks " + blocks + ": " +
                 (entry->started ? "started (wallet_events' indexes dropped, reward triggers disabled)"
                                 : "resuming the load"));
        range = entry->range;
    }
    auto planned = plan_shards(conn->get(), range, b.shard_size);
    if (!planned) {
        log_error(planned.error());
        return kExitIncomplete;
    }
    auto before = range_status(conn->get(), range);
    if (!before) {
        log_error(before.error());
        return kExitIncomplete;
    }
    log_info("blocks " + std::to_string(range.first) + ".." + std::to_string(range.last) + ": " +
             with_thousands(before->shards) + " shards (" + std::to_string(planned->added) + " new), " +
             with_thousands(before->done) + " done, " +
             (before->outdated > 0 ? with_thousands(before->outdated) + " loaded by an older decoder (loading them again with version " +
                                         std::to_string(kDecoderVersion) + "), "
                                   : std::string()) +
             with_thousands(before->blocks_total - before->blocks_done) +
             " blocks to load with " + std::to_string(b.workers) + " workers, batches of " + std::to_string(b.batch_size) +
             " blocks, nodes " + pool_text(b.rpc_urls) + ", write path " + write_method_name(args->write_method));

    LoaderOptions options;
    options.database_url = settings.db.indexer_url;
    options.range = range;
    options.batch_size = b.batch_size;
    options.workers = b.workers;
    options.assets = std::move(assets).value();
    options.forks = HardforkSchedule::named(settings.chain.hardforks).value_or(HardforkSchedule::mainnet());
    const AssetTable loader_assets = options.assets;
    const HardforkSchedule loader_forks = options.forks;
    options.heartbeat_timeout = args->heartbeat_timeout;
    options.write_method = args->write_method;
    options.owner_prefix = make_owner_prefix();
    Loader loader(std::move(options), pool, stop.token());

    const bool on_terminal = isatty(STDERR_FILENO) == 1;
    const ProgressMode mode = args->progress == ProgressMode::Auto ? (on_terminal ? ProgressMode::Bar : ProgressMode::Log)
                                                                   : args->progress;
    const auto started = std::chrono::steady_clock::now();
    auto seconds_since_start = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    RangeStatus last_status = *before;
    auto snapshot = [&] {
        // Blocks done across every process come from the table; rates from this run.
        if (auto now = range_status(conn->get(), range)) last_status = *now;
        ProgressSnapshot s;
        s.blocks_total = last_status.blocks_total;
        s.blocks_done = last_status.blocks_done;
        s.blocks_this_run = loader.counters().blocks;
        s.events_this_run = loader.counters().events;
        s.seconds = seconds_since_start();
        return s;
    };
    std::optional<LoadOutcome> outcome;
    {
        std::jthread progress_thread;
        if (mode != ProgressMode::None) {
            progress_thread = std::jthread([&](std::stop_token token) {
                const milliseconds interval = mode == ProgressMode::Bar ? milliseconds(500) : args->log_interval;
                while (interruptible_sleep(interval, token)) {
                    const ProgressSnapshot s = snapshot();
                    if (mode == ProgressMode::Bar) {
                        const std::string line = "\r\x1b[2K" + progress_bar(s);
                        (void)!write(STDERR_FILENO, line.data(), line.size());
                    } else {
                        log_info(progress_log_line(s));
                    }
                }
                if (mode == ProgressMode::Bar) {
                    const std::string line = "\r\x1b[2K" + progress_bar(snapshot()) + "\n";
                    (void)!write(STDERR_FILENO, line.data(), line.size());
                }
            });
        }
        outcome = loader.run();
    }
    const double seconds = seconds_since_start();
    std::optional<RangeStatus> after;
    if (auto now = range_status(conn->get(), range)) after = *now;
    log_summary(loader, pool, after, range, seconds);
    const store::BalanceRules balance_rules{loader_assets, loader_forks};
    if (after && after->complete()) {
        if (!args->bulk) return run_snapshot_pass(conn->get(), settings, balance_rules, range.last, stop.token());
        if (auto finished = bulk::finish_loading(conn->get()); !finished) {
            log_error("bulk load: " + finished.error());
            return kExitIncomplete;
        }
        log_info("bulk load: every shard loaded; building");
        const int built = build_bulk_load(settings, *args, stop.token());
        if (built != kExitComplete) return built;
        return run_snapshot_pass(conn->get(), settings, balance_rules, range.last, stop.token());
    }
    if (!outcome->failed_shards.empty()) {
        std::string starts;
        for (auto start : outcome->failed_shards) starts += (starts.empty() ? "" : ", ") + std::to_string(start);
        log_error("shards left for an operator (could not be decoded): starting at block " + starts);
    }
    if (outcome->stopped && !outcome->failure) return kExitStopped;
    return kExitIncomplete;
}
