// Deployment: the wallet-rpc-proxy launcher honouring HOST, PORT, WORKERS,
// DEBUG, PROXY_REDIS, PROXY_MAX_BATCH and --config; and the nginx include of
// conf/nginx/ on an existing server.
#include "router_support.hpp"

using namespace router_test;

namespace {

fs::path launcher() { return binary_dir() / "wallet-rpc-proxy"; }

// The chain deployment's routing map with node (HTTP) and social (WebSocket)
// stand-ins; chain history and wallet_history go to the node stand-in.
struct Deployment {
    explicit Deployment(const std::string& name) : dir(name) {
        write_file(routes, routes_with_targets(source_dir() / "conf" / "routes.hive.json",
                                               {{"node", node.http_url()},
                                                {"hafah", node.http_url()},
                                                {"social", social.ws_url()},
                                                {"wallet_indexer", node.http_url()}}));
    }
    Backend node{"node"}, social{"social"};
    RedisServer redis;
    TempDir dir;
    fs::path routes = dir.path() / "routes.json";
};

}  // namespace

TEST(RouterLauncher, RunsNginxFromTheEnvironment) {
    Deployment d("router-launcher");
    TempDir& dir = d.dir;
    const fs::path& routes = d.routes;
    RedisServer& redis = d.redis;
    std::uint16_t port = free_port();
    ProcessOptions options;
    options.log_path = dir.path() / "launcher.log";
    options.env = {{"HOST", "127.0.0.1"},
                   {"PORT", std::to_string(port)},
                   {"WORKERS", "2"},
                   {"DEBUG", "True"},
                   {"PROXY_REDIS", "127.0.0.1:" + std::to_string(redis.port())},
                   {"PROXY_MAX_BATCH", "3"},
                   {"RUNTIME_DIRECTORY", (dir.path() / "run").string()}};
    options.env.merge(sanitizer_env());
    fs::create_directories(dir.path() / "run");
    register_log("wallet-rpc-proxy", options.log_path);
    auto proxy = Process::start({launcher().string(), "--config", routes.string()}, options);
    ASSERT_TRUE(wait_until([&] { return port_accepts(port) || !proxy.running(); }));
    ASSERT_TRUE(proxy.running()) << proxy.log();
    std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";

    auto r = http_post_json(url, rpc("bridge.get_ranked_posts", R"({"sort":"hot"})"));
    EXPECT_EQ(text_at(parse_json(r.body).get(), "result.backend"), "social");
    EXPECT_EQ(http_post_json(url, rpc("bridge.get_ranked_posts", R"({"sort":"hot"})")).headers["x-jsonrpc-cache"], "HIT");
    EXPECT_EQ(text_at(parse_json(http_post_json(url, rpc("condenser_api.get_accounts", "[[\"a\"]]")).body).get(), "result.backend"),
              "node");
    auto batch = http_post_json(url, "[" + rpc("a.b") + "," + rpc("a.b") + "," + rpc("a.b") + "," + rpc("a.b") + "]");
    EXPECT_EQ(text_at(parse_json(batch.body).get(), "error.code"), "1600");
    WsClient ws(port);
    EXPECT_EQ(text_at(parse_json(ws.call(rpc("condenser_api.get_block", "[1]", "\"ws\""))).get(), "result.backend"), "node");

    EXPECT_EQ(read_file(dir.path() / "run" / "nginx.conf").find("worker_processes 2;") != std::string::npos, true);
    EXPECT_NE(proxy.log().find("\"POST / HTTP/1.1\" 200"), std::string::npos);  // DEBUG: access log on stdout
    EXPECT_EQ(proxy.stop(SIGTERM), 0);
    unregister_log(options.log_path);
}

TEST(RouterLauncher, RefusesBadSettingsAndBadRoutingFiles) {
    TempDir dir("router-launcher-bad");
    fs::path routes = dir.path() / "routes.json";
    write_file(routes, R"({"targets":{"a":"http://127.0.0.1:1"},"routes":{"^x":{"target":"b"}}})");
    auto bad_file = run_command({launcher().string(), "--config", routes.string(), "--test"}, sanitizer_env());
    EXPECT_NE(bad_file.exit_code, 0);
    EXPECT_NE(bad_file.output.find(R"(routes."^x".target: unknown target 'b')"), std::string::npos) << bad_file.output;
    auto bad_port = run_command({launcher().string(), "--config", routes.string()}, {{"PORT", "http"}});
    EXPECT_NE(bad_port.exit_code, 0);
    EXPECT_NE(bad_port.output.find("PORT must be 1-65535"), std::string::npos);
    auto no_config = run_command({launcher().string()});
    EXPECT_EQ(no_config.exit_code, 2);
}

TEST(RouterInclude, TheConfIncludeServesPostAndWebSocketOnOneUrl) {
    Deployment d("router-include");
    TempDir& dir = d.dir;
    const fs::path& routes = d.routes;
    RedisServer& redis = d.redis;
    std::string include = read_file(source_dir() / "conf" / "nginx" / "jsonrpc-router.conf");
    include = replace_all(include, "/etc/wallet-rpc/routes.json", routes.string());
    include = replace_all(include, "127.0.0.1:6379", "127.0.0.1:" + std::to_string(redis.port()));
    write_file(dir.path() / "jsonrpc-router.conf", include);
    NginxServer nginx(nginx_options("server {\n  listen 127.0.0.1:{{PORT}};\n  include " + (dir.path() / "jsonrpc-router.conf").string() +
                                    ";\n}\n", 2));
    EXPECT_EQ(text_at(parse_json(http_post_json(nginx.url(), rpc("bridge.get_post")).body).get(), "result.backend"), "social");
    WsClient ws(nginx.port());
    EXPECT_EQ(text_at(parse_json(ws.call(rpc("wallet_history.get_history", "{}", "7"))).get(), "result.backend"), "node");
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}
