// Unit tests of the router's nginx-free core: JSON spans, routing file,
// request planning, upstream reply rewriting, HTTP parsing, WebSocket framing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jsonrpc_error.hpp"
#include "jsonrpc_json.hpp"
#include "jsonrpc_writer.hpp"
#include "router_client_tally.hpp"
#include "router_config.hpp"
#include "router_http.hpp"
#include "router_request.hpp"
#include "router_websocket.hpp"

using namespace router;

namespace {

const char* kSmallRoutes = R"({
  "targets": {"node": "http://127.0.0.1:8091", "social": "ws://127.0.0.1:8092/ws", "local": "sock:///run/hived.sock"},
  "timeouts": {"node": 3, "social": 0.5},
  "routes": {
    "^condenser_api.get_content": {"target": "social", "cache": 3},
    "^condenser_api.": {"target": "node"},
    "^database_api.": {"target": "node", "translate_to_app_base": true},
    "^block_api.": {"target": "node", "translate_to_app_base": false},
    "^bridge.": {"target": "social"}
  },
  "default-cache": 7
})";

RoutingTable small_table() {
    auto t = parse_routing_table(kSmallRoutes, "small.json");
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error());
    return std::move(t).value();
}

std::string load_error(const std::string& text) {
    auto t = parse_routing_table(text, "bad.json");
    return t.ok() ? "" : t.error();
}

}  // namespace

TEST(RouterJson, KeepsNumbersAndStringsVerbatim) {
    jsonrpc::JsonDocument doc;
    std::string text = R"({"id": 123456789012345678901234567890.50, "s": "a\u00e9\"", "n": null})";
    ASSERT_EQ(doc.parse(text, 8), jsonrpc::JsonParseStatus::Ok);
    EXPECT_EQ(doc.text(*doc.member(0, "id")), "123456789012345678901234567890.50");
    EXPECT_EQ(doc.string_value(*doc.member(0, "s")), "a\xC3\xA9\"");
    EXPECT_EQ(doc.kind(*doc.member(0, "n")), jsonrpc::JsonKind::Null);
}

TEST(RouterJson, RejectsMalformedInput) {
    jsonrpc::JsonDocument doc;
    for (std::string bad : {"", "{", "{\"a\":}", "[1,]", "01", "1.", "\"\x01\"", "{\"a\":1} x", "nul", "\"\\x\"",
                            "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\\ud800\""}) {
        EXPECT_EQ(doc.parse(bad, 8), jsonrpc::JsonParseStatus::Syntax) << bad;
    }
    EXPECT_EQ(doc.parse("[[[[[]]]]]", 4), jsonrpc::JsonParseStatus::TooDeep);
    EXPECT_EQ(doc.parse("[[[[[]]]]]", 5), jsonrpc::JsonParseStatus::Ok);
}

// An upstream reply is checked whole but indexed at its top only.
TEST(RouterJson, TopIndexedParseChecksTheWholeText) {
    jsonrpc::JsonDocument doc;
    const std::string reply = R"({"jsonrpc":"2.0","result":{"a":[1,{"b":"\u0041"}],"c":null},"id":7})";
    ASSERT_EQ(doc.parse_top(reply, 8), jsonrpc::JsonParseStatus::Ok);
    ASSERT_TRUE(doc.member(0, "result"));
    EXPECT_EQ(doc.text(*doc.member(0, "result")), R"({"a":[1,{"b":"\u0041"}],"c":null})");
    ASSERT_TRUE(doc.member(0, "id"));
    EXPECT_EQ(doc.text(*doc.member(0, "id")), "7");
    EXPECT_EQ(doc.node(0).count, 3u);
    for (std::string bad : {R"({"result":{"a":[1,]}})", R"({"result":{"a":"\x"}})", R"({"result":[nul]})",
                            "{\"result\":[\"\x01\"]}", R"({"result":{"a" 1}})"}) {
        EXPECT_EQ(doc.parse_top(bad, 8), jsonrpc::JsonParseStatus::Syntax) << bad;
    }
    EXPECT_EQ(doc.parse_top(R"({"result":[[[[]]]]})", 4), jsonrpc::JsonParseStatus::TooDeep);
    EXPECT_EQ(doc.parse_top(R"({"result":[[[[]]]]})", 5), jsonrpc::JsonParseStatus::Ok);
}

// What parse_top leaves unindexed is checked in one loop: the same answers,
// errors and offsets as the full parse, and the counts of the top's children.
TEST(RouterJson, TopIndexedParseFailsAsTheFullParse) {
    jsonrpc::JsonDocument top;
    jsonrpc::JsonDocument full;
    ASSERT_EQ(top.parse_top(R"({"result":{"a":[1,{"b":2}],"c":[],"d":{}},"x":[1,2,3],"e":{}})", 8),
              jsonrpc::JsonParseStatus::Ok);
    EXPECT_EQ(top.node(*top.member(0, "result")).count, 3u);
    EXPECT_EQ(top.node(*top.member(0, "x")).count, 3u);
    EXPECT_EQ(top.node(*top.member(0, "e")).count, 0u);
    for (std::string body :
         {R"({"result":{"a":[1,{"b":2}],"c" 1}})", R"({"result":[1 2]})", R"({"result":{"a":1,}})",
          R"({"result":{1:2}})", R"({"result":[tru]})", R"({"result":[-]})", R"({"result":[01]})",
          R"({"result":[1.]})", R"({"result":[1e]})", R"({"result":[1.5e+3, -0, 12345678901234567890]})",
          R"({"result":{"a":[)", R"({"result":{"a")", R"({"result":[1,)", R"({"result":["\ud800"]})",
          "{\"result\":[\"\xc3\x28\"]}", R"({"result":[[[[[]]]]]})", R"({"result":[[[[1]]]]})",
          R"({"result":{"a":{"b":{"c":{}}}}})", R"({"result":[ 1 , [ ] , { "a" : null } ] })"}) {
        const auto full_status = full.parse(body, 5);
        EXPECT_EQ(top.parse_top(body, 5), full_status) << body;
        EXPECT_EQ(top.error(), full.error()) << body;
    }
}

