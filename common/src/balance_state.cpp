#include "wallet/balance_state.hpp"

#include <limits>

namespace wallet {

namespace {

using C = BalanceComponent;

void put_varint(std::string& out, std::uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

bool put_signed(std::string& out, BalanceState::Units value) {
    if (value > std::numeric_limits<std::int64_t>::max() || value < std::numeric_limits<std::int64_t>::min()) return false;
    const auto v = static_cast<std::int64_t>(value);
    put_varint(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));  // zigzag
    return true;
}

class ByteReader {
public:
    explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
    std::optional<std::uint64_t> varint() {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at_ >= bytes_.size()) return std::nullopt;
            const auto byte = static_cast<unsigned char>(bytes_[at_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) return value;
        }
        return std::nullopt;
    }
    std::optional<std::int64_t> signed_value() {
        const auto v = varint();
        if (!v) return std::nullopt;
        return static_cast<std::int64_t>((*v >> 1) ^ (~(*v & 1) + 1));
    }
    std::optional<std::string> text() {
        const auto size = varint();
        if (!size || *size > bytes_.size() - at_) return std::nullopt;
        std::string out(bytes_.substr(at_, *size));
        at_ += *size;
        return out;
    }
    bool done() const { return at_ == bytes_.size(); }

private:
    std::string_view bytes_;
    std::size_t at_ = 0;
};

std::optional<C> component_at(std::uint64_t number) {
    if (number >= kBalanceComponentCount) return std::nullopt;
    return static_cast<C>(number);
}

}  // namespace

void BalanceState::apply(const BalanceChange& change) {
    Units& value = at(change.component);
    const Units amount = change.amount.units();
    switch (change.kind) {
        case ChangeKind::add:
            value += amount;
            if (change.request_id &&
                (change.component == C::savings_pending_amount_hive || change.component == C::savings_pending_amount_hbd)) {
                if (amount > 0) requests_[*change.request_id] = {change.component, amount};
                if (amount < 0) requests_.erase(*change.request_id);
            }
            break;
        case ChangeKind::set: value = amount; break;
        case ChangeKind::delegation: {
            const bool out = change.component == C::delegated_vests;
            const std::pair key{out, change.other.value_or("")};
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
            const auto request = change.request_id ? requests_.find(*change.request_id) : requests_.end();
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
    put_varint(out, nonzero);
    for (std::size_t index = 0; index < kBalanceComponentCount; ++index) {
        if (values_[index] == 0) continue;
        put_varint(out, index);
        if (!put_signed(out, values_[index])) return std::nullopt;
    }
    put_varint(out, delegations_.size());
    for (const auto& [key, vests] : delegations_) {
        put_varint(out, key.first ? 1 : 0);
        put_varint(out, key.second.size());
        out += key.second;
        if (!put_signed(out, vests)) return std::nullopt;
    }
    put_varint(out, requests_.size());
    for (const auto& [id, request] : requests_) {
        if (!put_signed(out, id)) return std::nullopt;
        put_varint(out, static_cast<std::uint64_t>(request.first));
        if (!put_signed(out, request.second)) return std::nullopt;
    }
    return out;
}

std::optional<BalanceState> BalanceState::decode(std::string_view bytes) {
    BalanceState state;
    ByteReader in(bytes);
    const auto components = in.varint();
    if (!components) return std::nullopt;
    for (std::uint64_t i = 0; i < *components; ++i) {
        const auto index = in.varint();
        const auto value = in.signed_value();
        const auto component = index ? component_at(*index) : std::nullopt;
        if (!component || !value) return std::nullopt;
        state.at(*component) = *value;
    }
    const auto delegations = in.varint();
    if (!delegations) return std::nullopt;
    for (std::uint64_t i = 0; i < *delegations; ++i) {
        const auto out = in.varint();
        auto other = in.text();
        const auto vests = in.signed_value();
        if (!out || !other || !vests) return std::nullopt;
        state.delegations_[{*out != 0, std::move(*other)}] = *vests;
    }
    const auto requests = in.varint();
    if (!requests) return std::nullopt;
    for (std::uint64_t i = 0; i < *requests; ++i) {
        const auto id = in.signed_value();
        const auto index = in.varint();
        const auto amount = in.signed_value();
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
