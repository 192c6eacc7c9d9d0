#include "wallet/balance_snapshots.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wallet/balance_runs.hpp"
#include "wallet/balance_state.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/pg.hpp"

namespace wallet::store {

namespace {

constexpr int kFetchRows = 5000;   // events held at once
constexpr int kFetchBlocks = 500;  // blocks' stored operations held at once

std::int64_t number_at(PGresult* result, int row, int column) {
    return std::strtoll(PQgetvalue(result, row, column), nullptr, 10);
}

std::string integer_array(const std::vector<std::int32_t>& items) {
    std::string out = "{";
    for (const auto item : items) out += (out.size() > 1 ? "," : "") + std::to_string(item);
    return out + "}";
}

// A run's row for binary COPY: a closed run (wallet_balance_runs) with its
// end, an open one (wallet_balance_open_runs, ending at the checkpoint) without.
void add_run_row(pg::BinaryRows& rows, std::int32_t account, std::int64_t after, std::optional<std::int64_t> through,
                 const std::string& state, const std::string& changes) {
    rows.row(through ? 5 : 4);
    rows.int4(account);
    rows.int4(static_cast<std::int32_t>(after));
    if (through) rows.int4(static_cast<std::int32_t>(*through));
    rows.bytes(state);
    rows.bytes(changes);
}

// Writes closed runs' rows and open runs' rows (add_run_row) by binary COPY.
Result<bool> copy_runs(PGconn* conn, pg::BinaryRows closed, pg::BinaryRows open) {
    if (closed.count() > 0) {
        auto written = pg::copy_binary(conn, "wallet_balance_runs", "account_id, after_block, through_block, state, changes",
                                       std::move(closed));
        if (!written) return make_error("runs: " + written.error());
    }
    if (open.count() > 0) {
        auto written = pg::copy_binary(conn, "wallet_balance_open_runs", "account_id, after_block, state, changes", std::move(open));
        if (!written) return make_error("runs: " + written.error());
    }
    return true;
}

// The states of the accounts the period touches, each loaded once from its
// last run (its open run, else its last closed run; none: all zero), and
// their runs: the account's events that change its balances since the run's
// start. A run is closed at the end of a block where it reaches kRunEvents
// (appended to wallet_balance_runs, never updated); the last one of each
// account stays open (wallet_balance_open_runs, rewritten at the period's
// end with the events up to it).
class States {
public:
    States(PGconn* conn, AccountIds& ids, std::int64_t through) : conn_(conn), ids_(ids), through_(through) {}

