#include "wallet/balance_snapshots.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wallet/balance_state.hpp"
#include "wallet/decoder.hpp"
#include "wallet/pg.hpp"

namespace wallet::store {

namespace {

constexpr int kFetchRows = 5000;  // events held at once

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
            states_.emplace(std::move(name), Entry{*id, BalanceState{}, false});
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

    // The changed states as a snapshot at `block`; returns how many.
    Result<std::int64_t> write(std::int64_t block) {
        std::vector<std::int32_t> accounts;
        std::string states = "{";
        for (const auto& [name, entry] : states_) {
            if (!entry.changed) continue;
            const auto bytes = entry.state.encode();
            if (!bytes) return make_error("snapshots: a balance of " + name + " is out of range");
            accounts.push_back(entry.id);
            states += (states.size() > 1 ? "," : "") + hex_of(*bytes);
        }
        if (accounts.empty()) return 0;
        auto written = pg::exec_params(conn_,
                                       "INSERT INTO wallet_balance_snapshots (account_id, block_num, state)"
                                       " SELECT a, $3::integer, decode(s, 'hex') FROM unnest($1::integer[], $2::text[]) AS t(a, s)"
                                       " ON CONFLICT (account_id, block_num) DO UPDATE SET state = EXCLUDED.state",
                                       {integer_array(accounts), states + "}", std::to_string(block)});
        if (!written) return make_error("snapshots: " + written.error());
        return static_cast<std::int64_t>(accounts.size());
    }

private:
    struct Entry {
        std::int32_t id = 0;
        BalanceState state;
        bool changed = false;
    };
    PGconn* conn_;
    AccountIds& ids_;
    std::int64_t through_;
    std::map<std::string, Entry> states_;
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

    // The period's events in replay order, a bounded number at a time.
    auto declared = pg::exec_params(
        conn,
        "DECLARE wallet_snapshot_events NO SCROLL CURSOR FOR"
        " SELECT a.name, e.role, wallet_op_type_name(e.op_type), e.block_num, e.block_seq,"
        " wallet_operation_payload(b.ops -> e.block_seq::text, e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)"
        " FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id JOIN wallet_blocks b ON b.block_num = e.block_num"
        " WHERE e.block_num > $1::integer AND e.block_num <= $2::integer ORDER BY e.block_num, e.block_seq, e.role",
        {std::to_string(through), std::to_string(next)});
    if (!declared) return make_error("snapshots: " + declared.error());
    States states(conn, ids, through);
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
        for (int row = 0; row < count; ++row) {
            WalletEvent event;
            event.account = PQgetvalue(result, row, 0);
            event.role = role_of_code(static_cast<int>(number_at(result, row, 1))).value_or(Role::Sender);
            event.op_type = PQgetvalue(result, row, 2);
            event.block_num = number_at(result, row, 3);
            event.block_seq = number_at(result, row, 4);
            event.payload = std::make_shared<const std::string>(PQgetvalue(result, row, 5));
            const std::pair key{event.block_num, *event.block_seq};
            if (key != operation_key) {
                operation_key = key;
                operation_changes = operation_balance_changes(event, rules.assets, rules.forks);
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
        for (const auto& event_changes : changes) {
            for (const auto& change : event_changes) states.apply(change);
        }
        step.events += count;
    }
    auto closed = pg::exec(conn, "CLOSE wallet_snapshot_events");
    if (!closed) return make_error("snapshots: " + closed.error());
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
