// The router's response cache in one worker: a memory layer (LRU, bytes
// bounded) in front of Redis, and coalesced misses: identical cacheable
// calls that miss while one of them is with the target wait for its answer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ngx_http_jsonrpc_router_exchange.hpp"

namespace jsonrpc_router {

class MemoryCache;
class RedisClient;

// A stored cache value is "<expiry ms, 0 = none> <result>": the offset of
// the space before the result (its expiry in `expires`), or npos when the
// value is not one of ours (a miss).
std::size_t stored_expiry(std::string_view stored, std::int64_t& expires);

// Identical cacheable misses of one worker: the first (the leader) asks the
// target, the others wait for its answer. A call leaves its group when it
// is destroyed (client gone) or times out on its own; a leader that leaves
// hands the upstream request to the next member.
struct MissGroup : std::enable_shared_from_this<MissGroup> {
    std::string key;
    std::vector<Call*> members;  // in joining order; leavers become nullptr
    Call* leader = nullptr;      // the member whose request is with the target
    std::unordered_map<std::string, MissGroup*>* index = nullptr;  // the worker's open groups

    ~MissGroup() { close(); }
    // Late identical misses start a group of their own from now on.
    void close();
    // `member` leaves; when it was the leader, the next member becomes the
    // leader and is returned (it must ask the target now).
    Call* leave(const Call* member);
    // Delivers the leader's outcome to every member, each detached from the
    // group first: an answer may end an exchange and destroy its calls; the
    // members still waiting leave the group on their own then.
    static void answer_all(std::shared_ptr<MissGroup> group, const MissOutcome& outcome);
};

// What the leader's upstream request gave: an answer (every member gets it
// with its own id) or a failure (every member fails with it).
struct MissOutcome {
    std::string answer_head;  // the response up to the id; empty for a failure
    int code = 0;
    std::string message;
    std::string detail;
};

class ResponseCache {
public:
    ResponseCache();
    ~ResponseCache();
    ResponseCache(const ResponseCache&) = delete;
    ResponseCache& operator=(const ResponseCache&) = delete;

    // Looks the call up: answers through Call::cache_answered, maybe synchronously.
    void lookup(Call& call);
    // Stores a result for `lifetime` seconds (0: without expiry).
    void store(const Call& call, std::string_view result, std::int64_t lifetime);
    // Keeps a result read from Redis in the memory layer.
    void remember(const Call& call, std::string_view stored);
    // A cache miss about to go upstream joins the identical miss already in
    // flight in this worker (true: it waits for that one's answer) or
    // starts a group that later identical misses join (false).
    bool join_miss(Call& call);
    // The call stops waiting for its Redis lookup.
    void cancel(Call& call);
    // A lookup timed out: stop waiting for Redis for a while.
    void trip(Call& call);

private:
    struct InstanceState {
        std::unique_ptr<RedisClient> redis;
        std::unordered_map<std::string, MissGroup*> misses;  // open miss groups by cache key
    };
    InstanceState& state(const RouterInstance& instance);
    // The call's key with its instance's prefix, in a buffer reused from
    // one call to the next (valid until the next key_of).
    const std::string& key_of(const Call& call);
    RedisClient& redis(const RouterInstance& instance);

    std::unique_ptr<MemoryCache> memory_;
    std::unordered_map<const RouterInstance*, InstanceState> instances_;
    std::string key_;
};

}  // namespace jsonrpc_router