    // Loads the states of the accounts of `names` not loaded yet.
    Result<bool> load(std::vector<std::string> names) {
        std::erase_if(names, [&](const std::string& name) { return states_.contains(name); });
        if (names.empty()) return true;
        auto resolved = ids_.resolve_names(conn_, names);
        if (!resolved) return make_error(resolved.error());
        std::vector<std::int32_t> wanted;
        std::map<std::int32_t, std::string> name_of;
        for (auto& name : names) {
            const auto id = ids_.find(name);
            if (!id) return make_error("account " + name + " has no id");
            if (!name_of.emplace(*id, name).second) continue;
            wanted.push_back(*id);
            states_.emplace(std::move(name), Entry{*id, BalanceState{}, through_, {}, {}, false, std::nullopt, false});
        }
        // The account's open run, else its last closed one (an index probe each).
        auto rows = pg::exec_params(conn_,
                                    "SELECT a.id, r.after_block, r.through_block, encode(r.state, 'hex'), encode(r.changes, 'hex'), r.open"
                                    " FROM unnest($1::integer[]) AS a(id) CROSS JOIN LATERAL"
                                    " (SELECT o.after_block, $2::integer AS through_block, o.state, o.changes, true AS open"
                                    "   FROM wallet_balance_open_runs o WHERE o.account_id = a.id"
                                    "  UNION ALL"
                                    "  (SELECT c.after_block, c.through_block, c.state, c.changes, false FROM wallet_balance_runs c"
                                    "    WHERE c.account_id = a.id AND c.after_block <= $2::integer ORDER BY c.after_block DESC LIMIT 1)"
                                    "  ORDER BY open DESC LIMIT 1) r",
                                    {integer_array(wanted), std::to_string(through_)});
        if (!rows) return make_error("runs: " + rows.error());
        for (int row = 0; row < PQntuples(rows->get()); ++row) {
            const auto id = static_cast<std::int32_t>(number_at(rows->get(), row, 0));
            const std::int64_t after = number_at(rows->get(), row, 1);
            const std::int64_t end = number_at(rows->get(), row, 2);
            const bool open = PQgetvalue(rows->get(), row, 5)[0] == 't';
            const auto state = bytes_of_hex(PQgetvalue(rows->get(), row, 3));
            const auto changes = bytes_of_hex(PQgetvalue(rows->get(), row, 4));
            auto loaded = state && changes ? run_state_at(*state, *changes, after, through_)
                                           : Result<BalanceState>(make_error("not hex"));
            auto events = open && changes ? decode_run(*changes, after) : Result<std::vector<RunEvent>>(std::vector<RunEvent>{});
            if (!loaded || !events) {
                return make_error("runs: the run of account id " + std::to_string(id) + " after " + std::to_string(after) +
                                  " is unreadable: " + (loaded ? events.error() : loaded.error()));
            }
            Entry& entry = states_.at(name_of.at(id));
            entry.state = std::move(loaded).value();
            if (open) {
                // Goes on growing.
                entry.after = after;
                entry.start = *state;
                entry.events = std::move(events).value();
                entry.stored_open = true;
            } else {
                // The next run starts where the closed one ends; one without
                // events (a genesis state, a snapshot of before 0024) is replaced
                // by the run starting at its block.
                entry.after = end;
                if (after == end) entry.replaces = after;
            }
        }
        return true;
    }

    std::int32_t id_of(const std::string& account) const { return states_.at(account).id; }

    // An event of `account`'s run, before its changes are applied (they are
    // applied here): starts the account's run at its current state.
    Result<bool> add(const std::string& account, RunEvent event) {
        auto& entry = *states_.find(account);
        Entry& value = entry.second;
        if (!value.start) {
            const auto bytes = value.state.encode();
            if (!bytes) return make_error("runs: a balance of " + account + " is out of range");
            value.start = *bytes;
            value.began = true;
        }
        for (const RunChange& change : event.changes) value.state.apply(change.to_change(account));
        value.events.push_back(std::move(event));
        if (static_cast<std::int64_t>(value.events.size()) == kRunEvents) full_.push_back(&entry);
        return true;
    }

    // After every event of `block`: the runs that reached kRunEvents are closed there.
    Result<bool> end_block(std::int64_t block) {
        for (auto* entry : full_) {
            Entry& value = entry->second;
            auto changes = encode_run(value.events, value.after);
            if (!changes) return make_error(changes.error());
            add_run_row(closed_, value.id, value.after, block, *value.start, *changes);
            value.after = block;
            value.events.clear();
            value.start.reset();
        }
        full_.clear();
        return true;
    }

