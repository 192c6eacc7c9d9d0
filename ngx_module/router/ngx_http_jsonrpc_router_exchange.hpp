// The router's requests inside one nginx worker: an Exchange is one request
// body (an HTTP POST or a WebSocket message) split into Calls; each Call is
// answered from the cache (ngx_http_jsonrpc_router_cache) or by its route's
// target over the target's transport (an Upstream: _http_upstream,
// _ws_upstream), on a URL the pool health picks (_health). All I/O runs on
// nginx's event loop; nothing here blocks and no exception leaves these
// classes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ngx_http_jsonrpc_router_instance.hpp"
#include "ngx_wallet_nginx.hpp"

namespace jsonrpc_router {

class Call;
class Exchange;
struct MissGroup;
struct MissOutcome;

enum class CacheSource { None, Memory, Redis };

// Whether an answer fits the budgets of its request (jsonrpc_router_max_response)
// and of its client address (jsonrpc_router_max_client_response).
enum class AnswerRoom { Fits, OverRequest, OverClient };

// A request id: 16 hex digits, NUL-terminated for logs, held in place (no allocation).
struct RequestId {
    std::array<char, 17> text{};
    const char* c_str() const { return text.data(); }
    operator std::string_view() const { return {text.data(), text.size() - 1}; }
};

// Answer texts: a worker keeps a few strings that answers were sent from,
// so that a warm worker writes a cached answer without allocating. A
// string given back keeps its memory (up to a bound) for the next answer.
std::string spare_answer();
void give_back_answer(std::string text) noexcept;

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
    const RouterInstance& instance() const;
    ngx_log_t* log() const;
    void start();
    // A Redis lookup is sent: its reply, or the Redis timeout, comes next.
    void wait_for_redis();

    // Transport callbacks; the transport has already dropped its reference.
    void upstream_replied(int http_status, std::string body);
    void upstream_failed(int code, const std::string& reason);
    // A failure found inside submit(): reported from the event loop.
    void fail_later(int code, std::string reason);
    // The transport has no room for the call (its connections and queue are
    // full): answered 1500 from the event loop, not counted against the URL's health.
    void busy_later(std::string reason);
    // Cache lookup outcome: the stored value, or a miss (source None).
    void cache_answered(CacheSource source, std::string_view stored);
    // A fresh entry of the memory layer (its expiry checked there): its
    // stored value and the offset of the space before the result.
    void memory_hit(std::string_view stored, std::size_t space) { answer_cached(CacheSource::Memory, stored, space); }
    // The answer of a coalesced miss (the group's upstream reply or failure).
    void deliver(const MissOutcome& outcome);
    // Becomes the one call of its miss group that asks the target.
    void lead();
    // An identical call earlier in the same request looks the key up for
    // this one too (a batch of 50 copies of one call costs one lookup).
    void follow(Call& leader) {
        follows_ = true;
        leader.followers_.push_back(this);
    }

    // Transport bookkeeping.
    std::size_t url = 0;            // which URL of the target has the call
    std::optional<std::size_t> pinned_url;  // a poll: this URL only
    bool answered_by_target = false;        // a JSON-RPC answer came (not a proxy error)
    Upstream* upstream = nullptr;   // set while the call is with a transport
    void* upstream_link = nullptr;  // transport's own handle (connection)
    std::uint64_t upstream_id = 0;  // id sent upstream
    bool retried = false;           // a stale keep-alive connection was retried
    // The call waited in the transport's queue for a connection (our own
    // budget, jsonrpc_router_upstream_connections): its timeout is not the URL's failure.
    bool queued = false;
    // The call failed because of the router's own budgets (a full queue, no
    // local connection or descriptor), never the URL's: its health is not touched.
    bool refused_locally = false;
    bool waiting_cache = false;     // a Redis lookup is in flight

    std::string response;           // the answer for this call
    const char* cache_status = "BYPASS";

    // The identical misses this call shares an upstream request with.
    std::shared_ptr<MissGroup> miss_group;

private:
    // Answers with a fresh stored value (`space`: see stored_expiry).
    void answer_cached(CacheSource source, std::string_view stored, std::size_t space);
    void go_upstream();
    void send_upstream();
    // The end of this call's upstream request: its answer, or its group's.
    void answer(const MissOutcome& outcome);
    void answer_group(const MissOutcome& outcome);
    void leave_group();
    // Counts a failure of the call's URL (unless `urls_fault` is false: the
    // router's own budget failed it); true when the call went to another URL
    // of its pool instead (an idempotent read, once).
    bool fail_over(const char* what, bool urls_fault = true);
    // Ends the call with `response` when it fits the budgets, else with error 1800.
    void finish(std::string response);
    void answer_too_large(AnswerRoom room);
    void end(std::string response);
    // The identical calls that waited for this one's lookup go upstream too
    // (they join this call's miss group).
    void release_followers();
    void fail(int code, const std::string& message, const std::string& detail);
    static void on_timer(ngx_event_t* ev);
    static void timer_failed(ngx_event_t* ev);
    void take_reply(int http_status, std::string_view body);
    // Ends the call with a JSON-RPC internal error after an exception.
    void fail_internal();
    // Upstream latency and errors of a client's call (polls are not counted).
    void upstream_sent();
    void upstream_ended(std::optional<router::UpstreamError> error);

