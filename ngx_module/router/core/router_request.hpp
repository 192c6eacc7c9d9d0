// What the router does with one request body, without any I/O: parse, split
// a batch, normalize the dotted and legacy `call` forms, pick the route,
// build the upstream request (translated when the route says so) and the
// cache key; then turn upstream bodies and cached results into responses
// carrying the caller's own id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jsonrpc_error.hpp"
#include "jsonrpc_json.hpp"
#include "router_config.hpp"

namespace router {

struct RequestLimits {
    std::size_t max_batch = 50;
    std::size_t max_depth = 64;           // nesting of a request
    std::size_t max_response_depth = 512; // nesting of an upstream response
};

// One JSON-RPC call (a single request, or one element of a batch).
struct CallPlan {
    std::string id = "null";               // raw JSON text of the caller's id
    std::optional<jsonrpc::ErrorInfo> error;  // answered without routing
    std::string path;                      // api.method, what routes match
    bool write = false;                    // router::is_write(path): never resent, never on a reused connection
    const Route* route = nullptr;
    std::string method_json;               // upstream "method" member (JSON text); empty: `path` quoted
    std::string params_json;               // upstream "params" member (JSON text; empty = none)
    std::string cache_key;                 // empty when the route does not cache
    std::int64_t ttl = 0;
    // The block the call concerns, read from its params (routes with
    // expire_if_reversible only; see block_of_params).
    std::optional<std::uint64_t> block;

    // Back to a new CallPlan's values, keeping the strings' memory.
    void reset();

    // The request sent to the target, with the proxy's own id.
    std::string upstream_body(std::uint64_t upstream_id) const;
    void append_upstream_body(std::string& out, std::uint64_t upstream_id) const;
    // upstream_body(upstream_id).size(), without building it.
    std::size_t upstream_body_size(std::uint64_t upstream_id) const;
};

// The calls of a request: a single call (most requests) is held in place,
// without an allocation; a batch's calls in a vector. Both keep their
// memory when the plan is used again (plan_request into an earlier plan).
class CallPlans {
public:
    std::size_t size() const { return in_place_ ? 1 : many_.size(); }
    bool empty() const { return size() == 0; }
    CallPlan* begin() { return in_place_ ? &one_ : many_.data(); }
    CallPlan* end() { return begin() + size(); }
    const CallPlan* begin() const { return in_place_ ? &one_ : many_.data(); }
    const CallPlan* end() const { return begin() + size(); }
    CallPlan& operator[](std::size_t i) { return begin()[i]; }
    const CallPlan& operator[](std::size_t i) const { return begin()[i]; }
    // Calls added are as a new CallPlan.
    void resize(std::size_t n) {
        if (n == 1 && many_.empty()) {
            if (!in_place_) one_.reset();
            in_place_ = true;
            return;
        }
        if (in_place_ && n > 1) many_.push_back(std::move(one_));
        in_place_ = false;
        many_.resize(n);
    }
    void push_back(CallPlan call) {
        resize(size() + 1);
        (*this)[size() - 1] = std::move(call);
    }

private:
    bool in_place_ = false;  // the one call is one_
    CallPlan one_;
    std::vector<CallPlan> many_;
};

struct RequestPlan {
    bool batch = false;
    std::optional<jsonrpc::ErrorInfo> error;  // the whole body failed (answered with id null)
    CallPlans calls;
};

RequestPlan plan_request(std::string_view body, const RoutingTable& table, const RequestLimits& limits);
// The same into `plan`, whose memory (a plan of an earlier request) is reused.
void plan_request(RequestPlan& plan, std::string_view body, const RoutingTable& table, const RequestLimits& limits);

// The cache key of api.method + params (canonical form: compact, object keys
// sorted); long params are hashed.
std::string cache_key(std::string_view path, std::string_view canonical_params);
void write_cache_key(std::string& key, std::string_view path, std::string_view canonical_params);
// What a target's cache keys start with: "<name>@<8 hex of its URLs' hash>:",
// so that two routing tables (two chains) in one Redis never share an entry,
// while every nginx with the same target does.
std::string target_cache_tag(const Target& target);

struct UpstreamReply {
    bool valid = false;       // false: not a JSON-RPC response (-> 1100)
    std::string response;     // the response with the caller's id
    std::size_t id_offset = 0;  // where the caller's id starts in `response` (it ends before the last '}')
    std::string_view result;  // the `result` text when cacheable (result and no error): a view into the body
    bool cacheable = false;
    std::string problem;      // why it is invalid
};

// Checks an upstream body and rewrites its id to the caller's. The reply's
// `result` points into `body`, which must outlive it. The response is
// written into `memory` (its capacity kept, its contents replaced).
UpstreamReply rewrite_upstream_reply(std::string_view body, std::string_view caller_id, const RequestLimits& limits,
                                     std::string memory = {});

// A response built from a cached result, with the caller's id.
std::string render_cached(std::string_view result, std::string_view caller_id);
// The same written to `out` (replacing what it held; its memory is reused).
void render_cached(std::string& out, std::string_view result, std::string_view caller_id);
// render_cached(result, caller_id).size(), without building it.
std::size_t cached_response_size(std::string_view result, std::string_view caller_id);

// The upstream id of a reply (for WebSocket upstreams matching answers to
// requests); nullopt when absent or not a non-negative integer.
std::optional<std::uint64_t> reply_upstream_id(std::string_view body);

// The block a call concerns, from its params: the first element of an array
// when it is a non-negative integer ([n, ...]: get_block, get_block_header,
// get_ops_in_block), `block_num` of an object, or the last block of
// `starting_block_num` + `count` (get_block_range).
std::optional<std::uint64_t> block_of_params(const jsonrpc::JsonDocument& doc, std::size_t params);

// How long a result may be cached: nullopt = not at all, 0 = without expiry.
// A route with expire_if_reversible caches an answer about a block at or
// below `lib` (the answering node's last irreversible block; 0 = unknown)
// without expiry; the block is the call's, or else the result's `block_num`
// (get_transaction). An empty result (null, {}, [], or only empty members)
// is never final: a node may not have the block. Otherwise the route's TTL.
std::optional<std::int64_t> cache_lifetime(const CallPlan& call, std::string_view result, std::uint64_t lib);

// The call a chain-node poll sends to the target of `route`:
// database_api.get_dynamic_global_properties {}.
CallPlan chain_poll_plan(const Route& route);

struct ChainHead {
    std::uint64_t head = 0;
    std::uint64_t lib = 0;
};

// head_block_number and last_irreversible_block_num of a
// get_dynamic_global_properties response; nullopt when it has no such result.
std::optional<ChainHead> chain_head(std::string_view response);

// Joins the per-call responses of a batch.
std::string render_batch(const std::vector<std::string>& responses);

}  // namespace router
