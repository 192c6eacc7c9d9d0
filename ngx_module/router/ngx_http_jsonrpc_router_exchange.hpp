// The JSON-RPC router's runtime inside one nginx worker: an Exchange is one
// request body (an HTTP POST or a WebSocket message) split into Calls; each
// Call is answered from the cache (per-worker memory, then Redis) or by its
// route's target over the target's transport (HTTP/HTTPS/unix keep-alive
// pools, multiplexed WebSocket connections). All I/O runs on nginx's event
// loop; nothing here blocks and no exception leaves these classes.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ngx_wallet_nginx.hpp"
#include "router_config.hpp"
#include "router_metrics.hpp"
#include "router_request.hpp"

extern "C" {
#include <ngx_event_connect.h>
}

namespace jsonrpc_router {

// nginx's posted-event macros, as functions (they expand to bare ifs).
inline void post_event(ngx_event_t* ev) { ngx_post_event(ev, &ngx_posted_events); }
inline void unpost_event(ngx_event_t* ev) {
    if (ev->posted) {
        ngx_delete_posted_event(ev);
    }
}

// The health of one URL of a target, in shared memory so that every worker
// sees it: consecutive failures (calls and polls), whether the URL is out,
// and for chain nodes what its last poll said. Polls run in the background:
// the worker that moves next_poll_ms forward (compare-and-swap) polls.
struct UrlHealth {
    std::atomic<std::int64_t> next_poll_ms{0};   // wall clock
    std::atomic<std::uint64_t> head{0};          // head block number last reported (0 = unknown)
    std::atomic<std::uint64_t> lib{0};           // last irreversible block last reported (0 = unknown)
    std::atomic<std::uint64_t> failures{0};      // consecutive failed calls or polls
    std::atomic<std::uint32_t> down{0};          // out of the pool until a poll succeeds
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "shared-memory counters must be lock-free");

// Consecutive failures that take a URL of a pool out.
constexpr std::uint64_t kFailuresToDown = 3;

// Settings of one `jsonrpc_router` location, fixed at configuration time.
struct RouterInstance {
    router::RoutingTable table;
    std::vector<std::vector<ngx_addr_t>> target_addrs;  // resolved at configuration time, per target and URL
    std::vector<std::size_t> first_url;     // per target: index of its first URL among all URLs
    router::RequestLimits limits;
    ngx_addr_t redis_addr{};                 // sockaddr of Redis (TCP or unix)
    std::string redis_name;                  // for logs
    bool redis_enabled = true;
    ngx_msec_t redis_timeout = 100;          // one cache command
    ngx_msec_t redis_retry = 1000;           // back-off after Redis failed
    std::string cache_prefix = "jsonrpc:";
    std::size_t memory_cache_bytes = 0;      // per-worker layer in front of Redis (0 = off)
    std::size_t keepalive = 32;              // idle upstream connections kept per target
    ngx_msec_t keepalive_timeout = 60000;
    std::size_t ws_upstream_connections = 2; // per ws:// target per worker
    std::size_t max_response = 64 << 20;     // upstream body limit
    ngx_ssl_t* ssl = nullptr;                // client TLS context (https/wss targets)
    bool ssl_verify = true;
    ngx_cycle_t* cycle = nullptr;            // the configuration cycle this instance belongs to
    ngx_shm_zone_t* health_zone = nullptr;   // UrlHealth per URL; null without chain nodes and pools
    ngx_shm_zone_t* metrics_zone = nullptr;  // router::RouterMetrics counters of this routing table
    std::vector<router::Route> probe_routes; // per target: how a poll reaches it

    std::size_t url_count() const { return first_url.empty() ? 0 : first_url.back() + table.targets.back().urls.size(); }
    // Shared health of a URL of a chain node or a pool (nullptr otherwise).
    UrlHealth* url_health(std::size_t target, std::size_t url) const {
        const router::Target& t = table.targets[target];
        if (health_zone == nullptr || health_zone->data == nullptr || !(t.chain_node || t.pool())) return nullptr;
        return static_cast<UrlHealth*>(health_zone->data) + first_url[target] + url;
    }
    // The shared counters (nullopt before the zone is mapped).
    std::optional<router::RouterMetrics> metrics() const {
        if (metrics_zone == nullptr || metrics_zone->data == nullptr) return std::nullopt;
        return router::RouterMetrics::attach(metrics_zone->data, table);
    }
};

class Call;
class Exchange;
struct MissGroup;
struct MissOutcome;

enum class CacheSource { None, Memory, Redis };
class Worker;

// A transport to one target; it answers Calls through Call::upstream_*.
class Upstream {
public:
    virtual ~Upstream() = default;
    virtual void submit(Call& call) = 0;
    // The call gave up (timeout, client gone): forget it.
    virtual void cancel(Call& call) = 0;
};

// One JSON-RPC call of an Exchange.
class Call {
public:
    Call(Exchange& exchange, std::size_t index);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

