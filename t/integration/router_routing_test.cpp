// Routing through real nginx with the module, real Redis and stand-in
// backends that answer with their own name: the chain deployment's routing
// map (conf/routes.hive.json) in both request forms over HTTP and WebSocket,
// the predecessor's routing file, translation, params shapes, id types, and
// routing files that nginx -t must refuse.
#include "router_support.hpp"

using namespace router_test;

namespace {

struct Expectation {
    const char* method;
    const char* target;
};

// Every row of spec 001's routing map, with the specific-before-catch-all cases;
// chain history goes to the HAfAH target, as on public nodes (issue 35).
const std::vector<Expectation> kHiveMap = {
    {"bridge.get_ranked_posts", "social"},
    {"bridge.get_profile", "social"},
    {"wallet_history.get_history", "wallet_indexer"},
    {"wallet_history.get_reward_totals", "wallet_indexer"},
    {"tags_api.get_discussion", "social"},
    {"follow_api.get_followers", "social"},
    {"hive.db_head_state", "social"},
    {"condenser_api.get_content", "social"},
    {"condenser_api.get_content_replies", "social"},
    {"condenser_api.get_discussions_by_trending", "social"},
    {"condenser_api.get_discussions_by_blog", "social"},
    {"condenser_api.get_blog", "social"},
    {"condenser_api.get_blog_entries", "social"},
    {"condenser_api.get_followers", "social"},
    {"condenser_api.get_following", "social"},
    {"condenser_api.get_follow_count", "social"},
    {"condenser_api.broadcast_transaction", "node"},
    {"condenser_api.broadcast_transaction_synchronous", "node"},
    {"network_broadcast_api.broadcast_transaction", "node"},
    {"condenser_api.get_account_history", "hafah"},
    {"condenser_api.get_ops_in_block", "hafah"},
    {"condenser_api.enum_virtual_ops", "hafah"},
    {"condenser_api.get_transaction", "hafah"},
    {"condenser_api.get_transaction_hex", "node"},  // get_transaction$ is exact: the catch-all wins
    {"account_history_api.get_account_history", "hafah"},
    {"account_history_api.get_ops_in_block", "hafah"},
    {"account_history_api.enum_virtual_ops", "hafah"},
    {"account_history_api.get_transaction", "hafah"},
    {"condenser_api.get_accounts", "node"},
    {"condenser_api.get_dynamic_global_properties", "node"},
    {"condenser_api.get_follow_count_x", "node"},  // get_follow_count$ is exact: the catch-all wins
    {"condenser_api.get_witness_by_account", "node"},
    {"database_api.get_dynamic_global_properties", "node"},
    {"block_api.get_block", "node"},
    {"chain_api.push_block", "node"},
    {"witness_api.get_witness", "node"},
    {"account_by_key_api.get_key_references", "node"},
    {"rc_api.find_rc_accounts", "node"},
};

struct LegacyExpectation {
    const char* method;
    const char* target;  // "" = no route
    bool translated;
};

// What ecency rpc-proxy picks for each method with its own example file
// (Python re.match over the routes in file order), 53 methods.
const std::vector<LegacyExpectation> kPredecessor = {
    {"bridge.get_ranked_posts", "hivemind", false},
    {"bridge.get_account_posts", "hivemind", false},
    {"bridge.get_discussion", "hivemind", false},
    {"database_api.list_comments", "hivemind", false},
    {"database_api.find_votes", "hivemind", false},
    {"database_api.list_votes", "hivemind", false},
    {"condenser_api.get_blog", "hivemind", false},
    {"condenser_api.get_blog_entries", "hivemind", false},
    {"condenser_api.get_follow_count", "hivemind", false},
    {"condenser_api.get_following", "hivemind", false},
    {"condenser_api.get_followers", "hivemind", false},
    {"condenser_api.get_reblogged_by", "hivemind", false},
    {"condenser_api.get_account_reputations", "hivemind", false},
    {"condenser_api.get_content", "hivemind", false},
    {"condenser_api.get_content_replies", "hivemind", false},
    {"condenser_api.get_trending_tags", "hivemind", false},
    {"condenser_api.get_active_votes", "hivemind", false},
    {"condenser_api.get_state", "hivemind", false},
    {"condenser_api.get_discussions_by_trending", "hivemind", false},
    {"condenser_api.get_discussions_by_blog", "hivemind", false},
    {"condenser_api.get_account_votes", "hivemind", false},
    {"database_api.get_follow_count", "hivemind", true},
    {"database_api.get_content", "hivemind", true},
    {"database_api.get_discussions_by_created", "hivemind", true},
    {"database_api.get_state", "hivemind", true},
    {"database_api.get_active_votes", "hivemind", true},
    {"database_api.list_proposals", "hived", false},
    {"database_api.find_accounts", "hived", false},
    {"database_api.lookup_accounts", "hived", false},
    {"database_api.get_transaction", "hived", false},
    {"database_api.list_proposal_votes", "hived", false},
    {"database_api.get_dynamic_global_properties", "hived", true},
    {"condenser_api.get_witness_by_account", "hived", false},
    {"condenser_api.get_witnesses_by_vote", "hived", false},
    {"condenser_api.broadcast_transaction", "hived", false},
    {"condenser_api.get_accounts", "hived", false},
    {"condenser_api.get_dynamic_global_properties", "hived", false},
    {"condenser_api.get_block", "hived", false},
    {"tags_api.get_discussion", "hivemind", true},
    {"follow_api.get_account_reputations", "hivemind", true},
    {"hive.db_head_state", "hivemind", false},
    {"rc_api.find_rc_accounts", "hived", false},
    {"login_api.login", "hived", true},
    {"network_broadcast_api.broadcast_transaction", "hived", true},
    {"market_history_api.get_ticker", "hived", false},
    {"chain_api.push_block", "hived", false},
    {"block_api.get_block", "hived", false},
    {"account_by_key_api.get_key_references", "hived", false},
    {"transaction_status_api.find_transaction", "hived", false},
    {"account_history_api.get_account_history", "hived", false},
    {"condenser_api.get_follow_countx", "hived", false},
    {"wallet_history.get_history", "", false},
    {"jsonrpc.get_methods", "", false},
};

std::string legacy_call(const std::string& dotted, const std::string& inner_params, const std::string& id) {
    auto dot = dotted.find('.');
    return rpc("call", "[\"" + dotted.substr(0, dot) + "\",\"" + dotted.substr(dot + 1) + "\"," + inner_params + "]", id);
}

}  // namespace

