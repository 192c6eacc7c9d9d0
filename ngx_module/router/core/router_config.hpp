// The routing file of spec 001: targets, timeouts, routes (declaration order
// kept), default-cache. Loaded and validated once, when nginx reads its
// configuration; a bad file is reported with the file, the key and the reason.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wallet/result.hpp"

namespace router {

enum class Transport : std::uint8_t { Http, Https, Ws, Wss, Unix };

const char* transport_name(Transport transport);

// One URL of a target.
struct Endpoint {
    std::string url;           // as written in the file
    Transport transport = Transport::Http;
    std::string host;          // host name or numeric address (empty for unix sockets)
    std::uint16_t port = 0;
    std::string socket_path;   // sock:// targets
    std::string path = "/";    // request path on the target
    std::string host_header;   // Host: value sent upstream
    bool tls() const { return transport == Transport::Https || transport == Transport::Wss; }
    bool websocket() const { return transport == Transport::Ws || transport == Transport::Wss; }
};

struct Target {
    std::string name;
    // One URL (the spec's string), or a pool: a list of URLs the router
    // spreads calls over, with health checks and failover.
    std::vector<Endpoint> urls;
    std::int64_t timeout_ms = 10000;
    // A chain node (routing-file key `chain-nodes`): each URL is polled for
    // its head and last irreversible block every poll_ms.
    bool chain_node = false;
    std::int64_t poll_ms = 3000;
    std::uint64_t max_lag = 20;   // blocks a URL may be behind the best URL of the target
    // A pool (routing-file key `node-pools`): consecutive failures that take
    // a URL out, and how often a URL that is out is probed (0: every poll_ms).
    std::uint64_t max_failures = 3;
    std::int64_t probe_ms = 0;
    bool pool() const { return urls.size() > 1; }
    std::int64_t probe_interval_ms() const { return probe_ms > 0 ? probe_ms : poll_ms; }
};

// A compiled PCRE2 pattern with Python re.match semantics (anchored at the
// start only). Thread-compatible: matching uses a per-thread match block.
class RoutePattern {
public:
    static wallet::Result<RoutePattern> compile(const std::string& pattern);
    bool matches(std::string_view subject) const;
    const std::string& text() const { return text_; }
    bool jit() const { return jit_; }

private:
    struct CodeDeleter {
        void operator()(void* code) const noexcept;
    };
    // What the pattern says literally, read from its text: a subject
    // without prefix_ never matches (decided without PCRE2), and a pattern
    // that is only its prefix (Whole: `^abc\.`) or only its prefix and `$`
    // (Exact: `^abc\.def$`) is decided without PCRE2 too. Most routes are so.
    enum class Literal { None, Prefix, Whole, Exact };
    void find_literal_prefix();

    std::string text_;
    std::shared_ptr<void> code_;  // pcre2_code_8, freed by CodeDeleter
    bool jit_ = false;
    std::string prefix_;
    Literal literal_ = Literal::None;
};

struct Route {
    RoutePattern pattern;
    std::size_t target = 0;     // index into RoutingTable::targets
    std::optional<std::int64_t> cache;
    std::int64_t ttl = 0;       // cache, or default-cache when cache is absent
    bool translate = false;     // translate_to_app_base
    // Answers about a block at or below the last irreversible block are
    // final: cached without expiry (the target must be a chain node).
    bool expire_if_reversible = false;
};

// What a method name (api.method) is routed to: match() and is_write().
struct RouteDecision {
    const Route* route = nullptr;  // nullptr: no route
    bool write = false;
};

// The decisions of the method names a table has seen, so that a name's
// patterns are matched once per worker (each worker has its own copy of the
// configuration, so no locking). Bounded: clients choose the names, and a
// full memo starts over. A copy (or move) starts empty: its decisions point
// into the table it was made for.
class RouteMemo {
public:
    static constexpr std::size_t kMaxNames = 1024;
    static constexpr std::size_t kMaxNameBytes = 128;  // a longer name is decided every time

    RouteMemo() = default;
    RouteMemo(const RouteMemo&) {}
    RouteMemo& operator=(const RouteMemo&) {
        names_.clear();
        return *this;
    }
    const RouteDecision* find(std::string_view path) const;
    void remember(std::string_view path, RouteDecision decision);
    std::size_t size() const { return names_.size(); }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
    };
    std::unordered_map<std::string, RouteDecision, Hash, std::equal_to<>> names_;
};

struct RoutingTable {
    std::string source;         // file name, for messages
    std::vector<Target> targets;
    std::vector<Route> routes;
    std::int64_t default_cache = 0;

    // The first route whose pattern matches `path` (api.method), or nullptr.
    const Route* match(std::string_view path) const;
    // match() and is_write() of `path`, remembered in this table's memo.
    RouteDecision decide(std::string_view path) const;
    std::optional<std::size_t> find_target(std::string_view name) const;

    mutable RouteMemo memo;
};

// Parses and validates a routing file's text; `source` names it in errors.
wallet::Result<RoutingTable> parse_routing_table(std::string_view json_text, const std::string& source);
wallet::Result<RoutingTable> load_routing_file(const std::string& path);

// Splits a target URL; the error names what is wrong with it.
wallet::Result<Endpoint> parse_target_url(const std::string& url);

// Calls that must reach a node at most once (never retried on another URL):
// broadcasts (`*broadcast*`, `network_broadcast_api.*`) and chain_api.push_*.
bool is_write(std::string_view path);

}  // namespace router
