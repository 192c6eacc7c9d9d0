// The simulator's controls and faults, its JSON-RPC envelope handling, and the
// synthetic chain as served over HTTP.
#include <gtest/gtest.h>

#include <map>

#include "harness/node_sim.hpp"
#include "wallet/decoder.hpp"

using namespace harness;

namespace {

// A synthetic chain whose head moves only on command.
std::vector<std::string> synthetic(std::uint32_t length, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--synthetic",         "--seed", "42", "--length", std::to_string(length),
                                     "--block-interval-ms", "0"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

json_int_t integer_at(const json_t* object, const char* key) {
    return json_integer_value(json_object_get(object, key));
}
std::string string_at(const json_t* object, const char* key) {
    const json_t* value = json_object_get(object, key);
    return json_is_string(value) ? json_string_value(value) : std::string();
}
const json_t* result_of(const wallet::JsonPtr& response) { return json_object_get(response.get(), "result"); }

json_int_t head_of(const NodeSimulator& node) {
    return integer_at(result_of(node.call("condenser_api.get_dynamic_global_properties", "[]")), "head_block_number");
}
json_int_t lib_of(const NodeSimulator& node) {
    return integer_at(result_of(node.call("database_api.get_dynamic_global_properties", "{}")),
                      "last_irreversible_block_num");
}
std::string id_of(const NodeSimulator& node, json_int_t block) {
    wallet::JsonPtr range =
        node.call("block_api.get_block_range", "{\"starting_block_num\":" + std::to_string(block) + ",\"count\":1}");
    return string_at(json_array_get(json_object_get(result_of(range), "blocks"), 0), "block_id");
}
// get_ops_in_block, NAI form, maybe with include_reversible.
wallet::JsonPtr nai_ops(const NodeSimulator& node, json_int_t block, const char* extra = "") {
    return node.call("account_history_api.get_ops_in_block", "{\"block_num\":" + std::to_string(block) + extra + "}");
}
std::size_t nai_op_count(const NodeSimulator& node, json_int_t block, const char* extra = "") {
    return json_array_size(json_object_get(result_of(nai_ops(node, block, extra)), "ops"));
}
std::string batch_of_ops(json_int_t first, json_int_t count, bool condenser) {
    std::string body = "[";
    for (json_int_t n = first; n < first + count; ++n) {
        if (n != first) body += ",";
        body += "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(n) + ",";
        body +=
            condenser
                ? "\"method\":\"condenser_api.get_ops_in_block\",\"params\":[" + std::to_string(n) + ",false]}"
                : "\"method\":\"account_history_api.get_ops_in_block\",\"params\":{\"block_num\":" + std::to_string(n) +
                      "}}";
    }
    return body + "]";
}

}  // namespace

TEST(SimulatorControl, HeadAdvancesOnCommandAndWithTheClock) {
    NodeSimulator node(synthetic(1000));
    EXPECT_EQ(head_of(node), 1000);
    node.control(R"({"advance":5})");
    EXPECT_EQ(head_of(node), 1005);
    node.control(R"({"head":2000})");
    EXPECT_EQ(head_of(node), 2000);
    // A real-time head: one block per 50 ms here.
    node.control(R"({"block_interval_ms":50})");
    EXPECT_TRUE(wait_until([&] { return head_of(node) >= 2003; }, 20s));
    node.control(R"({"block_interval_ms":0})");
    json_int_t frozen = head_of(node);
    node.control(R"({"advance":1})");
    EXPECT_EQ(head_of(node), frozen + 1);
    // New blocks are served: ids and headers exist up to the head and not beyond.
    EXPECT_EQ(id_of(node, frozen + 1).substr(0, 8), [&] {
        char hex[9];
        std::snprintf(hex, sizeof hex, "%08llx", static_cast<unsigned long long>(frozen + 1));
        return std::string(hex);
    }());
    wallet::JsonPtr beyond =
        node.call("block_api.get_block_header", "{\"block_num\":" + std::to_string(frozen + 2) + "}");
    EXPECT_EQ(json_object_size(result_of(beyond)), 0u);
    EXPECT_THROW(node.control(R"({"advance":-1})"), std::runtime_error);
}

TEST(SimulatorControl, IrreversibilityLagAndReversibleBlocks) {
    NodeSimulator node(synthetic(3000, {"--lib-lag", "10"}));
    EXPECT_EQ(lib_of(node), 2990);
    // Above the last irreversible block: [] in the condenser form, {"ops":[]}
    // in the NAI form unless include_reversible.
    wallet::JsonPtr reversible = node.call("condenser_api.get_ops_in_block", "[2995,false]");
    EXPECT_EQ(json_array_size(result_of(reversible)), 0u);
    EXPECT_EQ(nai_op_count(node, 2995), 0u);
    EXPECT_GT(nai_op_count(node, 2995, ",\"include_reversible\":true"), 0u);
    EXPECT_GT(nai_op_count(node, 2990), 0u);
    // Beyond the head nothing, whatever the flag.
    EXPECT_EQ(nai_op_count(node, 3001, ",\"include_reversible\":true"), 0u);
    node.control(R"({"lib_lag":0})");
    EXPECT_EQ(lib_of(node), 3000);
    wallet::JsonPtr now_irreversible = node.call("condenser_api.get_ops_in_block", "[2995,false]");
    EXPECT_GT(json_array_size(result_of(now_irreversible)), 0u);
}

TEST(SimulatorControl, NoIrreversibleBlockMode) {
    NodeSimulator node(synthetic(500, {"--no-irreversible"}));
    EXPECT_EQ(lib_of(node), 0);
    EXPECT_EQ(json_array_size(result_of(node.call("condenser_api.get_ops_in_block", "[10,false]"))), 0u);
    node.control(R"({"irreversible":true,"lib_lag":2})");
    EXPECT_EQ(lib_of(node), 498);
    node.control(R"({"irreversible":false})");
    EXPECT_EQ(lib_of(node), 0);
    EXPECT_EQ(head_of(node), 500);
}

TEST(SimulatorControl, ForkReplacesTheLastBlocksAndKeepsTheEarlierOnes) {
    NodeSimulator node(synthetic(800, {"--lib-lag", "0"}));
    std::map<json_int_t, std::string> ids_before;
    std::map<json_int_t, std::string> ops_before;
    for (json_int_t block = 790; block <= 800; ++block) {
        ids_before[block] = id_of(node, block);
        ops_before[block] = json_text(result_of(nai_ops(node, block)));
    }
    node.control(R"({"fork":3})");
    EXPECT_EQ(head_of(node), 800);
    for (json_int_t block = 790; block <= 800; ++block) {
        std::string ops_now = json_text(result_of(nai_ops(node, block)));
        if (block <= 797) {
            EXPECT_EQ(id_of(node, block), ids_before[block]) << block;
            EXPECT_EQ(ops_now, ops_before[block]) << block;
        } else {
            EXPECT_NE(id_of(node, block), ids_before[block]) << block;
            EXPECT_EQ(id_of(node, block).substr(0, 8), ids_before[block].substr(0, 8)) << block;
            EXPECT_NE(ops_now, ops_before[block]) << block;
        }
    }
    // The new branch hangs off the old block 797.
    wallet::JsonPtr header = node.call("condenser_api.get_block_header", "[798]");
    EXPECT_EQ(string_at(result_of(header), "previous"), ids_before[797]);
    // The head keeps growing on the new branch.
    node.control(R"({"advance":2})");
    wallet::JsonPtr next = node.call("condenser_api.get_block_header", "[801]");
    EXPECT_EQ(string_at(result_of(next), "previous"), id_of(node, 800));
    wallet::JsonPtr properties = node.call("database_api.get_dynamic_global_properties", "{}");
    EXPECT_EQ(string_at(result_of(properties), "head_block_id"), id_of(node, 802));
}

TEST(SimulatorFaults, Http500And503ThenBackToNormal) {
    NodeSimulator node(synthetic(100));
    node.control(R"({"faults":{"rate":1.0,"kinds":["http_503"],"count":1}})");
    HttpResponse failed =
        node.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})");
    EXPECT_EQ(failed.status, 503);
    HttpResponse ok =
        node.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})");
    EXPECT_EQ(ok.status, 200);
    node.control(R"({"faults":{"rate":1.0,"kinds":["http_500"],"count":1}})");
    EXPECT_EQ(node.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[5]})").status,
              500);
    wallet::JsonPtr status = parse_json(node.status());
    EXPECT_EQ(integer_at(status.get(), "faults_injected"), 2);
}