// node and hafah over HTTP, social over WebSocket, wallet_indexer over a unix socket.
class HiveRoutingMap : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        node = std::make_unique<Backend>("node");
        hafah = std::make_unique<Backend>("hafah");
        social = std::make_unique<Backend>("social");
        wallet = std::make_unique<Backend>("wallet_indexer", Backend::Options{true, 1500});
        dir = std::make_unique<TempDir>("router-hive");
        fs::path routes = dir->path() / "routes.json";
        write_file(routes, routes_with_targets(source_dir() / "conf" / "routes.hive.json",
                                               {{"node", node->http_url()},
                                                {"hafah", hafah->http_url()},
                                                {"social", social->ws_url()},
                                                {"wallet_indexer", wallet->sock_url()}}));
        redis = std::make_unique<RedisServer>();
        nginx = std::make_unique<NginxServer>(nginx_options(router_http_config(routes, redis_directive(*redis))));
    }
    static void TearDownTestSuite() {
        nginx.reset();
        redis.reset();
        node.reset();
        hafah.reset();
        social.reset();
        wallet.reset();
        dir.reset();
    }
    void TearDown() override { EXPECT_TRUE(nginx->fatal_log_lines().empty()); }

    static inline std::unique_ptr<Backend> node, hafah, social, wallet;
    static inline std::unique_ptr<TempDir> dir;
    static inline std::unique_ptr<RedisServer> redis;
    static inline std::unique_ptr<NginxServer> nginx;
};

TEST_F(HiveRoutingMap, EveryRowRoutesToItsTargetInBothFormsOverHttp) {
    for (const auto& row : kHiveMap) {
        for (bool legacy : {false, true}) {
            std::string body = legacy ? legacy_call(row.method, "[]", "7") : rpc(row.method, "[]", "7");
            auto r = http_post_json(nginx->url(), body);
            ASSERT_EQ(r.status, 200) << r.error;
            auto j = parse_json(r.body);
            EXPECT_EQ(text_at(j.get(), "result.backend"), row.target) << row.method << (legacy ? " (call form)" : "") << r.body;
            EXPECT_EQ(text_at(j.get(), "id"), "7");
            EXPECT_EQ(r.headers["x-jsonrpc-target"], row.target);
        }
    }
}

