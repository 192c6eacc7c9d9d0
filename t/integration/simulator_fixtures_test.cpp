// The simulator on the real-data chain answers every recorded hived request
// of t/fixtures/hive/hived-mainnet-5m with the recorded answer.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "harness/node_sim.hpp"
#include "json_writer.hpp"

using namespace harness;

namespace {

struct FixtureRequest {
    std::string file;
    std::string method;
    std::string params;  // JSON text, empty when the request had none
};

// The requests of manifest.json whose method matches, hived-mainnet-5m only.
std::vector<FixtureRequest> fixture_requests(const std::function<bool(const std::string&)>& wanted) {
    std::string text = read_file(fixtures_dir() / "manifest.json");
    json_error_t error;
    // The manifest holds uint64 filters beyond int64: the simulator's lenient parser.
    wallet::JsonPtr manifest = wallet::json_own(sim::parse_json(text, &error));
    if (!manifest) throw std::runtime_error(std::string("manifest.json: ") + error.text);
    std::vector<FixtureRequest> out;
    for (std::size_t i = 0; i < json_array_size(manifest.get()); ++i) {
        const json_t* entry = json_array_get(manifest.get(), i);
        std::string file = json_string_value(json_object_get(entry, "file"));
        const json_t* method = json_object_get(entry, "request_method");
        if (!file.starts_with("hived-mainnet-5m/") || !json_is_string(method) || !wanted(json_string_value(method)))
            continue;
        const json_t* params = json_object_get(entry, "request_params");
        out.push_back(
            {file, json_string_value(method), params == nullptr || json_is_null(params) ? "" : json_text(params)});
    }
    return out;
}

bool is_error_pattern(const json_t* pattern) {
    return json_is_object(pattern) && json_object_size(pattern) == 2 && json_object_get(pattern, "code") &&
           json_object_get(pattern, "message");
}

// An account-history result without the node-local sequence numbers.
wallet::JsonPtr without_sequence_numbers(const json_t* result) {
    const json_t* list = json_is_object(result) ? json_object_get(result, "history") : result;
    wallet::JsonPtr entries = wallet::json_own(json_array());
    for (std::size_t i = 0; i < json_array_size(list); ++i)
        json_array_append(entries.get(), json_array_get(json_array_get(list, i), 1));
    return entries;
}

class SimulatorOnRealData : public ::testing::Test {
protected:
    static void SetUpTestSuite() { node_ = std::make_unique<NodeSimulator>(NodeSimulator::real_chain_args()); }
    static void TearDownTestSuite() { node_.reset(); }

    // Replays the requests; returns how many matched. `compare` gets (pattern, result).
    static void replay(const std::vector<FixtureRequest>& requests,
                       const std::function<bool(const json_t*, const json_t*)>& compare = json_equal_values) {
        for (const auto& request : requests) {
            wallet::JsonPtr pattern = parse_json(read_file(fixtures_dir() / request.file));
            wallet::JsonPtr response = node_->call(request.method, request.params);
            const json_t* result = json_object_get(response.get(), "result");
            if (is_error_pattern(pattern.get())) {
                const json_t* error = json_object_get(response.get(), "error");
                ASSERT_NE(error, nullptr) << request.file << ": " << json_text(response.get());
                EXPECT_TRUE(json_equal(json_object_get(error, "code"), json_object_get(pattern.get(), "code")))
                    << request.file << ": " << json_text(error);
                EXPECT_TRUE(json_equal(json_object_get(error, "message"), json_object_get(pattern.get(), "message")))
                    << request.file << ": " << json_text(error);
                continue;
            }
            ASSERT_NE(result, nullptr) << request.file << ": " << json_text(response.get());
            EXPECT_TRUE(compare(pattern.get(), result))
                << request.file << " " << request.method << " " << request.params << "\nexpected "
                << json_text(pattern.get()).substr(0, 2000) << "\ngot      " << json_text(result).substr(0, 2000);
        }
    }
    static bool json_equal_values(const json_t* expected, const json_t* actual) {
        return json_equal(expected, actual) != 0;
    }

    static std::unique_ptr<NodeSimulator> node_;
};

std::unique_ptr<NodeSimulator> SimulatorOnRealData::node_;

}  // namespace

TEST_F(SimulatorOnRealData, EveryGetOpsInBlockFixtureInBothForms) {
    auto requests = fixture_requests([](const std::string& method) { return method.ends_with(".get_ops_in_block"); });
    std::set<std::string> apis;
    for (const auto& request : requests) apis.insert(request.method);
    EXPECT_EQ(apis, (std::set<std::string>{"account_history_api.get_ops_in_block", "condenser_api.get_ops_in_block"}));
    EXPECT_GE(requests.size(), 44u);  // 22 blocks in two forms, plus edge cases
    replay(requests);
}

