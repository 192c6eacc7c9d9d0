// Operation types beyond spec 000's 15 (issue 17, docs/operations.md) are
// opt-in: get_wallet_history answers exactly the spec's types unless asked
// with op_types or scope "all", and get_reward_totals adds producer_reward
// only under scope "all".
#include "support/api_support.hpp"

using namespace api_test;

namespace {

constexpr const char* kWitness = "witness.one";

// A witness's history: producer rewards (opt-in) between transfers (spec),
// and a market fill against its own order (roles taker and maker).
std::vector<EventRow> witness_rows() {
    std::vector<EventRow> rows;
    for (int i = 0; i < 6; ++i) {
        EventRow produced;
        produced.block_num = 1000 + 10 * i;
        produced.trx_in_block = 4294967295LL;
        produced.virtual_op = 1;
        produced.block_seq = 3;
        produced.account = kWitness;
        produced.role = "owner";
        produced.op_type = "producer_reward";
        produced.timestamp = "2021-01-01T00:0" + std::to_string(i) + ":00Z";
        produced.vesting_amount = std::to_string(400 + i) + ".123456";
        produced.vesting_symbol = "VESTS";
        produced.assets = R"([{"field": "vesting_shares", "amount": ")" + *produced.vesting_amount +
                          R"(", "symbol": "VESTS"}])";
        rows.push_back(produced);

        EventRow sent;
        sent.block_num = 1005 + 10 * i;
        sent.trx_in_block = 1;
        sent.block_seq = 1;
        sent.account = kWitness;
        sent.role = "sender";
        sent.op_type = "transfer";
        sent.trx_id = "0e4bf604dfa68169b01dd537901ebf7bd775470" + std::to_string(i);
        sent.timestamp = "2021-01-01T00:0" + std::to_string(i) + ":15Z";
        sent.amount = "1.00" + std::to_string(i);
        sent.symbol = "HBD";
        sent.counterparty = "someone";
        sent.assets = R"([{"field": "amount", "amount": ")" + *sent.amount + R"(", "symbol": "HBD"}])";
        rows.push_back(sent);
    }
    EventRow fill;
    fill.block_num = 1100;
    fill.trx_in_block = 4294967295LL;
    fill.virtual_op = 1;
    fill.block_seq = 7;
    fill.account = kWitness;
    fill.op_type = "fill_order";
    fill.timestamp = "2021-01-01T00:09:00Z";
    fill.amount = "2.000";
    fill.symbol = "HIVE";
    fill.counterparty = kWitness;
    fill.assets = R"([{"field": "current_pays", "amount": "2.000", "symbol": "HIVE"}, )"
                  R"({"field": "open_pays", "amount": "0.500", "symbol": "HBD"}])";
    EventRow taker = fill;
    taker.role = "taker";
    EventRow maker = fill;
    maker.role = "maker";
    rows.push_back(taker);
    rows.push_back(maker);
    return rows;
}

class ApiScope : public ::testing::Test {
protected:
    void SetUp() override {
        insert_events(stack.settings(), witness_rows());
        stack.set_checkpoint(2000, "2021-01-02T00:00:00Z");
        stack.start_nginx();
    }

    // The op_type of every item of every page of a walk, newest first.
    std::vector<std::string> walk(const std::string& params_head, int limit) {
        std::vector<std::string> types;
        std::string cursor;
        for (int page = 0; page < 50; ++page) {
            JsonPtr result = stack.result("wallet_history.get_wallet_history",
                                          "{" + params_head + R"(,"limit":)" + std::to_string(limit) +
                                              (cursor.empty() ? "" : R"(,"cursor":")" + cursor + "\"") + "}");
            json_t* items = json_object_get(result.get(), "items");
            EXPECT_TRUE(json_is_array(items)) << dump(result.get());
            std::size_t index = 0;
            json_t* item = nullptr;
            json_array_foreach(items, index, item) {
                types.push_back(std::string(json_string_value(json_object_get(item, "op_type"))) + "/" +
                                json_string_value(json_object_get(item, "role")));
            }
            json_t* next = json_object_get(result.get(), "next_cursor");
            if (!json_is_string(next)) return types;
            cursor = json_string_value(next);
        }
        ADD_FAILURE() << "walk did not end";
        return types;
    }

    ApiStack stack;
};

std::vector<std::string> repeated(const std::vector<std::string>& pattern, int times) {
    std::vector<std::string> out;
    for (int i = 0; i < times; ++i) out.insert(out.end(), pattern.begin(), pattern.end());
    return out;
}

