// Chain-aware cache lifetimes with real nginx, Redis and the node simulator
// (real mainnet chain): the router learns the last irreversible block from
// the node by a periodic get_dynamic_global_properties; a route with
// expire_if_reversible keeps answers about irreversible blocks past every
// TTL, while answers about reversible blocks (and routes without the key)
// expire; the poll survives a node outage and picks the node up again; a
// reload keeps what the poll learned (the shared zone is reused).
#include "harness/node_sim.hpp"
#include "router_support.hpp"

using namespace router_test;

namespace {

class RouterChain : public ::testing::Test {
protected:
    void SetUp() override {
        write_file(dir.path() / "routes.json", R"({
  "targets": {"node": ")" + node->url() + R"("},
  "timeouts": 2,
  "chain-nodes": {"node": {"poll_interval": 0.2}},
  "routes": {
    "^block_api\\.get_block_header$": {"target": "node", "cache": 1, "expire_if_reversible": true},
    "^condenser_api\\.get_block_header$": {"target": "node", "cache": 1}
  }
})");
        nginx = std::make_unique<NginxServer>(
            nginx_options(router_http_config(dir.path() / "routes.json", redis_directive(redis)), 2));
    }
    void TearDown() override { EXPECT_TRUE(nginx->fatal_log_lines().empty()); }

    // What GET / says the router learned about the node.
    json_t* chain_state(JsonPtr& holder) const {
        holder = router_test::parse_json(http_request("GET", nginx->url()).body);
        return at(holder.get(), "targets.node.0");
    }
    std::uint64_t router_lib() const {
        JsonPtr holder;
        return static_cast<std::uint64_t>(json_integer_value(at(chain_state(holder), "last_irreversible_block_num")));
    }
    std::uint64_t node_lib() const {
        auto properties = node->call("database_api.get_dynamic_global_properties", "{}");
        return static_cast<std::uint64_t>(json_integer_value(at(properties.get(), "result.last_irreversible_block_num")));
    }
    HttpResponse header(const std::string& method, std::uint64_t block, const std::string& id) const {
        std::string params = method == "block_api.get_block_header" ? R"({"block_num":)" + std::to_string(block) + "}"
                                                                     : json_list({std::to_string(block)});
        return http_post_json(nginx->url(), rpc(method, params, id));
    }
    std::string redis_ttl(std::uint64_t block) const {
        std::string key = redis.command(
            {"KEYS", R"(jsonrpc:node@*:block_api.get_block_header {"block_num":)" + std::to_string(block) + "}"});
        while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
        return key.empty() ? std::string("-2") : redis.command({"TTL", key});
    }

    TempDir dir{"router-chain"};
    RedisServer redis;
    std::unique_ptr<NodeSimulator> node = std::make_unique<NodeSimulator>(NodeSimulator::real_chain_args());
    std::unique_ptr<NginxServer> nginx;
};

}  // namespace

