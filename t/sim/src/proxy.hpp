// The proxies public Hive API nodes put in front of hived and HAfAH, as the
// simulator plays them (--proxy): batch limits and their exact refusals,
// serial or concurrent batch items, a per-address rate limit answering 429
// with Retry-After, Drone's cache of answers, Connection: close. Where each
// number comes from: README.md, "Proxy personalities".
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sim {

enum class ProxyKind {
    direct,  // no --proxy: the simulator's own behaviour (keep-alive, no limits)
    none,    // bare hived: closes the connection after every answer
    drone,   // Drone (haf_api_node's default)
    jussi,   // jussi (haf_api_node's alternative)
    caddy,   // haf_api_node's Caddy rate limit in front of Drone
};
std::optional<ProxyKind> parse_proxy_kind(std::string_view name);
std::string_view proxy_kind_name(ProxyKind kind);

struct ProxyOptions {
    ProxyKind kind = ProxyKind::direct;
    std::size_t batch_limit = 0;  // 0: none
    bool serial_items = true;     // batch items run one after another (hived, Drone) or at once (jussi)
    bool cache = false;           // Drone's answer cache
    bool connection_close = false;
    std::uint32_t rate_limit = 0;  // requests per window per client address (0: none)
    std::chrono::milliseconds rate_window{60000};
    std::chrono::milliseconds call_latency{0};  // the backend's time per call (--call-latency-ms)

    // The documented defaults of a personality (README.md).
    static ProxyOptions of(ProxyKind kind);
};

// Drone's cache: results by "api.method(params as sent)", each with its expiry.
class AnswerCache {
public:
    std::optional<std::string> find(const std::string& key);
    void store(const std::string& key, std::string_view result, std::chrono::milliseconds ttl);
    std::uint64_t hits() const;

private:
    struct Entry {
        std::string result;
        std::chrono::steady_clock::time_point expires;
    };
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Entry> entries_;
    std::uint64_t hits_ = 0;
};

// A sliding-window limit per client address, as caddy-ratelimit keeps it.
class RateLimiter {
public:
    // nullopt: admitted; otherwise refused and the seconds until a request
    // would be admitted (Retry-After).
    std::optional<std::int64_t> admit(const std::string& address, std::uint32_t limit, std::chrono::milliseconds window);
    std::uint64_t refused() const;
    // Refused requests that came before the Retry-After the address was given.
    std::uint64_t refused_early() const;

private:
    struct Client {
        std::deque<std::chrono::steady_clock::time_point> admitted;
        std::chrono::steady_clock::time_point retry_after{};
    };
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Client> clients_;
    std::uint64_t refused_ = 0;
    std::uint64_t refused_early_ = 0;
};

}  // namespace sim
