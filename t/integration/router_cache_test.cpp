// The router's cache with real Redis: miss then hit, TTL expiry, the caller's
// own id on a hit, errors never cached, two nginx instances sharing one
// Redis, Redis over a unix socket, and Redis stopped, restarted or stalled
// under load without a failed request (fail-open).
#include <atomic>
#include <thread>

#include "router_support.hpp"

using namespace router_test;

namespace {

std::string routes_for(const Backend& backend) {
    return R"({
  "targets": {"b": ")" + backend.http_url() + R"("},
  "timeouts": 5,
  "routes": {
    "^short\\.": {"target": "b", "cache": 1},
    "^long\\.": {"target": "b", "cache": 60},
    "^none\\.": {"target": "b", "cache": 0},
    "^other\\.": {"target": "b"}
  },
  "default-cache": 30
})";
}

class RouterCache : public ::testing::Test {
protected:
    void SetUp() override {
        write_file(dir.path() / "routes.json", routes_for(backend));
        nginx = start("");
    }
    void TearDown() override {
        for (auto* n : {nginx.get(), second.get()}) {
            if (n != nullptr) {
                EXPECT_TRUE(n->fatal_log_lines().empty());
            }
        }
    }
    std::unique_ptr<NginxServer> start(const std::string& extra, const std::string& redis_line = "") {
        return std::make_unique<NginxServer>(nginx_options(router_http_config(
            dir.path() / "routes.json", (redis_line.empty() ? redis_directive(redis) : redis_line) + extra)));
    }
    static HttpResponse post(const NginxServer& n, const std::string& body) { return http_post_json(n.url(), body); }
    static std::string served(const HttpResponse& r) { return text_at(parse_json(r.body).get(), "result.served"); }

    TempDir dir{"router-cache"};
    Backend backend{"b"};
    RedisServer redis;
    std::unique_ptr<NginxServer> nginx;
    std::unique_ptr<NginxServer> second;
};

}  // namespace

TEST_F(RouterCache, MissThenHitAnsweringWithTheCallersId) {
    auto first = post(*nginx, rpc("long.get", R"({"b":1,"a":[1,2]})", "\"first\""));
    EXPECT_EQ(first.headers["x-jsonrpc-cache"], "MISS");
    auto hit = post(*nginx, rpc("long.get", R"({ "a":[1, 2], "b":1 })", "\"second\""));
    EXPECT_EQ(hit.headers["x-jsonrpc-cache"], "HIT");
    EXPECT_EQ(served(hit), served(first));  // the backend was not asked again
    EXPECT_EQ(text_at(parse_json(hit.body).get(), "result.backend"), "b");
    EXPECT_EQ(text_at(parse_json(hit.body).get(), "id"), "second");
    auto big = post(*nginx, rpc("long.get", R"({"a":[1,2],"b":1})", "98765432109876543210.5"));
    EXPECT_EQ(big.headers["x-jsonrpc-cache"], "HIT");
    std::string suffix = "\"id\":98765432109876543210.5}";
    EXPECT_EQ(big.body.substr(big.body.size() - suffix.size()), suffix);
    // The legacy form of the same call shares the entry.
    auto legacy = post(*nginx, rpc("call", R"(["long","get",{"a":[1,2],"b":1}])", "5"));
    EXPECT_EQ(legacy.headers["x-jsonrpc-cache"], "HIT");
    EXPECT_EQ(text_at(parse_json(legacy.body).get(), "id"), "5");
    // The key is readable in Redis: the target (name and a hash of its URLs),
    // api.method + canonical params.
    const std::string keys = redis.command({"KEYS", "*"});
    EXPECT_EQ(keys.rfind("jsonrpc:", 0), 0u) << keys;
    EXPECT_NE(keys.find(R"(:long.get {"a":[1,2],"b":1})"), std::string::npos) << keys;
    // Other params, other entry.
    EXPECT_EQ(post(*nginx, rpc("long.get", R"({"a":[2,1],"b":1})")).headers["x-jsonrpc-cache"], "MISS");
}

