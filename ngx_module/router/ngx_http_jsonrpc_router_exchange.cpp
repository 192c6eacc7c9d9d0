// The router's calls and exchanges (see the header). Re-entrancy rule: a
// transport never completes a Call from inside submit(); failures found there
// are posted (Call::fail_later) so that an Exchange is never completed while
// it is still starting its calls.
#include "ngx_http_jsonrpc_router_exchange.hpp"

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>

#include "jsonrpc_writer.hpp"
#include "ngx_http_jsonrpc_router_metrics.hpp"
#include "ngx_http_jsonrpc_router_worker.hpp"
#include "ngx_wallet_connection.hpp"
#include "ngx_wallet_guard.hpp"

namespace jsonrpc_router {

namespace {

// Client text as logged (a method name, a message naming it): printable
// ASCII only (no CR/LF to forge log lines), at most `max` bytes.
std::string loggable(std::string_view text, std::size_t max = 100) {
    if (text.empty()) return "-";
    std::string out;
    for (char c : text.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (text.size() > max) out += "...";
    return out;
}

// The spare answer strings (spare_answer): about the answers and upstream
// bodies a worker holds at once (a miss holds two); a string larger than
// kSpareAnswerBytes is let go, and at most kLargeSpares over kSmallSpareBytes are kept.
constexpr std::size_t kSpareAnswerBytes = 256 * 1024;
constexpr std::size_t kSmallSpareBytes = 16 * 1024;
constexpr std::size_t kLargeSpares = 16;
struct SpareAnswers {
    std::array<std::string, 64> texts;
    std::size_t count = 0;
    std::size_t large = 0;  // of them over kSmallSpareBytes
};
SpareAnswers spare_answers;

// Plans of single calls that ended, for the next exchanges: their strings
// keep their memory (up to kSparePlanBytes), so that planning a call of a
// warm worker allocates nothing.
constexpr std::size_t kSparePlanBytes = 4096;
struct SparePlans {
    std::array<router::RequestPlan, 16> plans;
    std::size_t count = 0;
};
SparePlans spare_plans;

std::size_t plan_bytes(const router::CallPlan& call) {
    return call.id.capacity() + call.path.capacity() + call.method_json.capacity() + call.params_json.capacity() +
           call.cache_key.capacity();
}

void give_back_plan(router::RequestPlan& plan) noexcept {
    if (plan.batch || plan.calls.size() != 1 || plan_bytes(plan.calls[0]) > kSparePlanBytes) return;
    if (spare_plans.count < spare_plans.plans.size()) spare_plans.plans[spare_plans.count++] = std::move(plan);
}

}  // namespace

std::string spare_answer() {
    if (spare_answers.count == 0) return {};
    std::string text = std::move(spare_answers.texts[--spare_answers.count]);
    if (text.capacity() > kSmallSpareBytes) --spare_answers.large;
    return text;
}

void give_back_answer(std::string text) noexcept {
    if (text.capacity() <= std::string().capacity() || text.capacity() > kSpareAnswerBytes) return;
    if (spare_answers.count == spare_answers.texts.size()) return;
    if (text.capacity() > kSmallSpareBytes) {
        if (spare_answers.large == kLargeSpares) return;
        ++spare_answers.large;
    }
    spare_answers.texts[spare_answers.count++] = std::move(text);
}

using wallet::ngx::post_event;
using wallet::ngx::unpost_event;

Call::Call(Exchange& exchange, std::size_t index) : exchange_(exchange), index_(index) {
    timer_.handler = wallet::ngx::guarded<"jsonrpc_router: call timer", on_timer, timer_failed>;
    timer_.data = this;
    timer_.log = exchange.log();
}

Call::~Call() {
    if (timer_.timer_set) ngx_del_timer(&timer_);
    unpost_event(&timer_);
    if (waiting_cache) Worker::get().cache().cancel(*this);
    if (upstream != nullptr) upstream->cancel(*this);
    // An attempt still in flight (the client went away): no longer in flight.
    if (upstream_sent_us_ != 0) upstream_abandoned(exchange_.instance(), plan().route->target, url);
    leave_group();
}

const router::CallPlan& Call::plan() const { return exchange_.plan().calls[index_]; }
const RouterInstance& Call::instance() const { return exchange_.instance(); }
ngx_log_t* Call::log() const { return exchange_.log(); }

void Call::start() {
    const router::CallPlan& p = plan();
    if (!exchange_.quiet()) count_call(exchange_.instance(), p.error ? nullptr : p.route, exchange_.transport());
    if (p.error) {
        fail(p.error->code, p.error->message, "");
        return;
    }
    if (p.cache_key.empty()) {
        go_upstream();
        return;
    }
    cache_status = "MISS";
    if (follows_) return;  // the identical call's lookup answers this one too
    Worker::get().cache().lookup(*this);
}

void Call::wait_for_redis() {
    waiting_cache = true;
    ngx_add_timer(&timer_, exchange_.instance().redis_timeout);
}

void Call::cache_answered(CacheSource source, std::string_view stored) {
    if (source != CacheSource::None) {
        // "<expiry ms, 0 = none> <result>"; anything else is not ours and is a miss.
        std::int64_t expires = 0;
        const std::size_t space = stored_expiry(stored, expires);
        if (space != std::string_view::npos && (expires == 0 || expires > wall_clock_ms())) {
            answer_cached(source, stored, space);
            return;
        }
    }
    if (done_) return;
    waiting_cache = false;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    go_upstream();
}

void Call::answer_cached(CacheSource source, std::string_view stored, std::size_t space) {
    if (done_) return;
    waiting_cache = false;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    // The identical calls that waited are answered first: this call's end
    // may end the exchange. `stored` stays valid: they store nothing, and
    // this call remembers it after them.
    for (Call* follower : std::exchange(followers_, {})) follower->answer_cached(CacheSource::Memory, stored, space);
    if (source == CacheSource::Redis) Worker::get().cache().remember(*this, stored);
    cache_status = "HIT";
    count_cache(exchange_.instance(), *plan().route, router::CacheResult::Hit);
    const std::string_view result = stored.substr(space + 1);
    // An answer that cannot fit is not built (a batch of 50 copies of one
    // large result costs the copies that fit, no more): its size is charged first.
    if (const AnswerRoom room = exchange_.charge_response(router::cached_response_size(result, plan().id));
        room != AnswerRoom::Fits) {
        answer_too_large(room);
        return;
    }
    std::string text = spare_answer();
    router::render_cached(text, result, plan().id);
    end(std::move(text));
}

void Call::release_followers() {
    for (Call* follower : std::exchange(followers_, {})) {
        follower->follows_ = false;
        follower->go_upstream();
    }
}

void Call::go_upstream() {
    if (!plan().cache_key.empty() && Worker::get().cache().join_miss(*this)) {
        // An identical miss is already with the target: wait for its answer.
        cache_status = "COALESCED";
        count_cache(exchange_.instance(), *plan().route, router::CacheResult::Coalesced);
        const router::Target& target = exchange_.instance().table.targets[plan().route->target];
        ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target.timeout_ms));
    } else {
        if (!plan().cache_key.empty()) count_cache(exchange_.instance(), *plan().route, router::CacheResult::Miss);
        send_upstream();
    }
    // The identical calls of this request join this call's miss group (a
    // transport never answers from inside submit(): this call is still here).
    release_followers();
}

