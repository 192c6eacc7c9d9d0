// The simulator's proxy personalities (--proxy) and pool-member views
// (--head-offset, --history-lag), as README.md "Proxy personalities" states
// them: each refusal byte for byte where a client depends on it.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "harness/harness.hpp"
#include "harness/node_sim.hpp"

using namespace harness;

namespace {

std::vector<std::string> synthetic(std::vector<std::string> more) {
    std::vector<std::string> args = {"--synthetic", "--seed", "42", "--length", "1000", "--block-interval-ms", "0"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// A batch of `count` condenser get_ops_in_block calls from block 1.
std::string ops_batch(int count) {
    std::string body = "[";
    for (int i = 0; i < count; ++i) {
        body += (i > 0 ? "," : "") + std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(i) +
                R"(,"method":"condenser_api.get_ops_in_block","params":[)" + std::to_string(i + 1) + ",false]}";
    }
    return body + "]";
}

std::int64_t status_number(const std::string& status, const std::string& key) {
    const auto at = status.find("\"" + key + "\":");
    if (at == std::string::npos) return -1;
    return std::stoll(status.substr(at + key.size() + 3));
}

}  // namespace

TEST(SimulatorProxies, DroneRefusesBatchesOverOneHundredWithHttp500AndItsBody) {
    NodeSimulator sim(synthetic({"--proxy", "drone"}));
    EXPECT_EQ(sim.rpc(ops_batch(100)).status, 200);
    const auto refused = sim.rpc(ops_batch(101));
    EXPECT_EQ(refused.status, 500);
    EXPECT_EQ(refused.body,
              R"({"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"Request parameter error.",)"
              R"("error":"Batch size too large, maximum allowed is 100."}})");
    EXPECT_EQ(status_number(sim.status(), "batches_refused"), 1);
}

TEST(SimulatorProxies, JussiRefusesBatchesOverFiftyWithError1600) {
    NodeSimulator sim(synthetic({"--proxy", "jussi"}));
    EXPECT_EQ(sim.rpc(ops_batch(50)).status, 200);
    const auto refused = sim.rpc(ops_batch(51));
    EXPECT_EQ(refused.status, 200);
    auto body = parse_json(refused.body);
    ASSERT_TRUE(json_is_object(body.get())) << refused.body;
    EXPECT_TRUE(json_is_null(json_object_get(body.get(), "id")));
    const json_t* error = json_object_get(body.get(), "error");
    EXPECT_EQ(json_integer_value(json_object_get(error, "code")), 1600);
    EXPECT_STREQ(json_string_value(json_object_get(error, "message")), "JSONRPC batch size of 51 exceeds 50");
}

TEST(SimulatorProxies, CaddyAnswers429WithRetryAfterPerAddressAndCountsEarlyRetries) {
    NodeSimulator sim(synthetic({"--proxy", "caddy", "--rate-limit", "3", "--rate-window-ms", "60000"}));
    const std::string call = R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})";
    for (int i = 0; i < 3; ++i) EXPECT_EQ(sim.rpc(call).status, 200);
    const auto limited = sim.rpc(call);
    EXPECT_EQ(limited.status, 429);
    ASSERT_EQ(limited.headers.count("retry-after"), 1u);
    EXPECT_GE(std::stoi(limited.headers.at("retry-after")), 59);
    // Asked again at once, before the Retry-After: hammering, counted.
    EXPECT_EQ(sim.rpc(call).status, 429);
    const std::string status = sim.status();
    EXPECT_EQ(status_number(status, "rate_limited"), 2) << status;
    EXPECT_EQ(status_number(status, "rate_limited_before_retry_after"), 1) << status;
}

TEST(SimulatorProxies, DroneCachesReversibleHeadersButNeverBlockRanges) {
    NodeSimulator sim(synthetic({"--proxy", "drone", "--lib-lag", "20"}));
    const std::string header = R"({"jsonrpc":"2.0","id":1,"method":"block_api.get_block_header","params":{"block_num":995}})";
    const std::string range =
        R"({"jsonrpc":"2.0","id":1,"method":"block_api.get_block_range","params":{"starting_block_num":995,"count":1}})";
    const auto before_header = sim.rpc(header).body;
    const auto before_range = sim.rpc(range).body;
    sim.control(R"({"fork": 10})");
    // Within 9 s the cache still answers the replaced block's header; the range shows the fork.
    EXPECT_EQ(sim.rpc(header).body, before_header);
    EXPECT_NE(sim.rpc(range).body, before_range);
    EXPECT_GE(status_number(sim.status(), "cache_hits"), 1);
}

TEST(SimulatorProxies, BareHivedClosesTheConnectionAfterEveryAnswer) {
    NodeSimulator sim(synthetic({"--proxy", "none"}));
    const auto answer = sim.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})");
    EXPECT_EQ(answer.status, 200);
    ASSERT_EQ(answer.headers.count("connection"), 1u);
    EXPECT_EQ(answer.headers.at("connection"), "close");
}

TEST(SimulatorProxies, PoolMembersHaveTheirOwnHeadAndALaggingHistory) {
    NodeSimulator lagging(synthetic({"--head-offset", "-100", "--history-lag", "30"}));
    auto props = lagging.call("database_api.get_dynamic_global_properties", "{}");
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(props.get(), "result"), "head_block_number")), 900);
    // Its block_api has block 880, its history does not yet: an empty list, not an error.
    auto header = lagging.call("block_api.get_block_header", R"({"block_num":880})");
    EXPECT_NE(json_object_get(json_object_get(header.get(), "result"), "header"), nullptr);
    auto ops = lagging.call("account_history_api.get_ops_in_block", R"({"block_num":880,"only_virtual":false,"include_reversible":true})");
    EXPECT_EQ(json_array_size(json_object_get(json_object_get(ops.get(), "result"), "ops")), 0u);
    auto older = lagging.call("account_history_api.get_ops_in_block", R"({"block_num":860,"only_virtual":false,"include_reversible":true})");
    EXPECT_GT(json_array_size(json_object_get(json_object_get(older.get(), "result"), "ops")), 0u);
}

// /sim/status counts the JSON-RPC requests being handled and their most at
// once (what a router's upstream bound must keep low); reset_peak starts the
// peak over from the requests in flight.
TEST(SimulatorProxies, StatusCountsConcurrentRequestsAndTheirPeak) {
    NodeSimulator sim(synthetic({"--call-latency-ms", "2000"}));
    const std::string call = R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})";
    std::vector<std::future<long>> calls;
    for (int i = 0; i < 3; ++i) calls.push_back(std::async(std::launch::async, [&] { return sim.rpc(call).status; }));
    EXPECT_TRUE(wait_until([&] { return status_number(sim.status(), "rpc_in_flight") == 3; }));
    for (auto& c : calls) EXPECT_EQ(c.get(), 200);
    const std::string status = sim.status();
    EXPECT_EQ(status_number(status, "rpc_in_flight"), 0) << status;
    EXPECT_EQ(status_number(status, "rpc_in_flight_peak"), 3) << status;
    EXPECT_EQ(status_number(sim.control(R"({"reset_peak": true})"), "rpc_in_flight_peak"), 0);
}
