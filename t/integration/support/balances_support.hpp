// Shared by the balances tests (label balances): the simulator ledger's
// balances as components, and the synthetic chain's genesis balances stored
// as the operator of such a chain stores them: a snapshot at block 0 of every
// account (docs/store-layout.md, "Balances from the history"; mainnet has none).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ledger.hpp"
#include "synthetic_chain.hpp"
#include "wallet/balance_state.hpp"

namespace balances_test {

using C = wallet::BalanceComponent;

// The ledger's balances (or the node's) as components, in units.
inline std::map<C, std::int64_t> components_of(const sim::AccountBalances& b) {
    return {{C::hive_balance, b.hive},
            {C::hbd_balance, b.hbd},
            {C::hive_savings, b.hive_savings},
            {C::hbd_savings, b.hbd_savings},
            {C::vesting_shares, b.vests},
            {C::delegated_vests, b.delegated},
            {C::received_vests, b.received},
            {C::hive_rewards, b.reward_hive},
            {C::hbd_rewards, b.reward_hbd},
            {C::vests_rewards, b.reward_vests},
            {C::savings_withdraw_requests, b.savings_withdraw_requests},
            {C::vesting_withdraw_rate, b.withdraw_rate},
            {C::to_withdraw, b.to_withdraw},
            {C::withdrawn, b.withdrawn}};
}

// SQL that stores the accounts and their genesis states at block 0, change
// runs without events (before anything is loaded: the balance pass starts
// from them).
inline std::string genesis_runs_sql(const std::vector<std::pair<std::string, wallet::BalanceState>>& accounts) {
    std::string names, rows;
    for (const auto& [name, state] : accounts) {
        const auto bytes = state.encode();
        const char* comma = names.empty() ? "" : ",";
        names += comma + ("('" + name + "')");
        rows += comma + ("('" + name + "','" + wallet::hex_of(bytes.value_or("")) + "')");
    }
    return "INSERT INTO wallet_accounts (name) VALUES " + names +
           " ON CONFLICT DO NOTHING; INSERT INTO wallet_balance_runs (account_id, after_block, through_block, state, changes)"
           " SELECT a.id, 0, 0, decode(g.state, 'hex'), '\\x00'::bytea FROM (VALUES " + rows +
           ") AS g(name, state) JOIN wallet_accounts a ON a.name = g.name";
}

// Every account of the chain with its genesis state (genesis_runs_sql).
inline std::string genesis_runs_sql(const sim::SyntheticChain& chain) {
    std::vector<std::pair<std::string, wallet::BalanceState>> accounts;
    for (std::uint32_t index = 0; index < chain.account_count(); ++index) {
        wallet::BalanceState state;
        for (const auto& [component, units] : components_of(sim::genesis_balances(chain, index))) state.set(component, units);
        accounts.emplace_back(std::string(chain.account(index)), std::move(state));
    }
    return genesis_runs_sql(accounts);
}

}  // namespace balances_test