void Call::upstream_sent() {
    if (exchange_.quiet()) return;
    upstream_sent_us_ = metrics::monotonic_us();
    count_upstream_sent(exchange_.instance(), plan().route->target, url);
}

void Call::upstream_ended(std::optional<router::UpstreamError> error) {
    if (upstream_sent_us_ == 0) return;
    count_upstream(exchange_.instance(), plan().route->target, url, std::exchange(upstream_sent_us_, 0), error);
}

void Call::send_upstream() {
    const RouterInstance& instance = exchange_.instance();
    const router::Route& route = *plan().route;
    const router::Target& target = instance.table.targets[route.target];
    url = pinned_url ? *pinned_url : Worker::get().pools().pick_url(instance, route.target, std::nullopt).value_or(0);
    ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target.timeout_ms));
    upstream_sent();
    Worker::get().upstream(instance, route.target, url).submit(*this);
}

bool Call::fail_over(const char* what, bool urls_fault) {
    if (exchange_.quiet()) return false;  // a poll counts its own outcome
    const RouterInstance& instance = exchange_.instance();
    const std::size_t target_index = plan().route->target;
    const router::Target& target = instance.table.targets[target_index];
    if (urls_fault) record_health(instance.url_health(target_index, url), target, url, false);
    // A broadcast may have reached the node before the failure: never twice.
    if (failed_over_ || !target.pool() || plan().write) return false;
    auto other = Worker::get().pools().pick_url(instance, target_index, url);
    if (!other) return false;
    failed_over_ = true;
    ngx_log_error(NGX_LOG_WARN, log(), 0, "jsonrpc_router: request_id=%s method=%s: %s failed (%s), retried on %s",
                  exchange_.request_id().c_str(), loggable(plan().path).c_str(), target.urls[url].url.c_str(), what,
                  target.urls[*other].url.c_str());
    url = *other;
    retried = false;
    queued = false;
    ngx_add_timer(&timer_, static_cast<ngx_msec_t>(target.timeout_ms));
    upstream_sent();
    Worker::get().upstream(instance, target_index, url).submit(*this);
    return true;
}

