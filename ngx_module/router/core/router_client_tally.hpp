// How much each client address holds (calls, bytes, connections, upstream
// connections in service), counted where it is held.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>

namespace router {

// A count per client address (calls, bytes, connections): never below zero.
// An address at zero stays (its next request finds it without allocating)
// until addresses at zero outnumber the others: then they are forgotten.
class ClientTally {
public:
    void add(const std::string& client, std::size_t n) {
        if (n == 0) return;
        auto [it, fresh] = counts_.try_emplace(client, 0);
        if (!fresh && it->second == 0) --idle_;
        it->second += n;
    }
    // Adds up to `wanted` while the count stays within `limit` (0 = no
    // limit), in one lookup; how many it added.
    std::size_t claim(const std::string& client, std::size_t wanted, std::size_t limit) {
        if (wanted == 0) return 0;
        auto [it, fresh] = counts_.try_emplace(client, 0);
        const std::size_t held = it->second;
        const std::size_t granted = limit == 0 ? wanted : std::min(wanted, limit > held ? limit - held : 0);
        if (granted == 0) return 0;  // held > 0: an existing entry, unchanged
        if (!fresh && held == 0) --idle_;
        it->second += granted;
        return granted;
    }
    void subtract(const std::string& client, std::size_t n) {
        auto it = counts_.find(client);
        if (it == counts_.end() || it->second == 0) return;
        it->second -= std::min(it->second, n);
        if (it->second > 0) return;
        // Kept at zero while few are: an address that comes back costs no allocation.
        ++idle_;
        if (idle_ <= std::max<std::size_t>(kKeptIdle, counts_.size() - idle_)) return;
        std::erase_if(counts_, [](const auto& entry) { return entry.second == 0; });
        idle_ = 0;
    }
    std::size_t of(const std::string& client) const {
        auto it = counts_.find(client);
        return it == counts_.end() ? 0 : it->second;
    }
    // Addresses with a count above zero.
    std::size_t clients() const { return counts_.size() - idle_; }

private:
    static constexpr std::size_t kKeptIdle = 64;
    std::unordered_map<std::string, std::size_t> counts_;
    std::size_t idle_ = 0;  // entries at zero
};

}  // namespace router
