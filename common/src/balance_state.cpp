#include "wallet/balance_state.hpp"

#include "wallet/varint.hpp"

namespace wallet {

namespace {

using C = BalanceComponent;
using varint::put_wide;

std::optional<C> component_at(std::uint64_t number) {
    if (number >= kBalanceComponentCount) return std::nullopt;
    return static_cast<C>(number);
}

}  // namespace

void BalanceState::apply(const BalanceChange& change) {
    apply(change.component, change.kind, change.amount.units(), change.other, change.request_id);
}

void BalanceState::apply(BalanceComponent component, ChangeKind kind, Units amount, const std::optional<std::string>& other,
                         std::optional<std::int64_t> request_id) {
    Units& value = at(component);
    switch (kind) {
        case ChangeKind::add:
            value += amount;
            if (request_id &&
                (component == C::savings_pending_amount_hive || component == C::savings_pending_amount_hbd)) {
                if (amount > 0) requests_[*request_id] = {component, amount};
                if (amount < 0) requests_.erase(*request_id);
            }
            break;
        case ChangeKind::set: value = amount; break;
        case ChangeKind::delegation: {
            const bool out = component == C::delegated_vests;
            const std::pair key{out, other.value_or("")};
            const auto found = delegations_.find(key);
            const Units previous = found == delegations_.end() ? 0 : found->second;
            const Units delta = amount - previous;
            // A decrease of the delegator's side waits for return_vesting_delegation.
            if (!out || delta > 0) value += delta;
            if (amount == 0) {
                if (found != delegations_.end()) delegations_.erase(found);
            } else {
                delegations_[key] = amount;
            }
            break;
        }
        case ChangeKind::savings_withdrawal_cancelled: {
            const auto request = request_id ? requests_.find(*request_id) : requests_.end();
            value += amount;
            if (request == requests_.end()) break;
            at(request->second.first) -= request->second.second;
            at(request->second.first == C::savings_pending_amount_hive ? C::hive_savings : C::hbd_savings) +=
                request->second.second;
            requests_.erase(request);
            break;
        }
        case ChangeKind::power_down_step:
            if (at(C::withdrawn) >= at(C::to_withdraw) || at(C::vesting_shares) == 0) {
                at(C::vesting_withdraw_rate) = at(C::to_withdraw) = at(C::withdrawn) = 0;
            }
            break;
    }
}

std::optional<std::string> BalanceState::encode() const {
    std::string out;
    std::size_t nonzero = 0;
    for (const Units value : values_) nonzero += value != 0 ? 1 : 0;
    varint::put(out, nonzero);
    for (std::size_t index = 0; index < kBalanceComponentCount; ++index) {
        if (values_[index] == 0) continue;
        varint::put(out, index);
        if (!put_wide(out, values_[index])) return std::nullopt;
    }
    varint::put(out, delegations_.size());
    for (const auto& [key, vests] : delegations_) {
        varint::put(out, key.first ? 1 : 0);
        varint::put(out, key.second.size());
        out += key.second;
        if (!put_wide(out, vests)) return std::nullopt;
    }
    varint::put(out, requests_.size());
    for (const auto& [id, request] : requests_) {
        varint::put_signed(out, id);
        varint::put(out, static_cast<std::uint64_t>(request.first));
        if (!put_wide(out, request.second)) return std::nullopt;
    }
    return out;
}

std::optional<BalanceState> BalanceState::decode(std::string_view bytes) {
    BalanceState state;
    varint::Reader in(bytes);
    const auto components = in.next();
    if (!components) return std::nullopt;
    for (std::uint64_t i = 0; i < *components; ++i) {
        const auto index = in.next();
        const auto value = in.next_signed();
        const auto component = index ? component_at(*index) : std::nullopt;
        if (!component || !value) return std::nullopt;
        state.at(*component) = *value;
    }
    const auto delegations = in.next();
    if (!delegations) return std::nullopt;
    for (std::uint64_t i = 0; i < *delegations; ++i) {
        const auto out = in.next();
        auto other = in.text();
        const auto vests = in.next_signed();
        if (!out || !other || !vests) return std::nullopt;
        state.delegations_[{*out != 0, std::move(*other)}] = *vests;
    }
    const auto requests = in.next();
    if (!requests) return std::nullopt;
    for (std::uint64_t i = 0; i < *requests; ++i) {
        const auto id = in.next_signed();
        const auto index = in.next();
        const auto amount = in.next_signed();
        const auto component = index ? component_at(*index) : std::nullopt;
        if (!id || !component || !amount) return std::nullopt;
        state.requests_[*id] = {*component, *amount};
    }
    if (!in.done()) return std::nullopt;
    return state;
}

std::string hex_of(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        out += kDigits[byte >> 4];
        out += kDigits[byte & 0xf];
    }
    return out;
}

std::optional<std::string> bytes_of_hex(std::string_view text) {
    if (text.size() % 2 != 0) return std::nullopt;
    const auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(text.size() / 2);
    for (std::size_t i = 0; i < text.size(); i += 2) {
        const int high = digit(text[i]), low = digit(text[i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        out += static_cast<char>(high * 16 + low);
    }
    return out;
}

}  // namespace wallet