void Call::lead() {
    cache_status = "MISS";
    send_upstream();
}

void Call::leave_group() {
    if (!miss_group) return;
    std::shared_ptr<MissGroup> group = std::move(miss_group);
    miss_group.reset();
    // The leader's client went away: the next member asks the target.
    if (Call* next = group->leave(this)) next->lead();
}

void Call::answer_group(const MissOutcome& outcome) {
    std::shared_ptr<MissGroup> group = std::move(miss_group);
    miss_group.reset();
    MissGroup::answer_all(std::move(group), outcome);
}

void Call::deliver(const MissOutcome& outcome) {
    if (done_) return;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    if (outcome.code == 0) {
        finish(outcome.answer_head + plan().id + "}");
    } else {
        fail(outcome.code, outcome.message, outcome.detail);
    }
}

void Call::fail_later(int code, std::string reason) {
    deferred_code_ = code;
    deferred_reason_ = std::move(reason);
    post_event(&timer_);
}

void Call::timer_failed(ngx_event_t* ev) { static_cast<Call*>(ev->data)->fail_internal(); }

void Call::fail_internal() {
    if (done_) return;
    if (upstream != nullptr) upstream->cancel(*this);
    if (waiting_cache) {
        Worker::get().cache().cancel(*this);
        waiting_cache = false;
    }
    leave_group();
    fail(wallet::jsonrpc::kInternalError, "Internal error", "exception");
}

void Call::busy_later(std::string reason) {
    deferred_busy_ = true;
    refused_locally = true;
    fail_later(jsonrpc::code::upstream_unavailable, std::move(reason));
}

void Call::on_timer(ngx_event_t* ev) {
    auto* call = static_cast<Call*>(ev->data);
    if (call->done_) return;
    WALLET_FAULT_POINT("router.call_timer");
    if (std::exchange(call->deferred_busy_, false)) {
        call->deferred_code_ = 0;
        if (call->timer_.timer_set) ngx_del_timer(&call->timer_);
        call->upstream_ended(router::UpstreamError::Unavailable);
        const router::Target& target = call->exchange_.instance().table.targets[call->plan().route->target];
        MissOutcome outcome;
        outcome.code = jsonrpc::code::upstream_unavailable;
        outcome.message = "Upstream busy: target " + target.name;
        outcome.detail = call->deferred_reason_;
        call->answer(outcome);
        return;
    }
    if (call->deferred_code_ != 0) {
        int code = call->deferred_code_;
        call->deferred_code_ = 0;
        call->upstream_failed(code, call->deferred_reason_);
        return;
    }
    if (!ev->timedout) return;
    ev->timedout = 0;
    if (call->waiting_cache) {
        // Redis is slow: serve this call uncached, and skip Redis for a while.
        Worker::get().cache().cancel(*call);
        Worker::get().cache().trip(*call);
        call->go_upstream();
        return;
    }
    if (call->miss_group && call->miss_group->leader != call) {
        // A waiting member times out alone; the leader's timeout is the group's.
        call->leave_group();
    } else {
        if (call->upstream != nullptr) call->upstream->cancel(*call);
        call->upstream_ended(router::UpstreamError::Timeout);
        // Time spent in our own queue is not the URL's slowness: a healthy
        // node behind a saturated budget stays in.
        const bool urls_fault = !call->queued;
        call->refused_locally = !urls_fault;
        if (call->fail_over(urls_fault ? "timeout" : "timeout waiting for a connection", urls_fault)) return;
    }
    const router::Target& target = call->exchange_.instance().table.targets[call->plan().route->target];
    MissOutcome outcome;
    outcome.code = jsonrpc::code::upstream_timeout;
    outcome.message = "Request Timeout: target " + target.name + " did not answer within " +
                      std::to_string(target.timeout_ms) + " ms";
    outcome.detail = "timeout";
    call->answer(outcome);
}