TEST(SimulatorFaults, RpcErrorHitsTheRequestOrOneElementOfABatch) {
    NodeSimulator node(synthetic(100));
    node.control(R"({"faults":{"rate":1.0,"kinds":["rpc_error"],"count":2}})");
    wallet::JsonPtr single = node.call("condenser_api.get_ops_in_block", "[5,false]");
    EXPECT_EQ(integer_at(json_object_get(single.get(), "error"), "code"), -32003);
    HttpResponse batch = node.rpc(batch_of_ops(1, 10, true));
    ASSERT_EQ(batch.status, 200);
    wallet::JsonPtr answers = parse_json(batch.body);
    ASSERT_EQ(json_array_size(answers.get()), 10u);
    int errors = 0;
    for (std::size_t i = 0; i < 10; ++i) {
        const json_t* answer = json_array_get(answers.get(), i);
        EXPECT_EQ(integer_at(answer, "id"), static_cast<json_int_t>(i + 1));
        errors += json_object_get(answer, "error") != nullptr ? 1 : 0;
    }
    EXPECT_EQ(errors, 1);
}

TEST(SimulatorFaults, TruncatedAndMalformedBodies) {
    NodeSimulator node(synthetic(100));
    const std::string request = batch_of_ops(1, 5, false);
    node.control(R"({"faults":{"rate":1.0,"kinds":["truncated"],"count":1}})");
    HttpResponse truncated = node.rpc(request);
    EXPECT_FALSE(truncated.error.empty());  // fewer bytes than Content-Length announced
    node.control(R"({"faults":{"rate":1.0,"kinds":["malformed"],"count":1}})");
    HttpResponse malformed = node.rpc(request);
    ASSERT_TRUE(malformed.error.empty()) << malformed.error;
    EXPECT_EQ(malformed.status, 200);
    EXPECT_THROW(parse_json(malformed.body), std::runtime_error);
    HttpResponse normal = node.rpc(request);
    EXPECT_NO_THROW(parse_json(normal.body));
}

