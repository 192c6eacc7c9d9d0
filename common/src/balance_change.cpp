#include "wallet/balance_change.hpp"

namespace wallet {
namespace {

struct ComponentEntry {
    BalanceComponent component;
    std::string_view name;
    int precision;
};

constexpr std::array<ComponentEntry, kBalanceComponentCount> kComponents{{
    {BalanceComponent::hive_balance, "hive_balance", 3},
    {BalanceComponent::hbd_balance, "hbd_balance", 3},
    {BalanceComponent::hive_savings, "hive_savings", 3},
    {BalanceComponent::hbd_savings, "hbd_savings", 3},
    {BalanceComponent::vesting_shares, "vesting_shares", 6},
    {BalanceComponent::delegated_vests, "delegated_vests", 6},
    {BalanceComponent::received_vests, "received_vests", 6},
    {BalanceComponent::hive_rewards, "hive_rewards", 3},
    {BalanceComponent::hbd_rewards, "hbd_rewards", 3},
    {BalanceComponent::vests_rewards, "vests_rewards", 6},
    {BalanceComponent::savings_withdraw_requests, "savings_withdraw_requests", 0},
    {BalanceComponent::savings_pending_amount_hive, "savings_pending_amount_hive", 3},
    {BalanceComponent::savings_pending_amount_hbd, "savings_pending_amount_hbd", 3},
    {BalanceComponent::conversion_pending_amount_hbd, "conversion_pending_amount_hbd", 3},
    {BalanceComponent::conversion_pending_count_hbd, "conversion_pending_count_hbd", 0},
    {BalanceComponent::conversion_pending_amount_hive, "conversion_pending_amount_hive", 3},
    {BalanceComponent::conversion_pending_count_hive, "conversion_pending_count_hive", 0},
    {BalanceComponent::open_orders_hive_amount, "open_orders_hive_amount", 3},
    {BalanceComponent::open_orders_hbd_amount, "open_orders_hbd_amount", 3},
    {BalanceComponent::escrow_pending_amount_hive, "escrow_pending_amount_hive", 3},
    {BalanceComponent::escrow_pending_amount_hbd, "escrow_pending_amount_hbd", 3},
    {BalanceComponent::vesting_withdraw_rate, "vesting_withdraw_rate", 6},
    {BalanceComponent::to_withdraw, "to_withdraw", 6},
    {BalanceComponent::withdrawn, "withdrawn", 6},
}};

// The table is indexed by the enum.
constexpr bool table_in_enum_order() {
    for (std::size_t index = 0; index < kComponents.size(); ++index) {
        if (static_cast<std::size_t>(kComponents[index].component) != index) return false;
    }
    return true;
}
static_assert(table_in_enum_order());

const ComponentEntry& entry_of(BalanceComponent component) noexcept {
    return kComponents[static_cast<std::size_t>(component)];
}

}  // namespace

std::string_view component_name(BalanceComponent component) noexcept { return entry_of(component).name; }

int component_precision(BalanceComponent component) noexcept { return entry_of(component).precision; }

std::optional<BalanceComponent> parse_component(std::string_view name) noexcept {
    for (const auto& entry : kComponents) {
        if (entry.name == name) return entry.component;
    }
    return std::nullopt;
}

std::string_view change_kind_name(ChangeKind kind) noexcept {
    switch (kind) {
        case ChangeKind::add: return "add";
        case ChangeKind::set: return "set";
        case ChangeKind::delegation: return "delegation";
        case ChangeKind::savings_withdrawal_cancelled: return "savings_withdrawal_cancelled";
        case ChangeKind::power_down_step: return "power_down_step";
    }
    return "add";
}

}  // namespace wallet