TEST_F(SimulatorOnRealData, EveryGetAccountHistoryFixtureButTheSequenceNumbers) {
    auto requests =
        fixture_requests([](const std::string& method) { return method.ends_with(".get_account_history"); });
    EXPECT_GE(requests.size(), 100u);
    replay(requests, [](const json_t* expected, const json_t* actual) {
        return json_equal(without_sequence_numbers(expected).get(), without_sequence_numbers(actual).get()) != 0;
    });
}

TEST_F(SimulatorOnRealData, BlockHeadersBlocksRangesAndGlobalProperties) {
    auto requests = fixture_requests([](const std::string& method) {
        return method.ends_with(".get_block_header") || method.ends_with(".get_block") ||
               method == "block_api.get_block_range" || method.ends_with(".get_dynamic_global_properties");
    });
    EXPECT_GE(requests.size(), 30u);
    replay(requests);
}

TEST_F(SimulatorOnRealData, LoadsEveryFixtureWithoutConflicts) {
    wallet::JsonPtr status = parse_json(node_->status());
    const json_t* chain = json_object_get(status.get(), "real_chain");
    ASSERT_NE(chain, nullptr) << node_->status();
    // The same operation read from several files is the same operation.
    EXPECT_EQ(json_integer_value(json_object_get(chain, "body_conflicts")), 0);
    EXPECT_EQ(json_integer_value(json_object_get(chain, "unplaced_history_entries")), 0);
    EXPECT_GT(json_integer_value(json_object_get(chain, "ops")), 7000);
    EXPECT_EQ(json_integer_value(json_object_get(status.get(), "head")), 5000000);
    EXPECT_EQ(json_integer_value(json_object_get(status.get(), "last_irreversible_block_num")), 4999980);
}

TEST_F(SimulatorOnRealData, BlockIdsChainThroughKnownAndSynthesizedBlocks) {
    // 999,990 .. 1,000,009 crosses from blocks whose id only a header knows
    // into the recorded range starting at 1,000,000.
    for (std::uint32_t block : {2u, 999990u, 1000000u, 1000999u, 1001000u, 4999999u}) {
        wallet::JsonPtr here =
            node_->call("block_api.get_block_header", "{\"block_num\":" + std::to_string(block) + "}");
        // Appended, not "[" + ...: GCC 12 -Wrestrict false positive at -O3 (bug 105329).
        std::string next_params(1, '[');
        next_params += std::to_string(block + 1);
        next_params += ']';
        wallet::JsonPtr next = node_->call("condenser_api.get_block_header", next_params);
        std::string previous_of_next =
            json_string_value(json_object_get(json_object_get(next.get(), "result"), "previous"));
        char expected_prefix[9];
        std::snprintf(expected_prefix, sizeof expected_prefix, "%08x", block);
        EXPECT_EQ(previous_of_next.substr(0, 8), expected_prefix) << block;
        // The id of N (previous of N+1) is what get_block_range reports for N.
        wallet::JsonPtr range = node_->call("block_api.get_block_range",
                                            "{\"starting_block_num\":" + std::to_string(block) + ",\"count\":2}");
        const json_t* blocks = json_object_get(json_object_get(range.get(), "result"), "blocks");
        ASSERT_EQ(json_array_size(blocks), 2u);
        EXPECT_EQ(std::string(json_string_value(json_object_get(json_array_get(blocks, 0), "block_id"))),
                  previous_of_next);
        EXPECT_EQ(std::string(json_string_value(json_object_get(json_array_get(blocks, 1), "previous"))),
                  previous_of_next);
        ASSERT_NE(json_object_get(here.get(), "result"), nullptr);
    }
    // The head's id is the fixtures' head_block_id.
    wallet::JsonPtr properties = node_->call("database_api.get_dynamic_global_properties", "{}");
    EXPECT_EQ(
        std::string(json_string_value(json_object_get(json_object_get(properties.get(), "result"), "head_block_id"))),
        "004c4b40245ffb07380a393fb2b3d841b76cdaec");
}

TEST_F(SimulatorOnRealData, BlocksWithoutKnownOperationsAreEmptyAndTimesStepByThreeSeconds) {
    wallet::JsonPtr empty = node_->call("condenser_api.get_ops_in_block", "[4999000,false]");
    EXPECT_EQ(json_array_size(json_object_get(empty.get(), "result")), 0u);
    // 639,639 is known (2016-04-16T06:45:18); the next blocks follow 3 s apart.
    wallet::JsonPtr header = node_->call("condenser_api.get_block_header", "[639641]");
    EXPECT_EQ(std::string(json_string_value(json_object_get(json_object_get(header.get(), "result"), "timestamp"))),
              "2016-04-16T06:45:24");
}
