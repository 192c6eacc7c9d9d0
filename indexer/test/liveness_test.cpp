// The liveness endpoint's answers (decisions.md section 4), without a server.
#include <gtest/gtest.h>

#include "liveness.hpp"
#include "wallet/json_util.hpp"

namespace wallet::indexer {
namespace {

JsonPtr body_of(const std::pair<int, std::string>& answer) {
    auto parsed = json::parse(answer.second);
    EXPECT_TRUE(parsed) << answer.second;
    return parsed ? std::move(parsed).value() : JsonPtr();
}

ChainHead head(std::int64_t block, std::optional<std::int64_t> lib) {
    return ChainHead{block, "00000000", Timestamp::from_seconds(1'700'000'000).value(), lib};
}

TEST(IndexerLiveness, HealthyWhileProgressingWithFigures) {
    Liveness liveness(std::chrono::hours(1));
    liveness.record_head(head(120, 100));
    liveness.record_batch(98, 10, 40, 38, false);
    const auto answer = liveness.health();
    EXPECT_EQ(answer.first, 200);
    JsonPtr body = body_of(answer);
    EXPECT_TRUE(json_is_true(json_object_get(body.get(), "ok")));
    EXPECT_EQ(json_integer_value(json_object_get(body.get(), "indexed_block")), 98);
    EXPECT_EQ(json_integer_value(json_object_get(body.get(), "head_block")), 120);
    EXPECT_EQ(json_integer_value(json_object_get(body.get(), "lag_blocks")), 22);
    EXPECT_TRUE(json_is_integer(json_object_get(body.get(), "ms_since_progress")));
    EXPECT_EQ(json_object_get(body.get(), "reason"), nullptr);
}

TEST(IndexerLiveness, UnhealthyAfterTheStallBoundWithTheProblemAsReason) {
    Liveness liveness(std::chrono::milliseconds(0));
    liveness.record_head(head(120, std::nullopt));
    liveness.record_problem("the node reports no last irreversible block; not advancing");
    const auto answer = liveness.health();
    EXPECT_EQ(answer.first, 503);
    JsonPtr body = body_of(answer);
    EXPECT_TRUE(json_is_false(json_object_get(body.get(), "ok")));
    const std::string reason = json_string_value(json_object_get(body.get(), "reason"));
    EXPECT_NE(reason.find("no progress for"), std::string::npos) << reason;
    EXPECT_NE(reason.find("no last irreversible block"), std::string::npos) << reason;
    EXPECT_TRUE(json_is_null(json_object_get(body.get(), "last_irreversible_block")));
    EXPECT_FALSE(liveness.healthy());
}

TEST(IndexerLiveness, HaltIsUnhealthyAtOnce) {
    Liveness liveness(std::chrono::hours(1));
    liveness.record_caught_up(50);
    EXPECT_TRUE(liveness.healthy());
    liveness.halt("fork deeper than INDEXER_MAX_FORK_DEPTH=25");
    const auto answer = liveness.health();
    EXPECT_EQ(answer.first, 503);
    JsonPtr body = body_of(answer);
    EXPECT_STREQ(json_string_value(json_object_get(body.get(), "reason")), "fork deeper than INDEXER_MAX_FORK_DEPTH=25");
    EXPECT_STREQ(json_string_value(json_object_get(body.get(), "state")), "halted");
}

TEST(IndexerLiveness, MetricsArePrometheusText) {
    Liveness liveness(std::chrono::hours(1));
    liveness.record_head(head(120, 100));
    liveness.record_batch(98, 10, 40, 38, false);
    liveness.record_fork(3);
    NodeClientStats stats;
    stats.calls = 7;
    stats.failures[static_cast<int>(NodeFailure::Timeout)] = 2;
    liveness.set_node_stats(stats);
    const std::string text = liveness.metrics();
    for (const char* line : {"wallet_indexer_indexed_block 98\n", "wallet_indexer_head_block 120\n", "wallet_indexer_healthy 1\n",
                             "wallet_indexer_blocks_indexed_total 10\n", "wallet_indexer_rows_inserted_total 38\n",
                             "wallet_indexer_forks_total 1\n", "wallet_indexer_deepest_fork_blocks 3\n",
                             "wallet_indexer_node_calls_total 7\n", "wallet_indexer_node_failures_total{kind=\"timeout\"} 2\n",
                             "# TYPE wallet_indexer_events_total counter\n"}) {
        EXPECT_NE(text.find(line), std::string::npos) << line;
    }
}

TEST(IndexerLiveness, OnlyGetOfTheTwoPaths) {
    Liveness liveness(std::chrono::hours(1));
    HttpRequest request;
    HttpResponse response;
    request.method = "POST";
    request.target = "/health";
    liveness.handle(request, response);
    EXPECT_EQ(response.status, 405);
    request.method = "GET";
    request.target = "/other";
    response = HttpResponse{};
    liveness.handle(request, response);
    EXPECT_EQ(response.status, 404);
    request.target = "/metrics";
    response = HttpResponse{};
    liveness.handle(request, response);
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.content_type, "text/plain; version=0.0.4");
}

}  // namespace
}  // namespace wallet::indexer
