// wallet_history.get_balances and the other balance methods (issue 28;
// docs/wallet-history-api.md): get_balances gives every
// balance component of an account at a block, computed at query time from
// the balance sums of migration 0017 and the account's events, exactly
// (integers in each component's smallest unit). One statement gives the
// rows (readiness, day sums, events); the worker replays them with the
// decoder's balance_changes, the one reading of an operation's changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <libpq-fe.h>

#include "api_request.hpp"
#include "api_sql.hpp"
#include "wallet/balance_state.hpp"
#include "wallet/cursor.hpp"
#include "wallet/event_store.hpp"

namespace wallet::api {

// The JSON-RPC code of a balance the store cannot answer exactly yet (it
// lacks history, or holds an event whose changes its decoder cannot read):
// the message says what is missing.
inline constexpr int kBalanceUnavailable = -32001;

struct BalancesAnswer {
    std::string result;            // the result object, when error is none
    std::optional<RpcError> error;
};

BalancesAnswer balances_answer(const BalanceQuery& query, PGresult* rows, const store::BalanceRules& rules);
// get_delegations: the open delegations of the account's state at
// indexed_block, from get_balances' rows (the same statement).
BalancesAnswer delegations_answer(const BalanceQuery& query, PGresult* rows, const store::BalanceRules& rules);

// get_balance_history: a page of the component's changes, newest first,
// from the rows of wh_balance_history (migrations 0020 and 0029: the
// account's change runs, and the events no run holds).
BalancesAnswer balance_history_answer(const BalanceHistoryQuery& query, PGresult* rows, const store::BalanceRules& rules,
                                      const CursorCodec& cursors);
// get_balance_aggregation: per period the balance at its end and its
// change, from the rows of wh_balance_periods, which was asked for at most
// max_periods + 1 periods.
BalancesAnswer balance_aggregation_answer(const BalanceHistoryQuery& query, PGresult* rows,
                                          const store::BalanceRules& rules, std::int64_t max_periods);

// ---- the pieces every balance answer shares ----

// An event row of a balance statement (kind 2), in replay order by key().
struct BalanceStep {
    std::int64_t block = 0;
    std::int64_t block_seq = 0;
    int role = 0;
    int row = 0;
    auto key() const { return std::tie(block, block_seq, role); }
};

// The rows of a balance statement by kind (api_sql.hpp, balances_column).
struct BalanceRows {
    int header = -1;               // kind 0
    std::vector<int> snapshots;    // kind 1
    std::vector<BalanceStep> steps;  // kind 2, sorted in replay order
    std::vector<int> marks;        // kind 3
    std::vector<int> extras;       // kinds 4 and 5 (a history page's block times and account names)
};
BalanceRows read_balance_rows(PGresult* rows);
// The account id and store generation a get_balances or page statement used
// (its header row; none for an unknown account), for the worker to remember.
std::optional<RememberedAccount> balance_rows_account(PGresult* rows);

// The readiness checks of the header row (docs/wallet-history-api.md,
// get_balances): an error when the store cannot answer at its block.
std::optional<RpcError> check_readiness(const BalanceQuery& query, PGresult* rows, int header);
// A run row's state at its block (kind 1: the state at the run's start with
// its changes up to the block); nullopt when it cannot be decoded.
std::optional<BalanceState> run_row_state(PGresult* rows, int row);
// Applies the changes of the step's event to `account` (its state); an
// error when this decoder cannot read them. `changed`, when given, says
// whether the event has a change of the account.
std::optional<RpcError> apply_step(BalanceState& state, std::string_view account, PGresult* rows, const BalanceStep& step,
                                   const store::BalanceRules& rules, bool* changed = nullptr);
// A component's value as JSON: an exact decimal string at the component's
// precision, or an integer for the counts.
void append_component_value(std::string& out, BalanceComponent component, BalanceState::Units units);

}  // namespace wallet::api
