// Every fault the node simulator injects: the node client recognizes it and
// retries (one fault, then the answer), gives up with a clear error when it
// persists, and the daemon indexing through a node that keeps failing on a
// share of its requests ends with the table of a clean index.
#include <gtest/gtest.h>

#include "indexer_support.hpp"

using namespace indexer_test;

namespace {

constexpr std::int64_t kChainLength = 200;
constexpr const char* kSeed = "21";
// Normal answers of this chain stay well below it; "oversized" ones exceed it.
constexpr std::int64_t kMaxResponseBytes = 8'000'000;

struct FaultCase {
    const char* kind;
    wallet::NodeFailure seen_as;  // None: not a failure (a slow answer)
};

void PrintTo(const FaultCase& c, std::ostream* out) { *out << c.kind; }
std::string case_name(const ::testing::TestParamInfo<FaultCase>& info) { return info.param.kind; }

std::vector<std::string> simulator_args(const char* kind, const std::string& rate) {
    return {"--synthetic", "--seed", kSeed, "--length", std::to_string(kChainLength), "--block-interval-ms", "0",
            "--fault-rate", rate, "--fault-kinds", kind, "--fault-seed", "7", "--fault-delay-ms", "150",
            "--fault-hang-ms", "4000", "--fault-oversize-bytes", std::to_string(kMaxResponseBytes)};
}

wallet::NodeClient client_of(const Simulator& sim, int attempts) {
    wallet::NodeClientOptions options;
    options.url = sim.url();
    options.timeout = std::chrono::milliseconds(1000);
    options.max_response_bytes = kMaxResponseBytes;
    options.max_attempts = attempts;
    options.initial_backoff = std::chrono::milliseconds(10);
    auto client = wallet::NodeClient::create(options);
    if (!client) throw std::runtime_error(client.error());
    return std::move(client).value();
}

PostgresServer& shared_postgres() {
    static PostgresServer server;
    return server;
}

// The clean index of the chain every case indexes, made once.
const std::vector<std::string>& reference_rows() {
    static const std::vector<std::string> rows = [] {
        Simulator sim({"--synthetic", "--seed", kSeed, "--length", std::to_string(kChainLength), "--block-interval-ms", "0"});
        index_reference(shared_postgres(), "reference", sim.url(), 1, kChainLength - 3, wallet::OpsForm::Condenser);
        return table_rows(shared_postgres(), "reference");
    }();
    return rows;
}

class IndexerFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(IndexerFault, NodeClientRetriesOneFaultAndNamesAPersistentOne) {
    const FaultCase& c = GetParam();
    {
        Simulator sim(simulator_args(c.kind, "0"));
        sim.control(std::string(R"({"faults":{"rate":1,"kinds":[")") + c.kind +
                    R"("],"count":1,"delay_ms":150,"hang_ms":4000,"oversize_bytes":)" + std::to_string(kMaxResponseBytes) + "}}");
        auto client = client_of(sim, 4);
        // The node's head given: the fault hits the batch, not a head query.
        auto blocks = client.get_ops_in_blocks(10, 19, wallet::OpsForm::Condenser, kChainLength - 1);
        ASSERT_TRUE(blocks) << blocks.error();
        ASSERT_EQ(blocks->size(), 10u);
        EXPECT_EQ(blocks->front().block_num, 10);
        if (c.seen_as != wallet::NodeFailure::None) {
            EXPECT_EQ(client.stats().failures[static_cast<int>(c.seen_as)], 1u) << c.kind;
            // A timed-out batch is not sent again whole: its two halves are.
            EXPECT_EQ(client.stats().attempts, c.seen_as == wallet::NodeFailure::Timeout ? 3u : 2u);
        }
    }
    if (c.seen_as == wallet::NodeFailure::None) return;  // a slow answer is still an answer
    Simulator sim(simulator_args(c.kind, "1"));
    auto client = client_of(sim, 2);
    auto blocks = client.get_ops_in_blocks(10, 19, wallet::OpsForm::AccountHistory, kChainLength);
    ASSERT_FALSE(blocks);
    EXPECT_NE(blocks.error().find("failed after 2 attempts"), std::string::npos) << blocks.error();
    EXPECT_EQ(client.last_failure(), c.seen_as) << blocks.error();
}

