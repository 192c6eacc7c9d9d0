#include "ngx_http_jsonrpc_router_clients.hpp"

#include <algorithm>
#include <iterator>

namespace jsonrpc_router {

void ClientRate::pay_back(Owed& owed, std::uint64_t now_ms, std::size_t rate) {
    if (now_ms <= owed.at_ms) return;
    const std::uint64_t elapsed = now_ms - owed.at_ms;
    owed.at_ms = now_ms;
    // elapsed * rate / 1000 without overflow: a long pause pays everything.
    if (elapsed >= owed.bytes / rate * 1000 + 1000) {
        owed.bytes = 0;
        return;
    }
    owed.bytes -= std::min(owed.bytes, elapsed * rate / 1000);
}

void ClientRate::forget_paid(std::uint64_t now_ms, std::size_t rate) {
    for (auto it = owed_.begin(); it != owed_.end();) {
        pay_back(it->second, now_ms, rate);
        it = it->second.bytes == 0 ? owed_.erase(it) : std::next(it);
    }
    sweep_at_ = std::max<std::size_t>(1024, owed_.size() * 2);
}

void ClientRate::charge(const std::string& client, std::size_t bytes, std::uint64_t now_ms, std::size_t rate) {
    if (rate == 0 || bytes == 0) return;
    auto [it, fresh] = owed_.try_emplace(client, Owed{0, now_ms});
    if (!fresh) pay_back(it->second, now_ms, rate);
    it->second.bytes += bytes;
    if (owed_.size() > sweep_at_) forget_paid(now_ms, rate);
}

std::uint64_t ClientRate::wait_ms(const std::string& client, std::uint64_t now_ms, std::size_t rate, std::size_t burst) {
    if (rate == 0) return 0;
    auto it = owed_.find(client);
    if (it == owed_.end()) return 0;
    pay_back(it->second, now_ms, rate);
    if (it->second.bytes == 0) {
        owed_.erase(it);
        return 0;
    }
    if (it->second.bytes <= burst) return 0;
    return ((it->second.bytes - burst) * 1000 + rate - 1) / rate;
}

void WsOutput::leave(OutputQueue& queue) { std::erase(queues_, &queue); }

void WsOutput::add(const std::string& client, std::size_t bytes) {
    by_client_.add(client, bytes);
    total_ += bytes;
}

void WsOutput::remove(const std::string& client, std::size_t bytes) {
    total_ -= std::min(total_, bytes);
    by_client_.subtract(client, bytes);
}

void WsOutput::enforce(std::size_t budget) {
    while (total_ > budget) {
        auto largest = std::ranges::max_element(queues_, {}, &OutputQueue::queued_bytes);
        if (largest == queues_.end() || (*largest)->queued_bytes() == 0) return;
        (*largest)->shed();
    }
}

}  // namespace jsonrpc_router
