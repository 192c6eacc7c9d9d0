#include "api_balances.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>

#include "jsonrpc_writer.hpp"
#include "wallet/balance_runs.hpp"
#include "wallet/balance_state.hpp"
#include "wallet/decimal.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"
#include "wallet/operation_types.hpp"

namespace wallet::api {

namespace {

// The largest block_seq whose key (block_seq * 100 + role) fits the statement's integer for every role.
constexpr std::int64_t kLargestKeyBlockSeq = std::numeric_limits<std::int32_t>::max() / 100 - 1;

namespace col = balances_column;
using Units = Decimal::Units;
using C = BalanceComponent;

std::int64_t number(PGresult* rows, int row, int column) { return std::strtoll(PQgetvalue(rows, row, column), nullptr, 10); }
std::optional<std::int64_t> optional_number(PGresult* rows, int row, int column) {
    if (is_null(rows, row, column)) return std::nullopt;
    return number(rows, row, column);
}

RpcError unavailable(std::string message) { return RpcError{kBalanceUnavailable, std::move(message)}; }

std::string time_text(std::int64_t epoch_seconds) {
    const auto time = Timestamp::from_seconds(epoch_seconds);
    return time ? time->to_iso_z() : std::string();
}

void append_time(std::string& out, std::int64_t epoch_seconds) { json::append_quoted(out, time_text(epoch_seconds)); }

}  // namespace

// The one row of the readiness checks (docs/wallet-history-api.md, get_balances).
std::optional<RpcError> check_readiness(const BalanceQuery& query, PGresult* rows, int header) {
    const auto indexed = optional_number(rows, header, col::kN1);
    if (!indexed) return unavailable("nothing is indexed yet");
    if (query.block && *query.block > *indexed) {
        return RpcError{jsonrpc::kInvalidParams, "block above indexed_block " + std::to_string(*indexed)};
    }
    const std::int64_t block = number(rows, header, col::kN2);
    const auto first = optional_number(rows, header, col::kN4);
    if (first != 1) {
        return unavailable("the store's history starts at block " + (first ? std::to_string(*first) : std::string("none")) +
                           ", not 1: a balance needs every block from 1");
    }
    if (const auto loading = optional_number(rows, header, col::kN5); loading && *loading <= block) {
        return unavailable("blocks from " + std::to_string(*loading) + " are still loading");
    }
    if (!is_null(rows, header, col::kT1) && number(rows, header, col::kT1) <= block) {
        return unavailable(std::string("blocks ") + PQgetvalue(rows, header, col::kT1) + ".." +
                           PQgetvalue(rows, header, col::kT2) +
                           " were loaded by an older decoder version: run wallet-backfill over them");
    }
    if (is_null(rows, header, col::kN3)) return RpcError{jsonrpc::kInvalidParams, "unknown account"};
    if (!is_null(rows, header, col::kT3)) {
        return unavailable(std::string("the balance changes of block ") + PQgetvalue(rows, header, col::kT3) + " (" +
                           PQgetvalue(rows, header, col::kT4) + ") of " + query.account +
                           " cannot be read by this decoder version: a decoder that reads them must re-run the range");
    }
    return std::nullopt;
}

BalanceRows read_balance_rows(PGresult* rows) {
    BalanceRows out;
    for (int row = 0; row < PQntuples(rows); ++row) {
        const std::int64_t kind = number(rows, row, col::kKind);
        if (kind == 0) {
            out.header = row;
        } else if (kind == 1) {
            out.snapshots.push_back(row);
        } else if (kind == 2) {
            const auto role = parse_role(PQgetvalue(rows, row, col::kT2));
            out.steps.push_back({number(rows, row, col::kN1), number(rows, row, col::kN2), role ? role_code(*role) : 0, row});
        } else if (kind == 3) {
            out.marks.push_back(row);
        } else {
            out.extras.push_back(row);
        }
    }
    std::sort(out.steps.begin(), out.steps.end(), [](const BalanceStep& a, const BalanceStep& b) { return a.key() < b.key(); });
    return out;
}

std::optional<RememberedAccount> balance_rows_account(PGresult* rows) {
    for (int row = 0; row < PQntuples(rows); ++row) {
        if (number(rows, row, col::kKind) != 0) continue;
        if (is_null(rows, row, col::kN3) || is_null(rows, row, col::kN6)) return std::nullopt;
        return RememberedAccount{number(rows, row, col::kN3), number(rows, row, col::kN6)};
    }
    return std::nullopt;
}

std::optional<BalanceState> run_row_state(PGresult* rows, int row) {
    const auto state = bytes_of_hex(PQgetvalue(rows, row, col::kT1));
    const auto changes = bytes_of_hex(PQgetvalue(rows, row, col::kT2));
    if (!state || !changes) return std::nullopt;
    auto at = run_state_at(*state, *changes, number(rows, row, col::kN3), number(rows, row, col::kN1));
    return at ? std::optional<BalanceState>(std::move(at).value()) : std::nullopt;
}

std::optional<RpcError> apply_step(BalanceState& state, std::string_view account, PGresult* rows, const BalanceStep& step,
                                   const store::BalanceRules& rules, bool* changed) {
    WalletEvent event;
    event.account = PQgetvalue(rows, step.row, col::kT1);
    event.role = role_of_code(step.role).value_or(Role::Sender);
    event.op_type = PQgetvalue(rows, step.row, col::kT3);
    event.block_num = step.block;
    event.block_seq = step.block_seq;
    event.payload = std::make_shared<const std::string>(PQgetvalue(rows, step.row, col::kT4));
    auto changes = balance_changes(event, rules.assets, rules.forks);
    if (!changes) {
        // The writers list such events (wallet_balance_undecodable); a
        // carried change of another account's event is refused here.
        return unavailable("the balance changes of block " + std::to_string(step.block) + " (" + event.op_type +
                           ") cannot be read by this decoder version");
    }
    if (changed) *changed = false;
    for (const auto& change : *changes) {
        if (change.account != account) continue;
        state.apply(change);
        if (changed) *changed = true;
    }
    return std::nullopt;
}

void append_component_value(std::string& out, BalanceComponent component, BalanceState::Units units) {
    const int precision = component_precision(component);
    auto text = Decimal::from_units(units, precision).value().to_string(precision).value();
    if (precision == 0) {
        out += text;
    } else {
        out += '"' + text + '"';
    }
}

namespace {

// The block a state is at, and for get_balances at a time that block's time.
struct StateAt {
    std::int64_t block = 0;
    std::optional<std::int64_t> epoch;
};

std::string balances_json(const BalanceQuery& query, const StateAt& at, const BalanceState& state) {
    std::string out = "{\"account\":";
    json::append_quoted(out, query.account);
    out += ",\"block\":" + std::to_string(at.block);
    if (at.epoch) {
        out += ",\"timestamp\":";
        append_time(out, *at.epoch);
    }
    out += ",\"balances\":{";
    for (std::size_t index = 0; index < kBalanceComponentCount; ++index) {
        const auto component = static_cast<C>(index);
        if (index > 0) out += ',';
        out += '"';
        out += component_name(component);
        out += "\":";
        append_component_value(out, component, state.value(component));
    }
    return out + "}}";
}

std::string delegations_json(const BalanceQuery& query, const StateAt& at, const BalanceState& state) {
    std::string out = "{\"account\":";
    json::append_quoted(out, query.account);
    out += ",\"block\":" + std::to_string(at.block);
    // balance_tracker's names: outgoing to each delegatee, incoming from each delegator.
    for (const bool outgoing : {true, false}) {
        out += outgoing ? ",\"outgoing_delegations\":[" : "],\"incoming_delegations\":[";
        bool first = true;
        for (const auto& [key, vests] : state.delegations()) {
            if (key.first != outgoing) continue;
            out += first ? "{" : ",{";
            first = false;
            out += outgoing ? "\"delegatee\":" : "\"delegator\":";
            json::append_quoted(out, key.second);
            out += ",\"amount\":";
            append_component_value(out, C::delegated_vests, vests);
            out += '}';
        }
    }
    return out + "]}";
}

// get_balances at a time, before the readiness checks: a time after
// indexed_block's is refused (the blocks after it, not all stored yet, may
// be at or before it).
std::optional<RpcError> check_time_indexed(const BalanceQuery& query, PGresult* result, int header, int time_row) {
    if (!query.time || is_null(result, header, col::kN1)) return std::nullopt;  // nothing indexed: the readiness says so
    if (time_row < 0) return RpcError{jsonrpc::kInternalError, "internal error"};
    const auto indexed_time = optional_number(result, time_row, col::kN3);
    if (indexed_time && query.time->seconds() <= *indexed_time) return std::nullopt;
    return RpcError{jsonrpc::kInvalidParams,
                    "time after indexed_time " + (indexed_time ? time_text(*indexed_time) : std::string("(none)"))};
}

// After them: a time before the first stored block, or before anything of
// the account (no snapshot, no event up to it: it did not exist yet).
std::optional<RpcError> check_time_stored(PGresult* result, const BalanceRows& rows, int time_row) {
    if (is_null(result, time_row, col::kN1)) {
        std::string first;
        if (!is_null(result, time_row, col::kN4)) {
            first = " " + std::string(PQgetvalue(result, time_row, col::kN4)) + " (" +
                    time_text(number(result, time_row, col::kN5)) + ")";
        }
        return RpcError{jsonrpc::kInvalidParams, "time before the store's first block" + first};
    }
    if (rows.snapshots.empty() && rows.steps.empty()) {
        return RpcError{jsonrpc::kInvalidParams, "time before the account's first event"};
    }
    return std::nullopt;
}

// The account's state at the header's block, from get_balances' rows.
template <typename Json>
BalancesAnswer state_answer(const BalanceQuery& query, PGresult* result, const store::BalanceRules& rules, Json json) {
    BalancesAnswer answer;
    const BalanceRows rows = read_balance_rows(result);
    if (rows.header < 0) {
        answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
        return answer;
    }
    // At a time: where it falls among the stored blocks (kind 3, migration 0022).
    const int time_row = query.time && !rows.marks.empty() ? rows.marks.front() : -1;
    if (auto error = check_time_indexed(query, result, rows.header, time_row)) {
        answer.error = std::move(error);
        return answer;
    }
    if (auto error = check_readiness(query, result, rows.header)) {
        answer.error = std::move(error);
        return answer;
    }
    StateAt at{number(result, rows.header, col::kN2), std::nullopt};
    if (time_row >= 0) {
        if (auto error = check_time_stored(result, rows, time_row)) {
            answer.error = std::move(error);
            return answer;
        }
        at = StateAt{number(result, time_row, col::kN1), number(result, time_row, col::kN2)};
    }
    BalanceState state;
    if (!rows.snapshots.empty()) {
        auto decoded = run_row_state(result, rows.snapshots.front());
        if (!decoded) {
            answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
            return answer;
        }
        state = std::move(*decoded);
    }
    for (const BalanceStep& step : rows.steps) {
        if (auto error = apply_step(state, query.account, result, step, rules)) {
            answer.error = std::move(error);
            return answer;
        }
    }
    answer.result = json(query, at, state);
    return answer;
}

}  // namespace

BalancesAnswer balances_answer(const BalanceQuery& query, PGresult* rows, const store::BalanceRules& rules) {
    return state_answer(query, rows, rules, balances_json);
}

BalancesAnswer delegations_answer(const BalanceQuery& query, PGresult* rows, const store::BalanceRules& rules) {
    return state_answer(query, rows, rules, delegations_json);
}

namespace {

// The rows of a history or period statement up to the replay: the header
// checked and the state of its (first) snapshot.
struct Replay {
    BalanceRows rows;
    BalanceState state;
    std::optional<RpcError> error;
};

Replay start_replay(const std::string& account, PGresult* result) {
    Replay replay{read_balance_rows(result), {}, {}};
    if (replay.rows.header < 0) {
        replay.error = RpcError{jsonrpc::kInternalError, "internal error"};
    } else if (auto error = check_readiness(BalanceQuery{account, std::nullopt, std::nullopt}, result, replay.rows.header)) {
        replay.error = std::move(error);
    }
    return replay;
}

// balance_tracker's three members of a move from `before` to `after`.
void append_balance_move(std::string& out, BalanceComponent component, BalanceState::Units before,
                         BalanceState::Units after) {
    out += ",\"prev_balance\":";
    append_component_value(out, component, before);
    out += ",\"balance\":";
    append_component_value(out, component, after);
    out += ",\"balance_change\":";
    append_component_value(out, component, after - before);
}

// The start of a history or aggregation result: the account and component.
std::string component_result_head(const BalanceHistoryQuery& query) {
    std::string out = "{\"account\":";
    json::append_quoted(out, query.account);
    out += ",\"component\":";
    json::append_quoted(out, component_name(query.component));
    return out;
}

// One event of a history page: from a walked change run (its decoded
// changes) or a row of kind 2 (replayed from its operation), with what the
// page prints of it.
struct PageEvent {
    std::int64_t block = 0;
    std::int64_t block_seq = 0;
    int role = 0;  // role_code
    std::string_view role_name;
    std::string_view op_type;
    std::string_view event_account;
    std::int64_t epoch = 0;
    const RunEvent* run = nullptr;      // its changes, from a run
    const BalanceStep* step = nullptr;  // else its row
    auto key() const { return std::tie(block, block_seq, role); }
};

// One change of the component: the event and the value before and after.
struct ChangeRow {
    const PageEvent* event = nullptr;
    BalanceState::Units before = 0;
    BalanceState::Units after = 0;
};

void append_change_row(std::string& out, const BalanceHistoryQuery& query, const ChangeRow& change) {
    const PageEvent& event = *change.event;
    out += "{\"block_num\":" + std::to_string(event.block);
    out += ",\"block_seq\":" + std::to_string(event.block_seq);
    out += ",\"op_type\":";
    json::append_quoted(out, event.op_type);
    out += ",\"role\":";
    json::append_quoted(out, event.role_name);
    // A change carried by another account's event (a routed power-down
    // payment): that event's account.
    if (event.event_account != query.account) {
        out += ",\"event_account\":";
        json::append_quoted(out, event.event_account);
    }
    out += ",\"timestamp\":";
    append_time(out, event.epoch);
    append_balance_move(out, query.component, change.before, change.after);
    out += '}';
}

std::string position_cursor(const BalanceHistoryQuery& query, const PageEvent& event, const CursorCodec& cursors) {
    CursorPosition position;
    if (auto time = Timestamp::from_seconds(event.epoch)) position.timestamp = *time;
    position.block_num = event.block;
    position.block_seq = static_cast<std::int32_t>(event.block_seq);
    position.role = std::string(event.role_name);
    return cursors.encode(position, query.account, balance_history_fingerprint(query));
}

// A page's events in replay order and the state before the first: the
// walked runs' events below the page's upper key (kind 3: block, key) and
// the rows of kind 2 (migration 0029); `failed` when a run is unreadable.
struct PageEvents {
    BalanceState state;
    std::vector<std::vector<RunEvent>> runs;  // owns the runs' events
    std::vector<PageEvent> events;
    // The block of a snapshot of before 0024 (a run without events after block 0) where the walk
    // stopped: the account's history goes on below it, on a next page.
    std::optional<std::int64_t> snapshot_block;
    bool failed = false;
};

PageEvents page_events(const BalanceHistoryQuery& query, PGresult* result, const BalanceRows& rows) {
    PageEvents out;
    const int mark = rows.marks.front();
    const std::int64_t upper_block = number(result, mark, col::kN2);
    const std::int64_t upper_key = number(result, mark, col::kN3);
    std::map<std::int64_t, std::int64_t> times;  // block -> epoch (kind 4)
    std::map<std::int64_t, std::string_view> names;  // account id -> name (kind 5)
    for (const int row : rows.extras) {
        if (number(result, row, col::kKind) == 4 && !is_null(result, row, col::kN2)) {
            times[number(result, row, col::kN1)] = number(result, row, col::kN2);
        } else if (number(result, row, col::kKind) == 5) {
            names[number(result, row, col::kN1)] = PQgetvalue(result, row, col::kT1);
        }
    }
    // The runs oldest first: the state at the oldest one's start, then their events.
    std::vector<int> runs = rows.snapshots;
    std::sort(runs.begin(), runs.end(),
              [&](int a, int b) { return number(result, a, col::kN3) < number(result, b, col::kN3); });
    out.runs.reserve(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const int row = runs[i];
        const auto changes = bytes_of_hex(PQgetvalue(result, row, col::kT2));
        auto decoded = changes ? decode_run(*changes, number(result, row, col::kN3))
                               : Result<std::vector<RunEvent>>(make_error("not hex"));
        if (!decoded) {
            out.failed = true;
            return out;
        }
        if (i == 0) {
            const auto state = bytes_of_hex(PQgetvalue(result, row, col::kT1));
            auto start = state ? BalanceState::decode(*state) : std::nullopt;
            if (!start) {
                out.failed = true;
                return out;
            }
            out.state = std::move(*start);
            const std::int64_t after = number(result, row, col::kN3);
            if (decoded->empty() && after > 0) out.snapshot_block = after;
        }
        out.runs.push_back(std::move(decoded).value());
    }
    for (const auto& run : out.runs) {
        for (const RunEvent& event : run) {
            const int role = role_code(event.role);
            if (event.block_num > upper_block ||
                (event.block_num == upper_block && event.block_seq * 100 + role >= upper_key)) {
                continue;
            }
            PageEvent& page = out.events.emplace_back();
            page.block = event.block_num;
            page.block_seq = event.block_seq;
            page.role = role;
            page.role_name = wallet::role_name(event.role);
            const auto op = static_cast<std::size_t>(event.op_type);
            page.op_type = op < kOperationTypes.size() ? kOperationTypes[op] : std::string_view();
            page.event_account = query.account;
            if (event.carried_by) {
                const auto name = names.find(*event.carried_by);
                page.event_account = name == names.end() ? std::string_view() : name->second;
            }
            const auto time = times.find(event.block_num);
            page.epoch = time == times.end() ? 0 : time->second;
            page.run = &event;
        }
    }
    for (const BalanceStep& step : rows.steps) {
        PageEvent& page = out.events.emplace_back();
        page.block = step.block;
        page.block_seq = step.block_seq;
        page.role = step.role;
        page.role_name = PQgetvalue(result, step.row, col::kT2);
        page.op_type = PQgetvalue(result, step.row, col::kT3);
        page.event_account = PQgetvalue(result, step.row, col::kT1);
        page.epoch = number(result, step.row, col::kN3);
        page.step = &step;
    }
    std::sort(out.events.begin(), out.events.end(), [](const PageEvent& a, const PageEvent& b) { return a.key() < b.key(); });
    return out;
}

}  // namespace

BalancesAnswer balance_history_answer(const BalanceHistoryQuery& query, PGresult* result, const store::BalanceRules& rules,
                                      const CursorCodec& cursors) {
    BalancesAnswer answer;
    Replay replay = start_replay(query.account, result);
    if (replay.error || replay.rows.marks.empty()) {
        answer.error = replay.error.value_or(RpcError{jsonrpc::kInternalError, "internal error"});
        return answer;
    }
    PageEvents page = page_events(query, result, replay.rows);
    if (page.failed) {
        answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
        return answer;
    }
    // Replayed in order; the page looks at the newest `scan` events at or
    // above the window's first block that change the account's balances
    // (every event of a run does); those below them only bring the state up.
    const std::int64_t lower_block = number(result, replay.rows.marks.front(), col::kN1);
    const std::size_t scan = static_cast<std::size_t>(balance_history_scan(query.limit));
    struct Replayed {
        const PageEvent* event = nullptr;
        BalanceState::Units before = 0;
        BalanceState::Units after = 0;
    };
    std::vector<Replayed> looked;  // the events that may be looked at, oldest first
    for (const PageEvent& event : page.events) {
        const BalanceState::Units before = page.state.value(query.component);
        bool changed = true;
        if (event.run) {
            if (event.run->undecodable) {
                // The readiness refuses such a block first (wallet_balance_undecodable).
                answer.error = RpcError{kBalanceUnavailable, "the balance changes of block " + std::to_string(event.block) + " (" +
                                                                 std::string(event.op_type) +
                                                                 ") cannot be read by this decoder version"};
                return answer;
            }
            for (const RunChange& change : event.run->changes) page.state.apply(change.to_change(query.account));
        } else if (auto error = apply_step(page.state, query.account, result, *event.step, rules, &changed)) {
            answer.error = std::move(error);
            return answer;
        }
        if (changed && event.block >= lower_block) looked.push_back({&event, before, page.state.value(query.component)});
    }
    const std::size_t first_looked_at = looked.size() - std::min(looked.size(), scan);
    std::vector<ChangeRow> changes;
    for (std::size_t i = first_looked_at; i < looked.size(); ++i) {
        if (looked[i].after != looked[i].before) changes.push_back({looked[i].event, looked[i].before, looked[i].after});
    }
    // Newest first, at most `limit`; the next page starts below the last
    // row, or below the last event looked at when the page ran out of them.
    const auto shown = std::min(changes.size(), static_cast<std::size_t>(query.limit));
    std::string out = component_result_head(query) + ",\"items\":[";
    for (std::size_t i = 0; i < shown; ++i) {
        if (i > 0) out += ',';
        append_change_row(out, query, changes[changes.size() - 1 - i]);
    }
    out += "],\"next_cursor\":";
    if (shown < changes.size()) {
        json::append_quoted(out, position_cursor(query, *changes[changes.size() - shown].event, cursors));
    } else if (looked.size() > scan) {
        json::append_quoted(out, position_cursor(query, *looked[first_looked_at].event, cursors));
    } else if (page.snapshot_block && *page.snapshot_block >= lower_block) {
        // Below the snapshot: below its block's largest key (the statement's key is block_seq * 100 +
        // role in an integer), so that every event up to the block is below it and the next page's
        // newest run is the one before the snapshot.
        PageEvent below;
        below.block = *page.snapshot_block;
        below.block_seq = kLargestKeyBlockSeq;
        below.role_name = wallet::role_name(Role::Taker);
        json::append_quoted(out, position_cursor(query, below, cursors));
    } else {
        out += "null";
    }
    answer.result = out + '}';
    return answer;
}


BalancesAnswer balance_aggregation_answer(const BalanceHistoryQuery& query, PGresult* result,
                                          const store::BalanceRules& rules, std::int64_t max_periods) {
    BalancesAnswer answer;
    Replay replay = start_replay(query.account, result);
    if (replay.error) {
        answer.error = std::move(replay.error);
        return answer;
    }
    // The boundaries in time order (kind 3: index, block, epoch), each with
    // its snapshot when one is above the previous boundary.
    struct Boundary {
        std::int64_t block = 0;
        std::int64_t epoch = 0;
        int snapshot = -1;
        BalanceState::Units value = 0;
    };
    std::vector<Boundary> boundaries(replay.rows.marks.size());
    for (const int row : replay.rows.marks) {
        const auto index = static_cast<std::size_t>(number(result, row, col::kN1));
        if (index >= boundaries.size()) {
            answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
            return answer;
        }
        boundaries[index].block = number(result, row, col::kN2);
        boundaries[index].epoch = number(result, row, col::kN3);
    }
    for (const int row : replay.rows.snapshots) {
        const auto index = static_cast<std::size_t>(number(result, row, col::kN2));
        if (index < boundaries.size()) boundaries[index].snapshot = row;
    }
    // The periods between them: a window that names its start answers all
    // of them or says it is too long; without `from`, the newest ones.
    std::size_t first_period = 0;
    const std::size_t periods = boundaries.empty() ? 0 : boundaries.size() - 1;
    if (periods > static_cast<std::size_t>(max_periods)) {
        if (query.from) {
            answer.error = RpcError{jsonrpc::kInvalidParams, "too many periods (at most " + std::to_string(max_periods) + ")"};
            return answer;
        }
        first_period = periods - static_cast<std::size_t>(max_periods);
    }
    // One replay in block order: each boundary's events are those after
    // its snapshot (or the previous boundary) up to its block.
    auto step = replay.rows.steps.begin();
    for (Boundary& boundary : boundaries) {
        if (boundary.snapshot >= 0) {
            auto decoded = run_row_state(result, boundary.snapshot);
            if (!decoded) {
                answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
                return answer;
            }
            replay.state = std::move(*decoded);
        }
        for (; step != replay.rows.steps.end() && step->block <= boundary.block; ++step) {
            if (auto error = apply_step(replay.state, query.account, result, *step, rules)) {
                answer.error = std::move(error);
                return answer;
            }
        }
        boundary.value = replay.state.value(query.component);
    }
    std::string out = component_result_head(query) + ",\"granularity\":";
    json::append_quoted(out, granularity_name(query.granularity));
    out += ",\"periods\":[";
    // Newest first, as balance_tracker's aggregation.
    for (std::size_t period = periods; period-- > first_period;) {
        const Boundary& start = boundaries[period];
        const Boundary& end = boundaries[period + 1];
        if (period + 1 < periods) out += ',';
        out += "{\"date\":";
        append_time(out, start.epoch);
        out += ",\"block\":" + std::to_string(end.block);
        append_balance_move(out, query.component, start.value, end.value);
        out += '}';
    }
    answer.result = out + "]}";
    return answer;
}

}  // namespace wallet::api
