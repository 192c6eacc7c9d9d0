// What each client address holds in this worker besides its calls in flight
// (ClientCalls): its open router requests (connections) and the WebSocket
// answers queued to it. Counted in the worker, so that a worker that dies
// leaves nothing counted.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace jsonrpc_router {

// Router requests that hold a connection (a POST being read or answered, a
// WebSocket session) per client address.
class ClientConnections {
public:
    // Counts one more for `client` unless it has `limit` already (0 = no limit).
    bool claim(const std::string& client, std::size_t limit);
    void release(const std::string& client);

private:
    std::unordered_map<std::string, std::size_t> open_;
};

// A WebSocket connection's queue of answers, as the worker's output budget sees it.
class OutputQueue {
public:
    virtual std::size_t queued_bytes() const = 0;
    // The worker is over its budget and this queue is the largest: it drops
    // what it can (and closes), so that its queued_bytes() falls.
    virtual void shed() = 0;

protected:
    ~OutputQueue() = default;
};

// The WebSocket output queued in this worker: in all and per client address.
class WsOutput {
public:
    void enter(OutputQueue& queue) { queues_.push_back(&queue); }
    void leave(OutputQueue& queue);
    void add(const std::string& client, std::size_t bytes);
    void remove(const std::string& client, std::size_t bytes);
    std::size_t total() const { return total_; }
    std::size_t of(const std::string& client) const {
        auto it = by_client_.find(client);
        return it == by_client_.end() ? 0 : it->second;
    }
    // While more than `budget` is queued, the largest queue sheds.
    void enforce(std::size_t budget);

private:
    std::vector<OutputQueue*> queues_;
    std::unordered_map<std::string, std::size_t> by_client_;
    std::size_t total_ = 0;
};

}  // namespace jsonrpc_router
