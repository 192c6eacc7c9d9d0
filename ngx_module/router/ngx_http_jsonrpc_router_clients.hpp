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

// A count per client address (calls, bytes, connections): never below zero,
// and an address at zero is forgotten.
class ClientTally {
public:
    void add(const std::string& client, std::size_t n);
    void subtract(const std::string& client, std::size_t n);
    std::size_t of(const std::string& client) const {
        auto it = counts_.find(client);
        return it == counts_.end() ? 0 : it->second;
    }
    std::size_t clients() const { return counts_.size(); }

private:
    std::unordered_map<std::string, std::size_t> counts_;
};

// Router requests that hold a connection (a POST being read or answered, a
// WebSocket session) per client address.
class ClientConnections {
public:
    // Counts one more for `client` unless it has `limit` already (0 = no limit).
    bool claim(const std::string& client, std::size_t limit);
    void release(const std::string& client) { open_.subtract(client, 1); }

private:
    ClientTally open_;
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
    std::size_t of(const std::string& client) const { return by_client_.of(client); }
    // While more than `budget` is queued, the largest queue sheds.
    void enforce(std::size_t budget);

private:
    std::vector<OutputQueue*> queues_;
    ClientTally by_client_;
    std::size_t total_ = 0;
};

}  // namespace jsonrpc_router
