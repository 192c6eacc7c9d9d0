// Coalesced misses with real nginx, Redis and a slow stand-in backend:
// concurrent identical cacheable misses send one request upstream per
// worker, every waiter gets the answer with its own id; errors reach every
// waiter and are never cached; a waiter whose leader's client went away
// still gets its answer.
#include <atomic>
#include <thread>

#include "router_support.hpp"

using namespace router_test;

namespace {

constexpr int kWorkers = 2;
constexpr int kClients = 50;

class RouterCoalesce : public ::testing::Test {
protected:
    void SetUp() override {
        write_file(dir.path() / "routes.json", R"({
  "targets": {"b": ")" + backend.http_url() + R"("},
  "timeouts": 10,
  "routes": {"^slow\\.": {"target": "b", "cache": 60}, "^uncached\\.": {"target": "b"}}
})");
    }
    void start(int workers) {
        nginx = std::make_unique<NginxServer>(
            nginx_options(router_http_config(dir.path() / "routes.json", redis_directive(redis)), workers));
    }
    void TearDown() override {
        if (nginx) {
            EXPECT_TRUE(nginx->fatal_log_lines().empty());
        }
    }
    long backend_requests() const { return backend.stats().second; }

    // `clients` identical calls sent at once, each with its own id; the responses by id.
    std::vector<HttpResponse> burst(const std::string& method, const std::string& params, int clients = kClients) {
        std::vector<HttpResponse> responses(static_cast<std::size_t>(clients));
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (int i = 0; i < clients; ++i) {
            threads.emplace_back([&, i] {
                while (!go.load()) std::this_thread::yield();
                responses[static_cast<std::size_t>(i)] =
                    http_post_json(nginx->url(), rpc(method, params, "\"client-" + std::to_string(i) + "\""));
            });
        }
        go = true;
        for (auto& t : threads) t.join();
        return responses;
    }

    TempDir dir{"router-coalesce"};
    Backend backend{"b", Backend::Options{false, 2500}};
    RedisServer redis;
    std::unique_ptr<NginxServer> nginx;
};

}  // namespace

TEST_F(RouterCoalesce, ConcurrentIdenticalMissesSendOneRequestPerWorker) {
    start(kWorkers);
    const long before = backend_requests();
    auto responses = burst("slow.get", "[1]");
    const long upstream = backend_requests() - before;
    EXPECT_GE(upstream, 1);
    EXPECT_LE(upstream, kWorkers) << "identical misses were not coalesced";
    int misses = 0;
    for (int i = 0; i < kClients; ++i) {
        HttpResponse& r = responses[static_cast<std::size_t>(i)];
        ASSERT_EQ(r.status, 200) << r.error;
        JsonPtr body = parse_json(r.body);
        EXPECT_EQ(text_at(body.get(), "id"), "client-" + std::to_string(i)) << r.body;
        EXPECT_EQ(text_at(body.get(), "result.backend"), "b") << r.body;
        EXPECT_EQ(text_at(body.get(), "result.params"), "[1]");
        // The others waited for those that asked (or, arriving late, hit the cache).
        const std::string& status = r.headers["x-jsonrpc-cache"];
        EXPECT_TRUE(status == "MISS" || status == "COALESCED" || status == "HIT") << status;
        misses += status == "MISS" ? 1 : 0;
    }
    EXPECT_EQ(misses, upstream);
    // The answer was cached once: the next call is a hit.
    EXPECT_EQ(http_post_json(nginx->url(), rpc("slow.get", "[1]", "9")).headers["x-jsonrpc-cache"], "HIT");
    EXPECT_EQ(backend_requests() - before, upstream);
}

TEST_F(RouterCoalesce, ErrorsReachEveryWaiterAndAreNeverCached) {
    start(kWorkers);
    for (int round = 0; round < 2; ++round) {
        const long before = backend_requests();
        auto responses = burst("slow.fail", "[2]");
        const long upstream = backend_requests() - before;
        // Not cached: each round asks the backend again, once per worker at most.
        EXPECT_GE(upstream, 1) << "round " << round;
        EXPECT_LE(upstream, kWorkers) << "round " << round;
        for (int i = 0; i < kClients; ++i) {
            JsonPtr body = parse_json(responses[static_cast<std::size_t>(i)].body);
            EXPECT_EQ(text_at(body.get(), "id"), "client-" + std::to_string(i));
            EXPECT_EQ(text_at(body.get(), "error.code"), "-32003");
            EXPECT_EQ(text_at(body.get(), "error.message"), "failed by b");
        }
    }
    // Routes without a cache are not coalesced: each call is its own request.
    const long before = backend_requests();
    burst("uncached.slow", "[3]", 5);
    EXPECT_EQ(backend_requests() - before, 5);
}

TEST_F(RouterCoalesce, WaitersOutliveALeaderWhoseClientLeft) {
    start(1);
    const long before = backend_requests();
    std::thread leader([&] {
        // Gives up long before the backend answers: the request it led is dropped.
        auto r = http_request("POST", nginx->url(), rpc("slow.get", "[4]", "0"), {"Content-Type: application/json"},
                              500ms);
        EXPECT_FALSE(r.error.empty());
    });
    std::this_thread::sleep_for(200ms);
    auto responses = burst("slow.get", "[4]", 5);
    leader.join();
    for (int i = 0; i < 5; ++i) {
        JsonPtr body = parse_json(responses[static_cast<std::size_t>(i)].body);
        EXPECT_EQ(text_at(body.get(), "id"), "client-" + std::to_string(i));
        EXPECT_EQ(text_at(body.get(), "result.params"), "[4]") << responses[static_cast<std::size_t>(i)].body;
    }
    // The first waiter asked again when the leader left; the others still shared it.
    EXPECT_EQ(backend_requests() - before, 2);
}

// Identical cacheable calls inside one batch (50 copies of one call, the
// amplifying request) cost one cache lookup and one upstream request: the
// first looks the key up for the others. Each gets the answer with its own id.
TEST_F(RouterCoalesce, IdenticalCallsOfOneBatchShareOneLookup) {
    start(1);
    auto redis_gets = [&] {
        const std::string stats = redis.command({"INFO", "commandstats"});
        const std::size_t at = stats.find("cmdstat_get:calls=");
        return at == std::string::npos ? 0L : std::stol(stats.substr(at + 18));
    };
    std::vector<std::string> calls;
    for (int i = 0; i < 20; ++i) calls.push_back(rpc("slow.get", "[7]", std::to_string(i)));
    const long gets_before = redis_gets();
    const long upstream_before = backend_requests();
    HttpResponse r = http_post_json(nginx->url(), json_list(calls));
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(redis_gets() - gets_before, 1) << "each copy looked the key up";
    EXPECT_EQ(backend_requests() - upstream_before, 1);
    JsonPtr batch = parse_json(r.body);
    ASSERT_EQ(json_array_size(batch.get()), 20u);
    for (std::size_t i = 0; i < 20; ++i) {
        EXPECT_EQ(text_at(json_array_get(batch.get(), i), "id"), std::to_string(i));
        EXPECT_EQ(text_at(json_array_get(batch.get(), i), "result.params"), "[7]");
    }
}