void Call::upstream_replied(int status, std::string body) {
    // A transport calls this once it let go of the call, maybe of itself too:
    // an exception ends this call here, not in the transport's handler.
    wallet::ngx::guard(
        log(), "jsonrpc_router: upstream answer", [&] { take_reply(status, body); }, [&] { fail_internal(); });
    // The body's memory serves the next answer (a transport's next body).
    give_back_answer(std::move(body));
}

void Call::take_reply(int status, std::string_view body) {
    if (done_) return;
    WALLET_FAULT_POINT("router.upstream_replied");
    if (timer_.timer_set) ngx_del_timer(&timer_);
    const RouterInstance& instance = exchange_.instance();
    router::UpstreamReply reply = router::rewrite_upstream_reply(body, plan().id, instance.limits, spare_answer());
    upstream_ended(reply.valid ? std::nullopt : std::optional(router::UpstreamError::BadAnswer));
    if (!reply.valid) {
        if (fail_over("bad answer")) return;
        MissOutcome outcome;
        outcome.code = jsonrpc::code::bad_upstream_response;
        outcome.message = "Upstream response error: " + reply.problem + " (HTTP " + std::to_string(status) + ")";
        outcome.detail = reply.problem;
        answer(outcome);
        return;
    }
    answered_by_target = true;
    const std::size_t target_index = plan().route->target;
    UrlHealth* health = instance.url_health(target_index, url);
    if (!exchange_.quiet()) record_health(health, instance.table.targets[target_index], url, true);
    // Only a 2xx answer is stored: a proxy's or an overloaded node's error
    // page may still carry a `result`.
    if (reply.cacheable && status >= 200 && status < 300 && !plan().cache_key.empty()) {
        // Final only at or below the LIB of the node that answered.
        std::uint64_t lib = health != nullptr ? health->lib.load(std::memory_order_relaxed) : 0;
        if (auto lifetime = router::cache_lifetime(plan(), reply.result, lib)) {
            Worker::get().cache().store(*this, reply.result, *lifetime);
        }
    }
    if (miss_group) {
        MissOutcome outcome;
        outcome.answer_head = reply.response.substr(0, reply.id_offset);
        answer_group(outcome);
        return;
    }
    finish(std::move(reply.response));
}

void Call::upstream_failed(int code, const std::string& reason) {
    if (done_) return;
    if (timer_.timer_set) ngx_del_timer(&timer_);
    upstream_ended(code == jsonrpc::code::upstream_timeout         ? router::UpstreamError::Timeout
                   : code == jsonrpc::code::bad_upstream_response ? router::UpstreamError::BadAnswer
                                                                  : router::UpstreamError::Unavailable);
    if (fail_over(reason.c_str())) return;
    const router::Target& target = exchange_.instance().table.targets[plan().route->target];
    MissOutcome outcome;
    outcome.code = code;
    outcome.message = code == jsonrpc::code::upstream_unavailable ? "Upstream unavailable: target " + target.name
                                                                  : "Upstream response error: target " + target.name;
    outcome.detail = reason;
    answer(outcome);
}

void Call::answer(const MissOutcome& outcome) {
    if (miss_group) {
        answer_group(outcome);
    } else {
        deliver(outcome);
    }
}

void Call::fail(int code, const std::string& message, const std::string& detail) {
    const RequestId& request_id = exchange_.request_id();
    const std::string path = loggable(plan().path);
    if (exchange_.quiet()) {
        // A chain-node poll: its poller reports the target's state.
    } else if (code >= 1000 && code != jsonrpc::code::client_busy) {
        ngx_log_error(NGX_LOG_ERR, log(), 0, "jsonrpc_router: request_id=%s code=%d method=%s: %s (%s)",
                      request_id.c_str(), code, path.c_str(), loggable(message, 300).c_str(), detail.c_str());
    } else {
        ngx_log_error(NGX_LOG_INFO, log(), 0, "jsonrpc_router: request_id=%s code=%d method=%s: %s", request_id.c_str(),
                      code, path.c_str(), loggable(message, 300).c_str());
    }
    if (code != jsonrpc::code::upstream_timeout && code < 1000) cache_status = "BYPASS";
    finish(wallet::jsonrpc::error_response(plan().id, code, message, request_id));
}

