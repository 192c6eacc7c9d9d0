#include "wallet/balance_snapshots.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wallet/balance_runs.hpp"
#include "wallet/balance_state.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/pg.hpp"

namespace wallet::store {

namespace {

constexpr int kFetchRows = 5000;   // events held at once (events read back)
constexpr int kFetchBlocks = 500;  // blocks' stored operations held at once
constexpr int kFetchPending = 2000;  // wallet_balance_pending rows held at once

std::int64_t number_at(PGresult* result, int row, int column) {
    return std::strtoll(PQgetvalue(result, row, column), nullptr, 10);
}

// A binary-format integer column (pg::exec_binary).
std::int32_t int4_at(PGresult* result, int row, int column) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, column));
    return static_cast<std::int32_t>((std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
                                     (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]});
}

std::string_view bytes_at(PGresult* result, int row, int column) {
    return {PQgetvalue(result, row, column), static_cast<std::size_t>(PQgetlength(result, row, column))};
}

std::string integer_array(const std::vector<std::int32_t>& items) {
    std::string out = "{";
    for (const auto item : items) out += (out.size() > 1 ? "," : "") + std::to_string(item);
    return out + "}";
}

// A run's row for binary COPY: a closed run (wallet_balance_runs) with its
// end, an open one (wallet_balance_open_runs, ending at the checkpoint) without.
void add_run_row(pg::BinaryRows& rows, std::int32_t account, std::int64_t after, std::optional<std::int64_t> through,
                 std::string_view state, std::string_view changes) {
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

// The states of the accounts the period changes, by id, each loaded once
// from its last run (its open run, else its last closed run; none: all
// zero), and their runs: the account's events that change its balances
// since the run's start. A run is closed at the end of a block where it
// reaches kRunEvents (appended to wallet_balance_runs, never updated); the
// last one of each account stays open (wallet_balance_open_runs, rewritten
// at the period's end with the events up to it).
class States {
public:
    States(PGconn* conn, std::int64_t through) : conn_(conn), through_(through) {}

    // Loads the states of the accounts not loaded yet.
    Result<bool> load(const std::vector<std::int32_t>& accounts) {
        std::vector<std::int32_t> wanted;
        for (const auto id : accounts) {
            if (!states_.try_emplace(id, Entry{id, BalanceState{}, through_, {}, {}, false, std::nullopt, false}).second) continue;
            wanted.push_back(id);
        }
        if (wanted.empty()) return true;
        // The account's open run, else its last closed one (an index probe each).
        auto rows = pg::exec_binary(conn_,
                                    "SELECT a.id, r.after_block, r.through_block, r.state, r.changes, r.open"
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
            const std::int32_t id = int4_at(rows->get(), row, 0);
            const std::int64_t after = int4_at(rows->get(), row, 1);
            const std::int64_t end = int4_at(rows->get(), row, 2);
            const bool open = PQgetvalue(rows->get(), row, 5)[0] != 0;
            const auto state = bytes_at(rows->get(), row, 3);
            const auto changes = bytes_at(rows->get(), row, 4);
            auto loaded = run_state_at(state, changes, after, through_);
            auto events = open ? decode_run(changes, after) : Result<std::vector<RunEvent>>(std::vector<RunEvent>{});
            if (!loaded || !events) {
                return make_error("runs: the run of account id " + std::to_string(id) + " after " + std::to_string(after) +
                                  " is unreadable: " + (loaded ? events.error() : loaded.error()));
            }
            Entry& entry = states_.at(id);
            entry.state = std::move(loaded).value();
            if (open) {
                // Goes on growing.
                entry.after = after;
                entry.start = std::string(state);
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

    // An event of the account's run, before its changes are applied (they
    // are applied here): starts the account's run at its current state.
    Result<bool> add(std::int32_t account, RunEvent event) {
        Entry& value = states_.at(account);
        if (!value.start) {
            const auto bytes = value.state.encode();
            if (!bytes) return make_error("runs: a balance of account id " + std::to_string(account) + " is out of range");
            value.start = *bytes;
            value.began = true;
        }
        for (const RunChange& change : event.changes) {
            value.state.apply(change.component, change.kind, change.amount, change.other, change.request_id);
        }
        value.events.push_back(std::move(event));
        if (static_cast<std::int64_t>(value.events.size()) == kRunEvents) full_.push_back(&value);
        return true;
    }

    // After every event of `block`: the runs that reached kRunEvents are closed there.
    Result<bool> end_block(std::int64_t block) {
        for (Entry* entry : full_) {
            auto changes = encode_run(entry->events, entry->after);
            if (!changes) return make_error(changes.error());
            add_run_row(closed_, entry->id, entry->after, block, *entry->start, *changes);
            entry->after = block;
            entry->events.clear();
            entry->start.reset();
        }
        full_.clear();
        return true;
    }

    // Writes the period's closed runs and the open runs as they are at its
    // end (binary COPY); returns how many runs were written.
    Result<std::int64_t> write() {
        std::vector<std::int32_t> reopened, replaced, replaced_at;
        pg::BinaryRows open;
        for (auto& [id, value] : states_) {
            if (value.stored_open) reopened.push_back(id);
            // (An account whose events in the period change nothing keeps it.)
            if (value.replaces && value.began) {
                replaced.push_back(id);
                replaced_at.push_back(static_cast<std::int32_t>(*value.replaces));
            }
            if (!value.start) continue;
            auto changes = encode_run(value.events, value.after);
            if (!changes) return make_error(changes.error());
            add_run_row(open, id, value.after, std::nullopt, *value.start, *changes);
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
    std::int64_t through_;
    std::unordered_map<std::int32_t, Entry> states_;  // its nodes stay put: full_ points into it
    std::vector<Entry*> full_;  // runs that reached kRunEvents in the current block
    pg::BinaryRows closed_;  // the closed runs to write
};

// Feeds the period's events, in the pass's order, to the states: each
// under the account whose run it joins (PendingEvent), its block's runs
// closed once the block is done.
class Replay {
public:
    explicit Replay(States& states) : states_(states) {}

    Result<bool> apply(std::vector<PendingEvent>& events) {
        std::vector<std::int32_t> accounts;
        accounts.reserve(events.size());
        for (const auto& pending : events) accounts.push_back(pending.account);
        if (auto loaded = states_.load(accounts); !loaded) return loaded;
        for (auto& pending : events) {
            const std::int64_t block = pending.event.block_num;
            if (block != open_block_ && open_block_ >= 0) {
                if (auto ended = states_.end_block(open_block_); !ended) return ended;
            }
            open_block_ = block;
            if (!pending.event.carried_by) ++events_;
            if (auto added = states_.add(pending.account, std::move(pending.event)); !added) return added;
        }
        return true;
    }

    Result<bool> finish() {
        if (open_block_ < 0) return true;
        return states_.end_block(open_block_);
    }

    // Events replayed (each event once, not once per account it changes).
    std::int64_t events() const { return events_; }

private:
    States& states_;
    std::int64_t open_block_ = -1;
    std::int64_t events_ = 0;
};

// The key an event sorts by in its block (the events read back are ordered
// by block_seq and role; an operation's events of one role by account) and
// is written once by.
std::tuple<std::int64_t, int, std::int32_t> event_key(const PendingEvent& pending) {
    return {pending.event.block_seq, role_code(pending.event.role), pending.event.carried_by.value_or(pending.account)};
}

// The events of a block written by several writes (a re-run inserting what
// a first write had not; rows loaded again by hand): each event once, from
// the first row that holds it, in the pass's order.
std::vector<PendingEvent> merge_block(std::vector<std::vector<PendingEvent>>& rows) {
    if (rows.size() == 1) return std::move(rows.front());
    struct Item {
        std::size_t row;
        PendingEvent* pending;
    };
    std::vector<Item> items;
    for (std::size_t row = 0; row < rows.size(); ++row) {
        for (auto& pending : rows[row]) items.push_back({row, &pending});
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return event_key(*a.pending) < event_key(*b.pending); });
    std::vector<PendingEvent> merged;
    merged.reserve(items.size());
    for (std::size_t at = 0; at < items.size();) {
        const auto key = event_key(*items[at].pending);
        const std::size_t row = items[at].row;
        for (; at < items.size() && event_key(*items[at].pending) == key; ++at) {
            if (items[at].row == row) merged.push_back(std::move(*items[at].pending));
        }
    }
    return merged;
}

// The period's events from wallet_balance_pending (migration 0031), in
// block order.
Result<bool> replay_pending(PGconn* conn, Replay& replay, std::int64_t through, std::int64_t next) {
    auto declared = pg::exec_params(conn,
                                    "DECLARE wallet_balance_pending_rows NO SCROLL CURSOR FOR"
                                    " SELECT block_num, events FROM wallet_balance_pending"
                                    " WHERE block_num > $1::integer AND block_num <= $2::integer ORDER BY block_num",
                                    {std::to_string(through), std::to_string(next)});
    if (!declared) return make_error("snapshots: " + declared.error());
    std::int64_t held_block = -1;
    std::vector<std::vector<PendingEvent>> held;  // the rows of held_block (more may follow in the next fetch)
    for (;;) {
        auto rows = pg::exec_binary(conn, "FETCH " + std::to_string(kFetchPending) + " FROM wallet_balance_pending_rows");
        if (!rows) return make_error("snapshots: " + rows.error());
        const int count = PQntuples(rows->get());
        std::vector<PendingEvent> ready;
        for (int row = 0; row < count; ++row) {
            const std::int64_t block = int4_at(rows->get(), row, 0);
            auto events = decode_pending(bytes_at(rows->get(), row, 1), block);
            if (!events) return make_error("snapshots: block " + std::to_string(block) + ": " + events.error());
            if (block != held_block && !held.empty()) {
                for (auto& pending : merge_block(held)) ready.push_back(std::move(pending));
                held.clear();
            }
            held_block = block;
            held.push_back(std::move(events).value());
        }
        if (count == 0 && !held.empty()) {
            for (auto& pending : merge_block(held)) ready.push_back(std::move(pending));
            held.clear();
        }
        if (auto applied = replay.apply(ready); !applied) return applied;
        if (count == 0) break;
    }
    auto closed = pg::exec(conn, "CLOSE wallet_balance_pending_rows");
    if (!closed) return make_error("snapshots: " + closed.error());
    return true;
}

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

// The period's events read back from wallet_events, with their changes
// read from the blocks' stored operations: for events no writer kept
// pending rows of (stored before migration 0031, or through the view).
Result<bool> replay_stored_events(PGconn* conn, AccountIds& ids, const BalanceRules& rules, Replay& replay,
                                  std::int64_t through, std::int64_t next) {
    // The period's events in replay order, a bounded number at a time, and
    // beside them its blocks' stored operations: each block's ops are read
    // once, for all its events (not parsed again by PostgreSQL per event).
    auto declared = pg::exec_params(
        conn,
        "DECLARE wallet_snapshot_events NO SCROLL CURSOR FOR"
        " SELECT a.name, e.role, wallet_op_type_name(e.op_type), e.block_num, e.block_seq, e.op_type, e.account_id"
        " FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
        " WHERE e.block_num > $1::integer AND e.block_num <= $2::integer ORDER BY e.block_num, e.block_seq, e.role",
        {std::to_string(through), std::to_string(next)});
    if (!declared) return make_error("snapshots: " + declared.error());
    BlockOperations operations(conn, through, next);
    if (auto opened = operations.open(); !opened) return make_error(opened.error());
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
                if (change.account != event.account) names.push_back(storable_text(change.account));
                event_changes->push_back(change);
            }
        }
        auto resolved = ids.resolve_names(conn, std::move(names));
        if (!resolved) return make_error(resolved.error());
        std::vector<PendingEvent> events;
        for (int row = 0; row < count; ++row) {
            const std::string account = PQgetvalue(result, row, 0);
            const auto account_id = static_cast<std::int32_t>(number_at(result, row, 6));
            RunEvent key;
            key.block_num = number_at(result, row, 3);
            key.block_seq = number_at(result, row, 4);
            key.role = role_of_code(static_cast<int>(number_at(result, row, 1))).value_or(Role::Sender);
            key.op_type = static_cast<int>(number_at(result, row, 5));
            const auto& event_changes = changes[static_cast<std::size_t>(row)];
            if (!event_changes) {
                key.undecodable = true;
                events.push_back({account_id, std::move(key)});
                continue;
            }
            // The event in the run of each account it changes (its own, and the
            // carried changes of others), in the order of their first change.
            std::vector<std::string> changed;
            for (const auto& change : *event_changes) {
                if (std::find(changed.begin(), changed.end(), change.account) == changed.end()) changed.push_back(change.account);
            }
            for (const auto& other : changed) {
                PendingEvent pending{account_id, key};
                if (other != account) {
                    const auto id = ids.find(storable_text(other));
                    if (!id) return make_error("account " + other + " has no id");
                    pending.account = *id;
                    pending.event.carried_by = account_id;
                }
                for (const auto& change : *event_changes) {
                    if (change.account == other) pending.event.changes.push_back(RunChange::of(change));
                }
                events.push_back(std::move(pending));
            }
        }
        if (auto applied = replay.apply(events); !applied) return applied;
    }
    auto closed = pg::exec(conn, "CLOSE wallet_snapshot_events; CLOSE wallet_snapshot_blocks");
    if (!closed) return make_error("snapshots: " + closed.error());
    return true;
}

}  // namespace

void PendingBalanceChanges::add(const WalletEvent& event, std::int32_t account_id,
                                const Result<std::vector<CarriedBalanceChange>>& changes) {
    Event kept{event.block_num, event.block_seq.value_or(0), event.role, operation_type_id(event.op_type), account_id, !changes, {}};
    if (changes) {
        for (const auto& [carrier, change] : *changes) {
            if (carrier != event.role) continue;
            kept.changes.emplace_back(change.account == event.account ? std::string() : storable_text(change.account),
                                      RunChange::of(change));
        }
        // An event that changes no balance joins no run.
        if (kept.changes.empty()) return;
    }
    events_.push_back(std::move(kept));
}

Result<bool> PendingBalanceChanges::write(PGconn* conn, AccountIds& ids) {
    if (events_.empty()) return true;
    std::vector<std::string> names;
    for (const auto& event : events_) {
        for (const auto& [name, change] : event.changes) {
            if (!name.empty()) names.push_back(name);
        }
    }
    if (!names.empty()) {
        auto resolved = ids.resolve_names(conn, std::move(names));
        if (!resolved) return make_error(resolved.error());
    }
    // The pass's order within a block (event_key).
    std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
        return std::tuple(a.block_num, a.block_seq, role_code(a.role), a.account) <
               std::tuple(b.block_num, b.block_seq, role_code(b.role), b.account);
    });
    pg::BinaryRows rows;
    std::vector<PendingEvent> block;
    const auto flush = [&](std::int64_t block_num) -> Result<bool> {
        auto bytes = encode_pending(block);
        if (!bytes) return make_error("balance pending: " + bytes.error());
        rows.row(2);
        rows.int4(static_cast<std::int32_t>(block_num));
        rows.bytes(*bytes);
        block.clear();
        return true;
    };
    for (std::size_t at = 0; at < events_.size(); ++at) {
        const Event& event = events_[at];
        RunEvent key;
        key.block_num = event.block_num;
        key.block_seq = event.block_seq;
        key.role = event.role;
        key.op_type = event.op_type;
        if (event.undecodable) {
            key.undecodable = true;
            block.push_back({event.account, std::move(key)});
        } else {
            // The event under each account it changes, in the order of their first change.
            const std::size_t first = block.size();
            for (const auto& [name, change] : event.changes) {
                std::int32_t id = event.account;
                if (!name.empty()) {
                    const auto found = ids.find(name);
                    if (!found) return make_error("account " + name + " has no id");
                    id = *found;
                }
                auto joined = std::find_if(block.begin() + static_cast<std::ptrdiff_t>(first), block.end(),
                                           [&](const PendingEvent& pending) { return pending.account == id; });
                if (joined == block.end()) {
                    block.push_back({id, key});
                    if (id != event.account) block.back().event.carried_by = event.account;
                    joined = block.end() - 1;
                }
                joined->event.changes.push_back(change);
            }
        }
        if (at + 1 == events_.size() || events_[at + 1].block_num != event.block_num) {
            if (auto flushed = flush(event.block_num); !flushed) return flushed;
        }
    }
    events_.clear();
    auto written = pg::copy_binary(conn, "wallet_balance_pending", "block_num, events", std::move(rows));
    if (!written) return make_error("balance pending: " + written.error());
    return true;
}

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
                                " FROM wallet_loading_shards() l), max(b.end_block)) END FROM backfill_shards b), 0),"
                                " c.events_read_through"
                                " FROM wallet_balance_snapshot_state c, wallet_store_state s FOR UPDATE OF c");
    if (!state) return make_error("snapshots: " + state.error());
    if (PQntuples(state->get()) != 1) return make_error("snapshots: no checkpoint row");
    const std::int64_t through = number_at(state->get(), 0, 0);
    const std::int64_t loaded = std::min(number_at(state->get(), 0, 1), limit_block);
    const std::int64_t events_read_through = number_at(state->get(), 0, 2);
    step.through = through;
    const std::int64_t next = (through / period_blocks + 1) * period_blocks;
    if (next > loaded) return step;

    States states(conn, through);
    Replay replay(states);
    auto replayed = through < events_read_through ? replay_stored_events(conn, ids, rules, replay, through, next)
                                                  : replay_pending(conn, replay, through, next);
    if (!replayed) return make_error(replayed.error());
    if (auto finished = replay.finish(); !finished) return make_error(finished.error());
    step.events = replay.events();
    auto written = states.write();
    if (!written) return make_error(written.error());
    step.runs = *written;
    // The pass's input up to the period's end is done with (rows of blocks
    // below the checkpoint too: a re-run's rows of passed blocks).
    auto passed = pg::exec_params(conn, "DELETE FROM wallet_balance_pending WHERE block_num <= $1::integer", {std::to_string(next)});
    if (!passed) return make_error("snapshots: " + passed.error());
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
    // Caught up: the pass's input it deleted is freed (after a bulk load's
    // pass, the whole table: VACUUM truncates its empty pages).
    if (next + period_blocks > loaded) {
        auto freed = pg::exec(conn, "VACUUM wallet_balance_pending");
        if (!freed) return make_error("snapshots: " + freed.error());
    }
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
