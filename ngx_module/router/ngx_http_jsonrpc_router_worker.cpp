#include "ngx_http_jsonrpc_router_worker.hpp"

#include <algorithm>
#include <random>

#include "ngx_http_jsonrpc_router_http_upstream.hpp"
#include "ngx_http_jsonrpc_router_ws_upstream.hpp"

namespace jsonrpc_router {

namespace {
std::unique_ptr<Worker> the_worker;
}

Worker::Worker() {
    std::random_device rd;
    request_id_seed_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ (static_cast<std::uint64_t>(ngx_pid) << 16);
}

Worker::~Worker() = default;

Worker& Worker::get() {
    if (!the_worker) the_worker.reset(new Worker());  // private constructor: the one instance per worker
    return *the_worker;
}

void Worker::shutdown() { the_worker.reset(); }

std::size_t ClientCalls::claim(const std::string& client, std::size_t wanted, std::size_t limit) {
    const std::size_t count = in_flight_.of(client);
    const std::size_t granted = limit == 0 ? wanted : std::min(wanted, limit > count ? limit - count : 0);
    in_flight_.add(client, granted);
    return granted;
}

RequestId Worker::next_request_id() {
    std::uint64_t v = request_id_seed_ + 0x9E3779B97F4A7C15ULL * ++request_ids_;
    v ^= v >> 29;
    RequestId id;
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; --i) {
        id.text[static_cast<std::size_t>(i)] = hex[v & 0xF];
        v >>= 4;
    }
    return id;
}

Upstream& Worker::upstream(const RouterInstance& instance, std::size_t target, std::size_t url) {
    auto& slots = upstreams_[&instance];
    if (slots.empty()) slots.resize(instance.url_count());
    auto& slot = slots[instance.first_url[target] + url];
    if (!slot) {
        slot = instance.table.targets[target].urls[url].websocket() ? make_ws_upstream(instance, target, url)
                                                                     : make_http_upstream(instance, target, url);
    }
    return *slot;
}

}  // namespace jsonrpc_router
