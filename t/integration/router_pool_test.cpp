// Node pools with real nginx: a target listing several URLs. Calls are
// spread over the URLs that are in; a URL goes out after consecutive
// failures and is probed back in; a failed read is retried once on another
// URL, a broadcast never; a chain node whose head lags the best URL of its
// target is avoided (three node simulators, one made to lag, one killed).
#include "harness/node_sim.hpp"
#include "router_support.hpp"

using namespace router_test;

namespace {

JsonPtr json_of(const std::string& text) { return router_test::parse_json(text); }

// One worker, so that the round robin order is the test's.
std::unique_ptr<NginxServer> start_router(const fs::path& routes, const RedisServer& redis) {
    return std::make_unique<NginxServer>(nginx_options(router_http_config(routes, redis_directive(redis)), 1));
}

// The state GET / gives for URL `index` of `target`.
JsonPtr url_state(const NginxServer& nginx, const std::string& target, std::size_t index) {
    JsonPtr status = json_of(http_request("GET", nginx.url()).body);
    json_t* url = at(status.get(), "targets." + target + "." + std::to_string(index));
    return JsonPtr(url != nullptr ? json_incref(url) : json_object());
}

}  // namespace

TEST(RouterPool, ReadsFailOverBroadcastsNeverAndADeadUrlIsProbedBackIn) {
    TempDir dir("router-pool");
    std::vector<std::unique_ptr<Backend>> backends;
    for (const char* name : {"a", "b", "c"}) backends.push_back(std::make_unique<Backend>(name));
    write_file(dir.path() / "routes.json", R"({
  "targets": {"pool": [")" + backends[0]->http_url() + R"(", ")" + backends[1]->http_url() + R"(", ")" +
                                               backends[2]->http_url() + R"("]},
  "timeouts": 2,
  "routes": {"^": {"target": "pool"}}
})");
    RedisServer redis;
    auto nginx = start_router(dir.path() / "routes.json", redis);
    auto requests = [&](std::size_t i) { return backends[i]->stats().second; };
    auto call = [&](const std::string& method, int id) {
        return json_of(http_post_json(nginx->url(), rpc(method, json_list({std::to_string(id)}), std::to_string(id))).body);
    };

    // Spread over the URLs.
    for (int i = 0; i < 6; ++i) EXPECT_EQ(text_at(call("condenser_api.get_accounts", i).get(), "error"), "<absent>");
    for (std::size_t b = 0; b < 3; ++b) EXPECT_EQ(requests(b), 2) << backends[b]->name();

    // b dies. A broadcast that meets it fails and is not sent again
    // elsewhere; after 3 consecutive failures b is out and gets none.
    backends[1]->stop();
    const long a_before = requests(0);
    const long c_before = requests(2);
    int unavailable = 0;
    int answered = 0;
    for (int i = 0; i < 12; ++i) {
        auto r = call("network_broadcast_api.broadcast_transaction", 100 + i);
        if (text_at(r.get(), "error.code") == "1500") {
            ++unavailable;
        } else if (text_at(r.get(), "result.backend") != "<absent>") {
            ++answered;
            EXPECT_EQ(text_at(r.get(), "id"), std::to_string(100 + i));
        }
    }
    EXPECT_EQ(unavailable, 3) << "broadcasts retried elsewhere, or b was never taken out";
    EXPECT_EQ(answered, 9);
    EXPECT_EQ((requests(0) - a_before) + (requests(2) - c_before), 9) << "a broadcast reached the pool twice";
    EXPECT_EQ(text_at(url_state(*nginx, "pool", 1).get(), "in"), "false");

    // b comes back on its port: the background probe takes it in again.
    backends[1]->start();
    ASSERT_TRUE(wait_until([&] { return text_at(url_state(*nginx, "pool", 1).get(), "in") == "true"; }))
        << "the revived URL was not probed back in";
    const long b_revived = requests(1);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(text_at(call("condenser_api.get_accounts", 200 + i).get(), "error"), "<absent>");
    EXPECT_GT(requests(1), b_revived) << "the revived URL gets no calls";

    // c dies: no read is lost, each failed one is answered by another URL.
    backends[2]->stop();
    const long served_before = requests(0) + requests(1);
    for (int i = 0; i < 12; ++i) {
        auto r = call("condenser_api.get_accounts", 300 + i);
        EXPECT_EQ(text_at(r.get(), "error"), "<absent>") << text_at(r.get(), "error");
        EXPECT_NE(text_at(r.get(), "result.backend"), "c");
        EXPECT_EQ(text_at(r.get(), "id"), std::to_string(300 + i));
    }
    EXPECT_EQ(requests(0) + requests(1) - served_before, 12);
    EXPECT_TRUE(nginx->fatal_log_lines().empty());
}