    // Writes the period's closed runs and the open runs as they are at its
    // end (binary COPY); returns how many runs were written.
    Result<std::int64_t> write() {
        std::vector<std::int32_t> reopened, replaced, replaced_at;
        pg::BinaryRows open;
        for (auto& [account, value] : states_) {
            if (value.stored_open) reopened.push_back(value.id);
            // (An account named by the period's events but without a change in them keeps it.)
            if (value.replaces && value.began) {
                replaced.push_back(value.id);
                replaced_at.push_back(static_cast<std::int32_t>(*value.replaces));
            }
            if (!value.start) continue;
            auto changes = encode_run(value.events, value.after);
            if (!changes) return make_error(changes.error());
            add_run_row(open, value.id, value.after, std::nullopt, *value.start, *changes);
        }
        if (!replaced.empty()) {
            auto deleted = pg::exec_params(conn_,
                                           "DELETE FROM wallet_balance_runs r USING unnest($1::integer[], $2::integer[]) AS d(id, after_block)"
                                           " WHERE r.account_id = d.id AND r.after_block = d.after_block AND r.through_block = d.after_block",
                                           {integer_array(replaced), integer_array(replaced_at)});
            if (!deleted) return make_error("runs: " + deleted.error());
        }
        if (!reopened.empty()) {
            auto deleted = pg::exec_params(conn_, "DELETE FROM wallet_balance_open_runs WHERE account_id = ANY($1::integer[])",
                                           {integer_array(reopened)});
            if (!deleted) return make_error("runs: " + deleted.error());
        }
        const auto count = static_cast<std::int64_t>(closed_.count() + open.count());
        auto written = copy_runs(conn_, std::move(closed_), std::move(open));
        if (!written) return make_error(written.error());
        return count;
    }

private:
    struct Entry {
        std::int32_t id = 0;
        BalanceState state;      // after every event replayed
        std::int64_t after = 0;  // the block of the run's start
        std::optional<std::string> start;  // the state there (BalanceState::encode), once the run has begun
        std::vector<RunEvent> events;
        bool stored_open = false;  // its open run was loaded (rewritten at the end)
        std::optional<std::int64_t> replaces;  // the block of its stored run without events, replaced
        bool began = false;  // a run of the period has begun (the first replaces that run)
    };

    PGconn* conn_;
    AccountIds& ids_;
    std::int64_t through_;
    std::map<std::string, Entry> states_;
    std::vector<std::pair<const std::string, Entry>*> full_;  // runs that reached kRunEvents in the current block
    pg::BinaryRows closed_;  // the closed runs to write
};

// The stored operations of the period's blocks (wallet_blocks.ops), read in
// block order beside the events, a bounded number of blocks at a time.
class BlockOperations {
public:
    BlockOperations(PGconn* conn, std::int64_t after, std::int64_t through) : conn_(conn), after_(after), through_(through) {}

    Result<bool> open() {
        auto declared = pg::exec_params(conn_,
                                        "DECLARE wallet_snapshot_blocks NO SCROLL CURSOR FOR"
                                        " SELECT b.block_num, b.ops FROM wallet_blocks b"
                                        " WHERE b.block_num > $1::integer AND b.block_num <= $2::integer ORDER BY b.block_num",
                                        {std::to_string(after_), std::to_string(through_)});
        if (!declared) return make_error("snapshots: " + declared.error());
        return true;
    }

    // The stored operation (stored_entry_operation's input) of block_seq
    // `seq` of `block`; blocks are asked for in ascending order. Valid until
    // the next call with another block.
    Result<std::string_view> find(std::int64_t block, std::int64_t seq) {
        if (block != block_) {
            auto moved = move_to(block);
            if (!moved) return make_error(moved.error());
        }
        const auto found = operations_.find(seq);
        if (found == operations_.end()) {
            return make_error("snapshots: block " + std::to_string(block) + " has no stored operation " + std::to_string(seq));
        }
        return found->second;
    }

private:
    Result<bool> move_to(std::int64_t block) {
        operations_.clear();
        for (;;) {
            if (!rows_ || row_ == PQntuples(rows_.get())) {
                auto fetched = pg::exec(conn_, "FETCH " + std::to_string(kFetchBlocks) + " FROM wallet_snapshot_blocks");
                if (!fetched) return make_error("snapshots: " + fetched.error());
                rows_ = std::move(fetched).value();
                row_ = 0;
                if (PQntuples(rows_.get()) == 0) break;
            }
            const std::int64_t num = number_at(rows_.get(), row_, 0);
            if (num > block) break;
            ++row_;
            if (num < block) continue;
            block_ = block;
            const std::string_view ops(PQgetvalue(rows_.get(), row_ - 1, 1),
                                       static_cast<std::size_t>(PQgetlength(rows_.get(), row_ - 1, 1)));
            // {"block_seq": stored operation, ...} (migration 0004)
            auto scanned = json::for_each_member(ops, [&](std::string_view key, std::string_view value) {
                std::int64_t seq = 0;
                const auto [end, failed] = std::from_chars(key.data(), key.data() + key.size(), seq);
                if (failed != std::errc{} || end != key.data() + key.size()) return false;
                operations_[seq] = value;
                return true;
            });
            if (!scanned || !*scanned) {
                return make_error("snapshots: the stored operations of block " + std::to_string(block) + " are unreadable" +
                                  (scanned ? std::string() : ": " + scanned.error()));
            }
            return true;
        }
        return make_error("snapshots: block " + std::to_string(block) + " has events but no stored operations");
    }