// Integers are read by the parser's own loop, other numbers by the scanner:
// the same spans either way.
TEST(RouterJson, NumbersKeepTheirTextWhicheverWayRead) {
    jsonrpc::JsonDocument doc;
    const std::string text = R"([0,7,42,12345678901234567890,-1,1.5,2e10,3E-2,0.25,9])";
    ASSERT_EQ(doc.parse(text, 4), jsonrpc::JsonParseStatus::Ok);
    const std::vector<std::string> expected = {"0", "7", "42", "12345678901234567890", "-1", "1.5", "2e10",
                                               "3E-2", "0.25", "9"};
    const auto elements = doc.children(0);
    ASSERT_EQ(elements.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(doc.text(elements[i]), expected[i]);
    EXPECT_EQ(doc.parse("12", 4), jsonrpc::JsonParseStatus::Ok);
    EXPECT_EQ(doc.parse("[12.]", 4), jsonrpc::JsonParseStatus::Syntax);
    EXPECT_EQ(doc.parse("[12e]", 4), jsonrpc::JsonParseStatus::Syntax);
    EXPECT_EQ(doc.parse("[012]", 4), jsonrpc::JsonParseStatus::Syntax);
}

// Strings are read sixteen bytes at a time: escapes, DEL and UTF-8 past
// the first block are found, and a key that differs from another only by
// its escapes is still the same key.
TEST(RouterJson, EscapesAndUtf8PastTheFirstBlock) {
    jsonrpc::JsonDocument doc;
    const std::string text = "{\"0123456789abcdefghij\\u0041\":\"0123456789abcdefghij\\n\x7f\xC3\xA9z\",\"k\":\"v\"}";
    ASSERT_EQ(doc.parse(text, 8), jsonrpc::JsonParseStatus::Ok);
    ASSERT_TRUE(doc.member(0, "0123456789abcdefghijA"));
    std::string scratch;
    EXPECT_EQ(doc.string_view_of(*doc.member(0, "0123456789abcdefghijA"), scratch),
              "0123456789abcdefghij\n\x7f\xC3\xA9z");
    EXPECT_EQ(doc.string_view_of(*doc.member(0, "k"), scratch), "v");
    EXPECT_FALSE(doc.has_duplicate_keys());
    ASSERT_EQ(doc.parse(R"({"0123456789abcdefghijA":1,"0123456789abcdefghij\u0041":2})", 8), jsonrpc::JsonParseStatus::Ok);
    EXPECT_TRUE(doc.has_duplicate_keys());
    for (std::string bad : {"\"0123456789abcdefghij\x01\"", "\"0123456789abcdefghij\xC0\xAF\"",
                            "\"0123456789abcdefghij\\x\"", "\"0123456789abcdefghij"}) {
        EXPECT_EQ(doc.parse(bad, 8), jsonrpc::JsonParseStatus::Syntax) << bad;
    }
}

TEST(RouterJson, CanonicalFormSortsKeysRecursively) {
    jsonrpc::JsonDocument a, b;
    ASSERT_EQ(a.parse(R"({"b": [1, {"y":2,"x":1}], "a": "\u0041"})", 8), jsonrpc::JsonParseStatus::Ok);
    ASSERT_EQ(b.parse(R"({"a":"A","b":[1,{"x":1,"y":2}]})", 8), jsonrpc::JsonParseStatus::Ok);
    EXPECT_EQ(a.canonical(0), b.canonical(0));
    EXPECT_EQ(a.canonical(0), R"({"a":"A","b":[1,{"x":1,"y":2}]})");
}

TEST(RouterJson, ErrorObjectCarriesIdAndRequestId) {
    EXPECT_EQ(wallet::jsonrpc::error_response("\"x\"", -32601, "no route for method a.b", "r1"),
              R"({"jsonrpc":"2.0","error":{"code":-32601,"message":"no route for method a.b","data":{"request_id":"r1"}},"id":"x"})");
}

// The API module's form (no request id) and the router's come from one
// renderer; ids of every JSON type pass through as their text.
TEST(RouterJson, ErrorObjectKeepsIdsOfEveryTypeInBothForms) {
    for (const char* id : {"\"x\"", "7", "-1.5e3", "123456789012345678901234567890", "null"}) {
        const std::string tail = std::string(R"(},"id":)") + id + "}";
        EXPECT_EQ(wallet::jsonrpc::error_response(id, -32600, "bad"),
                  R"({"jsonrpc":"2.0","error":{"code":-32600,"message":"bad")" + tail);
        EXPECT_EQ(wallet::jsonrpc::error_response(id, 1000, "late", "r2"),
                  R"({"jsonrpc":"2.0","error":{"code":1000,"message":"late","data":{"request_id":"r2"})" + tail);
    }
    EXPECT_EQ(wallet::jsonrpc::error_response("", -32603, "x"), R"({"jsonrpc":"2.0","error":{"code":-32603,"message":"x"},"id":null})");
}

TEST(RouterConfig, LoadsTargetsTimeoutsAndOrder) {
    RoutingTable t = small_table();
    ASSERT_EQ(t.targets.size(), 3u);
    EXPECT_EQ(t.targets[0].timeout_ms, 3000);
    EXPECT_EQ(t.targets[1].timeout_ms, 500);
    EXPECT_EQ(t.targets[2].timeout_ms, 10000);
    EXPECT_EQ(t.targets[1].urls.at(0).transport, Transport::Ws);
    EXPECT_EQ(t.targets[1].urls.at(0).path, "/ws");
    EXPECT_EQ(t.targets[2].urls.at(0).transport, Transport::Unix);
    EXPECT_EQ(t.targets[2].urls.at(0).socket_path, "/run/hived.sock");
    for (const Target& target : t.targets) EXPECT_FALSE(target.pool());
    ASSERT_EQ(t.routes.size(), 5u);
    EXPECT_EQ(t.routes[0].ttl, 3);
    EXPECT_EQ(t.routes[1].ttl, 7);
    EXPECT_TRUE(t.routes[2].translate);
    EXPECT_FALSE(t.routes[3].translate);
    EXPECT_EQ(t.match("condenser_api.get_content_replies"), &t.routes[0]);
    EXPECT_EQ(t.match("condenser_api.get_accounts"), &t.routes[1]);
    EXPECT_EQ(t.match("xcondenser_api.get_accounts"), nullptr);  // anchored at the start
}

// A name's decision is remembered per table: the same as matching, bounded
// (a full memo starts over), and a copy of the table (a new configuration)
// does not take the decisions, which point into the table they were made for.
TEST(RouterConfig, RouteDecisionsAreRememberedBoundedAndNotCopied) {
    RoutingTable t = small_table();
    for (const char* path : {"condenser_api.get_content_replies", "condenser_api.get_accounts",
                             "network_broadcast_api.broadcast_transaction", "xcondenser_api.get_accounts"}) {
        for (int round = 0; round < 2; ++round) {  // decided, then remembered
            const RouteDecision decision = t.decide(path);
            EXPECT_EQ(decision.route, t.match(path)) << path;
            EXPECT_EQ(decision.write, is_write(path)) << path;
        }
    }
    EXPECT_EQ(t.memo.size(), 4u);
    const std::string long_name = "condenser_api." + std::string(RouteMemo::kMaxNameBytes, 'x');
    EXPECT_EQ(t.decide(long_name).route, &t.routes[1]);
    EXPECT_EQ(t.memo.size(), 4u);  // not remembered
    for (std::size_t i = t.memo.size(); i < RouteMemo::kMaxNames; ++i) t.decide("sprayed.name" + std::to_string(i));
    EXPECT_EQ(t.memo.size(), RouteMemo::kMaxNames);
    EXPECT_EQ(t.decide("condenser_api.get_block").route, &t.routes[1]);
    EXPECT_EQ(t.memo.size(), 1u);  // full: started over

    RoutingTable copy = t;
    EXPECT_EQ(copy.memo.size(), 0u);
    EXPECT_EQ(copy.decide("condenser_api.get_block").route, &copy.routes[1]);
    RoutingTable moved = std::move(copy);
    EXPECT_EQ(moved.memo.size(), 0u);
    EXPECT_EQ(moved.decide("condenser_api.get_block").route, &moved.routes[1]);
    moved = t;
    EXPECT_EQ(moved.memo.size(), 0u);
    EXPECT_EQ(moved.decide("condenser_api.get_content").route, &moved.routes[0]);
}

TEST(RouterConfig, IntTimeoutAppliesToEveryTarget) {
    auto t = parse_routing_table(R"({"targets":{"a":"http://h:1","b":"https://h"},"timeouts":4,"routes":{}})", "x");
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->targets[0].timeout_ms, 4000);
    EXPECT_EQ(t->targets[1].timeout_ms, 4000);
    EXPECT_EQ(t->targets[1].urls.at(0).port, 443);
}

TEST(RouterConfig, PredecessorFileLoadsUnchanged) {
    auto t = load_routing_file(std::string(WALLET_PROXY_FIXTURES_DIR) + "/ecency-rpc-proxy__config.example.hive.json");
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->routes.size(), 22u);
    EXPECT_EQ(t->targets[t->match("condenser_api.get_follow_count")->target].name, "hivemind");
    EXPECT_EQ(t->targets[t->match("condenser_api.get_follow_countx")->target].name, "hived");
}

