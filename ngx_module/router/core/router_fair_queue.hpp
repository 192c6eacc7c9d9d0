// Calls waiting for one of a target URL's upstream connections, served
// fairly across client addresses (jsonrpc_router_upstream_connections and
// _upstream_client_share): a FIFO would let one address with a long backlog
// delay every other client's first call by its whole backlog.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "router_client_tally.hpp"

namespace router {

// Items (calls) waiting for a shared resource (connections), taken round
// robin across their owners (client addresses): an owner's next item waits
// at most one turn of each other owner that waits. An owner may hold at
// most `per_owner` items in service at once; while it does, its waiting
// items are passed over. The empty owner (the router's own polls) has a
// lane of its own that goes first and has no cap.
template <typename Item>
class FairQueue {
public:
    explicit FairQueue(std::size_t per_owner = 0) : per_owner_(per_owner) {}

    // 0: no cap per owner.
    void set_per_owner(std::size_t per_owner) { per_owner_ = per_owner; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    // Whether `owner` may put one more item in service now.
    bool may_start(const std::string& owner) const {
        return owner.empty() || per_owner_ == 0 || in_service_.of(owner) < per_owner_;
    }
    void started(const std::string& owner) {
        if (!owner.empty()) in_service_.add(owner, 1);
    }
    void ended(const std::string& owner) {
        if (!owner.empty()) in_service_.subtract(owner, 1);
    }
    std::size_t in_service(const std::string& owner) const { return in_service_.of(owner); }

    // Waits at the back of its owner's line.
    void push(const std::string& owner, Item item) {
        ++size_;
        if (owner.empty()) {
            own_.push_back(std::move(item));
            return;
        }
        auto [it, fresh] = waiting_.try_emplace(owner);
        it->second.push_back(std::move(item));
        if (fresh) turns_.push_back(owner);
    }

    // The item gives up waiting; false when it was not waiting.
    bool erase(const std::string& owner, const Item& item) {
        std::deque<Item>* line = &own_;
        if (!owner.empty()) {
            auto it = waiting_.find(owner);
            if (it == waiting_.end()) return false;
            line = &it->second;
        }
        for (auto i = line->begin(); i != line->end(); ++i) {
            if (*i == item) {
                line->erase(i);
                --size_;
                if (!owner.empty() && line->empty()) forget(owner);
                return true;
            }
        }
        return false;
    }

    // The next item that may start (the router's own first, then the owners
    // in turn, skipping those at their cap), with its owner; nullopt when
    // none may.
    std::optional<std::pair<std::string, Item>> pop() {
        if (!own_.empty()) {
            Item item = std::move(own_.front());
            own_.pop_front();
            --size_;
            return std::pair<std::string, Item>{std::string(), std::move(item)};
        }
        for (std::size_t tried = 0; tried < turns_.size(); ++tried) {
            std::string owner = std::move(turns_.front());
            turns_.pop_front();
            if (!may_start(owner)) {
                turns_.push_back(std::move(owner));
                continue;
            }
            auto it = waiting_.find(owner);
            Item item = std::move(it->second.front());
            it->second.pop_front();
            --size_;
            if (it->second.empty()) {
                waiting_.erase(it);
            } else {
                turns_.push_back(owner);  // its next item after the others' turns
            }
            return std::pair<std::string, Item>{std::move(owner), std::move(item)};
        }
        return std::nullopt;
    }

private:
    void forget(const std::string& owner) {
        waiting_.erase(owner);
        for (auto i = turns_.begin(); i != turns_.end(); ++i) {
            if (*i == owner) {
                turns_.erase(i);
                break;
            }
        }
    }

    std::size_t per_owner_;
    std::size_t size_ = 0;
    std::deque<Item> own_;                                    // the router's own (polls)
    std::unordered_map<std::string, std::deque<Item>> waiting_;  // per owner, in arrival order
    std::deque<std::string> turns_;                           // owners with waiting items, next first
    ClientTally in_service_;
};

}  // namespace router