TEST_F(RouterCache, EntriesExpireAfterTheirTtl) {
    auto first = post(*nginx, rpc("short.get", "[1]"));
    EXPECT_EQ(first.headers["x-jsonrpc-cache"], "MISS");
    EXPECT_EQ(post(*nginx, rpc("short.get", "[1]")).headers["x-jsonrpc-cache"], "HIT");
    std::this_thread::sleep_for(1100ms);
    auto later = post(*nginx, rpc("short.get", "[1]"));
    EXPECT_EQ(later.headers["x-jsonrpc-cache"], "MISS");
    EXPECT_NE(served(later), served(first));
}

TEST_F(RouterCache, DefaultCacheAppliesAndZeroMeansNoCaching) {
    post(*nginx, rpc("other.get", "[1]"));
    EXPECT_EQ(post(*nginx, rpc("other.get", "[1]")).headers["x-jsonrpc-cache"], "HIT");
    post(*nginx, rpc("none.get", "[1]"));
    EXPECT_EQ(post(*nginx, rpc("none.get", "[1]")).headers["x-jsonrpc-cache"], "BYPASS");
}

TEST_F(RouterCache, ErrorsAreNeverCachedButResultsMentioningErrorsAre) {
    for (int i = 0; i < 2; ++i) {
        auto r = post(*nginx, rpc("long.will_fail", "[]", std::to_string(i)));
        EXPECT_EQ(text_at(parse_json(r.body).get(), "error.message"), "failed by b");
        EXPECT_EQ(text_at(parse_json(r.body).get(), "id"), std::to_string(i));
        EXPECT_EQ(r.headers["x-jsonrpc-cache"], "MISS");
    }
    for (int i = 0; i < 2; ++i) {
        auto r = post(*nginx, rpc("long.garbage_body", "[]"));
        EXPECT_EQ(text_at(parse_json(r.body).get(), "error.code"), "1100");
        EXPECT_EQ(r.headers["x-jsonrpc-cache"], "MISS");
    }
    // The predecessor refused to cache any body containing "error".
    post(*nginx, rpc("long.get", R"(["an error in a post"])"));
    EXPECT_EQ(post(*nginx, rpc("long.get", R"(["an error in a post"])")).headers["x-jsonrpc-cache"], "HIT");
}

TEST_F(RouterCache, BatchElementsAreCachedOnTheirOwn) {
    post(*nginx, rpc("long.get", "[\"cached\"]"));
    auto r = post(*nginx, json_list({rpc("long.get", "[\"cached\"]", "1"), rpc("long.get", "[\"fresh\"]", "2")}));
    EXPECT_EQ(r.headers["x-jsonrpc-cache"], "BATCH hits=1 calls=2");
    auto j = parse_json(r.body);
    EXPECT_EQ(text_at(j.get(), "0.id"), "1");
    EXPECT_EQ(text_at(j.get(), "1.id"), "2");
}

TEST_F(RouterCache, TwoNginxInstancesShareHitsThroughRedis) {
    second = start("    jsonrpc_router_memory_cache 0;\n");
    auto first = post(*nginx, rpc("long.shared", R"({"x":1,"y":2})", "1"));
    EXPECT_EQ(first.headers["x-jsonrpc-cache"], "MISS");
    auto other = post(*second, rpc("long.shared", R"({"y":2,"x":1})", "\"two\""));
    EXPECT_EQ(other.headers["x-jsonrpc-cache"], "HIT");
    EXPECT_EQ(served(other), served(first));
    EXPECT_EQ(text_at(parse_json(other.body).get(), "id"), "two");
}

TEST_F(RouterCache, RedisOverAUnixSocket) {
    second = start("    jsonrpc_router_memory_cache 0;\n", "    jsonrpc_router_redis unix:" + redis.unix_socket().string() + ";\n");
    post(*second, rpc("long.unix", "[1]"));
    EXPECT_EQ(post(*second, rpc("long.unix", "[1]")).headers["x-jsonrpc-cache"], "HIT");
}

