#include "wallet/balance_snapshots.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// The states of the accounts the period touches, each loaded once from its
// last snapshot at or below the checkpoint (none: all zero).
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
            wanted.push_back(*id);
            name_of[*id] = name;
            states_.emplace(std::move(name), Entry{*id, BalanceState{}, false, 0});
        }
        auto rows = pg::exec_params(conn_,
                                    "SELECT DISTINCT ON (s.account_id) s.account_id, encode(s.state, 'hex')"
                                    " FROM wallet_balance_snapshots s"
                                    " WHERE s.account_id = ANY($1::integer[]) AND s.block_num <= $2::integer"
                                    " ORDER BY s.account_id, s.block_num DESC",
                                    {integer_array(wanted), std::to_string(through_)});
        if (!rows) return make_error("snapshots: " + rows.error());
        for (int row = 0; row < PQntuples(rows->get()); ++row) {
            const auto id = static_cast<std::int32_t>(number_at(rows->get(), row, 0));
            const auto bytes = bytes_of_hex(PQgetvalue(rows->get(), row, 1));
            auto state = bytes ? BalanceState::decode(*bytes) : std::nullopt;
            if (!state) return make_error("snapshots: the state of account id " + std::to_string(id) + " is unreadable");
            states_.at(name_of.at(id)).state = std::move(*state);
        }
        return true;
    }

    void apply(const BalanceChange& change) {
        Entry& entry = states_.at(change.account);
        entry.state.apply(change);
        entry.changed = true;
    }

    // An event that a read of `account`'s balances replays after its last
    // snapshot: one of its own, or one carrying a change of it.
    void count_replayed(const std::string& account) {
        auto& entry = *states_.find(account);
        ++entry.second.replayed;
        touched_.push_back(&entry);
    }

    // After every event of `block`: a snapshot there of each account with
    // kSnapshotEvents or more events since its last one, so that a read
    // replays fewer than that whatever the account's traffic.
    Result<bool> end_block(std::int64_t block) {
        for (auto* entry : touched_) {
            if (entry->second.replayed < kSnapshotEvents) continue;
            if (auto kept = keep(*entry, block); !kept) return kept;
        }
        touched_.clear();
        return true;
    }

    // The states changed or replayed since their last snapshot, at `block`
    // (the period's end), and the snapshots kept within the period; returns
    // how many.
    Result<std::int64_t> write(std::int64_t block) {
        for (auto& entry : states_) {
            if (!entry.second.changed && entry.second.replayed == 0) continue;
            if (auto kept = keep(entry, block); !kept) return make_error(kept.error());
        }
        if (accounts_.empty()) return 0;
        auto written = pg::exec_params(conn_,
                                       "INSERT INTO wallet_balance_snapshots (account_id, block_num, state)"
                                       " SELECT a, b, decode(s, 'hex') FROM unnest($1::integer[], $2::integer[], $3::text[]) AS t(a, b, s)"
                                       " ON CONFLICT (account_id, block_num) DO UPDATE SET state = EXCLUDED.state",
                                       {integer_array(accounts_), integer_array(blocks_), states_text_ + "}"});
        if (!written) return make_error("snapshots: " + written.error());
        return static_cast<std::int64_t>(accounts_.size());
    }

private:
    struct Entry {
        std::int32_t id = 0;
        BalanceState state;
        bool changed = false;   // since its last snapshot
        std::int64_t replayed = 0;  // events a read replays after its last snapshot
    };

    // The account's state as a snapshot at `block`, written with the period's.
    Result<bool> keep(std::pair<const std::string, Entry>& entry, std::int64_t block) {
        const auto bytes = entry.second.state.encode();
        if (!bytes) return make_error("snapshots: a balance of " + entry.first + " is out of range");
        accounts_.push_back(entry.second.id);
        blocks_.push_back(static_cast<std::int32_t>(block));
        states_text_ += (states_text_.size() > 1 ? "," : "") + hex_of(*bytes);
        entry.second.changed = false;
        entry.second.replayed = 0;
        return true;
    }

    PGconn* conn_;
    AccountIds& ids_;
    std::int64_t through_;
    std::map<std::string, Entry> states_;
    std::vector<std::pair<const std::string, Entry>*> touched_;  // replayed in the current block (repeats)
    // The snapshots to write: accounts, blocks, states as a text[] literal.
    std::vector<std::int32_t> accounts_;
    std::vector<std::int32_t> blocks_;
    std::string states_text_ = "{";
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
        " SELECT a.name, e.role, wallet_op_type_name(e.op_type), e.block_num, e.block_seq"
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
        std::vector<std::vector<BalanceChange>> changes;
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
            // its account's balances are refused from its block on.
            auto& event_changes = changes.emplace_back();
            if (!operation_changes) continue;
            for (const auto& [carrier, change] : *operation_changes) {
                if (carrier != event.role) continue;
                names.push_back(change.account);
                event_changes.push_back(change);
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
            states.count_replayed(account);
            const auto& event_changes = changes[static_cast<std::size_t>(row)];
            for (const auto& change : event_changes) states.apply(change);
            // The other accounts it carries changes of read it too (wallet_balance_carried), once each.
            for (std::size_t i = 0; i < event_changes.size(); ++i) {
                const std::string& other = event_changes[i].account;
                if (other == account) continue;
                const auto first = std::find_if(event_changes.begin(), event_changes.end(),
                                                [&](const BalanceChange& c) { return c.account == other; });
                if (first == event_changes.begin() + static_cast<std::ptrdiff_t>(i)) states.count_replayed(other);
            }
        }
        step.events += count;
    }
    auto closed = pg::exec(conn, "CLOSE wallet_snapshot_events; CLOSE wallet_snapshot_blocks");
    if (!closed) return make_error("snapshots: " + closed.error());
    if (open_block >= 0) {
        if (auto ended = states.end_block(open_block); !ended) return make_error(ended.error());
    }
    auto written = states.write(next);
    if (!written) return make_error(written.error());
    step.snapshots = *written;
    auto moved = pg::exec_params(conn, "UPDATE wallet_balance_snapshot_state SET through_block = $1::integer",
                                 {std::to_string(next)});
    if (!moved) return make_error("snapshots: " + moved.error());
    auto committed = tx.value().commit();
    if (!committed) return make_error(committed.error());
    step.advanced = true;
    step.through = next;
    return step;
}

}  // namespace wallet::store
