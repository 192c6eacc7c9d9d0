// The router's JSON-RPC envelope and batch parser (plan_request over the
// shipped routing file), its JSON document parser on its own, and the
// checks of an upstream reply, all fed with the same untrusted bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "jsonrpc_json.hpp"
#include "router_config.hpp"
#include "router_request.hpp"

namespace {

const router::RoutingTable& routes() {
    static const router::RoutingTable table = [] {
        auto loaded = router::load_routing_file(WALLET_SOURCE_DIR "/conf/routes.hive.json");
        fuzz::check(loaded.ok(), "conf/routes.hive.json loads");
        return std::move(loaded).value();
    }();
    return table;
}

bool parses(std::string_view text, std::size_t max_depth) {
    jsonrpc::JsonDocument document;
    return document.parse(text, max_depth) == jsonrpc::JsonParseStatus::Ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body = fuzz::text(data, size);
    const router::RequestLimits limits;

    const router::RequestPlan plan = router::plan_request(body, routes(), limits);
    fuzz::check(!plan.error || plan.calls.empty(), "a failed body has no calls");
    for (const router::CallPlan& call : plan.calls) {
        fuzz::check(parses(call.id, limits.max_depth), "a call's id is JSON text");
        if (call.error || call.route == nullptr) continue;
        const std::string upstream = call.upstream_body(42);
        fuzz::check(parses(upstream, limits.max_depth + 2), "the upstream request is JSON");
    }
    if (plan.batch && !plan.error) {
        std::vector<std::string> responses;
        for (const router::CallPlan& call : plan.calls) responses.push_back(router::render_cached("1", call.id));
        fuzz::check(parses(router::render_batch(responses), limits.max_depth + 2), "a batch response is JSON");
    }

    jsonrpc::JsonDocument document;
    if (document.parse(body, limits.max_response_depth) == jsonrpc::JsonParseStatus::Ok) {
        const std::string canonical = document.canonical(document.root());
        jsonrpc::JsonDocument again;
        fuzz::check(again.parse(canonical, limits.max_response_depth) == jsonrpc::JsonParseStatus::Ok,
                    "canonical text parses");
        fuzz::check(again.canonical(again.root()) == canonical, "canonical text is its own canonical form");
        (void)document.has_duplicate_keys();
    }

    // The same bytes as an upstream's answer to a call with id 7.
    const router::UpstreamReply reply = router::rewrite_upstream_reply(body, "7", limits);
    if (reply.valid) {
        jsonrpc::JsonDocument rewritten;  // one level more: the reply's own object
        fuzz::check(rewritten.parse(reply.response, limits.max_response_depth + 1) == jsonrpc::JsonParseStatus::Ok,
                    "a rewritten reply is JSON");
        const auto id = rewritten.member(rewritten.root(), "id");
        fuzz::check(id && rewritten.text(*id) == "7", "a rewritten reply carries the caller's id");
        if (reply.cacheable) {
            fuzz::check(parses(router::render_cached(reply.result, "\"x\""), limits.max_response_depth + 1),
                        "a cached result renders as JSON");
        }
    }
    (void)router::reply_upstream_id(body);
    return 0;
}
