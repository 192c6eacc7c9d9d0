// What each client address holds in this worker besides its calls in flight
// (ClientCalls): its open router requests (connections) and the WebSocket
// answers queued to it. Counted in the worker, so that a worker that dies
// leaves nothing counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "router_client_tally.hpp"

namespace jsonrpc_router {

using router::ClientTally;

// The answer bytes each client address took, paid back at `rate` bytes per
// second (a token bucket): an address may take `burst` at once, then `rate`
// per second on average. Over it, the router waits before it reads the
// address's next request (the client is slowed, not refused). An address
// that has paid everything back is forgotten.
class ClientRate {
public:
    void charge(const std::string& client, std::size_t bytes, std::uint64_t now_ms, std::size_t rate);
    // How long `client` must wait before its next request is read (0: none).
    std::uint64_t wait_ms(const std::string& client, std::uint64_t now_ms, std::size_t rate, std::size_t burst);
    std::size_t clients() const { return owed_.size(); }

private:
    struct Owed {
        std::uint64_t bytes = 0;
        std::uint64_t at_ms = 0;
    };
    static void pay_back(Owed& owed, std::uint64_t now_ms, std::size_t rate);
    void forget_paid(std::uint64_t now_ms, std::size_t rate);

    std::unordered_map<std::string, Owed> owed_;
    std::size_t sweep_at_ = 1024;  // entries past which the paid-back ones are dropped
};

// Router requests that hold a connection (a POST being read or answered, a
// WebSocket session) per client address.
class ClientConnections {
public:
    // Counts one more for `client` unless it has `limit` already (0 = no limit).
    bool claim(const std::string& client, std::size_t limit) { return open_.claim(client, 1, limit) == 1; }
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