void Call::finish(std::string text) {
    const AnswerRoom room = exchange_.charge_response(text.size());
    if (room != AnswerRoom::Fits) {
        answer_too_large(room);
        return;
    }
    end(std::move(text));
}

void Call::answer_too_large(AnswerRoom room) {
    // Many large answers in one request (a batch of 50 big cached results),
    // or in the requests of one client at once: each call over the budget
    // gets a small error instead.
    ngx_log_error(NGX_LOG_INFO, log(), 0, "jsonrpc_router: request_id=%s code=%d: answer over the %s budget",
                  exchange_.request_id().c_str(), jsonrpc::code::response_too_large,
                  room == AnswerRoom::OverClient ? "client's" : "request's");
    count_limited(instance(), room == AnswerRoom::OverClient ? router::Limit::ClientResponse : router::Limit::Response);
    const std::string message =
        room == AnswerRoom::OverClient
            ? "Response too large: the answers in flight of one client may hold " +
                  std::to_string(instance().max_client_response) + " bytes; retry after the answers"
            : "Response too large: the answers of one request may hold " + std::to_string(instance().max_response) +
                  " bytes";
    cache_status = "BYPASS";
    end(wallet::jsonrpc::error_response(plan().id, jsonrpc::code::response_too_large, message, exchange_.request_id()));
}

void Call::end(std::string text) {
    if (timer_.timer_set) ngx_del_timer(&timer_);
    unpost_event(&timer_);
    // Identical calls still waiting for this one's lookup (it failed
    // before any): they go their own way.
    release_followers();
    response = std::move(text);
    done_ = true;
    exchange_.call_finished();  // may destroy this Call: nothing after it
}

// ---- CallArray ------------------------------------------------------------------------

void CallArray::create(Exchange& exchange, std::size_t count) {
    if (count == 0) return;
    if (count == 1) {
        calls_ = std::construct_at(reinterpret_cast<Call*>(one_), exchange, 0);
        size_ = 1;
        return;
    }
    calls_ = std::allocator<Call>().allocate(count);
    capacity_ = count;
    // A Call's constructor does not throw (no allocation).
    for (; size_ < count; ++size_) std::construct_at(calls_ + size_, exchange, size_);
}

void CallArray::clear() {
    for (std::size_t i = 0; i < size_; ++i) std::destroy_at(calls_ + i);
    if (capacity_ > 0) std::allocator<Call>().deallocate(calls_, capacity_);
    calls_ = nullptr;
    size_ = 0;
    capacity_ = 0;
}

// ---- Exchange -------------------------------------------------------------------------

Exchange::Exchange(const RouterInstance& instance, ngx_log_t* log, ExchangeOwner& owner,
                   router::ClientTransport transport, ClientRecord* client)
    : instance_(instance), log_(log), owner_(owner), transport_(transport), client_(client),
      request_id_(Worker::get().next_request_id()) {}

Exchange::~Exchange() {
    calls_.clear();  // cancels what is still with a target or the cache
    give_back_plan(plan_);
    if (client_ != nullptr) {
        ClientRecord::subtract(client_->calls, client_calls_);
        ClientRecord::subtract(client_->answer_bytes, response_bytes_);
    }
}

const std::string& Exchange::client() const {
    static const std::string none;
    return client_ != nullptr ? *client_->address : none;
}

