#include "ngx_http_jsonrpc_router_cache.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <list>
#include <utility>

#include "ngx_http_jsonrpc_router_redis.hpp"

namespace jsonrpc_router {

namespace {

// A stored expiry of 0 means none (a final answer about an irreversible block).
std::int64_t memory_expiry(std::int64_t stored_expiry) {
    return stored_expiry == 0 ? std::numeric_limits<std::int64_t>::max() : stored_expiry;
}

}  // namespace

std::size_t stored_expiry(std::string_view stored, std::int64_t& expires) {
    const std::size_t space = stored.find(' ');
    if (space == std::string_view::npos || space == 0) return std::string_view::npos;
    const auto parsed = std::from_chars(stored.data(), stored.data() + space, expires);
    if (parsed.ec != std::errc() || parsed.ptr != stored.data() + space) return std::string_view::npos;
    return space;
}

// ---- per-worker memory layer ---------------------------------------------------------

// A segmented LRU: entries come in on probation, and one asked for again
// moves to the protected segment (at most 4/5 of the bytes). Eviction takes
// the oldest entry on probation first: a client spraying distinct keys, each
// asked once, churns only probation, and the entries clients ask for again
// stay.
class MemoryCache {
public:
    void configure(std::size_t capacity) { capacity_ = std::max(capacity_, capacity); }

    // The stored value (always "<expiry> <result>"), valid until the next store.
    const std::string* lookup(const std::string& key, std::int64_t now_ms) {
        auto it = entries_.find(key);
        if (it == entries_.end()) return nullptr;
        Entry& entry = it->second;
        if (entry.expires_ms <= now_ms) {
            erase(it);
            return nullptr;
        }
        const bool was_protected = std::exchange(entry.protected_, true);
        if (!was_protected) protected_bytes_ += size_of(*it);
        protected_.splice(protected_.begin(), was_protected ? protected_ : probation_, entry.position);
        // Over its share, the protected segment's oldest go back on probation.
        while (protected_bytes_ > capacity_ / 5 * 4 && protected_.size() > 1) {
            auto oldest = entries_.find(protected_.back());
            oldest->second.protected_ = false;
            protected_bytes_ -= size_of(*oldest);
            probation_.splice(probation_.begin(), protected_, std::prev(protected_.end()));
        }
        return &entry.value;
    }

    void store(const std::string& key, std::string_view value, std::int64_t expires_ms) {
        if (capacity_ == 0 || value.size() + key.size() > capacity_ / 8) return;
        auto it = entries_.find(key);
        if (it != entries_.end()) erase(it);
        probation_.push_front(key);
        entries_.emplace(key, Entry{std::string(value), expires_ms, probation_.begin(), false});
        bytes_ += key.size() + value.size();
        while (bytes_ > capacity_ && !(probation_.empty() && protected_.empty())) {
            erase(entries_.find(probation_.empty() ? protected_.back() : probation_.back()));
        }
    }

private:
    struct Entry {
        std::string value;
        std::int64_t expires_ms;
        std::list<std::string>::iterator position;  // in protected_ or probation_
        bool protected_;
    };
    using Entries = std::unordered_map<std::string, Entry>;
    static std::size_t size_of(const Entries::value_type& e) { return e.first.size() + e.second.value.size(); }
    void erase(Entries::iterator it) {
        bytes_ -= size_of(*it);
        if (it->second.protected_) {
            protected_bytes_ -= size_of(*it);
            protected_.erase(it->second.position);
        } else {
            probation_.erase(it->second.position);
        }
        entries_.erase(it);
    }

