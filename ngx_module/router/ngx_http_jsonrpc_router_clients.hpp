// What each client address holds in this worker: its open router requests
// (connections), its calls in flight and the bytes of their answers, the
// WebSocket answers queued to it, and what it owes of its answer rate. One
// record per address, found once by whoever serves the address (an HTTP
// request, a WebSocket session) and held until it ends: a request's budgets
// are checked and charged through the record, without a lookup each.
// Counted in the worker, so that a worker that dies leaves nothing counted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jsonrpc_router {

struct ClientRecord {
    const std::string* address = nullptr;  // the key of the record (stable: the map's nodes never move)
    std::size_t holders = 0;       // ClientHolds on it: it stays while held
    std::size_t connections = 0;   // router requests holding a connection (a POST, a WebSocket session)
    std::size_t calls = 0;         // calls in flight
    std::size_t answer_bytes = 0;  // answers of its exchanges in progress
    std::size_t ws_output = 0;     // WebSocket output queued to it
    // The answer bytes it took, paid back at the rate per second (a token
    // bucket): an address may take `burst` at once, then `rate` per second on
    // average. Over it, the router waits before it reads the address's next
    // request (the client is slowed, not refused).
    std::uint64_t owed_bytes = 0;
    std::uint64_t owed_at_ms = 0;

    // One more connection unless it has `limit` already (0 = no limit).
    bool claim_connection(std::size_t limit) {
        if (limit != 0 && connections >= limit) return false;
        ++connections;
        return true;
    }
    // Up to `wanted` calls while the calls stay within `limit` (0 = no
    // limit); how many it took.
    std::size_t claim_calls(std::size_t wanted, std::size_t limit) {
        const std::size_t granted = limit == 0 ? wanted : std::min(wanted, limit > calls ? limit - calls : 0);
        calls += granted;
        return granted;
    }
    static void subtract(std::size_t& count, std::size_t n) { count -= std::min(count, n); }

    // Rate (`rate` 0: no limit).
    void charge_rate(std::size_t bytes, std::uint64_t now_ms, std::size_t rate);
    // How long the address must wait before its next request is read (0: none).
    std::uint64_t rate_wait_ms(std::uint64_t now_ms, std::size_t rate, std::size_t burst);
    void pay_back(std::uint64_t now_ms, std::size_t rate);
    bool idle() const { return holders == 0 && owed_bytes == 0; }
};

// The records of this worker's client addresses. A record nobody holds and
// that owes nothing is kept for the address's next request (no allocation),
// and dropped by a sweep once they are many.
class ClientRecords {
public:
    // `now_ms` and `rate`: what a sweep pays back with, when a new record
    // makes them many.
    ClientRecord& hold(std::string_view address, std::uint64_t now_ms, std::size_t rate);
    void let_go(ClientRecord& record) { --record.holders; }
    std::size_t size() const { return records_.size(); }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
    };
    void sweep(std::uint64_t now_ms, std::size_t rate);

    std::unordered_map<std::string, ClientRecord, Hash, std::equal_to<>> records_;
    std::size_t sweep_at_ = 1024;  // records past which the idle ones are dropped
};

// A record held (or none: the router's own polls), let go when it ends.
class ClientHold {
public:
    ClientHold() = default;
    ClientHold(ClientRecords& records, std::string_view address, std::uint64_t now_ms, std::size_t rate)
        : records_(address.empty() ? nullptr : &records),
          record_(records_ ? &records.hold(address, now_ms, rate) : nullptr) {}
    ~ClientHold() { reset(); }
    ClientHold(ClientHold&& other) noexcept
        : records_(std::exchange(other.records_, nullptr)), record_(std::exchange(other.record_, nullptr)) {}
    ClientHold& operator=(ClientHold&& other) noexcept {
        if (this != &other) {
            reset();
            records_ = std::exchange(other.records_, nullptr);
            record_ = std::exchange(other.record_, nullptr);
        }
        return *this;
    }
    // Another hold on the same record (found once: no second lookup).
    ClientHold share() const {
        ClientHold other;
        if (record_ != nullptr) {
            ++record_->holders;
            other.records_ = records_;
            other.record_ = record_;
        }
        return other;
    }
    void reset() {
        if (record_ != nullptr) records_->let_go(*record_);
        records_ = nullptr;
        record_ = nullptr;
    }
    ClientRecord* get() const { return record_; }
    ClientRecord* operator->() const { return record_; }
    explicit operator bool() const { return record_ != nullptr; }
    // The address (empty without a record).
    const std::string& address() const {
        static const std::string none;
        return record_ != nullptr ? *record_->address : none;
    }

private:
    ClientRecords* records_ = nullptr;
    ClientRecord* record_ = nullptr;
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

// The WebSocket output queued in this worker: in all and per client address
// (ClientRecord::ws_output).
class WsOutput {
public:
    void enter(OutputQueue& queue) { queues_.push_back(&queue); }
    void leave(OutputQueue& queue);
    void add(ClientRecord* client, std::size_t bytes);
    void remove(ClientRecord* client, std::size_t bytes);
    std::size_t total() const { return total_; }
    // While more than `budget` is queued, the largest queue sheds.
    void enforce(std::size_t budget);

private:
    std::vector<OutputQueue*> queues_;
    std::size_t total_ = 0;
};

}  // namespace jsonrpc_router