TEST(SimulatorFaults, OversizedResponseIsValidJsonBeyondTheCap) {
    NodeSimulator node(synthetic(100));
    node.control(R"({"faults":{"rate":1.0,"kinds":["oversized"],"count":1,"oversize_bytes":1000000}})");
    HttpResponse oversized =
        node.rpc(R"({"jsonrpc":"2.0","id":7,"method":"condenser_api.get_ops_in_block","params":[3,false]})");
    EXPECT_GT(oversized.body.size(), 1000000u);
    wallet::JsonPtr parsed = parse_json(oversized.body);
    EXPECT_GT(json_array_size(result_of(parsed)), 0u);
    HttpResponse normal =
        node.rpc(R"({"jsonrpc":"2.0","id":7,"method":"condenser_api.get_ops_in_block","params":[3,false]})");
    EXPECT_LT(normal.body.size(), 1000000u);
}

TEST(SimulatorFaults, WrongBlockReturnsTheOpsOfAnotherBlock) {
    NodeSimulator node(synthetic(100));
    node.control(R"({"faults":{"rate":1.0,"kinds":["wrong_block"],"count":1}})");
    wallet::JsonPtr wrong = nai_ops(node, 50);
    const json_t* ops = json_object_get(result_of(wrong), "ops");
    ASSERT_GT(json_array_size(ops), 0u);
    EXPECT_NE(integer_at(json_array_get(ops, 0), "block"), 50);
    wallet::JsonPtr right = nai_ops(node, 50);
    EXPECT_EQ(integer_at(json_array_get(json_object_get(result_of(right), "ops"), 0), "block"), 50);
}

