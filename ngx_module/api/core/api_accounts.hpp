// The account ids a worker remembers by name (with the store generation they
// were read under), so that a page skips the name lookup: ids never change
// within a store (the dictionary only grows), and the page statement uses a
// remembered id only when its generation is the store's (api_sql.hpp).
// Bounded: the least recently used name goes first. Unknown names are not
// remembered (anyone may ask for any name).
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api_sql.hpp"

namespace wallet::api {

class RememberedAccounts {
public:
    // capacity 0 remembers nothing.
    explicit RememberedAccounts(std::size_t capacity = 0) : capacity_(capacity) {}

    std::optional<RememberedAccount> find(std::string_view name);
    // What a page statement used for `name` (none: no such account).
    void learn(std::string_view name, const std::optional<RememberedAccount>& account);

    std::size_t size() const { return index_.size(); }
    std::size_t capacity() const { return capacity_; }

private:
    struct Entry {
        std::string name;
        RememberedAccount account;
    };
    using Order = std::list<Entry>;  // most recently used first
    struct NameHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view name) const noexcept { return std::hash<std::string_view>{}(name); }
    };

    std::size_t capacity_;
    Order order_;
    // Keys view the names their entries own (list nodes never move).
    std::unordered_map<std::string_view, Order::iterator, NameHash, std::equal_to<>> index_;
};

}  // namespace wallet::api
