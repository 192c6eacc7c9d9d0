// The metrics cores without nginx: counters laid out per routing table,
// histograms, and the exact exposition text they render.
#include <gtest/gtest.h>

#include <vector>

#include "api_metrics.hpp"
#include "metrics_text.hpp"
#include "router_metrics.hpp"

namespace {

router::RoutingTable small_table() {
    auto table = router::parse_routing_table(
        R"({"targets":{"a":"http://h:1","p":["http://h:2","http://h:3"]},
            "routes":{"^x\\.":{"target":"a","cache":5},"^y":{"target":"p"}}})",
        "t.json");
    EXPECT_TRUE(table) << table.error();
    return std::move(table).value();
}

}  // namespace

TEST(MetricsText, HistogramBucketsAreCumulativeWithSumAndCount) {
    metrics::Histogram h;
    h.observe(500);      // <= 1 ms
    h.observe(1000);     // <= 1 ms (bounds are inclusive)
    h.observe(30000);    // <= 50 ms
    h.observe(20000000); // +Inf
    metrics::TextWriter out;
    out.histogram("d_seconds", {{"k", "a\"b\\c\nd"}}, h);
    const std::string& text = out.text();
    EXPECT_NE(text.find("d_seconds_bucket{k=\"a\\\"b\\\\c\\nd\",le=\"0.001000\"} 2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("le=\"0.025000\"} 2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("le=\"0.050000\"} 3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("le=\"10.000000\"} 3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("le=\"+Inf\"} 4\n"), std::string::npos) << text;
    EXPECT_NE(text.find("d_seconds_sum{k=\"a\\\"b\\\\c\\nd\"} 20.031500\n"), std::string::npos) << text;
    EXPECT_NE(text.find("d_seconds_count{k=\"a\\\"b\\\\c\\nd\"} 4\n"), std::string::npos) << text;
    EXPECT_EQ(h.count(), 4u);
}

TEST(RouterMetricsCore, CountersPerRouteAndUrlRenderEachFamilyOnce) {
    router::RoutingTable table = small_table();
    std::vector<std::max_align_t> memory(router::RouterMetrics::bytes_for(table) / sizeof(std::max_align_t) + 1);
    router::RouterMetrics m = router::RouterMetrics::construct(memory.data(), table);
    m.count_call(&table.routes[0], router::ClientTransport::Http);
    m.count_call(&table.routes[0], router::ClientTransport::WebSocket);
    m.count_call(nullptr, router::ClientTransport::Http);
    metrics::add(m.route(0).cache[static_cast<std::size_t>(router::CacheResult::Coalesced)], 3);
    m.url(2).latency.observe(2000);
    metrics::add(m.url(2).errors[static_cast<std::size_t>(router::UpstreamError::Timeout)]);
    metrics::add(m.head().redis_errors);
    metrics::add(m.url(1).in_flight, 2);
    metrics::add(m.head().limited[static_cast<std::size_t>(router::Limit::ClientCalls)], 5);

    metrics::TextWriter out;
    router::write_router_metrics(out, {router::RouterScrape{&table, router::RouterMetrics::attach(memory.data(), table),
                                                            {-1, 1, 0}}});
    const std::string& text = out.text();
    auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
    EXPECT_TRUE(has("# TYPE jsonrpc_router_calls_total counter")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_calls_total{route="unrouted",transport="http"} 1)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_calls_total{route="^x\\.",transport="http"} 1)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_calls_total{route="^x\\.",transport="ws"} 1)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_calls_total{route="^y",transport="http"} 0)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_cache_total{route="^x\\.",result="coalesced"} 3)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_upstream_duration_seconds_count{target="p",url="http://h:3"} 1)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_upstream_errors_total{target="p",url="http://h:3",error="timeout"} 1)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_url_in{target="p",url="http://h:2"} 1)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_url_in{target="p",url="http://h:3"} 0)")) << text;
    EXPECT_EQ(text.find(R"(jsonrpc_router_url_in{target="a")"), std::string::npos) << "a target without health";
    EXPECT_TRUE(has("jsonrpc_router_redis_errors_total 1")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_upstream_in_flight{target="p",url="http://h:2"} 2)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_upstream_in_flight{target="a",url="http://h:1"} 0)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_limited_total{limit="client_calls"} 5)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_limited_total{limit="client_connections"} 0)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_limited_total{limit="client_response"} 0)")) << text;
    EXPECT_TRUE(has("# TYPE jsonrpc_router_ws_output_bytes gauge")) << text;
    EXPECT_TRUE(has("jsonrpc_router_ws_output_bytes 0")) << text;
    EXPECT_TRUE(has("jsonrpc_router_ws_output_peak_bytes 0")) << text;
    std::size_t types = 0;
    for (std::size_t at = text.find("# TYPE"); at != std::string::npos; at = text.find("# TYPE", at + 1)) ++types;
    EXPECT_EQ(types, 13u);
}

TEST(RouterMetricsCore, ChainNodesBlocksAsTheirLastPollReported) {
    auto table = router::parse_routing_table(
        R"({"targets":{"a":"http://h:1","n":["http://h:2","http://h:3","http://h:4"]},
            "chain-nodes":{"n":{}},"routes":{"^x":{"target":"n"},"^y":{"target":"a"}}})",
        "t.json");
    ASSERT_TRUE(table) << table.error();
    std::vector<std::max_align_t> memory(router::RouterMetrics::bytes_for(*table) / sizeof(std::max_align_t) + 1);
    router::RouterMetrics m = router::RouterMetrics::construct(memory.data(), *table);
    metrics::TextWriter out;
    // h:4 never answered a poll: no sample rather than a block 0.
    router::write_router_metrics(out, {router::RouterScrape{&*table, m, {-1, 1, 0, 1}, {0, 5000000, 4999990, 0},
                                                            {0, 4999980, 4999970, 0}}});
    const std::string& text = out.text();
    auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
    EXPECT_TRUE(has("# TYPE jsonrpc_router_url_head_block gauge")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_url_head_block{target="n",url="http://h:2"} 5000000)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_url_head_block{target="n",url="http://h:3"} 4999990)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_url_irreversible_block{target="n",url="http://h:2"} 4999980)")) << text;
    EXPECT_TRUE(has(R"(jsonrpc_router_url_irreversible_block{target="n",url="http://h:3"} 4999970)")) << text;
    EXPECT_EQ(text.find(R"(_block{target="n",url="http://h:4"})"), std::string::npos) << text;
    EXPECT_EQ(text.find(R"(_block{target="a")"), std::string::npos) << "not a chain node";
}

TEST(ApiMetricsCore, MethodsAreTheApisOwnNamesOrUnknown) {
    wallet::api::ApiCounters counters;
    counters.record(wallet::api::Method::GetStatus, wallet::api::Outcome::Ok, metrics::monotonic_us());
    counters.record(std::nullopt, wallet::api::outcome_of_error(-32601), metrics::monotonic_us());
    metrics::TextWriter out;
    wallet::api::write_api_metrics(out, counters);
    const std::string& text = out.text();
    EXPECT_NE(text.find("wallet_history_requests_total{method=\"wallet_history.get_status\",outcome=\"ok\"} 1\n"),
              std::string::npos) << text;
    EXPECT_NE(text.find("wallet_history_requests_total{method=\"unknown\",outcome=\"method_not_found\"} 1\n"),
              std::string::npos) << text;
    EXPECT_NE(text.find("wallet_history_request_duration_seconds_count{method=\"unknown\"} 1\n"), std::string::npos);
}