TEST_P(IndexerFault, DaemonIndexesThroughAFaultyNodeToTheCleanTable) {
    const FaultCase& c = GetParam();
    const auto& expected = reference_rows();
    PostgresServer& pg = shared_postgres();
    const std::string database = std::string("faults_") + c.kind;
    pg.provision(database);
    auto args = simulator_args(c.kind, "0.15");
    if (c.seen_as == wallet::NodeFailure::WrongAnswer) {
        // A wrong block only shows in an answer that carries blocks: the
        // faults go to those, and the seed makes the first batch meet one.
        args.insert(args.end(), {"--fault-methods",
                                 "condenser_api.get_ops_in_block,account_history_api.get_ops_in_block",
                                 "--fault-seed", "10"});
    }
    Simulator sim(args);
    const auto health_port = free_port();
    auto env = indexer_env(pg, database, sim.url(), health_port);
    env["CHAIN_RPC_TIMEOUT_MS"] = "1000";
    env["CHAIN_RPC_MAX_RESPONSE_BYTES"] = std::to_string(kMaxResponseBytes);
    env["INDEXER_MAX_BATCH_BLOCKS"] = "50";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, database, kChainLength - 3, 90s)) << indexer.log();
    const auto metrics = indexer.metrics().body;
    EXPECT_EQ(indexer.stop(SIGTERM, 5s), 0);
    expect_same_rows(table_rows(pg, database), expected);
    if (c.seen_as != wallet::NodeFailure::None) {
        const std::string counter =
            std::string("wallet_indexer_node_failures_total{kind=\"") + wallet::node_failure_name(c.seen_as) + "\"} ";
        const auto at = metrics.find(counter);
        ASSERT_NE(at, std::string::npos) << metrics;
        EXPECT_NE(metrics.substr(at + counter.size(), 2), "0\n") << "no " << c.kind << " fault was met";
    }
}

INSTANTIATE_TEST_SUITE_P(Kinds, IndexerFault,
                         ::testing::Values(FaultCase{"delay", wallet::NodeFailure::None},
                                           FaultCase{"hang", wallet::NodeFailure::Timeout},
                                           FaultCase{"http_500", wallet::NodeFailure::HttpStatus},
                                           FaultCase{"http_503", wallet::NodeFailure::HttpStatus},
                                           FaultCase{"rpc_error", wallet::NodeFailure::RpcError},
                                           FaultCase{"truncated", wallet::NodeFailure::Malformed},
                                           FaultCase{"malformed", wallet::NodeFailure::Malformed},
                                           FaultCase{"oversized", wallet::NodeFailure::Oversized},
                                           FaultCase{"wrong_block", wallet::NodeFailure::WrongAnswer}),
                         case_name);

}  // namespace

// A pathological payout block (2.6 MB here) among ordinary ones: a batch
// answer over CHAIN_RPC_MAX_RESPONSE_BYTES is read again in halves.
TEST(IndexerResponseCap, ABatchOverTheCapIsReadInHalves) {
    PostgresServer pg;
    pg.provision("capped");
    Simulator sim({"--synthetic", "--seed", "8", "--length", "300", "--block-interval-ms", "0", "--pathological-every", "200"});
    const auto health_port = free_port();
    auto env = indexer_env(pg, "capped", sim.url(), health_port);
    env["CHAIN_RPC_MAX_RESPONSE_BYTES"] = "3000000";
    IndexerDaemon indexer(env, health_port);
    indexer.start();
    ASSERT_TRUE(wait_for_checkpoint(pg, "capped", 297)) << indexer.log();
    EXPECT_EQ(indexer.stop(SIGTERM, 5s), 0);
    EXPECT_NE(indexer.log().find("exceeds CHAIN_RPC_MAX_RESPONSE_BYTES; reading them in halves"), std::string::npos);
    expect_clean_index(pg, "capped", sim.url(), 1, 297, wallet::OpsForm::Condenser);
    // The pathological block is there, whole.
    EXPECT_GT(std::stoll(pg.query("SELECT count(*) FROM wallet_operation_events WHERE block_num = 100", "capped").at(0)), 1000);
}
