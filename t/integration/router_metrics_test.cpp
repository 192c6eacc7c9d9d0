// The router's Prometheus endpoint with real nginx (two workers, sharing one
// counters zone), Redis and stand-in backends: after a known mix of calls
// over HTTP and WebSocket (hits, misses, coalesced misses, a batch, calls
// without a route, a timeout, a bad answer, a pool URL killed until it goes
// out), every counter equals what the test sent and saw, the text is valid
// exposition format 0.0.4, no method name sent by a client is a label, and a
// reload keeps the counters.
#include <atomic>
#include <set>
#include <thread>

#include "router_support.hpp"
#include "support/prometheus_text.hpp"

using namespace router_test;

namespace {

constexpr int kWorkers = 2;
constexpr int kBurst = 20;
const std::string kClientMethod = "nomatch.client_chosen_method_name";

class RouterMetricsTest : public ::testing::Test {
protected:
    void SetUp() override {
        write_file(dir.path() / "routes.json", R"({
  "targets": {"b": ")" + b.http_url() + R"(", "t": ")" + t.http_url() + R"(",
              "pool": [")" + p1.http_url() + R"(", ")" + p2.http_url() + R"("]},
  "timeouts": {"b": 10, "t": 0.5, "pool": 5},
  "routes": {
    "^cached\\.": {"target": "b", "cache": 60},
    "^slow\\.": {"target": "b", "cache": 60},
    "^plain\\.": {"target": "b"},
    "^late\\.": {"target": "t"},
    "^pool\\.": {"target": "pool"}
  }
})");
        // reuseport: each new connection goes to either worker.
        const std::string config = "server {\n  listen 127.0.0.1:{{PORT}} reuseport;\n  location / {\n    jsonrpc_router " +
                                   (dir.path() / "routes.json").string() + ";\n" + redis_directive(redis) +
                                   "    add_header X-Worker $pid always;\n  }\n"
                                   "  location = /metrics {\n    jsonrpc_router_metrics;\n    allow 127.0.0.1;\n"
                                   "    deny all;\n  }\n}\n";
        nginx = std::make_unique<NginxServer>(nginx_options(config, kWorkers));
    }
    void TearDown() override {
        if (nginx) {
            EXPECT_TRUE(nginx->fatal_log_lines().empty());
        }
    }

    HttpResponse post(const std::string& body) {
        HttpResponse r = http_post_json(nginx->url(), body);
        if (!r.headers["x-worker"].empty()) workers.insert(r.headers["x-worker"]);
        ++http_requests;
        return r;
    }
    prometheus_text::Scrape scrape() {
        HttpResponse r = http_request("GET", nginx->url("/metrics"));
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
        last_text = r.body;
        prometheus_text::Scrape s = prometheus_text::parse(r.body);
        EXPECT_EQ(s.error, "") << r.body;
        return s;
    }
    // Counts an HTTP response's X-JSONRPC-Cache for the route.
    void count_cache(const std::string& route, const HttpResponse& r) {
        const std::string& status = r.headers.at("x-jsonrpc-cache");
        if (status == "HIT") ++cache[{route, "hit"}];
        if (status == "MISS") ++cache[{route, "miss"}];
        if (status == "COALESCED") ++cache[{route, "coalesced"}];
    }

    TempDir dir{"router-metrics"};
    Backend b{"b", Backend::Options{false, 1500}};
    Backend t{"t", Backend::Options{false, 1500}};
    Backend p1{"p1"};
    Backend p2{"p2"};
    RedisServer redis;
    std::unique_ptr<NginxServer> nginx;
    std::set<std::string> workers;
    int http_requests = 0;
    std::map<std::pair<std::string, std::string>, int> cache;  // (route, result) -> calls
    std::string last_text;
};

}  // namespace

