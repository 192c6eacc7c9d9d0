#include "bulk.hpp"

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "progress.hpp"
#include "wallet/bulk_load.hpp"
#include "wallet/db_setup.hpp"
#include "wallet/log.hpp"
#include "wallet/pg.hpp"

namespace wallet::backfill::bulk {
namespace {

using Clock = std::chrono::steady_clock;

// Serializes the builders of one store (a process that finished loading
// waits while another builds, then finds 'done').
constexpr const char* kBuildLockKey = "7426584213";

std::string field(PGresult* result, int column) { return PQgetvalue(result, 0, column); }

std::int64_t int_field(PGresult* result, int column) { return std::strtoll(PQgetvalue(result, 0, column), nullptr, 10); }

State state_of(const std::string& name) {
    return name == "loading" ? State::Loading : name == "building" ? State::Building : State::Done;
}

// The elements of one of wallet_bulk_load's text[] columns.
Result<std::vector<std::string>> text_array_elements(PGconn* conn, const std::string& column) {
    auto rows = pg::exec(conn, "SELECT unnest(" + column + ") FROM wallet_bulk_load");
    if (!rows) return make_error("bulk load state: " + rows.error());
    std::vector<std::string> out;
    for (int row = 0; row < PQntuples(rows->get()); ++row) out.emplace_back(PQgetvalue(rows->get(), row, 0));
    return out;
}

std::string seconds_text(Clock::time_point since) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(Clock::now() - since).count());
    return text;
}

// The refusal, when a served store is in sight; checked on every run.
Result<std::optional<std::string>> serving_refusal(PGconn* conn) {
    auto readers = pg::exec_params(conn,
                                   "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = $1",
                                   {std::string(kReaderRole)});
    if (!readers) return make_error("sessions: " + readers.error());
    if (int_field(readers->get(), 0) > 0) {
        return std::optional<std::string>(field(readers->get(), 0) + " session(s) of " + kReaderRole +
                                          " are connected: the API is serving this store");
    }
    auto checkpoint = pg::exec(conn, "SELECT block_num FROM indexer_checkpoint");
    if (!checkpoint) return make_error("checkpoint: " + checkpoint.error());
    if (PQntuples(checkpoint->get()) > 0) {
        return std::optional<std::string>("the indexer has a checkpoint (block " + field(checkpoint->get(), 0) +
                                          "): the store is live");
    }
    return std::optional<std::string>();
}

// A step of the build: one statement (or a few) and one transaction.
struct BuildStep {
    std::string label;
    std::string sql;
    std::string creates_index;  // skipped when this index exists already
    // Runs beside the steps next to it that are concurrent too, each in a
    // session of its own: they only read wallet_events (CREATE INDEX takes
    // a SHARE lock, which lets the others read), so two cores build at once.
    bool concurrent = false;
    // Runs in the step's transaction once the steps before it committed
    // (ENABLE TRIGGER conflicts with a running CREATE INDEX).
    std::string at_commit;
};