TEST_F(RouterChain, IrreversibleAnswersOutliveEveryTtlReversibleOnesExpire) {
    const std::uint64_t lib = node_lib();
    ASSERT_GT(lib, 1000u);
    ASSERT_TRUE(wait_until([&] { return router_lib() == lib; }))
        << "the router never learned the LIB " << lib << ": " << http_request("GET", nginx->url()).body;
    const std::uint64_t final_block = lib - 1000;
    const std::uint64_t reversible_block = lib + 5;

    EXPECT_EQ(header("block_api.get_block_header", final_block, "1").headers["x-jsonrpc-cache"], "MISS");
    EXPECT_EQ(header("block_api.get_block_header", reversible_block, "2").headers["x-jsonrpc-cache"], "MISS");
    EXPECT_EQ(header("condenser_api.get_block_header", final_block, "3").headers["x-jsonrpc-cache"], "MISS");
    // In Redis: the final answer for a day (a bounded lifetime: clients
    // choose these keys), the reversible one with the route's TTL.
    auto ttl_of = [&](std::uint64_t block) { return std::stol(redis_ttl(block)); };
    EXPECT_TRUE(wait_until([&] { return ttl_of(final_block) > 86000; })) << redis_ttl(final_block);
    EXPECT_LE(ttl_of(final_block), 86400);
    EXPECT_LE(ttl_of(reversible_block), 1);

    std::this_thread::sleep_for(1600ms);  // past the routes' 1 s TTL
    for (const char* id : {"\"a\"", "\"b\"", "\"c\"", "\"d\""}) {  // both workers, memory layer or Redis
        auto hit = header("block_api.get_block_header", final_block, id);
        EXPECT_EQ(hit.headers["x-jsonrpc-cache"], "HIT");
        JsonPtr body = router_test::parse_json(hit.body);
        EXPECT_EQ(text_at(body.get(), "id"), std::string(id).substr(1, 1));
        EXPECT_NE(text_at(body.get(), "result.header.previous"), "<absent>");
    }
    EXPECT_EQ(header("block_api.get_block_header", reversible_block, "5").headers["x-jsonrpc-cache"], "MISS");
    // A route without expire_if_reversible behaves as before: its TTL only.
    EXPECT_EQ(header("condenser_api.get_block_header", final_block, "6").headers["x-jsonrpc-cache"], "MISS");
}

TEST_F(RouterChain, ThePollSurvivesANodeOutage) {
    const std::uint64_t lib = node_lib();
    ASSERT_TRUE(wait_until([&] { return router_lib() == lib; }));
    EXPECT_EQ(header("block_api.get_block_header", lib - 10, "1").headers["x-jsonrpc-cache"], "MISS");

    const std::uint16_t port = node->port();
    node->stop();
    ASSERT_TRUE(wait_until([&] {
        JsonPtr holder;
        return json_integer_value(at(chain_state(holder), "failures")) >= 3;
    })) << "the poll stopped while the node was down";
    // What was learned stays (irreversible is forever), and final answers are still served.
    EXPECT_EQ(router_lib(), lib);
    auto during = header("block_api.get_block_header", lib - 10, "2");
    EXPECT_EQ(during.headers["x-jsonrpc-cache"], "HIT");
    EXPECT_EQ(text_at(router_test::parse_json(during.body).get(), "id"), "2");
    EXPECT_EQ(text_at(router_test::parse_json(header("block_api.get_block_header", lib + 1, "3").body).get(), "error.code"), "1500");

    auto args = NodeSimulator::real_chain_args();
    args.insert(args.end(), {"--port", std::to_string(port)});
    node = std::make_unique<NodeSimulator>(args);
    node->control(R"({"advance": 50})");
    const std::uint64_t later = node_lib();
    ASSERT_EQ(later, lib + 50);
    ASSERT_TRUE(wait_until([&] { return router_lib() == later; })) << "the poll did not pick the node up again";
    JsonPtr holder;
    EXPECT_EQ(json_integer_value(at(chain_state(holder), "failures")), 0);
    // The newly irreversible blocks are final now.
    EXPECT_EQ(header("block_api.get_block_header", lib + 1, "4").headers["x-jsonrpc-cache"], "MISS");
    EXPECT_TRUE(wait_until([&] { return std::stol(redis_ttl(lib + 1)) > 86000; })) << redis_ttl(lib + 1);  // final: a day
}

TEST_F(RouterChain, AReloadKeepsWhatThePollLearned) {
    const std::uint64_t lib = node_lib();
    ASSERT_TRUE(wait_until([&] { return router_lib() == lib; }));
    node->stop();  // the new workers cannot learn it themselves
    auto count = [&](const std::string& what) {
        std::string log = read_file(nginx->error_log());
        std::size_t n = 0;
        for (std::size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
        return n;
    };
    const std::size_t shutdowns = count("gracefully shutting down");
    nginx->reload();
    ASSERT_TRUE(wait_until([&] { return count("gracefully shutting down") >= shutdowns + 2; }))
        << "the old workers did not stop";
    EXPECT_EQ(router_lib(), lib);
    EXPECT_TRUE(nginx->fatal_log_lines().empty());
}