TEST(SimulatorFaults, DelayAndHangOutlastTheClientsTimeout) {
    NodeSimulator node(synthetic(100));
    const std::string request =
        R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[3,false]})";
    node.control(R"({"faults":{"rate":1.0,"kinds":["delay"],"count":1,"delay_ms":5000}})");
    HttpResponse delayed = http_request("POST", node.url(), request, {"Content-Type: application/json"}, 300ms);
    EXPECT_FALSE(delayed.error.empty());
    node.control(R"({"faults":{"rate":1.0,"kinds":["hang"],"count":1,"hang_ms":600000}})");
    HttpResponse hung = http_request("POST", node.url(), request, {"Content-Type: application/json"}, 300ms);
    EXPECT_FALSE(hung.error.empty());
    HttpResponse normal = http_request("POST", node.url(), request, {"Content-Type: application/json"}, 10s);
    EXPECT_TRUE(normal.error.empty()) << normal.error;
    EXPECT_EQ(normal.status, 200);
    // A delay shorter than the timeout only slows the answer down.
    node.control(R"({"faults":{"rate":1.0,"kinds":["delay"],"count":1,"delay_ms":50}})");
    HttpResponse slow = http_request("POST", node.url(), request, {"Content-Type: application/json"}, 10s);
    EXPECT_EQ(slow.status, 200);
    EXPECT_NO_THROW(parse_json(slow.body));
}

TEST(SimulatorFaults, ShareAndScheduleAreDeterministicAndMethodsCanBeChosen) {
    auto schedule = [](const NodeSimulator& node) {
        std::string failed;
        for (int i = 0; i < 60; ++i)
            failed +=
                node.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[2]})").status ==
                        500
                    ? 'x'
                    : '.';
        return failed;
    };
    std::vector<std::string> faulty = {"--fault-rate", "0.3", "--fault-kinds", "http_500", "--fault-seed", "77"};
    NodeSimulator first(synthetic(100, faulty));
    NodeSimulator second(synthetic(100, faulty));
    std::string a = schedule(first);
    EXPECT_EQ(a, schedule(second));
    auto failures = std::count(a.begin(), a.end(), 'x');
    EXPECT_GT(failures, 5);
    EXPECT_LT(failures, 40);
    // Only the chosen method fails.
    first.control(R"({"faults":{"rate":1.0,"kinds":["http_500"],"methods":["condenser_api.get_ops_in_block"]}})");
    EXPECT_EQ(
        first.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})")
            .status,
        200);
    EXPECT_EQ(first.rpc(R"({"jsonrpc":"2.0","id":1,"method":"call","params":["condenser_api","get_ops_in_block",[2]]})")
                  .status,
              500);
    first.control(R"({"faults":null})");
    EXPECT_EQ(first.rpc(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[2]})").status,
              200);
}