TEST(RouterPool, AChainNodeThatLagsIsAvoidedAndADeadOneLosesNoRead) {
    TempDir dir("router-pool-chain");
    std::vector<std::unique_ptr<NodeSimulator>> nodes;
    for (int i = 0; i < 3; ++i) nodes.push_back(std::make_unique<NodeSimulator>(NodeSimulator::real_chain_args()));
    write_file(dir.path() / "routes.json", R"({
  "targets": {"node": [")" + nodes[0]->url() + R"(", ")" + nodes[1]->url() + R"(", ")" + nodes[2]->url() + R"("]},
  "timeouts": 2,
  "chain-nodes": {"node": {"poll_interval": 0.2, "max_lag": 10}},
  "routes": {"^": {"target": "node"}}
})");
    RedisServer redis;
    auto nginx = start_router(dir.path() / "routes.json", redis);
    auto head_of = [&](std::size_t i) {
        return json_integer_value(at(url_state(*nginx, "node", i).get(), "head_block_number"));
    };
    const json_int_t start = 5'000'000;
    ASSERT_TRUE(wait_until([&] { return head_of(0) == start && head_of(1) == start && head_of(2) == start; }));

    // Nodes 0 and 1 move 100 blocks ahead: node 2 lags by more than max_lag.
    nodes[0]->control(R"({"advance": 100})");
    nodes[1]->control(R"({"advance": 100})");
    ASSERT_TRUE(wait_until([&] { return head_of(0) == start + 100 && head_of(1) == start + 100; }));
    auto read_heads = [&](int count, int first_id) {
        std::vector<std::string> heads;
        for (int i = 0; i < count; ++i) {
            auto r = json_of(http_post_json(nginx->url(), rpc("condenser_api.get_dynamic_global_properties", "[]",
                                                              std::to_string(first_id + i))).body);
            heads.push_back(text_at(r.get(), "result.head_block_number"));
        }
        return heads;
    };
    for (const std::string& head : read_heads(9, 1)) EXPECT_EQ(head, "5000100") << "the lagging node answered";

    // Node 1 dies. Broadcasts that meet it fail (the simulator answers the
    // others with its unknown-API error): none is sent to node 0 instead.
    nodes[1]->stop();
    int unavailable = 0;
    for (int i = 0; i < 4; ++i) {
        auto r = json_of(http_post_json(nginx->url(), rpc("network_broadcast_api.broadcast_transaction",
                                                          R"({"trx":{}})", std::to_string(50 + i))).body);
        const std::string code = text_at(r.get(), "error.code");
        EXPECT_NE(code, "<absent>");
        unavailable += code == "1500" ? 1 : 0;
    }
    EXPECT_GE(unavailable, 1) << "a broadcast that met the dead node was sent to another one";
    // Reads that meet it go to node 0 (node 2 still lags).
    for (const std::string& head : read_heads(12, 100)) EXPECT_EQ(head, "5000100");
    EXPECT_TRUE(nginx->fatal_log_lines().empty());
}

// `node-pools` sets a pool's failure threshold and probe interval: a URL of
// "fast" goes out after one failure and, while out, is probed every 0.2 s;
// "usual" keeps the defaults (3 failures, 3 s; not named "slow": the backend
// answers such methods late). Each probe of a dead URL is one more
// consecutive failure in GET /, so the counts compare the probe rates.
TEST(RouterPool, NodePoolsSetTheFailureThresholdAndTheProbeInterval) {
    TempDir dir("router-pool-settings");
    Backend fast_alive("fast-a");
    Backend fast_dead("fast-b");
    Backend usual_alive("usual-a");
    Backend usual_dead("usual-b");
    write_file(dir.path() / "routes.json", R"({
  "targets": {"fast": [")" + fast_alive.http_url() + R"(", ")" + fast_dead.http_url() + R"("],
              "usual": [")" + usual_alive.http_url() + R"(", ")" + usual_dead.http_url() + R"("]},
  "timeouts": 2,
  "node-pools": {"fast": {"max_failures": 1, "probe_interval": 0.2}},
  "routes": {"^fast\\.": {"target": "fast"}, "^usual\\.": {"target": "usual"}}
})");
    RedisServer redis;
    auto nginx = start_router(dir.path() / "routes.json", redis);
    fast_dead.stop();
    usual_dead.stop();
    auto read = [&](const std::string& method, int id) {
        auto r = json_of(http_post_json(nginx->url(), rpc(method, "[]", std::to_string(id))).body);
        EXPECT_EQ(text_at(r.get(), "error"), "<absent>") << method << " was lost";
    };
    auto failures = [&](const std::string& target) {
        return json_integer_value(at(url_state(*nginx, target, 1).get(), "failures"));
    };

    // Round robin: two reads meet the dead URL once (and are retried on the
    // other). One failure takes "fast"'s out; "usual"'s stays in until three.
    for (int i = 0; i < 2; ++i) read("fast.get", i);
    for (int i = 0; i < 2; ++i) read("usual.get", 10 + i);
    EXPECT_EQ(text_at(url_state(*nginx, "fast", 1).get(), "in"), "false");
    EXPECT_EQ(text_at(url_state(*nginx, "usual", 1).get(), "in"), "true");
    for (int i = 0; i < 4; ++i) read("usual.get", 20 + i);
    EXPECT_EQ(text_at(url_state(*nginx, "usual", 1).get(), "in"), "false");

    // Both dead URLs are out and probed: "fast"'s far more often.
    ASSERT_TRUE(wait_until([&] { return failures("fast") >= 10; })) << "the out URL of fast is not probed";
    const json_int_t fast_probes = failures("fast") - 1;
    const json_int_t usual_probes = failures("usual") - 3;
    EXPECT_LT(usual_probes * 3, fast_probes) << "probe_interval did not shorten the probes of fast";

    // A revived URL comes back in with its first probe.
    fast_dead.start();
    ASSERT_TRUE(wait_until([&] { return text_at(url_state(*nginx, "fast", 1).get(), "in") == "true"; }));
    EXPECT_TRUE(nginx->fatal_log_lines().empty());
}
