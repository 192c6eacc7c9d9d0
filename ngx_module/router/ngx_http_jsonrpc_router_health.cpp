#include "ngx_http_jsonrpc_router_health.hpp"

#include <algorithm>

#include "ngx_http_jsonrpc_router_exchange.hpp"
#include "ngx_wallet_guard.hpp"
#include "wallet/json_util.hpp"

namespace jsonrpc_router {

std::uint64_t record_health(UrlHealth* health, const router::Target& target, std::size_t url, bool ok) {
    if (health == nullptr) return 0;
    const router::Endpoint& endpoint = target.urls[url];
    if (ok) {
        std::uint64_t before = health->failures.load(std::memory_order_relaxed);
        if (before != 0) health->failures.store(0);
        if (health->down.load(std::memory_order_relaxed) != 0 && health->down.exchange(0) != 0) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0, "jsonrpc_router: target %s: %s is back in",
                          target.name.c_str(), endpoint.url.c_str());
        }
        return before;
    }
    std::uint64_t before = health->failures.fetch_add(1);
    if (target.pool() && before + 1 >= target.max_failures && health->down.exchange(1) == 0) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "jsonrpc_router: target %s: %s is out after %uL consecutive failures; probing it",
                      target.name.c_str(), endpoint.url.c_str(), before + 1);
    }
    return before;
}

// Polls one URL of a chain node (get_dynamic_global_properties: head and
// last irreversible block, every poll interval) or of a pool (any JSON-RPC
// answer means alive; only while the URL is out, every probe interval).
// Every worker runs one per URL; a poll is due when the shared next_poll_ms
// passed, and the worker that moves it forward polls.
class UrlPoller final : public ExchangeOwner {
public:
    UrlPoller(const RouterInstance& instance, std::size_t target, std::size_t url, UrlHealth& health)
        : instance_(instance), target_(instance.table.targets[target]), target_index_(target), url_(url),
          health_(health) {
        // Guarded without a recovery: tick() has set the next timer first.
        timer_.handler = wallet::ngx::guarded<"jsonrpc_router: URL poll timer", on_timer>;
        timer_.data = this;
        timer_.log = ngx_cycle->log;
        timer_.cancelable = 1;  // never holds up a graceful shutdown
        ngx_add_timer(&timer_, 1);
    }
    ~UrlPoller() {
        if (timer_.timer_set) ngx_del_timer(&timer_);
    }
    UrlPoller(const UrlPoller&) = delete;
    UrlPoller& operator=(const UrlPoller&) = delete;

    void exchange_done(Exchange& exchange) override {
        if (exchange.refused_locally()) {
            // Our own budget (a full queue, no local connection) failed the
            // poll, not the URL: it tells nothing; the next one will.
            inflight_.reset();  // destroys `exchange`: nothing after this
            return;
        }
        std::string response = exchange.take_response();
        std::optional<router::ChainHead> head;
        if (target_.chain_node) head = router::chain_head(response);
        bool ok = target_.chain_node ? head.has_value() : exchange.answered_by_target();
        if (head) {
            health_.head.store(head->head);
            health_.lib.store(head->lib);
        }
        std::uint64_t failures_before = record_health(&health_, target_, url_, ok);
        const char* url = target_.urls[url_].url.c_str();
        if (ok && failures_before != 0 && head) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "jsonrpc_router: chain node %s (%s) answers again: head %uL, last irreversible %uL",
                          target_.name.c_str(), url, head->head, head->lib);
        } else if (!ok && failures_before == 0) {
            // Once per outage; the last irreversible block learned stays valid.
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0, "jsonrpc_router: target %s (%s): poll failed: %s",
                          target_.name.c_str(), url, response.substr(0, 300).c_str());
        }
        inflight_.reset();  // destroys `exchange`: nothing after this
    }