TEST(SimulatorRpc, ErrorObjectsAsHivedGivesThem) {
    NodeSimulator node(synthetic(100));
    auto error_of = [&](const std::string& body) {
        HttpResponse response = node.rpc(body);
        EXPECT_EQ(response.status, 200);
        wallet::JsonPtr parsed = parse_json(response.body);
        const json_t* error = json_object_get(parsed.get(), "error");
        return std::make_pair(integer_at(error, "code"), string_at(error, "message"));
    };
    EXPECT_EQ(
        error_of(R"({"jsonrpc":"2.0","id":1,"method":"nosuch_api.get_x","params":[]})"),
        std::make_pair(
            json_int_t{-32002},
            std::string("Assert Exception:api_itr != data._registered_apis.end(): Could not find API nosuch_api")));
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_nothing","params":[]})").second,
              "Assert Exception:method_itr != api_itr->second.end(): Could not find method get_nothing");
    EXPECT_EQ(
        error_of(
            R"({"jsonrpc":"2.0","id":1,"method":"account_history_api.get_ops_in_block","params":{"block_num":"5x5"}})"),
        std::make_pair(json_int_t{-32000}, std::string("Parse Error:Couldn't parse uint64_t")));
    EXPECT_EQ(
        error_of(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[1,"maybe"]})").second,
        "Bad Cast:Cannot convert string to bool (only \"true\" or \"false\" can be converted)");
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[1,false,3]})"),
              std::make_pair(
                  json_int_t{-32003},
                  std::string("Assert Exception:args.size() == 1 || args.size() == 2: Expected 1-2 arguments, was 3")));
    EXPECT_EQ(
        error_of(
            R"({"jsonrpc":"2.0","id":1,"method":"block_api.get_block_range","params":{"starting_block_num":1,"count":1001}})")
            .first,
        -32003);
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"call"})").first, -32001);
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"call","params":["condenser_api"]})").first, -32002);
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"get_block"})").first, -32002);
    EXPECT_EQ(error_of(R"({"id":1,"method":"condenser_api.get_block","params":[1]})").first, -32600);
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":null,"method":"condenser_api.get_block","params":[1]})").first, -32600);
    EXPECT_EQ(error_of(R"([])").second, "Array is invalid");
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0",)").first, -32000);
    EXPECT_EQ(
        error_of(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_account_history","params":["gtg",-1,5000]})")
            .second,
        "Assert Exception:args.limit <= 1000: limit of 5000 is greater than maxmimum allowed");
    EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_account_history","params":["gtg",5,10]})")
                  .second,
              "Assert Exception:args.start >= args.limit-1: start must be greater than or equal to limit-1 (start is "
              "0-based index)");
    // The id comes back as sent.
    wallet::JsonPtr ok = parse_json(
        node.rpc(R"({"jsonrpc":"2.0","id":"abc","method":"condenser_api.get_block_header","params":[1]})").body);
    EXPECT_EQ(string_at(ok.get(), "id"), "abc");
}

TEST(SimulatorRpc, CallFormAndBatchesGiveTheDottedAnswers) {
    NodeSimulator node(synthetic(300));
    wallet::JsonPtr dotted = node.call("condenser_api.get_ops_in_block", "[120,false]");
    wallet::JsonPtr legacy_call = node.call("call", R"(["condenser_api","get_ops_in_block",[120,false]])");
    EXPECT_TRUE(json_equal(result_of(dotted), result_of(legacy_call)));
    wallet::JsonPtr named = node.call("call", R"(["account_history_api","get_ops_in_block",{"block_num":120}])");
    EXPECT_TRUE(json_equal(result_of(named),
                           result_of(node.call("account_history_api.get_ops_in_block", "{\"block_num\":120}"))));
    // A batch answers each element in order, mixing methods and errors.
    HttpResponse batch = node.rpc(
        R"([{"jsonrpc":"2.0","id":1,"method":"condenser_api.get_ops_in_block","params":[120,false]},)"
        R"({"jsonrpc":"2.0","id":2,"method":"nosuch.method","params":[]},)"
        R"({"jsonrpc":"2.0","id":3,"method":"call","params":["database_api","get_dynamic_global_properties",{}]}])");
    wallet::JsonPtr answers = parse_json(batch.body);
    ASSERT_EQ(json_array_size(answers.get()), 3u);
    EXPECT_TRUE(json_equal(result_of(dotted), json_object_get(json_array_get(answers.get(), 0), "result")));
    EXPECT_NE(json_object_get(json_array_get(answers.get(), 1), "error"), nullptr);
    EXPECT_EQ(integer_at(json_object_get(json_array_get(answers.get(), 2), "result"), "head_block_number"), 300);
}

TEST(SimulatorChain, ProcessesWithTheSameSeedServeByteIdenticalBlocks) {
    NodeSimulator first(synthetic(5000));
    NodeSimulator second(synthetic(5000));
    NodeSimulator other({"--synthetic", "--seed", "43", "--length", "5000", "--block-interval-ms", "0"});
    for (bool condenser : {true, false}) {
        std::string request = batch_of_ops(4000, 50, condenser);
        std::string a = first.rpc(request).body;
        EXPECT_EQ(a, second.rpc(request).body);
        EXPECT_NE(a, other.rpc(request).body);
    }
    std::string range =
        R"({"jsonrpc":"2.0","id":1,"method":"block_api.get_block_range","params":{"starting_block_num":100,"count":20}})";
    EXPECT_EQ(first.rpc(range).body, second.rpc(range).body);
}