    const router::CallPlan& plan() const;
    Exchange& exchange() { return exchange_; }
    ngx_log_t* log() const;
    void start();
    // A Redis lookup is sent: its reply, or the Redis timeout, comes next.
    void wait_for_redis();

    // Transport callbacks; the transport has already dropped its reference.
    void upstream_replied(int http_status, std::string body);
    void upstream_failed(int code, const std::string& reason);
    // A failure found inside submit(): reported from the event loop.
    void fail_later(int code, std::string reason);
    // Cache lookup outcome: the stored value, or a miss (source None).
    void cache_answered(CacheSource source, std::string_view stored);
    // The answer of a coalesced miss (the group's upstream reply or failure).
    void deliver(const MissOutcome& outcome);
    // Becomes the one call of its miss group that asks the target.
    void lead();

    // Transport bookkeeping.
    std::size_t url = 0;            // which URL of the target has the call
    std::optional<std::size_t> pinned_url;  // a poll: this URL only
    bool answered_by_target = false;        // a JSON-RPC answer came (not a proxy error)
    Upstream* upstream = nullptr;   // set while the call is with a transport
    void* upstream_link = nullptr;  // transport's own handle (connection)
    std::uint64_t upstream_id = 0;  // id sent upstream
    bool retried = false;           // a stale keep-alive connection was retried
    bool waiting_cache = false;     // a Redis lookup is in flight

    std::string response;           // the answer for this call
    const char* cache_status = "BYPASS";

    // The identical misses this call shares an upstream request with.
    std::shared_ptr<MissGroup> miss_group;

private:
    void go_upstream();
    void send_upstream();
    // The end of this call's upstream request: its answer, or its group's.
    void answer(const MissOutcome& outcome);
    void answer_group(const MissOutcome& outcome);
    void leave_group();
    // Counts a failure of the call's URL; true when the call went to another
    // URL of its pool instead (an idempotent read, once).
    bool fail_over(const char* what);
    void finish(std::string response);
    void fail(int code, const std::string& message, const std::string& detail);
    static void on_timer(ngx_event_t* ev);
    // Metrics of a client's call (polls are not counted).
    void count_cache(router::CacheResult result) const;
    void upstream_sent();
    void upstream_ended(std::optional<router::UpstreamError> error);

    Exchange& exchange_;
    std::size_t index_;
    ngx_event_t timer_{};
    bool done_ = false;
    bool failed_over_ = false;
    int deferred_code_ = 0;
    std::string deferred_reason_;
    std::uint64_t upstream_sent_us_ = 0;  // the attempt in flight (0: none)
};

// Whoever waits for an Exchange (an HTTP request, a WebSocket session).
class ExchangeOwner {
public:
    virtual void exchange_done(Exchange& exchange) = 0;

protected:
    ~ExchangeOwner() = default;
};

class Exchange {
public:
    Exchange(const RouterInstance& instance, ngx_log_t* log, ExchangeOwner& owner,
             router::ClientTransport transport = router::ClientTransport::Http);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // Plans and starts every call; may complete (call exchange_done) before returning.
    void start(std::string body);
    // One get_dynamic_global_properties call to one URL of `target` (the
    // poll of a chain node or of a pool's URL that is out): never cached,
    // coalesced, retried or logged as a client's error.
    void start_poll(std::size_t target, std::size_t url);
    bool quiet() const { return quiet_; }
    // Whether the first call got a JSON-RPC answer from its target.
    bool answered_by_target() const { return !calls_.empty() && calls_[0]->answered_by_target; }
    bool done() const { return done_; }
    // The response body (one object, or an array for a batch), moved out.
    std::string take_response();
    const std::string& request_id() const { return request_id_; }
    // Headers that describe a single call: cache status, route, target.
    std::string cache_status() const;
    const router::Route* route() const;
    std::string target_name() const;
    std::string path() const;