Result<std::vector<BuildStep>> build_steps(PGconn* conn) {
    auto names_read = text_array_elements(conn, "index_names");
    auto definitions_read = text_array_elements(conn, "index_definitions");
    auto triggers_read = text_array_elements(conn, "disabled_triggers");
    if (!names_read || !definitions_read || !triggers_read) {
        return make_error(!names_read ? names_read.error() : !definitions_read ? definitions_read.error() : triggers_read.error());
    }
    const auto& names = *names_read;
    const auto& definitions = *definitions_read;
    const auto& triggers = *triggers_read;
    std::vector<BuildStep> steps;
    for (std::size_t i = 0; i < names.size() && i < definitions.size(); ++i) {
        // The indexes after the unique key (CLUSTER needs that one first).
        const bool after_key = !steps.empty();
        steps.push_back({"index " + names[i], definitions[i], names[i], after_key, ""});
        // The first index is the unique key when there is one: the history is
        // rewritten in its order (account, then block), which puts one
        // account's page on a few heap pages. CLUSTER rebuilds the indexes
        // that exist, so it comes before the others.
        if (i == 0 && definitions[i].rfind("CREATE UNIQUE INDEX", 0) == 0) {
            // The planner picks how (an index scan while the table fits in
            // effective_cache_size, else a sequential scan and a sort): a
            // sort compares the expression key (block_seq * 100 + role) by
            // computing it for both rows at each tie on the account, which
            // took 20% more CPU in memory than the index scan (1M rows).
            // A sorted copy with the key built once on it was not faster
            // (docs/store-layout.md, "The bulk build's account-order rewrite"):
            // INSERT .. SELECT .. ORDER BY runs without parallel workers and
            // logs a WAL record per row (8.2 to 9.4 CPU s against CLUSTER's
            // 7.0 to 7.3 at 2.6M events), and CREATE TABLE AS, which may sort
            // in parallel, cannot give the table its generated column and
            // constraints.
            steps.push_back({"table rewritten in the order of " + names[i],
                             "CLUSTER wallet_events USING " + pg::quote_identifier(conn, names[i]),
                             "", false, ""});
        }
    }
    std::string enable;
    for (const auto& trigger : triggers) {
        enable += (enable.empty() ? "" : "; ") + std::string("ALTER TABLE wallet_events ENABLE TRIGGER ") +
                  pg::quote_identifier(conn, trigger);
    }
    // The two tables of sums apart (migration 0012), beside the index builds:
    // four sessions share the cores instead of one long rebuild finishing
    // alone. The triggers come back with the second, when both are rebuilt.
    steps.push_back({"reward day sums rebuilt", "SELECT wallet_reward_rebuild_daily()", "", true, ""});
    steps.push_back({"liquid reward sums rebuilt, triggers enabled", "SELECT wallet_reward_rebuild_liquid()", "", true, enable});
    steps.push_back({"statistics",
                     "ANALYZE wallet_events; ANALYZE wallet_blocks; ANALYZE wallet_accounts; ANALYZE wallet_reward_daily;"
                     " ANALYZE wallet_reward_liquid_daily",
                     "", false, ""});
    return steps;
}

using PgCancelPtr = std::unique_ptr<PGcancel, decltype(&PQfreeCancel)>;

// A session of the build: its parallel workers and memory, and a stop
// cancels its running statement. A killed run's server session notices
// within a second that its client is gone, ends its statement and frees the
// table for the re-run.
class BuildSession {
public:
    static Result<std::unique_ptr<BuildSession>> open(const BuildOptions& options, std::stop_token stop) {
        auto opened = pg::connect(options.database_url);
        if (!opened) return make_error(opened.error());
        PGconn* conn = opened->get();
        PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
        auto set = pg::exec(conn, "SET max_parallel_maintenance_workers = " + std::to_string(options.parallel_workers) +
                                      "; SET client_connection_check_interval = '1s'");
        if (!set) return make_error("build session: " + set.error());
        return std::unique_ptr<BuildSession>(new BuildSession(std::move(opened).value(), std::move(stop)));
    }
    PGconn* conn() const { return conn_.get(); }

    // maintenance_work_mem and work_mem (the sums' rebuild aggregates the
    // whole table): a share of the build's memory, which the steps running
    // at once share.
    Result<bool> set_memory(const std::string& total, std::size_t share) {
        auto set = pg::exec_params(conn(),
                                   "SELECT set_config(name, greatest(1024, pg_size_bytes($1) / $2::integer / 1024)::text || 'kB', false)"
                                   " FROM unnest(ARRAY['maintenance_work_mem', 'work_mem']) name",
                                   {total, std::to_string(share)});
        if (!set) return make_error("build session memory: " + set.error());
        return true;
    }

private:
    BuildSession(PgConnPtr conn, std::stop_token stop)
        : conn_(std::move(conn)),
          cancel_(PQgetCancel(conn_.get()), &PQfreeCancel),
          cancel_on_stop_(std::move(stop), [this] {
              char error[256];
              if (cancel_) (void)PQcancel(cancel_.get(), error, sizeof error);
          }) {}

