#include "ngx_http_jsonrpc_router_clients.hpp"

#include <algorithm>

namespace jsonrpc_router {

void ClientTally::add(const std::string& client, std::size_t n) {
    if (n > 0) counts_[client] += n;
}

void ClientTally::subtract(const std::string& client, std::size_t n) {
    auto it = counts_.find(client);
    if (it == counts_.end()) return;
    it->second -= std::min(it->second, n);
    if (it->second == 0) counts_.erase(it);
}

bool ClientConnections::claim(const std::string& client, std::size_t limit) {
    if (limit > 0 && open_.of(client) >= limit) return false;
    open_.add(client, 1);
    return true;
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