TEST_F(HiveRoutingMap, EveryRowRoutesToItsTargetInBothFormsOverWebSocket) {
    WsClient client(nginx->port());
    ASSERT_EQ(client.handshake_status(), 101);
    for (const auto& row : kHiveMap) {
        for (bool legacy : {false, true}) {
            std::string body = legacy ? legacy_call(row.method, "{}", "\"w\"") : rpc(row.method, "{}", "\"w\"");
            auto j = parse_json(client.call(body));
            EXPECT_EQ(text_at(j.get(), "result.backend"), row.target) << row.method << (legacy ? " (call form)" : "");
            EXPECT_EQ(text_at(j.get(), "id"), "w");
        }
    }
}

TEST_F(HiveRoutingMap, LoginApiIsTranslatedAndBroadcastsAreNeverCached) {
    auto j = parse_json(http_post_json(nginx->url(), rpc("login_api.login", R"(["u","p"])")).body);
    EXPECT_EQ(text_at(j.get(), "result.method"), "call");
    EXPECT_EQ(text_at(j.get(), "result.params"), R"(["login_api","login",["u","p"]])");
    for (int i = 0; i < 2; ++i) {
        auto r = http_post_json(nginx->url(), rpc("condenser_api.broadcast_transaction", R"([{"x":1}])"));
        EXPECT_EQ(r.headers["x-jsonrpc-cache"], "BYPASS");
    }
    auto hot = http_post_json(nginx->url(), rpc("bridge.get_ranked_posts", R"({"sort":"trending"})"));
    EXPECT_NE(hot.headers["x-jsonrpc-cache"], "BYPASS");
}

// The predecessor's real routing file, unchanged, with its two targets
// pointed at stand-ins named after them.
TEST(PredecessorRoutingFile, RoutesEveryMethodAsTheOriginalDid) {
    Backend hived("hived"), hivemind("hivemind");
    TempDir dir("router-ecency");
    fs::path routes = dir.path() / "routes.json";
    write_file(routes, routes_with_targets(proxy_fixtures_dir() / "ecency-rpc-proxy__config.example.hive.json",
                                           {{"hived", hived.http_url()}, {"hivemind", hivemind.http_url()}}));
    RedisServer redis;
    NginxServer nginx(nginx_options(router_http_config(routes, redis_directive(redis))));
    ASSERT_GE(kPredecessor.size(), 40u);
    for (const auto& row : kPredecessor) {
        auto r = http_post_json(nginx.url(), rpc(row.method, R"({"k":"v"})", "3"));
        auto j = parse_json(r.body);
        if (std::string(row.target).empty()) {
            EXPECT_EQ(text_at(j.get(), "error.code"), "-32601") << row.method;
            EXPECT_EQ(text_at(j.get(), "error.message"), std::string("no route for method ") + row.method);
            continue;
        }
        EXPECT_EQ(text_at(j.get(), "result.backend"), row.target) << row.method;
        std::string dotted = row.method;
        if (row.translated) {
            EXPECT_EQ(text_at(j.get(), "result.method"), "call") << row.method;
            auto dot = dotted.find('.');
            EXPECT_EQ(text_at(j.get(), "result.params"),
                      "[\"" + dotted.substr(0, dot) + "\",\"" + dotted.substr(dot + 1) + "\",{\"k\":\"v\"}]");
        } else {
            EXPECT_EQ(text_at(j.get(), "result.method"), dotted);
        }
    }
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}

class RouterForms : public ::testing::Test {
protected:
    void SetUp() override {
        backend = std::make_unique<Backend>("b");
        write_file(dir.path() / "routes.json", R"({
  "targets": {"b": ")" + backend->http_url() + R"("},
  "routes": {
    "^yes\\.": {"target": "b", "translate_to_app_base": true},
    "^no\\.": {"target": "b", "translate_to_app_base": false},
    "^plain\\.": {"target": "b"}
  }
})");
        nginx = std::make_unique<NginxServer>(nginx_options(router_http_config(dir.path() / "routes.json",
                                                                                     "    jsonrpc_router_redis off;\n")));
    }
    void TearDown() override { EXPECT_TRUE(nginx->fatal_log_lines().empty()); }
    std::string upstream(const std::string& body, const std::string& what) {
        return text_at(parse_json(http_post_json(nginx->url(), body).body).get(), what);
    }
    TempDir dir{"router-forms"};
    std::unique_ptr<Backend> backend;
    std::unique_ptr<NginxServer> nginx;
};