    PgConnPtr conn_;
    PgCancelPtr cancel_;
    std::stop_callback<std::function<void()>> cancel_on_stop_;
};

// A step's statement in its open transaction (skipped when its index exists).
Result<bool> run_statement(PGconn* conn, const BuildStep& step) {
    if (!step.creates_index.empty()) {
        auto found = pg::exec_params(conn, "SELECT to_regclass($1) IS NOT NULL", {pg::quote_identifier(conn, step.creates_index)});
        if (!found) return make_error(found.error());
        if (field(found->get(), 0) == "t") return true;
    }
    auto done = pg::exec(conn, step.sql);
    if (!done) return make_error(done.error());
    return true;
}

}  // namespace

Result<Entry> enter(PGconn* conn, const BlockRange& range) {
    auto tx = pg::Transaction::begin(conn);
    if (!tx) return make_error(tx.error());
    Entry entry;
    auto refuse = [&](std::string why) -> Result<Entry> {
        entry.refusal = std::move(why);
        return entry;  // the transaction rolls back
    };
    auto locked = pg::exec(conn, std::string("SELECT pg_try_advisory_xact_lock(") + bulk_load::kWritersLockKey + ")");
    if (!locked) return make_error("writers lock: " + locked.error());
    if (field(locked->get(), 0) != "t") {
        return refuse("a writer is connected to the store (wallet-indexer or wallet-backfill without --bulk), or"
                      " another wallet-backfill --bulk is starting");
    }
    auto current = pg::exec(conn,
                            "SELECT state, first_block, last_block, to_char(finished_at, 'YYYY-MM-DD HH24:MI:SS TZ')"
                            " FROM wallet_bulk_load FOR UPDATE");
    if (!current) return make_error("bulk load state: " + current.error());
    const bool exists = PQntuples(current->get()) == 1;
    if (exists && state_of(field(current->get(), 0)) == State::Done) {
        auto status = range_status(conn, range);
        if (!status) return make_error(status.error());
        if (!status->complete()) {
            return refuse("a bulk load of blocks " + field(current->get(), 1) + ".." + field(current->get(), 2) +
                          " finished on this store at " + field(current->get(), 3) +
                          "; it is no longer fresh: load further blocks without --bulk");
        }
        entry.state = State::Done;
        entry.range = {int_field(current->get(), 1), int_field(current->get(), 2)};
        return entry;
    }
    auto serving = serving_refusal(conn);
    if (!serving) return make_error(serving.error());
    if (*serving) return refuse(**serving);
    const std::vector<std::optional<std::string>> bounds{std::to_string(range.first), std::to_string(range.last)};
    if (!exists) {
        auto stored = pg::exec(conn, "SELECT EXISTS (SELECT 1 FROM wallet_events) OR EXISTS (SELECT 1 FROM wallet_blocks)");
        if (!stored) return make_error("rows: " + stored.error());
        if (field(stored->get(), 0) == "t") {
            return refuse("wallet_events holds rows that no bulk load wrote: a bulk load needs a fresh store");
        }
        // The indexes and triggers as they are, kept to be built again.
        auto started = pg::exec_params(
            conn,
            "INSERT INTO wallet_bulk_load (state, first_block, last_block, index_names, index_definitions, disabled_triggers)"
            " SELECT 'loading', $1::integer, $2::integer,"
            "  coalesce((SELECT array_agg(c.relname::text ORDER BY i.indisunique DESC, c.relname) FROM pg_index i"
            "            JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'wallet_events'::regclass), '{}'),"
            "  coalesce((SELECT array_agg(pg_get_indexdef(i.indexrelid) ORDER BY i.indisunique DESC, c.relname) FROM pg_index i"
            "            JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'wallet_events'::regclass), '{}'),"
            "  coalesce((SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'wallet_events'::regclass"
            "            AND NOT tgisinternal AND tgname LIKE 'wallet\\_reward\\_daily\\_%'), '{}')",
            bounds);
        if (!started) return make_error("bulk load state: " + started.error());
        auto set_aside = pg::exec(conn,
                                  "DO $$ DECLARE r record; BEGIN"
                                  " FOR r IN SELECT unnest(index_names) AS name FROM wallet_bulk_load LOOP"
                                  "  EXECUTE format('DROP INDEX %I', r.name); END LOOP;"
                                  " FOR r IN SELECT unnest(disabled_triggers) AS name FROM wallet_bulk_load LOOP"
                                  "  EXECUTE format('ALTER TABLE wallet_events DISABLE TRIGGER %I', r.name); END LOOP;"
                                  " END $$");
        if (!set_aside) return make_error("dropping indexes, disabling triggers: " + set_aside.error());
        entry.started = true;
        entry.range = range;
    } else if (state_of(field(current->get(), 0)) == State::Loading) {
        // A run with a wider range widens the bulk load's.
        auto widened = pg::exec_params(conn,
                                       "UPDATE wallet_bulk_load SET first_block = least(first_block, $1::integer),"
                                       " last_block = greatest(last_block, $2::integer), updated_at = now()"
                                       " RETURNING first_block, last_block",
                                       bounds);
        if (!widened) return make_error("bulk load state: " + widened.error());
        entry.range = {int_field(widened->get(), 0), int_field(widened->get(), 1)};
    } else {
        entry.state = State::Building;
        entry.range = {int_field(current->get(), 1), int_field(current->get(), 2)};
    }
    auto committed = tx.value().commit();
    if (!committed) return make_error("bulk load state: " + committed.error());
    return entry;
}

