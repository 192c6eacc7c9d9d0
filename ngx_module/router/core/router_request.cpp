#include "router_request.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <utility>

#include "jsonrpc_json.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/json_util.hpp"

namespace router {

using jsonrpc::JsonDocument;
using jsonrpc::JsonKind;
using jsonrpc::JsonParseStatus;
namespace code = jsonrpc::code;
namespace rpc = wallet::jsonrpc;

namespace {

constexpr std::size_t kMaxReadableKeyParams = 200;

jsonrpc::ErrorInfo invalid(std::string message) { return {rpc::kInvalidRequest, std::move(message)}; }

// A plan reused from an earlier request keeps its strings' memory: the
// strings are assigned here, not replaced.
void plan_call(const JsonDocument& doc, std::size_t node, const RoutingTable& table, CallPlan& call) {
    call.reset();
    if (doc.kind(node) != JsonKind::Object) {
        call.error = invalid("Invalid Request: not a JSON-RPC request object");
        return;
    }
    // The envelope's members in one pass (the first of a name counts, as with member()).
    std::optional<std::size_t> id, version, method, params;
    bool id_twice = false;
    bool named_twice = false;  // one of these four
    bool other_names = false;
    std::size_t key = node + 1;
    std::string key_scratch;
    for (std::uint32_t i = 0; i < doc.node(node).count; ++i) {
        const std::size_t value = doc.node(key).next;
        const std::string_view name = doc.string_view_of(key, key_scratch);
        std::optional<std::size_t>* slot = name == "id"        ? &id
                                           : name == "jsonrpc" ? &version
                                           : name == "method"  ? &method
                                           : name == "params"  ? &params
                                                               : nullptr;
        id_twice = id_twice || (slot == &id && id);
        if (slot == nullptr) {
            other_names = true;
        } else if (*slot) {
            named_twice = true;
        } else {
            *slot = value;
        }
        key = doc.node(value).next;
    }
    // The envelope's own names are compared above (decoded): the whole
    // object is searched again only when it has others, else the values
    // that may hold objects.
    const auto names_twice = [&] {
        if (named_twice) return true;
        if (other_names) return doc.has_duplicate_keys(node);
        for (const auto& member : {id, version, method, params}) {
            if (member && doc.node(*member).count > 0 &&
                (doc.kind(*member) == JsonKind::Object || doc.kind(*member) == JsonKind::Array) &&
                doc.has_duplicate_keys(*member)) {
                return true;
            }
        }
        return false;
    };
    // The router would read one of two same-named members (a block_num that
    // decides how long an answer is cached) and the target maybe the other:
    // this call is refused, with its id unless that is what is named twice.
    if (names_twice()) {
        if (id && !id_twice && (doc.kind(*id) == JsonKind::String || doc.kind(*id) == JsonKind::Number)) {
            call.id.assign(doc.text(*id));
        }
        call.error = invalid("Invalid Request: an object names a member twice");
        return;
    }
    if (id) {
        JsonKind k = doc.kind(*id);
        if (k != JsonKind::String && k != JsonKind::Number && k != JsonKind::Null) {
            call.error = invalid("Invalid Request: id must be a string, a number or null");
            return;
        }
        call.id.assign(doc.text(*id));
    }
    std::string version_scratch;
    if (!version || doc.kind(*version) != JsonKind::String || doc.string_view_of(*version, version_scratch) != "2.0") {
        call.error = invalid("Invalid Request: jsonrpc must be \"2.0\"");
        return;
    }
    if (!method || doc.kind(*method) != JsonKind::String) {
        call.error = invalid("Invalid Request: method must be a string");
        return;
    }
    if (params && doc.kind(*params) != JsonKind::Array && doc.kind(*params) != JsonKind::Object &&
        doc.kind(*params) != JsonKind::Null) {
        call.error = invalid("Invalid Request: params must be an array or an object");
        return;
    }
    std::string method_scratch;
    const std::string_view method_name = doc.string_view_of(*method, method_scratch);
    std::string_view api;         // views into call.path once it is set
    std::string_view api_method;
    std::optional<std::size_t> inner_params_node;
    bool legacy = method_name == "call";
    if (legacy) {
        if (!params || doc.kind(*params) != JsonKind::Array || doc.node(*params).count < 2 ||
            doc.node(*params).count > 3) {
            call.error = invalid("Invalid Request: call needs params [api, method, params]");
            return;
        }
        auto elements = doc.children(*params);
        JsonKind api_kind = doc.kind(elements[0]);
        std::string api_scratch;
        std::string_view api_name;
        if (api_kind == JsonKind::String) {
            api_name = doc.string_view_of(elements[0], api_scratch);
        } else if (api_kind == JsonKind::Number && doc.text(elements[0]) == "0") {
            api_name = "database_api";  // numeric api ids of the steemd era
        } else if (api_kind == JsonKind::Number && doc.text(elements[0]) == "1") {
            api_name = "login_api";
        } else {
            call.error = invalid("Invalid Request: call needs an api name");
            return;
        }
        if (doc.kind(elements[1]) != JsonKind::String) {
            call.error = invalid("Invalid Request: call needs a method name");
            return;
        }
        std::string name_scratch;
        const std::string_view name = doc.string_view_of(elements[1], name_scratch);
        if (elements.size() == 3) inner_params_node = elements[2];
        call.path.reserve(api_name.size() + 1 + name.size());
        call.path.assign(api_name);
        call.path += '.';
        call.path += name;
        api = std::string_view(call.path).substr(0, api_name.size());
        api_method = std::string_view(call.path).substr(api_name.size() + 1);
    } else {
        call.path.assign(method_name);
        auto dot = call.path.find('.');
        if (dot != std::string::npos) {
            api = std::string_view(call.path).substr(0, dot);
            api_method = std::string_view(call.path).substr(dot + 1);
        }
        inner_params_node = params;
    }
    if (api.empty() && legacy) {
        call.error = invalid("Invalid Request: empty api name");
        return;
    }

    const RouteDecision decision = table.decide(call.path);
    call.write = decision.write;
    call.route = decision.route;
    if (call.route == nullptr) {
        call.error = jsonrpc::ErrorInfo{rpc::kMethodNotFound, "no route for method " + call.path};
        return;
    }
    call.ttl = call.route->ttl;

    // What goes upstream: the request as sent, or its legacy form.
    if (!legacy && call.route->translate && !api.empty()) {
        call.method_json = "\"call\"";
        call.params_json.assign(1, '[');  // not = "[": GCC 12 -Wrestrict false positive at -O3 (bug 105329)
        wallet::json::append_quoted(call.params_json, api);
        call.params_json += ',';
        wallet::json::append_quoted(call.params_json, api_method);
        call.params_json += ',';
        if (params && doc.kind(*params) != JsonKind::Null) {
            call.params_json += doc.text(*params);
        } else {
            call.params_json += "[]";
        }
        call.params_json += ']';
    } else {
        // A method named directly and written without escapes is its path
        // quoted (the upstream body writes it from there, no copy of its own).
        if (legacy || doc.text(*method).size() != method_name.size() + 2) {
            call.method_json.assign(doc.text(*method));
        }
        if (params) call.params_json.assign(doc.text(*params));
    }

    if (call.route->expire_if_reversible && inner_params_node) call.block = block_of_params(doc, *inner_params_node);
    if (call.ttl > 0 || call.route->expire_if_reversible) {
        std::string canonical = inner_params_node ? doc.canonical(*inner_params_node) : std::string("null");
        write_cache_key(call.cache_key, call.path, canonical);
    }
}

// The document a thread parses request bodies and upstream replies into:
// its node memory is kept from one parse to the next (an nginx worker
// parses two small bodies per call), that of a large document let go. A
// second one alive at the same time gets a document of its own.
class ScratchDocument {
public:
    ScratchDocument() : shared_(scratch()), own_(!std::exchange(shared_.in_use, true) ? nullptr : std::make_unique<JsonDocument>()) {}
    ~ScratchDocument() {
        if (own_) return;
        shared_.doc.release_memory_over(kKeptNodes);
        shared_.in_use = false;
    }
    ScratchDocument(const ScratchDocument&) = delete;
    ScratchDocument& operator=(const ScratchDocument&) = delete;
    JsonDocument& operator*() { return own_ ? *own_ : shared_.doc; }

private:
    static constexpr std::size_t kKeptNodes = 1024;
    struct Shared {
        JsonDocument doc;
        bool in_use = false;
    };
    // One thread-local access per use (each costs a call in a shared library).
    static Shared& scratch() {
        thread_local Shared shared;
        return shared;
    }
    Shared& shared_;
    std::unique_ptr<JsonDocument> own_;  // when the shared one is in use
};

std::string sha256_hex(std::string_view data) {
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * SHA256_DIGEST_LENGTH);
    for (unsigned char b : digest) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 0xF]);
    }
    return out;
}

}  // namespace

