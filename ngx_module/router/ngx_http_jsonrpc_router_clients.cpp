#include "ngx_http_jsonrpc_router_clients.hpp"

#include <algorithm>

namespace jsonrpc_router {

bool ClientConnections::claim(const std::string& client, std::size_t limit) {
    std::size_t& count = open_[client];
    if (limit > 0 && count >= limit) return false;
    ++count;
    return true;
}

void ClientConnections::release(const std::string& client) {
    auto it = open_.find(client);
    if (it == open_.end()) return;
    if (--it->second == 0) open_.erase(it);
}

void WsOutput::leave(OutputQueue& queue) { std::erase(queues_, &queue); }

void WsOutput::add(const std::string& client, std::size_t bytes) {
    if (bytes == 0) return;
    by_client_[client] += bytes;
    total_ += bytes;
}

void WsOutput::remove(const std::string& client, std::size_t bytes) {
    if (bytes == 0) return;
    total_ -= std::min(total_, bytes);
    auto it = by_client_.find(client);
    if (it == by_client_.end()) return;
    it->second -= std::min(it->second, bytes);
    if (it->second == 0) by_client_.erase(it);
}

void WsOutput::enforce(std::size_t budget) {
    while (total_ > budget) {
        auto largest = std::ranges::max_element(queues_, {}, &OutputQueue::queued_bytes);
        if (largest == queues_.end() || (*largest)->queued_bytes() == 0) return;
        (*largest)->shed();
    }
}

}  // namespace jsonrpc_router