Result<bool> finish_loading(PGconn* conn) {
    auto updated = pg::exec(conn, "UPDATE wallet_bulk_load SET state = 'building', updated_at = now() WHERE state = 'loading'");
    if (!updated) return make_error("bulk load state: " + updated.error());
    return true;
}

Result<bool> build(const BuildOptions& options, std::stop_token stop) {
    auto main_session = BuildSession::open(options, stop);
    if (!main_session) return make_error(main_session.error());
    PGconn* conn = (*main_session)->conn();

    auto immediate = pg::exec(conn, std::string("SELECT pg_try_advisory_lock(") + kBuildLockKey + ")");
    if (!immediate) return make_error("build lock: " + immediate.error());
    if (field(immediate->get(), 0) != "t") {
        log_info("build: waiting for another builder (another wallet-backfill --bulk, or the server session of a"
                 " killed one)");
        auto waited = pg::exec(conn, std::string("SELECT pg_advisory_lock(") + kBuildLockKey + ")");
        if (!waited) return make_error("build lock: " + waited.error());
    }
    auto current = pg::exec(conn,
                            "SELECT state, build_step, first_block, last_block,"
                            " (SELECT coalesce(sum(rows_written), 0) FROM backfill_shards"
                            "   WHERE end_block >= first_block AND start_block <= last_block)"
                            " FROM wallet_bulk_load");
    if (!current) return make_error("bulk load state: " + current.error());
    if (PQntuples(current->get()) == 0) return make_error("no bulk load in this store");
    if (state_of(field(current->get(), 0)) == State::Done) return true;
    if (state_of(field(current->get(), 0)) != State::Building) return make_error("the bulk load is still loading");
    auto planned = build_steps(conn);
    if (!planned) return make_error(planned.error());
    const auto& steps = *planned;
    const auto first_step = static_cast<std::size_t>(int_field(current->get(), 1));
    log_info("build: blocks " + field(current->get(), 2) + ".." + field(current->get(), 3) + ", " +
             with_thousands(int_field(current->get(), 4)) + " rows; " + std::to_string(steps.size()) + " steps" +
             (first_step > 0 ? ", the first " + std::to_string(first_step) + " done already" : std::string()));
    const auto build_started = Clock::now();
    auto step_name = [&](std::size_t index) {
        return "build step " + std::to_string(index + 1) + "/" + std::to_string(steps.size()) + " (" +
               steps[index].label + ")";
    };
    // A group: one step, or the concurrent steps next to each other. Its
    // steps run at once, each in its own session and transaction, and
    // commit in their order, each with the step counter: a kill at any
    // moment leaves the counter at the last step committed, every step
    // before it committed too, and a re-run does the rest.
    std::vector<std::unique_ptr<BuildSession>> helpers;
    for (std::size_t group = first_step; group < steps.size();) {
        std::size_t end = group + 1;
        while (steps[group].concurrent && end < steps.size() && steps[end].concurrent) ++end;
        while (helpers.size() + 1 < end - group) {
            auto helper = BuildSession::open(options, stop);
            if (!helper) return make_error(step_name(group) + ": " + helper.error());
            helpers.push_back(std::move(helper).value());
        }
        struct Running {
            PGconn* conn = nullptr;
            std::optional<pg::Transaction> tx;
            Result<bool> outcome = make_error("not run");
            Clock::time_point started;
            std::string took;  // the statement's time
        };
        std::vector<Running> running(end - group);
        for (std::size_t i = 0; i < running.size(); ++i) {
            BuildSession& session = i == 0 ? **main_session : *helpers[i - 1];
            auto memory = session.set_memory(options.maintenance_work_mem, running.size());
            if (!memory) return make_error(step_name(group + i) + ": " + memory.error());
            running[i].conn = session.conn();
            log_info(step_name(group + i) + ": starting");
            running[i].started = Clock::now();
            auto tx = pg::Transaction::begin(running[i].conn);
            if (!tx) return make_error(step_name(group + i) + ": " + tx.error());
            running[i].tx.emplace(std::move(tx).value());
        }
        {
            std::vector<std::jthread> statements;
            auto run = [&](std::size_t i) {
                running[i].outcome = run_statement(running[i].conn, steps[group + i]);
                running[i].took = seconds_text(running[i].started);
            };
            for (std::size_t i = 1; i < running.size(); ++i) statements.emplace_back(run, i);
            run(0);
        }  // joins
        for (std::size_t i = 0; i < running.size(); ++i) {
            const std::size_t index = group + i;
            const std::string name = step_name(index);
            Running& step = running[i];
            if (!step.outcome) return make_error(name + ": " + step.outcome.error());
            if (!steps[index].at_commit.empty()) {
                auto done = pg::exec(step.conn, steps[index].at_commit);
                if (!done) return make_error(name + ": " + done.error());
            }
            const bool last = index + 1 == steps.size();
            auto recorded = pg::exec(step.conn, "UPDATE wallet_bulk_load SET build_step = " + std::to_string(index + 1) +
                                                    ", updated_at = now()" +
                                                    (last ? ", state = 'done', finished_at = now()" : ""));
            if (!recorded) return make_error(name + ": " + recorded.error());
            if (options.test_pause.count() > 0) std::this_thread::sleep_for(options.test_pause);
            auto committed = step.tx->commit();
            if (!committed) return make_error(name + ": " + committed.error());
            // A step that ran beside others: also when it could commit.
            log_info(name + ": done in " + step.took +
                     (running.size() > 1 ? ", committed after " + seconds_text(step.started) : std::string()));
        }
        group = end;
    }
    log_info("build: done in " + seconds_text(build_started) +
             "; the store is ready for the indexer and the API");
    return true;
}

}  // namespace wallet::backfill::bulk