std::string target_cache_tag(const Target& target) {
    std::string urls;
    for (const Endpoint& e : target.urls) {
        urls += e.url;
        urls += ' ';
    }
    return target.name + "@" + sha256_hex(urls).substr(0, 8) + ":";
}

void CallPlan::reset() {
    id.assign("null");
    error.reset();
    path.clear();
    write = false;
    route = nullptr;
    method_json.clear();
    params_json.clear();
    cache_key.clear();
    ttl = 0;
    block.reset();
}

std::string CallPlan::upstream_body(std::uint64_t upstream_id) const {
    std::string out;
    append_upstream_body(out, upstream_id);
    return out;
}

namespace {
constexpr std::string_view kUpstreamHead = "{\"jsonrpc\":\"2.0\",\"method\":";
constexpr std::string_view kParamsMember = ",\"params\":";
constexpr std::string_view kUpstreamIdMember = ",\"id\":";
}  // namespace

std::size_t CallPlan::upstream_body_size(std::uint64_t upstream_id) const {
    char digits[24];
    const auto written = std::to_chars(digits, digits + sizeof digits, upstream_id);
    return kUpstreamHead.size() + (method_json.empty() ? path.size() + 2 : method_json.size()) +
           (params_json.empty() ? 0 : kParamsMember.size() + params_json.size()) + kUpstreamIdMember.size() +
           static_cast<std::size_t>(written.ptr - digits) + 1;
}

