#include "ngx_http_jsonrpc_router_worker.hpp"

#include <algorithm>
#include <array>
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

RequestId Worker::next_request_id() {
    std::uint64_t v = request_id_seed_ + 0x9E3779B97F4A7C15ULL * ++request_ids_;
    v ^= v >> 29;
    // Two hex digits per byte, from a table: 8 steps, not 16.
    static constexpr auto kHexPairs = [] {
        std::array<std::array<char, 2>, 256> pairs{};
        constexpr char hex[] = "0123456789abcdef";
        for (std::size_t b = 0; b < 256; ++b) pairs[b] = {hex[b >> 4], hex[b & 0xF]};
        return pairs;
    }();
    RequestId id;
    for (std::size_t i = 8; i-- > 0;) {
        const auto& pair = kHexPairs[v & 0xFF];
        id.text[2 * i] = pair[0];
        id.text[2 * i + 1] = pair[1];
        v >>= 8;
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