    PGconn* conn_;
    std::int64_t after_;
    std::int64_t through_;
    PgResultPtr rows_;
    int row_ = 0;
    std::int64_t block_ = -1;
    std::map<std::int64_t, std::string_view> operations_;  // of block_, into rows_
};

}  // namespace

Result<SnapshotStep> advance_balance_snapshots(PGconn* conn, AccountIds& ids, const BalanceRules& rules,
                                               std::int64_t period_blocks, std::int64_t limit_block) {
    SnapshotStep step;
    if (period_blocks < 1) return make_error("snapshots: the period must be at least one block");
    auto tx = pg::Transaction::begin(conn);
    if (!tx) return make_error(tx.error());
    // The fully loaded prefix: spec 000's indexed block; before the
    // indexer's first batch, the backfill shards' from block 1 up to the
    // first block still loading.
    auto state = pg::exec(conn, "SELECT c.through_block, coalesce(s.indexed_block,"
                                " (SELECT CASE WHEN min(b.start_block) = 1 THEN coalesce((SELECT min(l.first_block) - 1"
                                " FROM wallet_loading_shards() l), max(b.end_block)) END FROM backfill_shards b), 0)"
                                " FROM wallet_balance_snapshot_state c, wallet_store_state s FOR UPDATE OF c");
    if (!state) return make_error("snapshots: " + state.error());
    if (PQntuples(state->get()) != 1) return make_error("snapshots: no checkpoint row");
    const std::int64_t through = number_at(state->get(), 0, 0);
    const std::int64_t loaded = std::min(number_at(state->get(), 0, 1), limit_block);
    step.through = through;
    const std::int64_t next = (through / period_blocks + 1) * period_blocks;
    if (next > loaded) return step;

    // The period's events in replay order, a bounded number at a time, and
    // beside them its blocks' stored operations: each block's ops are read
    // once, for all its events (not parsed again by PostgreSQL per event).
    auto declared = pg::exec_params(
        conn,
        "DECLARE wallet_snapshot_events NO SCROLL CURSOR FOR"
        " SELECT a.name, e.role, wallet_op_type_name(e.op_type), e.block_num, e.block_seq, e.op_type"
        " FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
        " WHERE e.block_num > $1::integer AND e.block_num <= $2::integer ORDER BY e.block_num, e.block_seq, e.role",
        {std::to_string(through), std::to_string(next)});
    if (!declared) return make_error("snapshots: " + declared.error());
    BlockOperations operations(conn, through, next);
    if (auto opened = operations.open(); !opened) return make_error(opened.error());
    States states(conn, ids, through);
    std::int64_t open_block = -1;  // the block whose events were replayed last
    // The events of one operation are adjacent (same block and seq): its changes are read once.
    std::optional<std::pair<std::int64_t, std::int64_t>> operation_key;
    Result<std::vector<CarriedBalanceChange>> operation_changes = std::vector<CarriedBalanceChange>{};
    for (;;) {
        auto rows = pg::exec(conn, "FETCH " + std::to_string(kFetchRows) + " FROM wallet_snapshot_events");
        if (!rows) return make_error("snapshots: " + rows.error());
        PGresult* result = rows->get();
        const int count = PQntuples(result);
        if (count == 0) break;
        std::vector<std::optional<std::vector<BalanceChange>>> changes;  // nullopt: undecodable
        std::vector<std::string> names;
        for (int row = 0; row < count; ++row) names.emplace_back(PQgetvalue(result, row, 0));
        for (int row = 0; row < count; ++row) {
            WalletEvent event;
            event.account = PQgetvalue(result, row, 0);
            event.role = role_of_code(static_cast<int>(number_at(result, row, 1))).value_or(Role::Sender);
            event.op_type = PQgetvalue(result, row, 2);
            event.block_num = number_at(result, row, 3);
            event.block_seq = number_at(result, row, 4);
            const std::pair key{event.block_num, *event.block_seq};
            if (key != operation_key) {
                operation_key = key;
                auto stored = operations.find(event.block_num, *event.block_seq);
                if (!stored) return make_error(stored.error());
                auto operation = stored_entry_operation(*stored, event.op_type);
                if (operation) {
                    event.payload = std::make_shared<const std::string>(std::move(operation).value());
                    operation_changes = operation_balance_changes(event, rules.assets, rules.forks);
                } else {
                    operation_changes = make_error(operation.error());
                }
            }
            // An undecodable event is listed by the writers (wallet_balance_undecodable):
            // its account's balances are refused from its block on; its run marks it.
            auto& event_changes = changes.emplace_back();
            if (!operation_changes) continue;
            event_changes.emplace();
            for (const auto& [carrier, change] : *operation_changes) {
                if (carrier != event.role) continue;
                names.push_back(change.account);
                event_changes->push_back(change);
            }
        }
        auto loaded_states = states.load(std::move(names));
        if (!loaded_states) return make_error(loaded_states.error());
        for (int row = 0; row < count; ++row) {
            const std::int64_t block = number_at(result, row, 3);
            if (block != open_block && open_block >= 0) {
                if (auto ended = states.end_block(open_block); !ended) return make_error(ended.error());
            }
            open_block = block;
            const std::string account = PQgetvalue(result, row, 0);
            RunEvent key;
            key.block_num = block;
            key.block_seq = number_at(result, row, 4);
            key.role = role_of_code(static_cast<int>(number_at(result, row, 1))).value_or(Role::Sender);
            key.op_type = static_cast<int>(number_at(result, row, 5));
            const auto& event_changes = changes[static_cast<std::size_t>(row)];
            if (!event_changes) {
                RunEvent marked = key;
                marked.undecodable = true;
                if (auto added = states.add(account, std::move(marked)); !added) return make_error(added.error());
                continue;
            }
            // The event in the run of each account it changes (its own, and the
            // carried changes of others), in the order of their first change.
            std::vector<std::string> changed;
            for (const auto& change : *event_changes) {
                if (std::find(changed.begin(), changed.end(), change.account) == changed.end()) changed.push_back(change.account);
            }
            for (const auto& other : changed) {
                RunEvent run_event = key;
                if (other != account) run_event.carried_by = states.id_of(account);
                for (const auto& change : *event_changes) {
                    if (change.account == other) run_event.changes.push_back(RunChange::of(change));
                }
                if (auto added = states.add(other, std::move(run_event)); !added) return make_error(added.error());
            }
        }
        step.events += count;
    }
    auto closed = pg::exec(conn, "CLOSE wallet_snapshot_events; CLOSE wallet_snapshot_blocks");
    if (!closed) return make_error("snapshots: " + closed.error());
    if (open_block >= 0) {
        if (auto ended = states.end_block(open_block); !ended) return make_error(ended.error());
    }
    auto written = states.write();
    if (!written) return make_error(written.error());
    step.runs = *written;
    // The period's block times for the pages' readers (migration 0029).
    auto timed = pg::exec_params(conn, "SELECT wallet_block_times_refresh($1::integer, $2::integer)",
                                 {std::to_string(through + 1), std::to_string(next)});
    if (!timed) return make_error("snapshots: " + timed.error());
    auto moved = pg::exec_params(conn, "UPDATE wallet_balance_snapshot_state SET through_block = $1::integer",
                                 {std::to_string(next)});
    if (!moved) return make_error("snapshots: " + moved.error());
    auto committed = tx.value().commit();
    if (!committed) return make_error(committed.error());
    // The open runs' previous versions, dead now: their space is reused by
    // the next period's (the table stays about its live size plus a period's
    // rewritten rows, whatever autovacuum's pace).
    auto vacuumed = pg::exec(conn, "VACUUM wallet_balance_open_runs");
    if (!vacuumed) return make_error("snapshots: " + vacuumed.error());
    step.advanced = true;
    step.through = next;
    return step;
}

}  // namespace wallet::store