void CallPlan::append_upstream_body(std::string& out, std::uint64_t upstream_id) const {
    char digits[24];
    const std::string_view id_text(
        digits, static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, upstream_id).ptr - digits));
    // Sized once and copied into place (no check of room per member).
    const std::size_t at = out.size();
    out.resize(at + kUpstreamHead.size() + (method_json.empty() ? path.size() + 2 : method_json.size()) +
               (params_json.empty() ? 0 : kParamsMember.size() + params_json.size()) + kUpstreamIdMember.size() +
               id_text.size() + 1);
    char* p = out.data() + at;
    const auto put = [&p](std::string_view text) {
        std::memcpy(p, text.data(), text.size());
        p += text.size();
    };
    put(kUpstreamHead);
    if (method_json.empty()) {
        *p++ = '"';
        put(path);
        *p++ = '"';
    } else {
        put(method_json);
    }
    if (!params_json.empty()) {
        put(kParamsMember);
        put(params_json);
    }
    put(kUpstreamIdMember);
    put(id_text);
    *p = '}';
}

std::string cache_key(std::string_view path, std::string_view canonical_params) {
    std::string key;
    write_cache_key(key, path, canonical_params);
    return key;
}

void write_cache_key(std::string& key, std::string_view path, std::string_view canonical_params) {
    key.clear();
    key.reserve(path.size() + 1 + std::min(canonical_params.size(), kMaxReadableKeyParams + 1));
    key += path;
    key += ' ';
    if (canonical_params.size() <= kMaxReadableKeyParams) {
        key += canonical_params;
    } else {
        key += "sha256:";
        key += sha256_hex(canonical_params);
    }
}

RequestPlan plan_request(std::string_view body, const RoutingTable& table, const RequestLimits& limits) {
    RequestPlan plan;
    plan_request(plan, body, table, limits);
    return plan;
}