TEST_F(RouterForms, TranslationOnlyWhenTrueWithParamsOfBothShapes) {
    EXPECT_EQ(upstream(rpc("yes.m", R"({"a":1})"), "result.method"), "call");
    EXPECT_EQ(upstream(rpc("yes.m", R"({"a":1})"), "result.params"), R"(["yes","m",{"a":1}])");
    EXPECT_EQ(upstream(rpc("yes.m", R"([1,"x"])"), "result.params"), R"(["yes","m",[1,"x"]])");
    EXPECT_EQ(upstream(rpc("yes.m"), "result.params"), R"(["yes","m",[]])");
    for (const char* api : {"no", "plain"}) {
        std::string method = std::string(api) + ".m";
        EXPECT_EQ(upstream(rpc(method, R"({"a":1})"), "result.method"), method);
        EXPECT_EQ(upstream(rpc(method, R"({"a":1})"), "result.params"), R"({"a":1})");
        EXPECT_EQ(upstream(rpc(method, R"([1,"x"])"), "result.params"), R"([1,"x"])");
    }
    // A legacy call is forwarded as it came, whatever the route says.
    EXPECT_EQ(upstream(rpc("call", R"(["yes","m",{"a":1}])"), "result.params"), R"(["yes","m",{"a":1}])");
    EXPECT_EQ(upstream(rpc("call", R"(["no","m",[2]])"), "result.method"), "call");
}

TEST_F(RouterForms, EveryIdTypeComesBackAsSent) {
    for (std::string id : {R"("abc")", R"("")", "0", "-17", "18446744073709551616123456789", "1.5", "2.50e-7", "null"}) {
        auto r = http_post_json(nginx->url(), rpc("plain.m", "[]", id));
        std::string suffix = "\"id\":" + id + "}";
        ASSERT_GE(r.body.size(), suffix.size());
        EXPECT_EQ(r.body.substr(r.body.size() - suffix.size()), suffix) << r.body;
    }
    auto no_id = http_post_json(nginx->url(), R"({"jsonrpc":"2.0","method":"plain.m"})");
    EXPECT_EQ(text_at(parse_json(no_id.body).get(), "id"), "null");
}

TEST(RouterConfigCheck, NginxRefusesBadRoutingFilesNamingFileKeyAndReason) {
    TempDir dir("router-bad");
    struct Case {
        const char* text;
        const char* expected;
    };
    std::vector<Case> cases = {
        {R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{"^x":{"target":"nope"}}})", R"(routes."^x".target: unknown target 'nope')"},
        {R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{"^x(":{"target":"a"}}})", R"(routes."^x(": bad regular expression)"},
        {R"({"targets":{"a":"gopher://127.0.0.1:1"},"routes":{}})", "targets.a: bad scheme 'gopher'"},
        {R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{"^x":{"target":"a","cache":-1}}})", R"(routes."^x".cache: must be a non-negative integer)"},
        {R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{"^x":{"target":"a","translate_to_app_base":"yes"}}})",
         R"(routes."^x".translate_to_app_base: must be true or false)"},
        {R"({"targets":{"a":"http://127.0.0.1:1"},"timeouts":{"a":"10"},"routes":{}})", "timeouts.a: must be a number of seconds"},
        {R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{}, "default-cache": 1.5})", "default-cache: must be a non-negative integer"},
        {R"({"targets":[],"routes":{}})", "targets: must be an object"},
        {"not json", "not valid JSON"},
    };
    int n = 0;
    for (const auto& c : cases) {
        fs::path file = dir.path() / ("bad" + std::to_string(++n) + ".json");
        write_file(file, c.text);
        auto result = NginxServer::test_config(nginx_options(router_http_config(file, "    jsonrpc_router_redis off;\n")));
        EXPECT_NE(result.exit_code, 0) << c.text;
        EXPECT_NE(result.output.find(file.string() + ": " + c.expected), std::string::npos)
            << "expected '" << c.expected << "' in:\n" << result.output;
    }
    write_file(dir.path() / "good.json", R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{"^x":{"target":"a"}}})");
    EXPECT_EQ(NginxServer::test_config(nginx_options(router_http_config(dir.path() / "good.json", "    jsonrpc_router_redis off;\n"))).exit_code, 0);
}
