#include "api_accounts.hpp"

namespace wallet::api {

std::optional<RememberedAccount> RememberedAccounts::find(std::string_view name) {
    const auto found = index_.find(name);
    if (found == index_.end()) return std::nullopt;
    order_.splice(order_.begin(), order_, found->second);
    return found->second->account;
}

void RememberedAccounts::learn(std::string_view name, const std::optional<RememberedAccount>& account) {
    const auto found = index_.find(name);
    if (!account) {
        // Gone from this store (or another store answered): forget it.
        if (found != index_.end()) {
            // The index entry first: its key views the name the list entry owns.
            const auto entry = found->second;
            index_.erase(found);
            order_.erase(entry);
        }
        return;
    }
    if (found != index_.end()) {
        found->second->account = *account;
        order_.splice(order_.begin(), order_, found->second);
        return;
    }
    if (capacity_ == 0) return;
    if (index_.size() >= capacity_) {
        index_.erase(order_.back().name);
        order_.pop_back();
    }
    order_.push_front(Entry{std::string(name), *account});
    try {
        index_.emplace(order_.front().name, order_.begin());
    } catch (...) {
        order_.pop_front();
        throw;
    }
}

}  // namespace wallet::api