void plan_request(RequestPlan& plan, std::string_view body, const RoutingTable& table, const RequestLimits& limits) {
    plan.batch = false;
    plan.error.reset();
    plan.calls.resize(0);
    ScratchDocument scratch;
    JsonDocument& doc = *scratch;
    JsonParseStatus status = doc.parse(body, limits.max_depth + 1);
    if (status == JsonParseStatus::TooDeep) {
        plan.error = invalid("Invalid Request: nesting deeper than " + std::to_string(limits.max_depth));
        return;
    }
    if (status != JsonParseStatus::Ok) {
        plan.error = jsonrpc::ErrorInfo{rpc::kParseError, "Parse error: " + doc.error()};
        return;
    }
    if (doc.kind(0) == JsonKind::Array) {
        plan.batch = true;
        std::size_t count = doc.node(0).count;
        if (count == 0) {
            plan.error = invalid("Invalid Request: empty batch");
            return;
        }
        if (count > limits.max_batch) {
            plan.error = jsonrpc::ErrorInfo{code::batch_too_large, "JSONRPC batch size of " + std::to_string(count) +
                                                                       " exceeds " + std::to_string(limits.max_batch)};
            return;
        }
        auto elements = doc.children(0);
        plan.calls.resize(elements.size());
        for (std::size_t i = 0; i < elements.size(); ++i) plan_call(doc, elements[i], table, plan.calls[i]);
        return;
    }
    plan.calls.resize(1);
    plan_call(doc, 0, table, plan.calls[0]);
}

UpstreamReply rewrite_upstream_reply(std::string_view body, std::string_view caller_id, const RequestLimits& limits,
                                     std::string memory) {
    UpstreamReply reply;
    ScratchDocument scratch;
    JsonDocument& doc = *scratch;
    // Checked whole, read at its top only (the result passes through as text).
    if (doc.parse_top(body, limits.max_response_depth) != JsonParseStatus::Ok) {
        reply.problem = body.empty() ? "empty body" : "not JSON";
        return reply;
    }
    if (doc.kind(0) != JsonKind::Object) {
        reply.problem = "not a JSON-RPC response object";
        return reply;
    }
    // Both members in one pass (the first of a name counts, as with member()).
    std::optional<std::size_t> result, error;
    std::string key_scratch;
    for (std::size_t key = 1, i = 0; i < doc.node(0).count; ++i) {
        const std::size_t value = doc.node(key).next;
        const std::string_view name = doc.string_view_of(key, key_scratch);
        if (name == "result" && !result) result = value;
        if (name == "error" && !error) error = value;
        key = doc.node(value).next;
    }
    if (!result && !error) {
        reply.problem = "neither result nor error";
        return reply;
    }
    reply.valid = true;
    std::string& out = reply.response;
    memory.clear();
    out = std::move(memory);
    out.reserve(body.size() + caller_id.size() + 32);
    out += "{\"jsonrpc\":\"2.0\"";
    if (result) {
        out += ",\"result\":";
        out += doc.text(*result);
    }
    if (error) {
        out += ",\"error\":";
        out += doc.text(*error);
    }
    out += ",\"id\":";
    reply.id_offset = out.size();
    out += caller_id;
    out += '}';
    if (result && !error) {
        reply.cacheable = true;
        reply.result = doc.text(*result);
    }
    return reply;
}

namespace {
constexpr std::string_view kCachedHead = "{\"jsonrpc\":\"2.0\",\"result\":";
constexpr std::string_view kIdMember = ",\"id\":";
}  // namespace

std::size_t cached_response_size(std::string_view result, std::string_view caller_id) {
    return kCachedHead.size() + result.size() + kIdMember.size() + caller_id.size() + 1;
}

std::string render_cached(std::string_view result, std::string_view caller_id) {
    std::string out;
    render_cached(out, result, caller_id);
    return out;
}

void render_cached(std::string& out, std::string_view result, std::string_view caller_id) {
    out.clear();
    out.reserve(cached_response_size(result, caller_id));
    out += kCachedHead;
    out += result;
    out += kIdMember;
    out += caller_id;
    out += '}';
}