void Exchange::start(std::string_view body) {
    WALLET_FAULT_POINT("router.exchange_start");
    if (spare_plans.count > 0) plan_ = std::move(spare_plans.plans[--spare_plans.count]);
    router::plan_request(plan_, body, instance_.table, instance_.limits);
    count_request(instance_, transport_, plan_.error.has_value());
    if (plan_.error) {
        ngx_log_error(NGX_LOG_INFO, log_, 0, "jsonrpc_router: request_id=%s code=%d: %s", request_id_.c_str(),
                      plan_.error->code, plan_.error->message.c_str());
        whole_error_ = wallet::jsonrpc::error_response("null", plan_.error->code, plan_.error->message, request_id_);
        done_ = true;
        owner_.exchange_done(*this);  // may destroy this Exchange
        return;
    }
    // The client's budget of calls in flight (in this worker): the calls
    // over it are answered with an error, the others go on.
    const std::size_t granted = client_ == nullptr ? plan_.calls.size()
                                                   : client_->claim_calls(plan_.calls.size(), instance_.max_client_calls);
    if (client_ != nullptr) client_calls_ = granted;
    std::uint64_t refused = 0;
    for (std::size_t i = granted; i < plan_.calls.size(); ++i) {
        if (plan_.calls[i].error) continue;
        ++refused;
        plan_.calls[i].error = jsonrpc::ErrorInfo{
            jsonrpc::code::client_busy, "Too many calls in flight from this client (at most " +
                                            std::to_string(instance_.max_client_calls) + "); retry after the answers"};
    }
    if (refused > 0) count_limited(instance_, router::Limit::ClientCalls, refused);
    calls_.create(*this, plan_.calls.size());
    pending_ = calls_.size();
    // Identical cacheable calls of one request share one lookup (and one
    // upstream request on a miss): the first looks the key up for the others.
    if (plan_.batch) {
        std::unordered_map<std::string_view, Call*> first_of_key;
        for (std::size_t i = 0; i < calls_.size(); ++i) {
            const router::CallPlan& p = plan_.calls[i];
            if (p.error || p.cache_key.empty()) continue;
            auto [it, fresh] = first_of_key.try_emplace(p.cache_key, &calls_[i]);
            if (!fresh) calls_[i].follow(*it->second);
        }
    }
    for (Call& call : calls_) call.start();
    started_ = true;
    if (pending_ == 0) {
        done_ = true;
        owner_.exchange_done(*this);  // may destroy this Exchange
    }
}

void Exchange::start_poll(std::size_t target, std::size_t url) {
    quiet_ = true;
    plan_.calls.push_back(router::chain_poll_plan(instance_.probe_routes[target]));
    calls_.create(*this, 1);
    calls_[0].pinned_url = url;
    pending_ = 1;
    calls_[0].start();  // a transport never answers from inside start()
    started_ = true;
}

void Exchange::call_finished() {
    --pending_;
    if (started_ && pending_ == 0) {
        done_ = true;
        owner_.exchange_done(*this);  // may destroy this Exchange
    }
}

AnswerRoom Exchange::room_for(std::size_t bytes) const {
    if (response_bytes_ + bytes > instance_.max_response) return AnswerRoom::OverRequest;
    if (client_ != nullptr && client_->answer_bytes + bytes > instance_.max_client_response) {
        return AnswerRoom::OverClient;
    }
    return AnswerRoom::Fits;
}

AnswerRoom Exchange::charge_response(std::size_t bytes) {
    const AnswerRoom room = room_for(bytes);
    if (room != AnswerRoom::Fits) return room;
    response_bytes_ += bytes;
    if (client_ != nullptr) {
        client_->answer_bytes += bytes;
        client_->charge_rate(bytes, ngx_current_msec, instance_.client_rate);
    }
    return room;
}

std::string Exchange::take_response() {
    if (!whole_error_.empty()) return std::move(whole_error_);
    if (!plan_.batch) return calls_.empty() ? std::string() : std::move(calls_[0].response);
    std::vector<std::string> parts;
    parts.reserve(calls_.size());
    for (Call& call : calls_) parts.push_back(std::move(call.response));
    return router::render_batch(parts);
}

std::string_view Exchange::cache_status(std::string& batch_text) const {
    if (calls_.empty()) return "BYPASS";
    if (!plan_.batch) return calls_[0].cache_status;
    std::size_t hits = 0;
    for (const Call& call : calls_) hits += std::strcmp(call.cache_status, "HIT") == 0 ? 1 : 0;
    batch_text = "BATCH hits=" + std::to_string(hits) + " calls=" + std::to_string(calls_.size());
    return batch_text;
}

const router::Route* Exchange::route() const {
    if (plan_.batch || plan_.calls.empty()) return nullptr;
    return plan_.calls[0].route;
}

std::string_view Exchange::target_name() const {
    const router::Route* r = route();
    return r ? std::string_view(instance_.table.targets[r->target].name) : std::string_view();
}

std::string Exchange::path() const { return plan_.batch || plan_.calls.empty() ? std::string() : plan_.calls[0].path; }

}  // namespace jsonrpc_router