TEST_F(RouterCache, RedisStoppedAndRestartedUnderLoadFailsNoRequest) {
    second = start("    jsonrpc_router_memory_cache 0;\n    jsonrpc_router_redis_timeout 200ms;\n");
    std::atomic<bool> stop{false};
    std::atomic<int> ok{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> load;
    for (int t = 0; t < 4; ++t) {
        load.emplace_back([&, t] {
            for (int i = 0; !stop && i < 100000; ++i) {
                auto r = post(*second, rpc("long.load", json_list({std::to_string((t * 7 + i) % 20)}), std::to_string(i)));
                auto j = parse_json(r.body);
                if (r.status == 200 && text_at(j.get(), "result.backend") == "b" && text_at(j.get(), "id") == std::to_string(i)) {
                    ++ok;
                } else {
                    ++failed;
                }
            }
        });
    }
    ASSERT_TRUE(wait_until([&] { return ok > 50; }));
    redis.stop();
    int at_stop = ok;
    ASSERT_TRUE(wait_until([&] { return ok > at_stop + 200; }));  // served uncached while Redis is gone
    redis.start();
    EXPECT_TRUE(wait_until([&] { return post(*second, rpc("long.load", "[3]")).headers["x-jsonrpc-cache"] == "HIT"; }));
    int at_start = ok;
    ASSERT_TRUE(wait_until([&] { return ok > at_start + 50; }));
    stop = true;
    for (auto& t : load) t.join();
    EXPECT_EQ(failed, 0);
    EXPECT_GT(ok, 300);
}

TEST_F(RouterCache, StalledRedisIsBypassed) {
    second = start("    jsonrpc_router_memory_cache 0;\n    jsonrpc_router_redis_timeout 100ms;\n");
    post(*second, rpc("long.stall", "[1]"));
    std::thread sleeper([&] { redis.command({"DEBUG", "SLEEP", "2"}); });
    std::this_thread::sleep_for(200ms);
    for (int i = 0; i < 5; ++i) {
        auto r = post(*second, rpc("long.stall", json_list({std::to_string(i + 10)}), std::to_string(i)));
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(text_at(parse_json(r.body).get(), "result.backend"), "b");
    }
    sleeper.join();
    EXPECT_TRUE(wait_until([&] { return post(*second, rpc("long.stall", "[1]")).headers["x-jsonrpc-cache"] == "HIT"; }));
}

// The memory layer resists a spray of distinct keys (each asked once, as a
// client choosing old block ranges does): an entry asked for again is
// protected, and the spray, many times the layer's size (here 64k, Redis
// off), evicts only entries never asked for again.
TEST_F(RouterCache, AKeySprayDoesNotEvictEntriesAskedForAgain) {
    second = start("    jsonrpc_router_memory_cache 64k;\n", "    jsonrpc_router_redis off;\n");
    const std::string hot = rpc("long.get", "[\"hot\"]");
    EXPECT_EQ(post(*second, hot).headers["x-jsonrpc-cache"], "MISS");
    EXPECT_EQ(post(*second, hot).headers["x-jsonrpc-cache"], "HIT");
    for (int request = 0; request < 20; ++request) {  // 1000 entries of about 140 bytes
        std::vector<std::string> calls;
        for (int i = 0; i < 50; ++i) calls.push_back(rpc("long.get", "[" + std::to_string(request * 50 + i) + "]"));
        ASSERT_EQ(post(*second, json_list(calls)).headers["x-jsonrpc-cache"], "BATCH hits=0 calls=50");
    }
    EXPECT_EQ(post(*second, hot).headers["x-jsonrpc-cache"], "HIT");
    // The spray's own entries went (the layer holds a fraction of them).
    EXPECT_EQ(post(*second, rpc("long.get", "[0]")).headers["x-jsonrpc-cache"], "MISS");
}