    std::size_t capacity_ = 0;
    std::size_t bytes_ = 0;
    std::size_t protected_bytes_ = 0;
    std::list<std::string> probation_;  // most recent first
    std::list<std::string> protected_;  // most recent first
    Entries entries_;
};

// ---- coalesced misses -----------------------------------------------------------------

void MissGroup::close() {
    if (index == nullptr) return;
    auto it = index->find(key);
    if (it != index->end() && it->second == this) index->erase(it);
    index = nullptr;
}

Call* MissGroup::leave(const Call* member) {
    for (Call*& m : members) {
        if (m == member) m = nullptr;
    }
    if (leader != member) return nullptr;
    leader = nullptr;
    for (Call* m : members) {
        if (m != nullptr) {
            leader = m;
            return m;
        }
    }
    return nullptr;
}

void MissGroup::answer_all(std::shared_ptr<MissGroup> group, const MissOutcome& outcome) {
    group->close();
    group->leader = nullptr;
    // Only locals (and `group`, kept alive here) are used past a delivery.
    for (std::size_t i = 0; i < group->members.size(); ++i) {
        Call* member = group->members[i];
        if (member == nullptr) continue;
        group->members[i] = nullptr;
        member->miss_group.reset();
        member->deliver(outcome);
    }
}

bool ResponseCache::join_miss(Call& call) {
    auto& misses = state(call.exchange().instance()).misses;
    const std::string& key = call.plan().cache_key;
    auto it = misses.find(key);
    if (it != misses.end()) {
        it->second->members.push_back(&call);
        call.miss_group = it->second->shared_from_this();
        return true;
    }
    auto group = std::make_shared<MissGroup>();
    group->key = key;
    group->members.push_back(&call);
    group->leader = &call;
    group->index = &misses;
    misses.emplace(key, group.get());
    call.miss_group = std::move(group);
    return false;
}

// ---- lookups and stores ----------------------------------------------------------------

ResponseCache::ResponseCache() : memory_(std::make_unique<MemoryCache>()) {}

ResponseCache::~ResponseCache() = default;

ResponseCache::InstanceState& ResponseCache::state(const RouterInstance& instance) { return instances_[&instance]; }

RedisClient& ResponseCache::redis(const RouterInstance& instance) {
    auto& redis = state(instance).redis;
    if (!redis) redis = std::make_unique<RedisClient>(instance, ngx_cycle->log);
    return *redis;
}

const std::string& ResponseCache::key_of(const Call& call) {
    key_.assign(call.instance().cache_key_heads[call.plan().route->target]);
    key_ += call.plan().cache_key;
    return key_;
}

void ResponseCache::lookup(Call& call) {
    const RouterInstance& instance = call.exchange().instance();
    const std::string& key = key_of(call);
    if (instance.memory_cache_bytes > 0) {
        memory_->configure(instance.memory_cache_bytes);
        if (const std::string* value = memory_->lookup(key, wall_clock_ms())) {
            // Fresh (checked against the same expiry), and well formed: stored by store() or remember().
            call.memory_hit(*value, value->find(' '));
            return;
        }
    }
    if (!instance.redis_enabled || !redis(instance).usable()) {
        call.cache_answered(CacheSource::None, {});
        return;
    }
    call.wait_for_redis();
    redis(instance).get(call, key);
}

void ResponseCache::cancel(Call& call) {
    call.waiting_cache = false;
    auto& redis = state(call.exchange().instance()).redis;
    if (redis) redis->cancel(call);
}

void ResponseCache::trip(Call& call) {
    auto& redis = state(call.exchange().instance()).redis;
    if (redis) redis->trip();
}

void ResponseCache::store(const Call& call, std::string_view result, std::int64_t lifetime) {
    const RouterInstance& instance = call.instance();
    const std::string& key = key_of(call);
    // A final result never changes, but its key is the client's choice (any
    // old block): a day bounds what clients can pile up in Redis.
    constexpr std::int64_t kFinalLifetime = 86400;
    if (lifetime == 0) lifetime = kFinalLifetime;
    // The stored value carries its expiry, so that a worker's memory copy of
    // an entry read from Redis never outlives the Redis entry.
    std::int64_t expires = wall_clock_ms() + lifetime * 1000;
    std::string value = std::to_string(expires);
    value += ' ';
    value += result;
    if (instance.memory_cache_bytes > 0) memory_->store(key, value, memory_expiry(expires));
    if (instance.redis_enabled && redis(instance).usable()) redis(instance).set(key, value, lifetime);
}

void ResponseCache::remember(const Call& call, std::string_view stored) {
    const RouterInstance& instance = call.instance();
    if (instance.memory_cache_bytes == 0) return;
    std::int64_t expires = 0;
    if (stored_expiry(stored, expires) == std::string_view::npos) return;
    memory_->store(key_of(call), stored, memory_expiry(expires));
}

}  // namespace jsonrpc_router
