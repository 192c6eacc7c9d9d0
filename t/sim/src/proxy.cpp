#include "proxy.hpp"

#include <algorithm>

namespace sim {

namespace {

constexpr std::pair<std::string_view, ProxyKind> kProxyNames[] = {
    {"none", ProxyKind::none}, {"drone", ProxyKind::drone}, {"jussi", ProxyKind::jussi}, {"caddy", ProxyKind::caddy}};

constexpr std::size_t kMaxCacheEntries = 200000;

}  // namespace

std::optional<ProxyKind> parse_proxy_kind(std::string_view name) {
    for (const auto& [text, kind] : kProxyNames)
        if (text == name) return kind;
    return std::nullopt;
}

std::string_view proxy_kind_name(ProxyKind kind) {
    for (const auto& [text, known] : kProxyNames)
        if (known == kind) return text;
    return "direct";
}

ProxyOptions ProxyOptions::of(ProxyKind kind) {
    ProxyOptions options;
    options.kind = kind;
    switch (kind) {
        case ProxyKind::direct:
            break;
        case ProxyKind::none:
            options.connection_close = true;
            break;
        case ProxyKind::caddy:
            options.rate_limit = 600;  // haf_api_node's Caddyfile: 600 events per 1m window per remote host
            [[fallthrough]];            // Caddy forwards to Drone
        case ProxyKind::drone:
            options.batch_limit = 100;
            options.cache = true;
            break;
        case ProxyKind::jussi:
            options.batch_limit = 50;  // JUSSI_JSONRPC_BATCH_SIZE_LIMIT
            options.serial_items = false;
            break;
    }
    return options;
}

std::optional<std::string> AnswerCache::find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    if (it->second.expires <= std::chrono::steady_clock::now()) {
        entries_.erase(it);
        return std::nullopt;
    }
    ++hits_;
    return it->second.result;
}

void AnswerCache::store(const std::string& key, std::string_view result, std::chrono::milliseconds ttl) {
    std::lock_guard lock(mutex_);
    if (entries_.size() >= kMaxCacheEntries) entries_.clear();  // a bounded cache; the simulator keeps it simple
    entries_[key] = Entry{std::string(result), std::chrono::steady_clock::now() + ttl};
}

std::uint64_t AnswerCache::hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
}

std::optional<std::int64_t> RateLimiter::admit(const std::string& address, std::uint32_t limit,
                                               std::chrono::milliseconds window) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    Client& client = clients_[address];
    while (!client.admitted.empty() && client.admitted.front() + window <= now) client.admitted.pop_front();
    if (client.admitted.size() < limit) {
        client.admitted.push_back(now);
        return std::nullopt;
    }
    ++refused_;
    if (now < client.retry_after) ++refused_early_;
    // Whole seconds (the header's unit), rounded up: the oldest admitted
    // request leaves the window by then.
    const auto wait = client.admitted.front() + window - now;
    const std::int64_t seconds =
        std::max<std::int64_t>(1, (std::chrono::duration_cast<std::chrono::milliseconds>(wait).count() + 999) / 1000);
    client.retry_after = std::max(client.retry_after, now + std::chrono::seconds(seconds));
    return seconds;
}

std::uint64_t RateLimiter::refused() const {
    std::lock_guard lock(mutex_);
    return refused_;
}

std::uint64_t RateLimiter::refused_early() const {
    std::lock_guard lock(mutex_);
    return refused_early_;
}

}  // namespace sim