    Exchange& exchange_;
    std::size_t index_;
    ngx_event_t timer_{};
    bool done_ = false;
    bool failed_over_ = false;
    int deferred_code_ = 0;
    bool deferred_busy_ = false;
    std::string deferred_reason_;
    std::uint64_t upstream_sent_us_ = 0;  // the attempt in flight (0: none)
    bool follows_ = false;                // waits for an identical call's lookup
    std::vector<Call*> followers_;        // the calls that wait for this one's lookup
};

// The Calls of one Exchange, created together and never moved (their
// timers point at them): a single call is held in place, a batch's calls in
// one allocation.
class CallArray {
public:
    CallArray() = default;
    ~CallArray() { clear(); }
    CallArray(const CallArray&) = delete;
    CallArray& operator=(const CallArray&) = delete;

    // Creates `count` calls of `exchange`, numbered 0..count-1 (none before).
    void create(Exchange& exchange, std::size_t count);
    // Destroys the calls in order (cancelling what they wait for).
    void clear();
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Call& operator[](std::size_t i) { return calls_[i]; }
    const Call& operator[](std::size_t i) const { return calls_[i]; }
    Call* begin() { return calls_; }
    Call* end() { return calls_ + size_; }
    const Call* begin() const { return calls_; }
    const Call* end() const { return calls_ + size_; }

private:
    Call* calls_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;  // of the allocation; 0: the call in place
    alignas(Call) unsigned char one_[sizeof(Call)];
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
    // `client`: the record of the client's address, held by the owner for
    // longer than this exchange; null for the router's own polls.
    Exchange(const RouterInstance& instance, ngx_log_t* log, ExchangeOwner& owner,
             router::ClientTransport transport = router::ClientTransport::Http, ClientRecord* client = nullptr);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // Plans and starts every call; may complete (call exchange_done) before
    // returning. The plan copies what it keeps: `body` may go after this.
    void start(std::string_view body);
    // One get_dynamic_global_properties call to one URL of `target` (the
    // poll of a chain node or of a pool's URL that is out): never cached,
    // coalesced, retried or logged as a client's error.
    void start_poll(std::size_t target, std::size_t url);
    bool quiet() const { return quiet_; }
    // Whether the first call got a JSON-RPC answer from its target.
    bool answered_by_target() const { return !calls_.empty() && calls_[0].answered_by_target; }
    // Whether the first call failed because of the router's own budgets (not the URL's fault).
    bool refused_locally() const { return !calls_.empty() && calls_[0].refused_locally; }
    bool done() const { return done_; }
    // The response body (one object, or an array for a batch), moved out.
    std::string take_response();
    const RequestId& request_id() const { return request_id_; }
    // Headers that describe a single call: cache status (a literal, or a
    // batch's text written to `batch_text`), route, target.
    std::string_view cache_status(std::string& batch_text) const;
    const router::Route* route() const;
    // The route's target (configuration: lives as long as the instance); empty without a route.
    std::string_view target_name() const;
    std::string path() const;

    const RouterInstance& instance() const { return instance_; }
    ngx_log_t* log() const { return log_; }
    const router::RequestPlan& plan() const { return plan_; }
    router::ClientTransport transport() const { return transport_; }
    // The client's address (empty for a poll).
    const std::string& client() const;
    // Takes `bytes` of the request's answer budget (jsonrpc_router_max_response)
    // and of its client's (jsonrpc_router_max_client_response, held until
    // this exchange ends: for HTTP, once its answer is sent).
    AnswerRoom charge_response(std::size_t bytes);
    // Whether `bytes` more would fit, without taking them (an answer that
    // cannot fit is not built).
    AnswerRoom room_for(std::size_t bytes) const;
    void call_finished();

private:
    const RouterInstance& instance_;
    ngx_log_t* log_;
    ExchangeOwner& owner_;
    router::ClientTransport transport_;
    ClientRecord* client_;
    std::size_t client_calls_ = 0;  // this exchange's share of its client's calls in flight
    std::size_t response_bytes_ = 0;  // of the answers kept so far (and charged to the client)
    router::RequestPlan plan_;
    std::string whole_error_;  // response when the whole body failed
    CallArray calls_;
    std::size_t pending_ = 0;
    bool started_ = false;
    bool done_ = false;
    bool quiet_ = false;
    RequestId request_id_;
};

}  // namespace jsonrpc_router
