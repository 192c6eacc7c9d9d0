#include "api_limits.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

namespace wallet::api {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool is_ip_address(std::string_view text) {
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return false;
    std::string copy(text);
    in6_addr v6{};
    in_addr v4{};
    return inet_pton(AF_INET, copy.c_str(), &v4) == 1 || inet_pton(AF_INET6, copy.c_str(), &v6) == 1;
}

// FNV-1a, twice with different bases: a 128-bit key, so that two clients
// sharing a bucket by a hash collision is not a practical concern.
std::uint64_t fnv1a(std::string_view text, std::uint64_t basis) {
    std::uint64_t h = basis;
    for (char c : text) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ULL;
    }
    return h;
}

}  // namespace

std::string client_identity(std::string_view peer_address, std::string_view forwarded_for, bool trust_proxy,
                            std::int64_t trusted_hops) {
    if (!trust_proxy || trusted_hops < 1 || forwarded_for.empty()) return std::string(peer_address);
    std::vector<std::string_view> entries;
    std::size_t start = 0;
    while (start <= forwarded_for.size()) {
        std::size_t comma = forwarded_for.find(',', start);
        if (comma == std::string_view::npos) comma = forwarded_for.size();
        entries.push_back(trim(forwarded_for.substr(start, comma - start)));
        start = comma + 1;
    }
    if (entries.size() < static_cast<std::size_t>(trusted_hops)) return std::string(peer_address);
    std::string_view chosen = entries[entries.size() - static_cast<std::size_t>(trusted_hops)];
    if (!is_ip_address(chosen)) return std::string(peer_address);
    return std::string(chosen);
}

std::string router_client_value(std::string_view token, std::string_view address) {
    std::string value;
    append_router_client_value(value, token, address);
    return value;
}

void append_router_client_value(std::string& out, std::string_view token, std::string_view address) {
    out.reserve(out.size() + token.size() + 1 + address.size());
    out += token;
    out += ' ';
    out += address;
}

std::string router_client(std::string_view header, std::string_view token) {
    if (token.empty() || header.size() <= token.size() || header[token.size()] != ' ') return {};
    unsigned char difference = 0;
    for (std::size_t i = 0; i < token.size(); ++i) difference |= static_cast<unsigned char>(header[i] ^ token[i]);
    if (difference != 0) return {};
    std::string_view address = header.substr(token.size() + 1);
    if (address != "unix:" && !is_ip_address(address)) return {};
    return std::string(address);
}

bool RateLimitTable::allow(std::string_view identity, std::uint64_t now_ms, std::int64_t rate, std::int64_t burst) {
    if (rate <= 0 || count_ == 0) return true;
    const std::uint64_t high = fnv1a(identity, 14695981039346656037ULL) | 1;  // never 0: 0 marks a free slot
    const std::uint64_t low = fnv1a(identity, 0x9e3779b97f4a7c15ULL);
    const std::int64_t capacity = burst * 1000;
    const std::size_t home = static_cast<std::size_t>(low % count_);

    auto refilled = [&](const Slot& s) {
        const std::uint64_t elapsed = now_ms > s.updated_ms ? now_ms - s.updated_ms : 0;
        // tokens/s * ms = milli-tokens; capped before multiplying to avoid overflow.
        const std::uint64_t gain = std::min<std::uint64_t>(elapsed, 3'600'000) * static_cast<std::uint64_t>(rate);
        return std::min<std::int64_t>(capacity, s.milli_tokens + static_cast<std::int64_t>(std::min<std::uint64_t>(gain, 1ULL << 62)));
    };

    Slot* target = nullptr;
    Slot* stalest = nullptr;
    for (std::size_t i = 0; i < std::min(kProbe, count_); ++i) {
        Slot& s = slots_[(home + i) % count_];
        if (s.key_high == high && s.key_low == low) {
            target = &s;
            break;
        }
        if (s.key_high == 0 || refilled(s) >= capacity) {
            if (target == nullptr) target = &s;  // free for reuse; keep looking for our own slot
            continue;
        }
        if (stalest == nullptr || s.updated_ms < stalest->updated_ms) stalest = &s;
    }
    if (target == nullptr) target = stalest;
    if (target->key_high != high || target->key_low != low) {
        *target = Slot{high, low, capacity, now_ms};
    }
    const std::int64_t tokens = refilled(*target);
    target->updated_ms = std::max(target->updated_ms, now_ms);
    if (tokens < 1000) {
        target->milli_tokens = tokens;
        return false;
    }
    target->milli_tokens = tokens - 1000;
    return true;
}

}  // namespace wallet::api