TEST(SimulatorChain, APoolSharingAnEpochSharesTheHead) {
    // Both started "100 s ago" at block 1000, one block per second since.
    auto epoch = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()) -
                 std::chrono::seconds(100);
    std::vector<std::string> args = {"--synthetic", "--seed",  "42",
                                     "--length",    "1000",    "--block-interval-ms",
                                     "1000",        "--epoch", std::to_string(epoch.count())};
    NodeSimulator first(args);
    NodeSimulator second(args);
    json_int_t a = head_of(first);
    json_int_t b = head_of(second);
    EXPECT_GE(a, 1100);
    EXPECT_LE(std::abs(a - b), 1);
    json_int_t common = std::min(a, b);
    EXPECT_EQ(id_of(first, common), id_of(second, common));
}

TEST(SimulatorChain, FarBlocksAreServedAndDoNotDependOnTheLength) {
    NodeSimulator short_chain(synthetic(90000000));
    NodeSimulator long_chain(synthetic(95000000));
    std::string request = batch_of_ops(89999990, 5, false);
    std::string a = short_chain.rpc(request).body;
    EXPECT_EQ(a, long_chain.rpc(request).body);
    wallet::JsonPtr ops = parse_json(a);
    EXPECT_GT(json_array_size(json_object_get(result_of(wallet::json_ref(json_array_get(ops.get(), 0))), "ops")), 0u);
    EXPECT_EQ(id_of(short_chain, 90000000), id_of(long_chain, 90000000));
    wallet::JsonPtr header = short_chain.call("condenser_api.get_block_header", "[90000000]");
    EXPECT_EQ(string_at(result_of(header), "timestamp"), "2024-10-13T16:00:00");  // genesis + 3 s each
}

TEST(SimulatorChain, EveryWalletOperationTypeAndPathologicalBlocksOverHttp) {
    NodeSimulator node(synthetic(3000, {"--pathological-every", "1000"}));
    std::map<std::string, std::size_t> seen;
    std::map<json_int_t, std::size_t> virtual_ops_per_block;
    for (json_int_t first = 1; first < 1600; first += 100) {
        wallet::JsonPtr answers = parse_json(node.rpc(batch_of_ops(first, 100, true)).body);
        for (std::size_t i = 0; i < json_array_size(answers.get()); ++i) {
            const json_t* ops = json_object_get(json_array_get(answers.get(), i), "result");
            for (std::size_t k = 0; k < json_array_size(ops); ++k) {
                const json_t* op = json_array_get(ops, k);
                ++seen[json_string_value(json_array_get(json_object_get(op, "op"), 0))];
                if (json_is_true(json_object_get(op, "virtual_op"))) ++virtual_ops_per_block[integer_at(op, "block")];
            }
        }
    }
    for (const std::string_view type : wallet::spec_wallet_operation_types()) EXPECT_GT(seen[std::string(type)], 0u) << type;
    for (const char* type : {"producer_reward", "fill_order", "limit_order_create", "limit_order_cancelled", "convert",
                             "fill_convert_request", "claim_account", "account_created", "fill_recurrent_transfer", "proposal_pay"}) {
        EXPECT_GT(seen[type], 0u) << type;
    }
    EXPECT_GT(virtual_ops_per_block[500], 3000u);
    EXPECT_GT(virtual_ops_per_block[1500], 3000u);
    EXPECT_LT(virtual_ops_per_block[1000], 500u);
}

TEST(SimulatorChain, LegacyNamingOverHttp) {
    NodeSimulator node(
        {"--synthetic", "--seed", "42", "--length", "400", "--block-interval-ms", "0", "--naming", "legacy"});
    std::string text = node.rpc(batch_of_ops(100, 100, true)).body;
    EXPECT_NE(text.find("\"comment_author\":"), std::string::npos);
    EXPECT_NE(text.find(" SBD\""), std::string::npos);
    EXPECT_EQ(text.find(" HIVE\""), std::string::npos);
    EXPECT_EQ(text.find("\"virtual_op\":true"), std::string::npos);
    wallet::JsonPtr properties = node.call("condenser_api.get_dynamic_global_properties", "[]");
    EXPECT_NE(json_object_get(result_of(properties), "current_sbd_supply"), nullptr);
    EXPECT_EQ(json_object_get(result_of(properties), "current_hbd_supply"), nullptr);
}

