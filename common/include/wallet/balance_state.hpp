// An account's balance state: every component plus what the stateful kinds
// of change need to apply (a delegation's previous amount per pair, the
// savings withdrawals in flight): the one place balance changes are applied
// in block order (docs/operations.md, "Balance changes"). The snapshot pass
// (wallet/balance_snapshots.hpp) keeps it per account and stores it encoded;
// get_balances starts from a stored state and applies the changes after it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "wallet/balance_change.hpp"
#include "wallet/decimal.hpp"

namespace wallet {

class BalanceState {
public:
    using Units = Decimal::Units;

    // Applies a change of this account (the caller gives only its own).
    void apply(const BalanceChange& change);
    // The same from a change's parts (the amount in units of the component's
    // precision): what the pass and the readers hold (wallet::RunChange).
    void apply(BalanceComponent component, ChangeKind kind, Units amount, const std::optional<std::string>& other,
               std::optional<std::int64_t> request_id);

    Units value(BalanceComponent component) const { return values_[static_cast<std::size_t>(component)]; }
    void set(BalanceComponent component, Units units) { values_[static_cast<std::size_t>(component)] = units; }

    // The account's open delegations: (outgoing?, the other account) -> VESTS.
    using Delegations = std::map<std::pair<bool, std::string>, Units>;
    const Delegations& delegations() const { return delegations_; }

    // Compact bytes (varints; zero components and closed pairs left out):
    // what wallet_balance_snapshots.state holds. nullopt when a value is out
    // of the int64 range the encoding keeps.
    std::optional<std::string> encode() const;
    static std::optional<BalanceState> decode(std::string_view bytes);

    friend bool operator==(const BalanceState&, const BalanceState&) = default;

private:
    Units& at(BalanceComponent component) { return values_[static_cast<std::size_t>(component)]; }

    std::array<Units, kBalanceComponentCount> values_{};
    std::map<std::int64_t, std::pair<BalanceComponent, Units>> requests_;  // savings withdrawals in flight
    Delegations delegations_;                                              // (out, other account) -> VESTS
};

// Hex digits of bytes and back (SQL's encode/decode(..., 'hex')).
std::string hex_of(std::string_view bytes);
std::optional<std::string> bytes_of_hex(std::string_view text);

}  // namespace wallet