TEST_F(ApiScope, DefaultPagesHoldOnlySpecTypesAndScopeAllHoldsEveryType) {
    const std::string who = R"("account":")" + std::string(kWitness) + "\"";
    EXPECT_EQ(walk(who, 2), repeated({"transfer/sender"}, 6));
    EXPECT_EQ(walk(who + R"(,"scope":"wallet")", 4), repeated({"transfer/sender"}, 6));
    std::vector<std::string> all = {"fill_order/taker", "fill_order/maker"};
    const auto pairs = repeated({"transfer/sender", "producer_reward/owner"}, 6);
    all.insert(all.end(), pairs.begin(), pairs.end());
    EXPECT_EQ(walk(who + R"(,"scope":"all")", 3), all);
    EXPECT_EQ(walk(who + R"(,"scope":"all")", 200), all);
    EXPECT_EQ(walk(who + R"(,"op_types":["producer_reward"])", 4), repeated({"producer_reward/owner"}, 6));
    EXPECT_EQ(walk(who + R"(,"op_types":["fill_order","transfer"])", 5),
              (std::vector<std::string>{"fill_order/taker", "fill_order/maker", "transfer/sender", "transfer/sender",
                                        "transfer/sender", "transfer/sender", "transfer/sender", "transfer/sender"}));
}

TEST_F(ApiScope, ACursorOfOneScopeIsRefusedInTheOther) {
    JsonPtr first = stack.result("wallet_history.get_wallet_history",
                                 R"({"account":"witness.one","limit":1})");
    const std::string cursor = json_string_value(json_object_get(first.get(), "next_cursor"));
    auto refused = parse_json(stack.post(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history",)"
                                         R"("params":{"account":"witness.one","scope":"all","cursor":")" +
                                         cursor + R"("}})")
                                  .body);
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(refused.get(), "error"), "code")), -32602)
        << dump(refused.get());
    auto bad = parse_json(stack.post(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history",)"
                                     R"("params":{"account":"witness.one","scope":"everything"}})")
                              .body);
    EXPECT_EQ(dump(json_object_get(bad.get(), "error")), R"({"code":-32602,"message":"invalid scope"})");
}

TEST_F(ApiScope, ProducerRewardTotalsOnlyUnderScopeAll) {
    JsonPtr plain = stack.result("wallet_history.get_reward_totals", R"({"account":"witness.one"})");
    EXPECT_EQ(json_object_get(json_object_get(plain.get(), "totals"), "producer_reward"), nullptr) << dump(plain.get());
    JsonPtr all = stack.result("wallet_history.get_reward_totals", R"({"account":"witness.one","scope":"all"})");
    EXPECT_EQ(dump(json_object_get(json_object_get(all.get(), "totals"), "producer_reward")),
              R"({"count":6,"liquid":[],"vesting_amount":"2415.740736","vesting_symbol":"VESTS"})");
    // A window inside the history sums its raw rows (no whole day in it).
    JsonPtr window = stack.result("wallet_history.get_reward_totals",
                                  R"({"account":"witness.one","scope":"all","from":"2021-01-01T00:01:00Z",)"
                                  R"("to":"2021-01-01T00:03:00Z"})");
    EXPECT_EQ(dump(json_object_get(json_object_get(window.get(), "totals"), "producer_reward")),
              R"({"count":2,"liquid":[],"vesting_amount":"803.246912","vesting_symbol":"VESTS"})");
}

TEST_F(ApiScope, MethodsListDefaultAndOptInTypesAndRoles) {
    JsonPtr methods = stack.result("wallet_history.get_methods");
    json_t* types = json_object_get(methods.get(), "op_types");
    EXPECT_EQ(json_array_size(json_object_get(types, "default")), 15u) << dump(methods.get());
    const std::string opt_in = dump(json_object_get(types, "opt_in"));
    EXPECT_NE(opt_in.find("\"producer_reward\""), std::string::npos) << opt_in;
    EXPECT_NE(opt_in.find("\"fill_order\""), std::string::npos) << opt_in;
    EXPECT_EQ(opt_in.find("\"transfer\""), std::string::npos) << opt_in;
    EXPECT_EQ(dump(json_object_get(methods.get(), "roles")),
              R"(["author","beneficiary","curator","delegatee","delegator","maker","owner","receiver","sender","taker"])");
}

}  // namespace