namespace wallet::store {

Result<bool> cut_balance_runs(PGconn* conn, std::int64_t through) {
    const std::string at = std::to_string(through);
    // The closed runs across the block keep their events up to it; the open
    // runs (whose end is the checkpoint, above the block) too.
    auto across = pg::exec_params(conn,
                                  "DELETE FROM wallet_balance_runs WHERE after_block <= $1::integer AND through_block > $1::integer"
                                  " RETURNING account_id, after_block, encode(state, 'hex'), encode(changes, 'hex')",
                                  {at});
    if (!across) return make_error("runs: " + across.error());
    auto open_across = pg::exec_params(conn,
                                       "DELETE FROM wallet_balance_open_runs WHERE after_block <= $1::integer"
                                       " RETURNING account_id, after_block, encode(state, 'hex'), encode(changes, 'hex')",
                                       {at});
    if (!open_across) return make_error("runs: " + open_across.error());
    pg::BinaryRows cut, open;
    for (PGresult* rows : {across->get(), open_across->get()}) {
        const bool closed = rows == across->get();
        for (int row = 0; row < PQntuples(rows); ++row) {
            const std::int64_t after = number_at(rows, row, 1);
            const auto state = bytes_of_hex(PQgetvalue(rows, row, 2));
            const auto changes = bytes_of_hex(PQgetvalue(rows, row, 3));
            auto events = changes ? decode_run(*changes, after) : Result<std::vector<RunEvent>>(make_error("not hex"));
            if (!state || !events) return make_error("runs: a run after block " + std::to_string(after) + " is unreadable");
            std::erase_if(events.value(), [&](const RunEvent& event) { return event.block_num > through; });
            auto kept = encode_run(*events, after);
            if (!kept) return make_error(kept.error());
            add_run_row(closed ? cut : open, static_cast<std::int32_t>(number_at(rows, row, 0)), after,
                        closed ? std::optional<std::int64_t>(through) : std::nullopt, *state, *kept);
        }
    }
    for (const char* table : {"wallet_balance_runs", "wallet_balance_open_runs"}) {
        auto deleted = pg::exec_params(conn, std::string("DELETE FROM ") + table + " WHERE after_block > $1::integer", {at});
        if (!deleted) return make_error("runs: " + deleted.error());
    }
    if (auto written = copy_runs(conn, std::move(cut), std::move(open)); !written) return written;
    // The snapshots of before 0024, which the previous release's module reads until nginx reloads.
    auto snapshots = pg::exec_params(conn, "DELETE FROM wallet_balance_snapshots WHERE block_num > $1::integer", {at});
    if (!snapshots) return make_error("runs: " + snapshots.error());
    auto timed = pg::exec_params(conn, "SELECT wallet_block_times_refresh($1::integer, $1::integer)", {at});
    if (!timed) return make_error("runs: " + timed.error());
    auto moved = pg::exec_params(conn, "UPDATE wallet_balance_snapshot_state SET through_block = $1::integer", {at});
    if (!moved) return make_error("runs: " + moved.error());
    return true;
}

}  // namespace wallet::store
