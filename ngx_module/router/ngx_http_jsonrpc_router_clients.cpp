#include "ngx_http_jsonrpc_router_clients.hpp"

#include <algorithm>
#include <iterator>

namespace jsonrpc_router {

void ClientRecord::pay_back(std::uint64_t now_ms, std::size_t rate) {
    if (rate == 0) {  // no limit: nothing is owed
        owed_bytes = 0;
        return;
    }
    if (now_ms <= owed_at_ms) return;
    const std::uint64_t elapsed = now_ms - owed_at_ms;
    owed_at_ms = now_ms;
    // elapsed * rate / 1000 without overflow: a long pause pays everything.
    if (elapsed >= owed_bytes / rate * 1000 + 1000) {
        owed_bytes = 0;
        return;
    }
    owed_bytes -= std::min(owed_bytes, elapsed * rate / 1000);
}

void ClientRecord::charge_rate(std::size_t bytes, std::uint64_t now_ms, std::size_t rate) {
    if (rate == 0 || bytes == 0) return;
    if (owed_bytes == 0) {
        owed_at_ms = now_ms;  // nothing owed: the bucket starts full now
    } else {
        pay_back(now_ms, rate);
    }
    owed_bytes += bytes;
}

std::uint64_t ClientRecord::rate_wait_ms(std::uint64_t now_ms, std::size_t rate, std::size_t burst) {
    if (rate == 0 || owed_bytes == 0) return 0;
    pay_back(now_ms, rate);
    if (owed_bytes <= burst) return 0;
    return ((owed_bytes - burst) * 1000 + rate - 1) / rate;
}

ClientRecord& ClientRecords::hold(std::string_view address, std::uint64_t now_ms, std::size_t rate) {
    auto it = records_.find(address);
    if (it == records_.end()) {
        if (records_.size() >= sweep_at_) sweep(now_ms, rate);
        it = records_.emplace(std::string(address), ClientRecord{}).first;
        it->second.address = &it->first;
    }
    ++it->second.holders;
    return it->second;
}

void ClientRecords::sweep(std::uint64_t now_ms, std::size_t rate) {
    for (auto it = records_.begin(); it != records_.end();) {
        ClientRecord& record = it->second;
        if (record.holders == 0) record.pay_back(now_ms, rate);
        it = record.idle() ? records_.erase(it) : std::next(it);
    }
    sweep_at_ = std::max<std::size_t>(1024, records_.size() * 2);
}

void WsOutput::leave(OutputQueue& queue) { std::erase(queues_, &queue); }

void WsOutput::add(ClientRecord* client, std::size_t bytes) {
    if (client != nullptr) client->ws_output += bytes;
    total_ += bytes;
}

void WsOutput::remove(ClientRecord* client, std::size_t bytes) {
    total_ -= std::min(total_, bytes);
    if (client != nullptr) ClientRecord::subtract(client->ws_output, bytes);
}

void WsOutput::enforce(std::size_t budget) {
    while (total_ > budget) {
        auto largest = std::ranges::max_element(queues_, {}, &OutputQueue::queued_bytes);
        if (largest == queues_.end() || (*largest)->queued_bytes() == 0) return;
        (*largest)->shed();
    }
}

}  // namespace jsonrpc_router
