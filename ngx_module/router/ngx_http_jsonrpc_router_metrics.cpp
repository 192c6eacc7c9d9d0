#include "ngx_http_jsonrpc_router_metrics.hpp"

#include <algorithm>

#include "ngx_wallet_guard.hpp"
#include "ngx_wallet_metrics.hpp"

namespace jsonrpc_router {

void count_request(const RouterInstance& instance, router::ClientTransport transport, bool unplanned) {
    if (auto shared = instance.metrics()) {
        metrics::add(shared->head().requests[static_cast<std::size_t>(transport)]);
        if (unplanned) shared->count_call(nullptr, transport);
    }
}

void count_call(const RouterInstance& instance, const router::Route* route, router::ClientTransport transport) {
    if (auto shared = instance.metrics()) shared->count_call(route, transport);
}

void count_cache(const RouterInstance& instance, const router::Route& route, router::CacheResult result) {
    if (auto shared = instance.metrics()) {
        const auto index = static_cast<std::size_t>(&route - instance.table.routes.data());
        metrics::add(shared->route(index).cache[static_cast<std::size_t>(result)]);
    }
}

void count_redis_error(const RouterInstance& instance) {
    if (auto shared = instance.metrics()) metrics::add(shared->head().redis_errors);
}

void count_ws_output(const RouterInstance& instance, std::int64_t delta) {
    if (auto shared = instance.metrics()) {
        // Unsigned wrap-around: every worker takes back exactly what it added.
        shared->head().ws_output_bytes.fetch_add(static_cast<std::uint64_t>(delta), std::memory_order_relaxed);
    }
}

void note_ws_output_peak(const RouterInstance& instance) {
    if (auto shared = instance.metrics()) {
        const std::uint64_t now = shared->head().ws_output_bytes.load(std::memory_order_relaxed);
        metrics::Counter& peak = shared->head().ws_output_peak_bytes;
        std::uint64_t seen = peak.load(std::memory_order_relaxed);
        while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
        }
    }
}

void count_limited(const RouterInstance& instance, router::Limit limit, std::uint64_t n) {
    if (auto shared = instance.metrics()) metrics::add(shared->head().limited[static_cast<std::size_t>(limit)], n);
}

void count_upstream_sent(const RouterInstance& instance, std::size_t target, std::size_t url) {
    if (auto shared = instance.metrics()) metrics::add(shared->url(instance.first_url[target] + url).in_flight);
}

void upstream_abandoned(const RouterInstance& instance, std::size_t target, std::size_t url) {
    if (auto shared = instance.metrics()) {
        shared->url(instance.first_url[target] + url).in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
}

void count_upstream(const RouterInstance& instance, std::size_t target, std::size_t url, std::uint64_t sent_us,
                    std::optional<router::UpstreamError> error) {
    auto shared = instance.metrics();
    if (!shared) return;
    const std::uint64_t now = metrics::monotonic_us();
    router::UrlCounters& counters = shared->url(instance.first_url[target] + url);
    counters.in_flight.fetch_sub(1, std::memory_order_relaxed);
    counters.latency.observe(now > sent_us ? now - sent_us : 0);
    if (error) metrics::add(counters.errors[static_cast<std::size_t>(*error)]);
}

std::string metrics_page(const std::vector<RouterInstance*>& instances) {
    std::vector<router::RouterScrape> routers;
    std::vector<const ngx_shm_zone_t*> seen;
    for (const RouterInstance* instance : instances) {
        auto counters = instance->metrics();
        if (instance->cycle != ngx_cycle || !counters || std::ranges::find(seen, instance->metrics_zone) != seen.end()) {
            continue;
        }
        seen.push_back(instance->metrics_zone);
        router::RouterScrape scrape{&instance->table, *counters, {}};
        for (std::size_t t = 0; t < instance->table.targets.size(); ++t) {
            for (std::size_t u = 0; u < instance->table.targets[t].urls.size(); ++u) {
                const UrlHealth* health = instance->url_health(t, u);
                scrape.url_in.push_back(health == nullptr ? -1 : health->down.load() == 0 ? 1 : 0);
                scrape.url_head.push_back(health == nullptr ? 0 : health->head.load());
                scrape.url_lib.push_back(health == nullptr ? 0 : health->lib.load());
            }
        }
        routers.push_back(std::move(scrape));
    }
    metrics::TextWriter out;
    if (!routers.empty()) router::write_router_metrics(out, routers);
    ngx_http_wallet_history_write_metrics(out);
    wallet::ngx::write_guard_metrics(out);
    return std::move(out.text());
}

}  // namespace jsonrpc_router