std::optional<std::uint64_t> reply_upstream_id(std::string_view body) {
    JsonDocument doc;
    if (doc.parse(body, 512) != JsonParseStatus::Ok || doc.kind(0) != JsonKind::Object) return std::nullopt;
    auto id = doc.member(0, "id");
    if (!id || doc.kind(*id) != JsonKind::Number) return std::nullopt;
    std::string_view text = doc.text(*id);
    if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string_view::npos) {
        return std::nullopt;
    }
    return std::stoull(std::string(text));
}

std::optional<std::uint64_t> block_of_params(const JsonDocument& doc, std::size_t params) {
    if (doc.kind(params) == JsonKind::Array) {
        if (doc.node(params).count == 0) return std::nullopt;
        return doc.unsigned_integer(doc.children(params)[0]);
    }
    if (doc.kind(params) != JsonKind::Object) return std::nullopt;
    if (auto block = doc.member(params, "block_num")) return doc.unsigned_integer(*block);
    auto start = doc.member(params, "starting_block_num");
    auto count = doc.member(params, "count");
    if (!start || !count) return std::nullopt;
    auto first = doc.unsigned_integer(*start);
    auto blocks = doc.unsigned_integer(*count);
    if (!first || !blocks || *blocks == 0 || *first > UINT64_MAX - *blocks) return std::nullopt;
    return *first + *blocks - 1;
}

namespace {

bool empty_value(const JsonDocument& doc, std::size_t node) {
    JsonKind k = doc.kind(node);
    if (k == JsonKind::Null) return true;
    if (k == JsonKind::Array) return doc.node(node).count == 0;
    if (k != JsonKind::Object) return false;
    auto members = doc.children(node);
    for (std::size_t i = 1; i < members.size(); i += 2) {
        JsonKind m = doc.kind(members[i]);
        bool empty_member = m == JsonKind::Null || ((m == JsonKind::Array || m == JsonKind::Object) &&
                                                    doc.node(members[i]).count == 0);
        if (!empty_member) return false;
    }
    return true;
}

}  // namespace

std::optional<std::int64_t> cache_lifetime(const CallPlan& call, std::string_view result, std::uint64_t lib) {
    std::optional<std::int64_t> normal;
    if (call.ttl > 0) normal = call.ttl;
    if (call.route == nullptr || !call.route->expire_if_reversible || lib == 0) return normal;
    JsonDocument doc;
    if (doc.parse(result, 512) != JsonParseStatus::Ok || empty_value(doc, 0)) return normal;
    std::optional<std::uint64_t> block = call.block;
    if (!block && doc.kind(0) == JsonKind::Object) {
        if (auto member = doc.member(0, "block_num")) block = doc.unsigned_integer(*member);
    }
    if (block && *block <= lib) return 0;
    return normal;
}

CallPlan chain_poll_plan(const Route& route) {
    CallPlan call;
    call.id = "0";
    call.path = "database_api.get_dynamic_global_properties";
    call.route = &route;
    call.method_json = "\"database_api.get_dynamic_global_properties\"";
    call.params_json = "{}";
    return call;
}

std::optional<ChainHead> chain_head(std::string_view response) {
    JsonDocument doc;
    if (doc.parse(response, 64) != JsonParseStatus::Ok || doc.kind(0) != JsonKind::Object) return std::nullopt;
    auto result = doc.member(0, "result");
    if (!result || doc.kind(*result) != JsonKind::Object) return std::nullopt;
    auto head = doc.member(*result, "head_block_number");
    auto lib = doc.member(*result, "last_irreversible_block_num");
    if (!head || !lib) return std::nullopt;
    auto head_number = doc.unsigned_integer(*head);
    auto lib_number = doc.unsigned_integer(*lib);
    if (!head_number || !lib_number || *lib_number > *head_number) return std::nullopt;
    return ChainHead{*head_number, *lib_number};
}

std::string render_batch(const std::vector<std::string>& responses) {
    std::size_t size = 2;
    for (const auto& r : responses) size += r.size() + 1;
    std::string out;
    out.reserve(size);
    out.push_back('[');
    for (std::size_t i = 0; i < responses.size(); ++i) {
        if (i > 0) out.push_back(',');
        out += responses[i];
    }
    out.push_back(']');
    return out;
}

}  // namespace router
