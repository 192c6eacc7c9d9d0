// wallet_history.get_balances (issue 28; docs/wallet-history-api.md): every
// balance component of an account at a block, computed at query time from
// the balance sums of migration 0017 and the account's events, exactly
// (integers in each component's smallest unit). One statement gives the
// rows (readiness, day sums, events); the worker replays them with the
// decoder's balance_changes, the one reading of an operation's changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <libpq-fe.h>

#include "api_request.hpp"
#include "api_sql.hpp"
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

}  // namespace wallet::api