TEST(SimulatorChain, AccountHistoryPagingOnTheSyntheticChain) {
    NodeSimulator node(synthetic(3000));
    // A busy account: the producer of block 100.
    std::string account = string_at(result_of(node.call("condenser_api.get_block_header", "[100]")), "witness");
    wallet::JsonPtr newest = node.call("condenser_api.get_account_history", "[\"" + account + "\",-1,50]");
    const json_t* page = result_of(newest);
    ASSERT_EQ(json_array_size(page), 50u);
    // Ascending, ending at the newest entry.
    json_int_t last_seq = json_integer_value(json_array_get(json_array_get(page, 49), 0));
    for (std::size_t i = 1; i < 50; ++i)
        EXPECT_EQ(json_integer_value(json_array_get(json_array_get(page, i), 0)),
                  json_integer_value(json_array_get(json_array_get(page, i - 1), 0)) + 1);
    // Paging backwards covers the whole history exactly once.
    std::vector<json_int_t> seqs;
    json_int_t start = -1;
    std::size_t limit = 100;
    while (true) {
        wallet::JsonPtr response = node.call("account_history_api.get_account_history",
                                             "{\"account\":\"" + account + "\",\"start\":" + std::to_string(start) +
                                                 ",\"limit\":" + std::to_string(limit) + "}");
        const json_t* history = json_object_get(result_of(response), "history");
        ASSERT_GT(json_array_size(history), 0u);
        for (std::size_t i = json_array_size(history); i-- > 0;)
            seqs.push_back(json_integer_value(json_array_get(json_array_get(history, i), 0)));
        json_int_t first = json_integer_value(json_array_get(json_array_get(history, 0), 0));
        if (first == 0) break;
        start = first - 1;
        limit = static_cast<std::size_t>(std::min<json_int_t>(100, start + 1));
    }
    EXPECT_EQ(seqs.front(), last_seq);
    EXPECT_EQ(static_cast<json_int_t>(seqs.size()), last_seq + 1);
    // Filters: producer_reward only (id 64, bit 0 of the high mask).
    wallet::JsonPtr rewards = node.call("condenser_api.get_account_history", "[\"" + account + "\",-1,20,0,1]");
    ASSERT_GT(json_array_size(result_of(rewards)), 0u);
    for (std::size_t i = 0; i < json_array_size(result_of(rewards)); ++i)
        EXPECT_EQ(std::string(json_string_value(json_array_get(
                      json_object_get(json_array_get(json_array_get(result_of(rewards), i), 1), "op"), 0))),
                  "producer_reward");
    // Both masks zero: nothing.
    wallet::JsonPtr none =
        node.call("account_history_api.get_account_history",
                  "{\"account\":\"" + account + "\",\"operation_filter_low\":0,\"operation_filter_high\":0}");
    EXPECT_EQ(json_array_size(json_object_get(result_of(none), "history")), 0u);
}

TEST(SimulatorChain, BlockRangesGiveIdsInBulk) {
    NodeSimulator node(synthetic(2500));
    wallet::JsonPtr range = node.call("block_api.get_block_range", R"({"starting_block_num":1500,"count":1000})");
    const json_t* blocks = json_object_get(result_of(range), "blocks");
    ASSERT_EQ(json_array_size(blocks), 1000u);
    for (std::size_t i = 1; i < 1000; ++i) {
        const json_t* block = json_array_get(blocks, i);
        EXPECT_EQ(string_at(block, "previous"), string_at(json_array_get(blocks, i - 1), "block_id"));
        EXPECT_EQ(json_array_size(json_object_get(block, "transactions")),
                  json_array_size(json_object_get(block, "transaction_ids")));
    }
    // Past the head the list is shorter.
    wallet::JsonPtr tail = node.call("block_api.get_block_range", R"({"starting_block_num":2490,"count":100})");
    EXPECT_EQ(json_array_size(json_object_get(result_of(tail), "blocks")), 11u);
}