TEST_F(RouterMetricsTest, CountersOfBothWorkersEqualWhatWasSent) {
    const std::string cached = "^cached\\.", slow = "^slow\\.", plain = "^plain\\.", late = "^late\\.",
                      pool = "^pool\\.";
    std::map<std::pair<std::string, std::string>, int> calls;  // (route, transport) -> calls

    // Fresh connections until both workers have answered: hits and a miss.
    int cached_http = 0;
    while (workers.size() < kWorkers && cached_http < 200) {
        HttpResponse r = post(rpc("cached.get", "[1]", std::to_string(cached_http)));
        ASSERT_EQ(r.status, 200) << r.error;
        count_cache(cached, r);
        ++cached_http;
    }
    ASSERT_EQ(workers.size(), static_cast<std::size_t>(kWorkers)) << "one worker answered everything";
    calls[{cached, "http"}] += cached_http;

    // WebSocket: two hits and an uncached call, three messages.
    {
        WsClient ws(nginx->port());
        ASSERT_EQ(ws.handshake_status(), 101);
        for (int i = 0; i < 2; ++i) EXPECT_NE(ws.call(rpc("cached.get", "[1]", "5")).find("\"backend\":\"b\""), std::string::npos);
        EXPECT_NE(ws.call(rpc("plain.echo", "[1]", "6")).find("\"backend\":\"b\""), std::string::npos);
    }
    calls[{cached, "ws"}] += 2;
    cache[{cached, "hit"}] += 2;
    calls[{plain, "ws"}] += 1;

    // Identical concurrent misses: the headers say who asked and who waited.
    {
        std::vector<HttpResponse> responses(kBurst);
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (int i = 0; i < kBurst; ++i) {
            threads.emplace_back([&, i] {
                while (!go.load()) std::this_thread::yield();
                responses[static_cast<std::size_t>(i)] = http_post_json(nginx->url(), rpc("slow.get", "[7]", std::to_string(i)));
            });
        }
        go = true;
        for (auto& th : threads) th.join();
        for (const HttpResponse& r : responses) {
            ASSERT_EQ(r.status, 200) << r.error;
            count_cache(slow, r);
        }
        http_requests += kBurst;
        calls[{slow, "http"}] += kBurst;
        EXPECT_GE((cache[{slow, "coalesced"}]), 1) << "no miss was coalesced";
    }

    // A batch: one request, two calls, one of them a hit.
    HttpResponse batch = post("[" + rpc("cached.get", "[1]", "1") + "," + rpc("plain.echo", "[2]", "2") + "]");
    EXPECT_EQ(batch.headers["x-jsonrpc-cache"], "BATCH hits=1 calls=2");
    calls[{cached, "http"}] += 1;
    calls[{plain, "http"}] += 1;
    cache[{cached, "hit"}] += 1;

    // Upstream errors: a timeout (t answers after 1.5 s, its timeout is 0.5 s) and a bad answer.
    EXPECT_EQ(text_at(parse_json(post(rpc("late.slow", "[]")).body).get(), "error.code"), "1000");
    calls[{late, "http"}] += 1;
    EXPECT_EQ(text_at(parse_json(post(rpc("plain.garbage", "[]")).body).get(), "error.code"), "1100");
    calls[{plain, "http"}] += 1;

    // No route, and not JSON: counted as unrouted; the method is no label.
    EXPECT_EQ(text_at(parse_json(post(rpc(kClientMethod, "[]")).body).get(), "error.code"), "-32601");
    EXPECT_EQ(text_at(parse_json(post("{not json").body).get(), "error.code"), "-32700");
    calls[{"unrouted", "http"}] += 2;

    // A pool: both URLs answer; then p2 is killed and goes out after 3
    // consecutive failures, every read answered by p1 meanwhile.
    int pool_calls = 0;
    for (int i = 0; i < 4; ++i, ++pool_calls) {
        EXPECT_EQ(text_at(parse_json(post(rpc("pool.get", "[" + std::to_string(i) + "]")).body).get(), "error"), "<absent>");
    }
    const long p2_served = p2.stats().second;
    p2.stop();
    auto p2_in = [&] {
        return scrape().value("jsonrpc_router_url_in", {{"target", "pool"}, {"url", p2.http_url()}});
    };
    EXPECT_EQ(p2_in(), 1.0);
    while (p2_in() == 1.0 && pool_calls < 40) {
        HttpResponse r = post(rpc("pool.get", "[" + std::to_string(100 + pool_calls) + "]"));
        EXPECT_EQ(text_at(parse_json(r.body).get(), "result.backend"), "p1") << r.body;
        ++pool_calls;
    }
    ASSERT_EQ(p2_in(), 0.0) << "the killed URL never went out";
    calls[{pool, "http"}] += pool_calls;

    const prometheus_text::Scrape s = scrape();
    EXPECT_EQ(s.types.at("jsonrpc_router_calls_total"), "counter");
    EXPECT_EQ(s.types.at("jsonrpc_router_upstream_duration_seconds"), "histogram");
    // Every upstream request ended (answered, timed out, a bad answer, the killed node's): none left in flight.
    EXPECT_EQ(s.types.at("jsonrpc_router_upstream_in_flight"), "gauge");
    EXPECT_EQ(s.sum("jsonrpc_router_upstream_in_flight"), 0);
    EXPECT_EQ(s.value("jsonrpc_router_requests_total", {{"transport", "http"}}), http_requests);
    EXPECT_EQ(s.value("jsonrpc_router_requests_total", {{"transport", "ws"}}), 3);
    for (const std::string& route : {cached, slow, plain, late, pool, std::string("unrouted")}) {
        for (const std::string transport : {"http", "ws"}) {
            EXPECT_EQ(s.value("jsonrpc_router_calls_total", {{"route", route}, {"transport", transport}}),
                      (calls[{route, transport}]))
                << route << " " << transport;
        }
    }
    for (const std::string& route : {cached, slow, plain, late, pool}) {
        for (const std::string result : {"hit", "miss", "coalesced"}) {
            EXPECT_EQ(s.value("jsonrpc_router_cache_total", {{"route", route}, {"result", result}}),
                      (cache[{route, result}]))
                << route << " " << result;
        }
    }
    // Upstream requests: b got the misses, the uncached calls and the bad
    // answer; t one timeout; p2 its answers before the kill and 3 failures.
    auto upstream = [&](const std::string& target, const std::string& url) {
        return s.value("jsonrpc_router_upstream_duration_seconds_count", {{"target", target}, {"url", url}});
    };
    auto errors = [&](const std::string& target, const std::string& url, const std::string& error) {
        return s.value("jsonrpc_router_upstream_errors_total", {{"target", target}, {"url", url}, {"error", error}});
    };
    EXPECT_EQ(upstream("b", b.http_url()), b.stats().second);
    EXPECT_EQ(upstream("t", t.http_url()), 1);
    EXPECT_EQ(errors("t", t.http_url(), "timeout"), 1);
    EXPECT_EQ(errors("b", b.http_url(), "bad_answer"), 1);
    EXPECT_EQ(s.sum("jsonrpc_router_upstream_errors_total", {{"target", "b"}}), 1);
    EXPECT_EQ(upstream("pool", p1.http_url()), p1.stats().second);
    EXPECT_EQ(upstream("pool", p2.http_url()), p2_served + 3);
    EXPECT_EQ(errors("pool", p2.http_url(), "unavailable"), 3);
    EXPECT_EQ(s.sum("jsonrpc_router_upstream_errors_total", {{"url", p1.http_url()}}), 0);
    EXPECT_EQ(s.value("jsonrpc_router_url_in", {{"target", "pool"}, {"url", p1.http_url()}}), 1);
    // Single-URL targets that are not chain nodes have no health.
    EXPECT_FALSE(s.value("jsonrpc_router_url_in", {{"target", "b"}, {"url", b.http_url()}}));
    // The timeout took 0.5 s or more: above the 0.25 s bucket.
    EXPECT_EQ(s.value("jsonrpc_router_upstream_duration_seconds_bucket",
                      {{"target", "t"}, {"url", t.http_url()}, {"le", "0.250000"}}), 0);
    EXPECT_EQ(s.value("jsonrpc_router_redis_errors_total"), 0);
    EXPECT_EQ(last_text.find("client_chosen_method_name"), std::string::npos) << "a client's method became a label";

    // A reload with the same routes and targets keeps counting where it was.
    auto shutdowns = [&] {
        std::string log = read_file(nginx->error_log());
        std::size_t n = 0;
        for (std::size_t at = log.find("gracefully shutting down"); at != std::string::npos;
             at = log.find("gracefully shutting down", at + 1)) {
            ++n;
        }
        return n;
    };
    const std::size_t before_reload = shutdowns();
    nginx->reload();
    ASSERT_TRUE(wait_until([&] { return shutdowns() >= before_reload + kWorkers; })) << "the old workers did not stop";
    EXPECT_EQ(scrape().value("jsonrpc_router_requests_total", {{"transport", "http"}}), http_requests);

    // Redis goes away: a lookup fails and is counted.
    redis.stop();
    EXPECT_EQ(text_at(parse_json(post(rpc("cached.get", "[2]")).body).get(), "result.backend"), "b");
    EXPECT_GE(scrape().value("jsonrpc_router_redis_errors_total"), 1);
}