private:
    static void on_timer(ngx_event_t* ev) { static_cast<UrlPoller*>(ev->data)->tick(); }

    // The timer runs at the shorter interval that applies to this URL.
    ngx_msec_t tick_ms() const {
        if (!target_.chain_node) return static_cast<ngx_msec_t>(target_.probe_interval_ms());
        if (!target_.pool()) return static_cast<ngx_msec_t>(target_.poll_ms);
        return static_cast<ngx_msec_t>(std::min(target_.poll_ms, target_.probe_interval_ms()));
    }

    void tick() {
        ngx_add_timer(&timer_, tick_ms());
        if (inflight_ || ngx_exiting || ngx_terminate || ngx_quit) return;
        const bool out = health_.down.load(std::memory_order_relaxed) != 0;
        if (!target_.chain_node && !out) return;
        std::int64_t now = wall_clock_ms();
        std::int64_t due = health_.next_poll_ms.load();
        std::int64_t interval = out ? target_.probe_interval_ms() : target_.poll_ms;
        if (now < due || !health_.next_poll_ms.compare_exchange_strong(due, now + interval)) return;
        inflight_ = std::make_unique<Exchange>(instance_, ngx_cycle->log, *this);
        inflight_->start_poll(target_index_, url_);
    }

    const RouterInstance& instance_;
    const router::Target& target_;
    std::size_t target_index_;
    std::size_t url_;
    UrlHealth& health_;
    ngx_event_t timer_{};
    std::unique_ptr<Exchange> inflight_;
};

PoolHealth::PoolHealth() = default;
PoolHealth::~PoolHealth() = default;

void PoolHealth::start_polls(const RouterInstance& instance) {
    for (std::size_t t = 0; t < instance.table.targets.size(); ++t) {
        for (std::size_t u = 0; u < instance.table.targets[t].urls.size(); ++u) {
            if (UrlHealth* health = instance.url_health(t, u)) {
                pollers_.push_back(std::make_unique<UrlPoller>(instance, t, u, *health));
            }
        }
    }
}

std::optional<std::size_t> PoolHealth::pick_url(const RouterInstance& instance, std::size_t target,
                                                std::optional<std::size_t> exclude) {
    const router::Target& t = instance.table.targets[target];
    const std::size_t count = t.urls.size();
    if (count == 1) return exclude ? std::nullopt : std::optional<std::size_t>(0);
    // Chain nodes: a URL whose head lags the best URL in by more than max_lag is avoided.
    std::uint64_t best_head = 0;
    if (t.chain_node) {
        for (std::size_t u = 0; u < count; ++u) {
            const UrlHealth* h = instance.url_health(target, u);
            if (h != nullptr && h->down.load(std::memory_order_relaxed) == 0) {
                best_head = std::max(best_head, h->head.load(std::memory_order_relaxed));
            }
        }
    }
    auto& positions = next_url_[&instance];
    if (positions.empty()) positions.resize(instance.table.targets.size());
    std::size_t& next = positions[target];
    std::optional<std::size_t> fallback;
    for (std::size_t k = 0; k < count; ++k) {
        std::size_t u = (next + k) % count;
        if (exclude == u) continue;
        if (!fallback) fallback = u;
        const UrlHealth* h = instance.url_health(target, u);
        if (h != nullptr) {
            if (h->down.load(std::memory_order_relaxed) != 0) continue;
            if (best_head > 0 && h->head.load(std::memory_order_relaxed) + t.max_lag < best_head) continue;
        }
        next = u + 1;
        return u;
    }
    if (exclude) return std::nullopt;
    // Nothing healthy: one of them still gets the call rather than none.
    if (fallback) next = *fallback + 1;
    return fallback;
}

std::string health_status(const RouterInstance& instance) {
    std::string out = R"({"status":"OK","service":"jsonrpc_router","targets":{)";
    bool first = true;
    for (std::size_t t = 0; t < instance.table.targets.size(); ++t) {
        const router::Target& target = instance.table.targets[t];
        if (instance.url_health(t, 0) == nullptr) continue;
        if (!first) out += ',';
        first = false;
        wallet::json::append_quoted(out, target.name);
        out += ":[";
        for (std::size_t u = 0; u < target.urls.size(); ++u) {
            const UrlHealth& h = *instance.url_health(t, u);
            if (u > 0) out += ',';
            // Public: URLs by their place in the routing file only (their
            // addresses are for /metrics, kept to loopback).
            out += R"({"in":)" + std::string(h.down.load() == 0 ? "true" : "false") +
                   R"(,"failures":)" + std::to_string(h.failures.load()) +
                   R"(,"head_block_number":)" + std::to_string(h.head.load()) +
                   R"(,"last_irreversible_block_num":)" + std::to_string(h.lib.load()) + "}";
        }
        out += ']';
    }
    return out + "}}";
}

}  // namespace jsonrpc_router