TEST(RouterConfig, ErrorsNameFileKeyAndReason) {
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"routes":{"^x":{"target":"b"}}})"),
              R"(bad.json: routes."^x".target: unknown target 'b')");
    EXPECT_NE(load_error(R"({"targets":{"a":"http://h"},"routes":{"^x(":{"target":"a"}}})").find(
                  R"(bad.json: routes."^x(": bad regular expression: missing closing parenthesis)"),
              std::string::npos);
    EXPECT_EQ(load_error(R"({"targets":{"a":"ftp://h"},"routes":{}})"),
              "bad.json: targets.a: bad scheme 'ftp' (expected http, https, ws, wss or sock)");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"routes":{"^x":{"target":"a","cache":"5"}}})"),
              R"(bad.json: routes."^x".cache: must be a non-negative integer number of seconds)");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"routes":{"^x":{"target":"a","translate_to_app_base":1}}})"),
              R"(bad.json: routes."^x".translate_to_app_base: must be true or false)");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"timeouts":{"b":1},"routes":{}})"),
              "bad.json: timeouts.b: unknown target 'b'");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"timeouts":"1","routes":{}})"),
              "bad.json: timeouts: must be a number of seconds or an object of target -> seconds");
    EXPECT_EQ(load_error(R"({"targets":{"a":"sock://rel.sock"},"routes":{}})"),
              "bad.json: targets.a: a sock:// target needs an absolute socket path (sock:///abs/path.sock)");
    EXPECT_EQ(load_error(R"({"targets":{},"routes":{},"default_cache":1})"),
              "bad.json: default_cache: unknown key (expected targets, timeouts, routes, default-cache, chain-nodes, "
              "node-pools)");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"routes":[]})"), "bad.json: routes: must be an object of regex -> route");
    EXPECT_EQ(load_error("{"), "bad.json: not valid JSON: expected an object key at offset 1");
}

TEST(RouterConfig, ChainNodesAndExpireIfReversibleAreOptional) {
    auto t = parse_routing_table(R"({
      "targets": {"node": "http://127.0.0.1:8091", "social": "http://127.0.0.1:8080"},
      "chain-nodes": {"node": {"poll_interval": 0.5}},
      "routes": {
        "^block_api.get_block$": {"target": "node", "cache": 3, "expire_if_reversible": true},
        "^block_api.": {"target": "node", "expire_if_reversible": false},
        "^bridge.": {"target": "social"}
      }})", "chain.json");
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_TRUE(t->targets[0].chain_node);
    EXPECT_EQ(t->targets[0].poll_ms, 500);
    EXPECT_FALSE(t->targets[1].chain_node);
    EXPECT_TRUE(t->routes[0].expire_if_reversible);
    EXPECT_FALSE(t->routes[1].expire_if_reversible);
    EXPECT_FALSE(t->routes[2].expire_if_reversible);
    // Defaults: a file without the keys has no chain node and no final answers.
    RoutingTable plain = small_table();
    for (const Target& target : plain.targets) EXPECT_FALSE(target.chain_node);
    for (const Route& route : plain.routes) EXPECT_FALSE(route.expire_if_reversible);
    auto defaults = parse_routing_table(R"({"targets":{"a":"http://h"},"chain-nodes":{"a":{}},"routes":{}})", "d.json");
    ASSERT_TRUE(defaults.ok());
    EXPECT_EQ(defaults->targets[0].poll_ms, 3000);
    EXPECT_EQ(defaults->targets[0].max_lag, 20u);

    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"chain-nodes":{"b":{}},"routes":{}})"),
              "bad.json: chain-nodes.b: unknown target 'b'");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"chain-nodes":{"a":{"poll":1}},"routes":{}})"),
              "bad.json: chain-nodes.a.poll: unknown key (expected poll_interval, max_lag)");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"chain-nodes":["a"],"routes":{}})"),
              "bad.json: chain-nodes: must be an object of target -> settings");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"routes":{"^x":{"target":"a","expire_if_reversible":true}}})"),
              R"(bad.json: routes."^x".expire_if_reversible: target 'a' is not listed in chain-nodes (its last )"
              "irreversible block would be unknown)");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"chain-nodes":{"a":{}},)"
                         R"("routes":{"^x":{"target":"a","expire_if_reversible":1}}})"),
              R"(bad.json: routes."^x".expire_if_reversible: must be true or false)");
}