    const RouterInstance& instance() const { return instance_; }
    ngx_log_t* log() const { return log_; }
    const router::RequestPlan& plan() const { return plan_; }
    router::ClientTransport transport() const { return transport_; }
    void call_finished();

private:
    const RouterInstance& instance_;
    ngx_log_t* log_;
    ExchangeOwner& owner_;
    router::ClientTransport transport_;
    std::string body_;
    router::RequestPlan plan_;
    std::string whole_error_;  // response when the whole body failed
    std::vector<std::unique_ptr<Call>> calls_;
    std::size_t pending_ = 0;
    bool started_ = false;
    bool done_ = false;
    bool quiet_ = false;
    std::string request_id_;
};

// The per-worker state: upstream pools, Redis clients, memory cache.
class Worker {
public:
    static Worker& get();
    static void shutdown();  // exit_process

    Upstream& upstream(const RouterInstance& instance, std::size_t target, std::size_t url);
    // Starts polling the chain nodes and pools of an instance (init_process).
    void start_polls(const RouterInstance& instance);
    // The next URL of a target for a call: round robin over the URLs that
    // are in and not lagging; when none is, any but `exclude` (nullopt when
    // `exclude` is set: a retry goes only to a healthy URL).
    std::optional<std::size_t> pick_url(const RouterInstance& instance, std::size_t target,
                                        std::optional<std::size_t> exclude);
    // Cache: lookup (answers through Call::cache_answered, maybe synchronously).
    void cache_lookup(Call& call);
    // Stores a result for `lifetime` seconds (0: without expiry).
    void cache_store(const Call& call, const std::string& result, std::int64_t lifetime);
    // A cache miss about to go upstream joins the identical miss already in
    // flight in this worker (true: it waits for that one's answer) or
    // starts a group that later identical misses join (false).
    bool join_miss(Call& call);
    void cache_cancel(Call& call);
    // A lookup timed out: stop waiting for Redis for a while.
    void cache_trip(Call& call);
    // Keeps a result read from Redis in the memory layer.
    void remember(const Call& call, std::string_view stored);
    std::uint64_t next_upstream_id() { return ++upstream_ids_; }
    std::string next_request_id();

    struct Impl;

private:
    Worker();
    ~Worker();
    friend struct std::default_delete<Worker>;
    std::unique_ptr<Impl> impl_;
    std::uint64_t upstream_ids_ = 0;
    std::uint64_t request_ids_ = 0;
    std::uint64_t request_id_seed_ = 0;
};

// A connected stream socket (TCP or unix, optionally TLS) on nginx's event
// loop. Subclasses get on_open/on_data/on_closed; each returns false when it
// destroyed the stream, which then touches nothing more.
class Stream {
public:
    // `log` must outlive the stream: pooled connections outlive the client
    // request that opened them, so they log to the cycle's log.
    explicit Stream(ngx_log_t* log) : log_(log) {}
    virtual ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Starts connecting; false (and nothing registered) on an immediate failure.
    bool open(const ngx_addr_t& addr, ngx_ssl_t* ssl, const std::string& tls_host, bool verify,
              ngx_msec_t connect_timeout);
    // Queues bytes and sends what the socket takes. False when the stream failed.
    bool write(std::string_view data);
    void close();
    bool connected() const { return ready_; }
    bool is_open() const { return c_ != nullptr; }
    ngx_connection_t* connection() const { return c_; }
    // Parks the connection: any event closes it (a peer's close or data, or
    // worker shutdown); timeout closes it too.
    void park(ngx_msec_t timeout);
    void unpark();

protected:
    virtual bool on_open() = 0;
    virtual bool on_data(std::string_view data) = 0;
    // The connection failed or was closed by the peer; `during_connect` when
    // it never opened.
    virtual bool on_closed(bool during_connect, const char* what) = 0;
    // Closes the connection and reports it through on_closed.
    bool fail(const char* what);
    ngx_log_t* log_;

private:
    static void read_handler(ngx_event_t* ev);
    static void write_handler(ngx_event_t* ev);
    static void parked_handler(ngx_event_t* ev);
    static void tls_done(ngx_connection_t* c);
    bool connected_event();
    bool start_tls();
    bool became_ready();
    bool flush();
    bool read_available();

    ngx_peer_connection_t peer_{};
    ngx_connection_t* c_ = nullptr;
    ngx_ssl_t* ssl_ = nullptr;
    std::string tls_host_;
    bool verify_ = false;
    bool ready_ = false;
    bool parked_ = false;
    std::string out_;
    std::size_t out_sent_ = 0;
};

}  // namespace jsonrpc_router
