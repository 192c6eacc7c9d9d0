// The balance changes of wallet events: what each operation does to the
// balance components of the accounts it names, as hived's evaluators and
// block processing apply it (docs/operations.md, "Balance changes"). The
// decoder (wallet/decoder.hpp, balance_changes) gives them; this unit holds
// the vocabulary: components, kinds of change, and the hardfork schedule that
// decides the few rules that changed over the chain's life.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wallet/decimal.hpp"

namespace wallet {

// An account's balance components, named as balance_tracker's
// get_account_balances names them.
enum class BalanceComponent : std::uint8_t {
    hive_balance,
    hbd_balance,
    hive_savings,
    hbd_savings,
    vesting_shares,    // VESTS owned
    delegated_vests,   // delegated out, until return_vesting_delegation
    received_vests,    // delegated in
    hive_rewards,      // reward balances, until claim_reward_balance
    hbd_rewards,
    vests_rewards,
    savings_withdraw_requests,  // count of savings withdrawals in flight
    savings_pending_amount_hive,
    savings_pending_amount_hbd,
    conversion_pending_amount_hbd,  // convert: HBD waiting to become HIVE
    conversion_pending_count_hbd,
    conversion_pending_amount_hive,  // collateralized_convert: HIVE collateral held
    conversion_pending_count_hive,
    open_orders_hive_amount,  // HIVE for sale in open limit orders
    open_orders_hbd_amount,
    escrow_pending_amount_hive,  // held in escrows the account sent, fees included
    escrow_pending_amount_hbd,
    vesting_withdraw_rate,  // the power-down's VESTS per week
    to_withdraw,
    withdrawn,
};

inline constexpr std::size_t kBalanceComponentCount = 24;

std::string_view component_name(BalanceComponent component) noexcept;
std::optional<BalanceComponent> parse_component(std::string_view name) noexcept;
// Decimals of the component: 3 for HIVE/HBD amounts, 6 for VESTS, 0 for counts.
int component_precision(BalanceComponent component) noexcept;

// How a change applies. Most are plain sums; a few need state the operation
// does not carry (the consumer keeps it: a delegation per pair, a savings
// withdrawal per request id, the power-down's counters).
enum class ChangeKind : std::uint8_t {
    add,  // the component moves by `amount` (signed)
    set,  // the component becomes `amount`
    // The delegation of the delegator to the delegatee becomes `amount`
    // (`other` is the pair's other account). Its difference d to the previous
    // amount of the pair moves received_vests of the delegatee at once, and
    // delegated_vests of the delegator when d > 0 only: a decrease leaves the
    // delegator at return_vesting_delegation (hived's expiring delegations).
    delegation,
    // The savings withdrawal `request_id` of the account is cancelled: its
    // amount (known from the transfer_from_savings that opened it) goes from
    // savings_pending_amount_* back to *_savings; `amount` (-1) is the change
    // of savings_withdraw_requests.
    savings_withdrawal_cancelled,
    // After this power-down payment, vesting_withdraw_rate, to_withdraw and
    // withdrawn become 0 if withdrawn >= to_withdraw or vesting_shares is 0
    // (hived's process_vesting_withdrawals); `amount` is 0.
    power_down_step,
};

std::string_view change_kind_name(ChangeKind kind) noexcept;

struct BalanceChange {
    std::string account;
    BalanceComponent component = BalanceComponent::hive_balance;
    ChangeKind kind = ChangeKind::add;
    Decimal amount;  // at the component's precision
    std::optional<std::string> other;        // delegation: the pair's other account
    std::optional<std::int64_t> request_id;  // savings withdrawals: transfer_from_savings' request_id

    friend bool operator==(const BalanceChange&, const BalanceChange&) = default;
};

// The blocks where the rules the balance changes depend on started. Nodes
// regenerate virtual operations with the rules of their block, so the
// schedule is the network's, not the node version's.
struct HardforkSchedule {
    std::int64_t hf16_block = 1;  // power-downs in 13 weekly steps instead of 104
    std::int64_t hf17_block = 1;  // rewards go to reward balances (when the op has no payout_must_be_claimed)
    std::int64_t hf20_block = 1;  // a negative withdraw_vesting is refused instead of ignored
    std::int64_t hf21_block = 1;  // the power-down rate rounds up

    bool operator==(const HardforkSchedule&) const = default;

    // Hive (and Steem before it) mainnet: hived's hardfork_block.hpp.
    static HardforkSchedule mainnet() noexcept { return {7353249, 10629455, 26256743, 35921786}; }
    // Testnets and the simulator's synthetic chain: every rule from block 1.
    static HardforkSchedule from_genesis() noexcept { return {}; }
    // The value of CHAIN_HARDFORKS: "mainnet" or "genesis"; nullopt for others.
    static std::optional<HardforkSchedule> named(std::string_view name) noexcept {
        if (name == "mainnet") return mainnet();
        if (name == "genesis") return from_genesis();
        return std::nullopt;
    }
};

// Balances the chain creates without an operation, which no event carries.
// Mainnet has none: hived's HIVE_INIT_SUPPLY and HIVE_HBD_INIT_SUPPLY are 0,
// and every balance there starts with an operation (pow_reward,
// producer_reward, account_created, a transfer ...). A testnet's init supply
// goes to its initminer; the simulator's synthetic chain names its own.
struct GenesisBalance {
    std::string account;
    BalanceComponent component = BalanceComponent::hive_balance;
    Decimal amount;
};

}  // namespace wallet