TEST(RouterConfig, ATargetMayListSeveralUrls) {
    auto t = parse_routing_table(R"({
      "targets": {"node": ["http://10.0.0.1:8091", "sock:///run/hived.sock", "ws://10.0.0.3:8090/"], "one": ["http://h"]},
      "chain-nodes": {"node": {"max_lag": 5}},
      "routes": {"^": {"target": "node"}}})", "pool.json");
    ASSERT_TRUE(t.ok()) << t.error();
    ASSERT_EQ(t->targets[0].urls.size(), 3u);
    EXPECT_TRUE(t->targets[0].pool());
    EXPECT_EQ(t->targets[0].urls[0].port, 8091);
    EXPECT_EQ(t->targets[0].urls[1].transport, Transport::Unix);
    EXPECT_EQ(t->targets[0].urls[2].transport, Transport::Ws);
    EXPECT_EQ(t->targets[0].max_lag, 5u);
    EXPECT_FALSE(t->targets[1].pool());  // a list of one URL is one URL
    EXPECT_EQ(load_error(R"({"targets":{"a":[]},"routes":{}})"),
              "bad.json: targets.a: must be a URL string or a list of 1 to 64 URL strings");
    EXPECT_EQ(load_error(R"({"targets":{"a":["http://h", 5]},"routes":{}})"), "bad.json: targets.a[1]: must be a URL string");
    EXPECT_EQ(load_error(R"({"targets":{"a":["http://h", "ftp://h"]},"routes":{}})"),
              "bad.json: targets.a[1]: bad scheme 'ftp' (expected http, https, ws, wss or sock)");
    EXPECT_EQ(load_error(R"({"targets":{"a":["http://h", "http://h"]},"routes":{}})"), "bad.json: targets.a[1]: duplicate URL");
    EXPECT_EQ(load_error(R"({"targets":{"a":"http://h"},"chain-nodes":{"a":{"max_lag":-1}},"routes":{}})"),
              "bad.json: chain-nodes.a.max_lag: must be a non-negative integer");
}

TEST(RouterConfig, NodePoolsSetFailureThresholdAndProbeInterval) {
    auto t = parse_routing_table(R"({
      "targets": {"node": ["http://10.0.0.1:8091", "http://10.0.0.2:8091"], "api": ["http://a1", "http://a2"],
                  "chain": ["http://c1", "http://c2"]},
      "chain-nodes": {"chain": {"poll_interval": 2}},
      "node-pools": {"node": {"max_failures": 5, "probe_interval": 0.25}, "api": {}},
      "routes": {"^": {"target": "node"}}})", "pools.json");
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->targets[0].max_failures, 5u);
    EXPECT_EQ(t->targets[0].probe_interval_ms(), 250);
    // Defaults unchanged: 3 failures, probed every poll interval (3 s, or
    // the chain node's poll_interval).
    EXPECT_EQ(t->targets[1].max_failures, 3u);
    EXPECT_EQ(t->targets[1].probe_interval_ms(), 3000);
    EXPECT_EQ(t->targets[2].max_failures, 3u);
    EXPECT_EQ(t->targets[2].probe_interval_ms(), 2000);
    auto floor = parse_routing_table(
        R"({"targets":{"a":["http://h","http://i"]},"node-pools":{"a":{"probe_interval":0.01}},"routes":{}})", "f.json");
    ASSERT_TRUE(floor.ok()) << floor.error();
    EXPECT_EQ(floor->targets[0].probe_interval_ms(), 100);  // at least 0.1 s, like poll_interval

    const std::string pool = R"({"targets":{"a":["http://h","http://i"],"one":"http://j"},"routes":{},"node-pools":)";
    EXPECT_EQ(load_error(pool + R"({"one":{}}})"), "bad.json: node-pools.one: target 'one' has one URL: it is not a pool");
    EXPECT_EQ(load_error(pool + R"({"b":{}}})"), "bad.json: node-pools.b: unknown target 'b'");
    EXPECT_EQ(load_error(pool + R"({"a":{"failures":2}}})"),
              "bad.json: node-pools.a.failures: unknown key (expected max_failures, probe_interval)");
    EXPECT_EQ(load_error(pool + R"({"a":{"max_failures":0}}})"),
              "bad.json: node-pools.a.max_failures: must be an integer from 1 to 1000");
    EXPECT_EQ(load_error(pool + R"({"a":{"max_failures":1.5}}})"),
              "bad.json: node-pools.a.max_failures: must be an integer from 1 to 1000");
    EXPECT_EQ(load_error(pool + R"({"a":{"probe_interval":0}}})"),
              "bad.json: node-pools.a.probe_interval: must be a positive number of seconds (at most 86400)");
    EXPECT_EQ(load_error(pool + R"({"a":{},"a":{}}})"), "bad.json: node-pools.a: duplicate target");
    EXPECT_EQ(load_error(pool + R"(["a"]})"), "bad.json: node-pools: must be an object of target -> settings");
}

TEST(RouterConfig, BroadcastsAreWrites) {
    EXPECT_TRUE(is_write("network_broadcast_api.broadcast_transaction"));
    EXPECT_TRUE(is_write("condenser_api.broadcast_transaction_synchronous"));
    EXPECT_TRUE(is_write("condenser_api.broadcast_block"));
    EXPECT_TRUE(is_write("chain_api.push_transaction"));
    EXPECT_FALSE(is_write("condenser_api.get_block"));
    EXPECT_FALSE(is_write("database_api.get_dynamic_global_properties"));
}

TEST(RouterRequest, IrreversibleBlocksAreCachedWithoutExpiry) {
    auto t = parse_routing_table(R"({
      "targets": {"node": "http://127.0.0.1:8091"},
      "chain-nodes": {"node": {}},
      "routes": {
        "^block_api.get_block_range$": {"target": "node", "expire_if_reversible": true},
        "^(block_api|condenser_api|account_history_api).": {"target": "node", "cache": 3, "expire_if_reversible": true},
        "^database_api.": {"target": "node", "cache": 3}
      }})", "chain.json");
    ASSERT_TRUE(t.ok()) << t.error();
    RequestLimits limits;
    auto plan = [&](const std::string& method, const std::string& params) {
        auto p = plan_request(R"({"jsonrpc":"2.0","method":")" + method + R"(","params":)" + params + R"(,"id":1})", *t,
                              limits);
        EXPECT_FALSE(p.calls[0].error);
        return p.calls[0];
    };
    const std::string header = R"({"header":{"previous":"004c4b3f"}})";
    // The block comes from the params in each shape, the legacy form too.
    EXPECT_EQ(plan("block_api.get_block_header", R"({"block_num":100})").block, 100u);
    EXPECT_EQ(plan("condenser_api.get_block", "[100]").block, 100u);
    EXPECT_EQ(plan("condenser_api.get_ops_in_block", "[100,false]").block, 100u);
    EXPECT_EQ(plan("call", R"(["condenser_api","get_block",[100]])").block, 100u);
    EXPECT_EQ(plan("block_api.get_block_range", R"({"starting_block_num":91,"count":10})").block, 100u);
    EXPECT_FALSE(plan("condenser_api.get_transaction", R"(["0123abcd"])").block);
    EXPECT_FALSE(plan("database_api.get_block", "[100]").block);  // a route without the key
    // At or below the last irreversible block: without expiry; above: the route's TTL.
    EXPECT_EQ(cache_lifetime(plan("block_api.get_block_header", R"({"block_num":100})"), header, 100), 0);
    EXPECT_EQ(cache_lifetime(plan("block_api.get_block_header", R"({"block_num":100})"), header, 99), 3);
    EXPECT_EQ(cache_lifetime(plan("block_api.get_block_header", R"({"block_num":100})"), header, 0), 3);  // LIB unknown
    // A route without a TTL caches only final answers.
    EXPECT_EQ(cache_lifetime(plan("block_api.get_block_range", R"({"starting_block_num":91,"count":10})"),
                             R"({"blocks":[{"block_id":"00000064"}]})", 100), 0);
    EXPECT_FALSE(cache_lifetime(plan("block_api.get_block_range", R"({"starting_block_num":91,"count":10})"),
                                R"({"blocks":[{"block_id":"00000064"}]})", 99));
    // get_transaction: the block is the result's.
    EXPECT_EQ(cache_lifetime(plan("condenser_api.get_transaction", R"(["0123abcd"])"), R"({"block_num":50,"x":1})", 100), 0);
    EXPECT_EQ(cache_lifetime(plan("condenser_api.get_transaction", R"(["0123abcd"])"), R"({"block_num":150})", 100), 3);
    // Empty answers are never final (a node without the block answers them).
    for (const char* empty : {"null", "{}", "[]", R"({"blocks":[]})", R"({"ops":[],"x":null})"}) {
        EXPECT_EQ(cache_lifetime(plan("condenser_api.get_block", "[100]"), empty, 200), 3) << empty;
    }
    EXPECT_EQ(cache_lifetime(plan("database_api.get_block", "[100]"), header, 200), 3);
}

TEST(RouterRequest, ChainPollReadsHeadAndLastIrreversibleBlock) {
    Route route{RoutePattern{}, 0, std::nullopt, 0, false, false};
    CallPlan poll = chain_poll_plan(route);
    EXPECT_EQ(poll.upstream_body(4),
              R"({"jsonrpc":"2.0","method":"database_api.get_dynamic_global_properties","params":{},"id":4})");
    EXPECT_TRUE(poll.cache_key.empty());
    auto head = chain_head(R"({"jsonrpc":"2.0","result":{"head_block_number":5000000,"time":"x",)"
                           R"("last_irreversible_block_num":4999980},"id":4})");
    ASSERT_TRUE(head);
    EXPECT_EQ(head->head, 5000000u);
    EXPECT_EQ(head->lib, 4999980u);
    EXPECT_FALSE(chain_head(R"({"jsonrpc":"2.0","error":{"code":-32003,"message":"m"},"id":4})"));
    EXPECT_FALSE(chain_head(R"({"jsonrpc":"2.0","result":{"head_block_number":5},"id":4})"));
    EXPECT_FALSE(chain_head(R"({"jsonrpc":"2.0","result":{"head_block_number":5,"last_irreversible_block_num":6},"id":4})"));
    EXPECT_FALSE(chain_head("not json"));
}

TEST(RouterRequest, CacheTagsNameTheTargetAndItsUrls) {
    auto table = parse_routing_table(R"({"targets":{"node":"http://a:1","other":"http://b:1"},"routes":{"^":{"target":"node"}}})", "t.json");
    ASSERT_TRUE(table) << table.error();
    auto same = parse_routing_table(R"({"targets":{"node":"http://a:1"},"routes":{"^":{"target":"node"}}})", "t.json");
    auto testnet = parse_routing_table(R"({"targets":{"node":"http://c:1"},"routes":{"^":{"target":"node"}}})", "t.json");
    const std::string tag = target_cache_tag(table->targets[0]);
    EXPECT_EQ(tag.rfind("node@", 0), 0u);
    EXPECT_EQ(tag.size(), std::string("node@12345678:").size());
    EXPECT_EQ(tag, target_cache_tag(same->targets[0]));
    EXPECT_NE(tag, target_cache_tag(testnet->targets[0]));
    EXPECT_NE(tag, target_cache_tag(table->targets[1]));
}

TEST(RouterRequest, DuplicateMembersAreRefused) {
    RoutingTable t = small_table();
    RequestLimits limits;
    auto twice = plan_request(
        R"({"jsonrpc":"2.0","method":"block_api.get_block_header","params":{"block_num":1,"block_num":99999999},"id":1})",
        t, limits);
    ASSERT_FALSE(twice.error);
    ASSERT_EQ(twice.calls.size(), 1u);
    ASSERT_TRUE(twice.calls[0].error);
    EXPECT_EQ(twice.calls[0].error->code, -32600);
    EXPECT_EQ(twice.calls[0].error->message, "Invalid Request: an object names a member twice");
    EXPECT_EQ(twice.calls[0].id, "1");
    // In a batch only the element that names a member twice is refused, with
    // its id unless the id is what it names twice.
    auto in_batch = plan_request(R"([{"jsonrpc":"2.0","method":"a.b","id":"x","params":[{"k":1,"k":2}]},)"
                                 R"({"jsonrpc":"2.0","method":"condenser_api.get_config","id":7},)"
                                 R"({"jsonrpc":"2.0","method":"a.b","id":1,"id":2}])",
                                 t, limits);
    ASSERT_FALSE(in_batch.error);
    ASSERT_EQ(in_batch.calls.size(), 3u);
    ASSERT_TRUE(in_batch.calls[0].error);
    EXPECT_EQ(in_batch.calls[0].error->code, -32600);
    EXPECT_EQ(in_batch.calls[0].id, "\"x\"");
    EXPECT_FALSE(in_batch.calls[1].error);
    EXPECT_EQ(in_batch.calls[1].id, "7");
    ASSERT_TRUE(in_batch.calls[2].error);
    EXPECT_EQ(in_batch.calls[2].id, "null");
    EXPECT_FALSE(plan_request(R"({"jsonrpc":"2.0","method":"a.b","params":{"x":{"k":1},"y":{"k":2}},"id":1})", t, limits).error);
    // The envelope's own names (compared decoded), names of its own, and
    // objects in any member: the refusal comes before the members' checks.
    for (const char* body : {R"({"jsonrpc":"2.0","method":"a.b","method":"a.c","id":1})",
                             R"({"jsonrpc":"2.0","method":"a.b","\u006dethod":"a.c","id":1})",
                             R"({"jsonrpc":"2.0","method":"a.b","x":1,"x":2,"id":1})",
                             R"({"jsonrpc":"2.0","method":{"k":1,"k":2},"id":1})",
                             R"({"jsonrpc":"2.0","method":"a.b","params":[[{"k":1,"k":2}]],"id":1})"}) {
        auto plan = plan_request(body, t, limits);
        ASSERT_EQ(plan.calls.size(), 1u) << body;
        ASSERT_TRUE(plan.calls[0].error) << body;
        EXPECT_EQ(plan.calls[0].error->message, "Invalid Request: an object names a member twice") << body;
        EXPECT_EQ(plan.calls[0].id, "1") << body;
    }
    auto others = plan_request(R"({"jsonrpc":"2.0","method":"condenser_api.get_config","x":1,"y":{"k":1},"id":1})", t, limits);
    ASSERT_EQ(others.calls.size(), 1u);
    EXPECT_FALSE(others.calls[0].error);
}

TEST(RouterRequest, DottedAndLegacyFormsNormalizeToOnePath) {
    RoutingTable t = small_table();
    RequestLimits limits;
    auto dotted = plan_request(R"({"jsonrpc":"2.0","method":"condenser_api.get_content","params":["a","b"],"id":1})", t, limits);
    auto legacy = plan_request(
        R"({"jsonrpc":"2.0","method":"call","params":["condenser_api","get_content",["a", "b"]],"id":2})", t, limits);
    ASSERT_EQ(dotted.calls.size(), 1u);
    ASSERT_FALSE(dotted.calls[0].error);
    ASSERT_FALSE(legacy.calls[0].error);
    EXPECT_EQ(dotted.calls[0].path, "condenser_api.get_content");
    EXPECT_EQ(legacy.calls[0].path, "condenser_api.get_content");
    EXPECT_EQ(dotted.calls[0].cache_key, legacy.calls[0].cache_key);
    EXPECT_EQ(dotted.calls[0].cache_key, R"(condenser_api.get_content ["a","b"])");
    // Legacy requests go upstream as sent.
    EXPECT_EQ(legacy.calls[0].upstream_body(9),
              R"({"jsonrpc":"2.0","method":"call","params":["condenser_api","get_content",["a", "b"]],"id":9})");
}

// A plan planned again (an exchange's plan reused from an earlier request)
// is the plan of a new one: nothing of the earlier call is left.
TEST(RouterRequest, PlanningIntoAnEarlierPlanLeavesNothingOfIt) {
    RoutingTable t = small_table();
    RequestLimits limits;
    const std::vector<std::string> bodies = {
        R"({"jsonrpc":"2.0","method":"call","params":["condenser_api","get_content",["a", "b"]],"id":"x"})",
        R"({"jsonrpc":"2.0","method":"database_api.get_x","params":{"k":1},"id":1})",
        R"([{"jsonrpc":"2.0","method":"condenser_api.get_content","params":["a"],"id":1},{"jsonrpc":"2.0","id":2}])",
        R"({"jsonrpc":"2.0","method":"bridge.get_post","id":7})",
        R"({"jsonrpc":"2.0","method":"no_such.method","id":3})",
        R"({"jsonrpc":"2.0","method":)",
        R"({"jsonrpc":"2.0","method":"condenser_api.get_content","params":["c"],"id":4})",
    };
    auto same = [](const CallPlan& a, const CallPlan& b) {
        return a.id == b.id && a.error.has_value() == b.error.has_value() &&
               (!a.error || (a.error->code == b.error->code && a.error->message == b.error->message)) &&
               a.path == b.path && a.write == b.write && a.route == b.route && a.method_json == b.method_json &&
               a.params_json == b.params_json && a.cache_key == b.cache_key && a.ttl == b.ttl && a.block == b.block;
    };
    RequestPlan reused;
    for (const std::string& first : bodies) {
        for (const std::string& second : bodies) {
            plan_request(reused, first, t, limits);
            plan_request(reused, second, t, limits);
            const RequestPlan fresh = plan_request(second, t, limits);
            ASSERT_EQ(reused.batch, fresh.batch) << first << " then " << second;
            ASSERT_EQ(reused.error.has_value(), fresh.error.has_value()) << first << " then " << second;
            ASSERT_EQ(reused.calls.size(), fresh.calls.size()) << first << " then " << second;
            for (std::size_t i = 0; i < fresh.calls.size(); ++i) {
                EXPECT_TRUE(same(reused.calls[i], fresh.calls[i])) << first << " then " << second << ": call " << i;
            }
        }
    }
}

TEST(RouterRequest, TranslationOnlyWhenTrue) {
    RoutingTable t = small_table();
    RequestLimits limits;
    auto translated = plan_request(R"({"jsonrpc":"2.0","method":"database_api.get_x","params":{"k":1},"id":1})", t, limits);
    EXPECT_EQ(translated.calls[0].upstream_body(5),
              R"({"jsonrpc":"2.0","method":"call","params":["database_api","get_x",{"k":1}],"id":5})");
    auto no_params = plan_request(R"({"jsonrpc":"2.0","method":"database_api.get_y","id":1})", t, limits);
    EXPECT_EQ(no_params.calls[0].upstream_body(5),
              R"({"jsonrpc":"2.0","method":"call","params":["database_api","get_y",[]],"id":5})");
    auto explicit_false = plan_request(R"({"jsonrpc":"2.0","method":"block_api.get_block","params":{"block_num":1},"id":1})", t, limits);
    EXPECT_EQ(explicit_false.calls[0].upstream_body(5),
              R"({"jsonrpc":"2.0","method":"block_api.get_block","params":{"block_num":1},"id":5})");
    auto absent = plan_request(R"({"jsonrpc":"2.0","method":"bridge.get_post","params":{"a":1},"id":1})", t, limits);
    EXPECT_EQ(absent.calls[0].upstream_body(5), R"({"jsonrpc":"2.0","method":"bridge.get_post","params":{"a":1},"id":5})");
    // A method written with escapes goes upstream as written, routed by its decoded name.
    auto escaped = plan_request(R"({"jsonrpc":"2.0","method":"bridge\u002eget_post","params":{"a":1},"id":1})", t, limits);
    ASSERT_FALSE(escaped.calls[0].error);
    EXPECT_EQ(escaped.calls[0].path, "bridge.get_post");
    EXPECT_EQ(escaped.calls[0].upstream_body(5),
              R"({"jsonrpc":"2.0","method":"bridge\u002eget_post","params":{"a":1},"id":5})");
    // Its size is known before it is written (the Content-Length ahead of it).
    for (const auto* plan : {&translated, &no_params, &explicit_false, &absent, &escaped}) {
        for (std::uint64_t id : {0ull, 5ull, 1234567ull, 18446744073709551615ull}) {
            EXPECT_EQ(plan->calls[0].upstream_body_size(id), plan->calls[0].upstream_body(id).size());
        }
    }
}

TEST(RouterRequest, IdsOfEveryTypeAreKept) {
    RoutingTable t = small_table();
    RequestLimits limits;
    for (std::string id : {"\"abc\"", "0", "-7", "18446744073709551616123", "1.5e300", "0.25", "null"}) {
        auto plan = plan_request(R"({"jsonrpc":"2.0","method":"bridge.x","id":)" + id + "}", t, limits);
        EXPECT_EQ(plan.calls[0].id, id);
        auto reply = rewrite_upstream_reply(R"({"jsonrpc":"2.0","result":{"a":1},"id":42})", plan.calls[0].id, limits);
        EXPECT_EQ(reply.response, R"({"jsonrpc":"2.0","result":{"a":1},"id":)" + id + "}");
    }
    auto missing = plan_request(R"({"jsonrpc":"2.0","method":"bridge.x"})", t, limits);
    EXPECT_EQ(missing.calls[0].id, "null");
    auto bad_id = plan_request(R"({"jsonrpc":"2.0","method":"bridge.x","id":[1]})", t, limits);
    ASSERT_TRUE(bad_id.calls[0].error);
    EXPECT_EQ(bad_id.calls[0].error->code, wallet::jsonrpc::kInvalidRequest);
}

TEST(RouterRequest, ErrorsOfTheWholeBodyAndOfElements) {
    RoutingTable t = small_table();
    RequestLimits limits;
    limits.max_batch = 3;
    EXPECT_EQ(plan_request("{bad", t, limits).error->code, wallet::jsonrpc::kParseError);
    EXPECT_EQ(plan_request("", t, limits).error->code, wallet::jsonrpc::kParseError);
    EXPECT_EQ(plan_request("[]", t, limits).error->code, wallet::jsonrpc::kInvalidRequest);
    EXPECT_EQ(plan_request("[1,2,3,4]", t, limits).error->code, jsonrpc::code::batch_too_large);
    EXPECT_EQ(plan_request(std::string(100, '[') + std::string(100, ']'), t, limits).error->code,
              wallet::jsonrpc::kInvalidRequest);
    auto batch = plan_request(R"([1, {"jsonrpc":"2.0","method":"nope.x","id":"n"}, {"jsonrpc":"2.0","method":"bridge.y","id":3}])",
                              t, limits);
    ASSERT_FALSE(batch.error);
    ASSERT_EQ(batch.calls.size(), 3u);
    EXPECT_EQ(batch.calls[0].error->code, wallet::jsonrpc::kInvalidRequest);
    EXPECT_EQ(batch.calls[1].error->code, wallet::jsonrpc::kMethodNotFound);
    EXPECT_EQ(batch.calls[1].error->message, "no route for method nope.x");
    EXPECT_EQ(batch.calls[1].id, "\"n\"");
    EXPECT_FALSE(batch.calls[2].error);
    EXPECT_EQ(plan_request(R"({"jsonrpc":"2.0","method":"call","params":["a"],"id":1})", t, limits).calls[0].error->code,
              wallet::jsonrpc::kInvalidRequest);
    EXPECT_EQ(plan_request(R"({"jsonrpc":"1.0","method":"bridge.x","id":1})", t, limits).calls[0].error->code,
              wallet::jsonrpc::kInvalidRequest);
}

TEST(RouterRequest, CacheKeyIgnoresKeyOrderAndWhitespace) {
    RoutingTable t = small_table();
    RequestLimits limits;
    auto a = plan_request(R"({"jsonrpc":"2.0","method":"bridge.p","params":{"b":1,"a":[1, 2]},"id":1})", t, limits);
    auto b = plan_request(R"({"id":2,"params":{ "a":[1,2],"b":1},"method":"bridge.p","jsonrpc":"2.0"})", t, limits);
    EXPECT_EQ(a.calls[0].cache_key, b.calls[0].cache_key);
    std::string long_params(500, 'x');
    auto c = plan_request(R"({"jsonrpc":"2.0","method":"bridge.p","params":[")" + long_params + R"("],"id":1})", t, limits);
    EXPECT_EQ(c.calls[0].cache_key.substr(0, 16), "bridge.p sha256:");
    auto uncached = plan_request(R"({"jsonrpc":"2.0","method":"bridge.p","id":1})",
                                 std::move(parse_routing_table(R"({"targets":{"a":"http://h"},"routes":{"^b":{"target":"a"}}})", "x")).value(),
                                 limits);
    EXPECT_TRUE(uncached.calls[0].cache_key.empty());
}

TEST(RouterRequest, UpstreamRepliesAreCheckedAndCachedOnlyWithResult) {
    RequestLimits limits;
    auto ok = rewrite_upstream_reply(R"({"jsonrpc":"2.0","result":{"text":"an error here"},"id":9})", "\"c\"", limits);
    EXPECT_TRUE(ok.valid);
    EXPECT_TRUE(ok.cacheable);
    EXPECT_EQ(ok.result, R"({"text":"an error here"})");
    auto err = rewrite_upstream_reply(R"({"jsonrpc":"2.0","error":{"code":-32002,"message":"m"},"id":9})", "1", limits);
    EXPECT_TRUE(err.valid);
    EXPECT_FALSE(err.cacheable);
    EXPECT_EQ(err.response, R"({"jsonrpc":"2.0","error":{"code":-32002,"message":"m"},"id":1})");
    // Coalesced waiters get the same answer with their own id after id_offset.
    EXPECT_EQ(err.response.substr(0, err.id_offset) + "\"other\"}",
              R"({"jsonrpc":"2.0","error":{"code":-32002,"message":"m"},"id":"other"})");
    EXPECT_FALSE(rewrite_upstream_reply("<html>", "1", limits).valid);
    EXPECT_FALSE(rewrite_upstream_reply("", "1", limits).valid);
    EXPECT_FALSE(rewrite_upstream_reply("[1]", "1", limits).valid);
    EXPECT_FALSE(rewrite_upstream_reply(R"({"id":1})", "1", limits).valid);
    EXPECT_EQ(render_cached("[1,2]", "\"me\""), R"({"jsonrpc":"2.0","result":[1,2],"id":"me"})");
    EXPECT_EQ(cached_response_size("[1,2]", "\"me\""), render_cached("[1,2]", "\"me\"").size());
    EXPECT_EQ(reply_upstream_id(R"({"jsonrpc":"2.0","result":1,"id":77})"), 77u);
    EXPECT_FALSE(reply_upstream_id(R"({"jsonrpc":"2.0","result":1,"id":"77"})"));
}

// Patterns decided from their literal text (no PCRE2 run) and those PCRE2
// decides answer as Python's re.match would.
TEST(RouterConfig, LiteralPatternsMatchLikeRegularExpressions) {
    struct Case {
        const char* pattern;
        const char* subject;
        bool matches;
    };
    const Case cases[] = {
        {"^cached\\.", "cached.get_block", true},
        {"^cached\\.", "cachedXget_block", false},
        {"^cached\\.", "cache", false},
        {"cached\\.", "cached.x", true},
        {"^block_api\\.get_block$", "block_api.get_block", true},
        {"^block_api\\.get_block$", "block_api.get_block_header", false},
        {"^block_api\\.get_block$", "block_api.get_block\n", true},  // `$` before a final newline
        {"^block_api\\.get_block$", "block_api.get_blocks", false},
        {"^condenser_api.", "condenser_apiXget", true},               // an unescaped dot is any character
        {"^condenser_api\\.(get_content|get_blog)", "condenser_api.get_blog", true},
        {"^condenser_api\\.(get_content|get_blog)", "condenser_api.get_feed", false},
        {"^ab?c", "ac", true},                                        // a quantified last literal is optional
        {"^ab*c", "abbbc", true},
        {"^ab{2}c", "abbc", true},
        {"^ab|^cd", "cd.x", true},                                     // alternation: PCRE2 decides
        {"^ab[|]", "ab|", true},
        {"^(?i)abc", "ABC", true},
        {"^abc(?i)D", "abcd", true},
        {"", "anything", true},
        {"$", "", true},
        {"$", "x", false},
        {"^abc", "abc\xff", false},                                  // not UTF-8: never a match
    };
    for (const Case& c : cases) {
        auto pattern = RoutePattern::compile(c.pattern);
        ASSERT_TRUE(pattern.ok()) << c.pattern;
        EXPECT_EQ(pattern.value().matches(c.subject), c.matches) << c.pattern << " on " << c.subject;
    }
}

TEST(RouterHttp, ParsesLengthChunkedAndCloseDelimitedBodies) {
    HttpMessageParser a(HttpMessageParser::Kind::Response);
    EXPECT_EQ(a.feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"), HttpMessageParser::State::Incomplete);
    EXPECT_EQ(a.feed("lo"), HttpMessageParser::State::Complete);
    EXPECT_EQ(a.body(), "hello");
    EXPECT_TRUE(a.keep_alive());
    a.reset();  // the next response on a kept-alive connection
    EXPECT_EQ(a.feed("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 2\r\nCONNECTION: Close\r\n\r\nno"),
              HttpMessageParser::State::Complete);
    EXPECT_EQ(a.status(), 502);
    EXPECT_EQ(a.body(), "no");
    EXPECT_EQ(a.header("Content-Length"), "2");
    EXPECT_FALSE(a.keep_alive());

    HttpMessageParser b(HttpMessageParser::Kind::Response);
    std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
    HttpMessageParser::State s = HttpMessageParser::State::Incomplete;
    for (char c : chunked) s = b.feed(std::string_view(&c, 1));
    EXPECT_EQ(s, HttpMessageParser::State::Complete);
    EXPECT_EQ(b.body(), "abcde");

    HttpMessageParser c(HttpMessageParser::Kind::Response);
    EXPECT_EQ(c.feed("HTTP/1.0 200 OK\r\n\r\nxyz"), HttpMessageParser::State::Incomplete);
    EXPECT_EQ(c.finish(), HttpMessageParser::State::Complete);
    EXPECT_EQ(c.body(), "xyz");
    EXPECT_FALSE(c.keep_alive());

    HttpMessageParser d(HttpMessageParser::Kind::Response);
    EXPECT_EQ(d.feed("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x01x"),
              HttpMessageParser::State::Complete);
    EXPECT_EQ(d.take_leftover(), "\x81\x01x");

    HttpMessageParser e(HttpMessageParser::Kind::Request);
    EXPECT_EQ(e.feed("POST /rpc HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"),
              HttpMessageParser::State::Complete);
    EXPECT_EQ(e.method(), "POST");
    EXPECT_EQ(e.target(), "/rpc");
    EXPECT_FALSE(e.keep_alive());
    EXPECT_TRUE(header_has_token("keep-alive, Upgrade", "upgrade"));
}

TEST(RouterWebSocket, AcceptKeyFromRfc6455) {
    EXPECT_EQ(ws::accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(RouterWebSocket, RoundTripsMaskedFragmentedAndControlFrames) {
    ws::Decoder server(ws::Decoder::Role::Server, 1 << 20);
    std::string big(70000, 'a');
    server.feed(ws::encode_frame(ws::Opcode::Text, "hel", true, false));
    server.feed(ws::encode_frame(ws::Opcode::Ping, "p", true));
    server.feed(ws::encode_frame(ws::Opcode::Continuation, "lo", true));
    server.feed(ws::encode_frame(ws::Opcode::Text, big, true));
    server.feed(ws::encode_close(1000, "bye", true));
    ws::Event e;
    ASSERT_EQ(server.next(e), ws::Decoder::Status::Event);
    EXPECT_EQ(e.kind, ws::Event::Kind::Ping);
    ASSERT_EQ(server.next(e), ws::Decoder::Status::Event);
    EXPECT_EQ(e.kind, ws::Event::Kind::Message);
    EXPECT_EQ(e.payload, "hello");
    ASSERT_EQ(server.next(e), ws::Decoder::Status::Event);
    EXPECT_EQ(e.payload.size(), big.size());
    ASSERT_EQ(server.next(e), ws::Decoder::Status::Event);
    EXPECT_EQ(e.kind, ws::Event::Kind::Close);
    EXPECT_EQ(e.close_code, 1000);
    EXPECT_EQ(server.next(e), ws::Decoder::Status::NeedMore);
}

TEST(RouterWebSocket, RefusesUnmaskedOversizedAndInvalidUtf8) {
    ws::Event e;
    ws::Decoder a(ws::Decoder::Role::Server, 100);
    a.feed(ws::encode_frame(ws::Opcode::Text, "x", false));
    EXPECT_EQ(a.next(e), ws::Decoder::Status::Error);
    EXPECT_EQ(a.error_code(), ws::close_code::protocol_error);
    ws::Decoder b(ws::Decoder::Role::Server, 100);
    b.feed(ws::encode_frame(ws::Opcode::Text, std::string(101, 'x'), true));
    EXPECT_EQ(b.next(e), ws::Decoder::Status::Error);
    EXPECT_EQ(b.error_code(), ws::close_code::too_big);
    ws::Decoder c(ws::Decoder::Role::Server, 100);
    c.feed(ws::encode_frame(ws::Opcode::Text, "\xff", true));
    EXPECT_EQ(c.next(e), ws::Decoder::Status::Error);
    EXPECT_EQ(c.error_code(), ws::close_code::invalid_payload);
}

// A claim takes what fits under the limit, in one step, and a count back at
// zero may be claimed again.
TEST(RouterClientTally, ClaimsUpToTheLimit) {
    router::ClientTally tally;
    EXPECT_EQ(tally.claim("a", 3, 5), 3u);
    EXPECT_EQ(tally.claim("a", 3, 5), 2u);
    EXPECT_EQ(tally.claim("a", 1, 5), 0u);
    EXPECT_EQ(tally.of("a"), 5u);
    EXPECT_EQ(tally.claim("b", 7, 0), 7u);  // no limit
    EXPECT_EQ(tally.claim("b", 0, 0), 0u);
    EXPECT_EQ(tally.clients(), 2u);
    tally.subtract("a", 5);
    EXPECT_EQ(tally.clients(), 1u);
    EXPECT_EQ(tally.claim("a", 9, 4), 4u);
    EXPECT_EQ(tally.clients(), 2u);
    EXPECT_EQ(tally.of("a"), 4u);
}
