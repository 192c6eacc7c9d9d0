// Every wallet_history method against real nginx and PostgreSQL, on rows that
// mirror real mainnet operations of t/fixtures/hive (hived-mainnet-5m),
// mapped as decisions.md section 2 says, checked field by field.
#include "support/api_support.hpp"

using namespace api_test;

namespace {

std::vector<EventRow> fixture_rows() {
    std::vector<EventRow> rows;
    // condenser get_account_history transfer_operation: block 4747375.
    EventRow transfer;
    transfer.block_num = 4747375;
    transfer.trx_in_block = 2;
    transfer.block_seq = 5;
    transfer.op_type = "transfer";
    transfer.trx_id = "0e4bf604dfa68169b01dd537901ebf7bd775470f";
    transfer.timestamp = "2016-09-07T00:18:18Z";
    transfer.amount = "1.372";
    transfer.symbol = "HBD";
    transfer.memo = "54ff32be-1446-4582-b2ef-43c645821a3e";
    transfer.assets = R"([{"field": "amount", "amount": "1.372", "symbol": "HBD"}])";
    EventRow sender = transfer;
    sender.account = "stealthtrader";
    sender.role = "sender";
    sender.counterparty = "blocktrades";
    EventRow receiver = transfer;
    receiver.account = "blocktrades";
    receiver.role = "receiver";
    receiver.counterparty = "stealthtrader";
    rows.push_back(sender);
    rows.push_back(receiver);

    // get_ops_in_block random10: block 4078236, curation and author rewards.
    EventRow curation;
    curation.block_num = 4078236;
    curation.trx_in_block = 4294967295LL;
    curation.op_in_trx = 2;
    curation.virtual_op = 5;
    curation.block_seq = 4;
    curation.account = "steempower";
    curation.role = "curator";
    curation.op_type = "curation_reward";
    curation.timestamp = "2016-08-14T15:28:48Z";
    curation.vesting_amount = "655.141675";
    curation.vesting_symbol = "VESTS";
    curation.author = "teego";
    curation.permlink = "steem-docker-images-roadmap";
    curation.assets = R"([{"field": "reward", "amount": "655.141675", "symbol": "VESTS"}])";
    rows.push_back(curation);

    EventRow author = curation;
    author.op_in_trx = 4;
    author.virtual_op = 7;
    author.block_seq = 6;
    author.account = "teego";
    author.role = "author";
    author.op_type = "author_reward";
    author.vesting_amount = "1103.968017";
    author.assets = R"([{"field": "hbd_payout", "amount": "0.502", "symbol": "HBD"},)"
                    R"( {"field": "hive_payout", "amount": "0.000", "symbol": "HIVE"},)"
                    R"( {"field": "vesting_payout", "amount": "1103.968017", "symbol": "VESTS"},)"
                    R"( {"field": "curators_vesting_payout", "amount": "662.380810", "symbol": "VESTS"}])";
    rows.push_back(author);

    // withdraw_vesting_operation: block 4795273 (a zero-VESTS power-down cancel).
    EventRow withdraw;
    withdraw.block_num = 4795273;
    withdraw.trx_in_block = 4;
    withdraw.block_seq = 9;
    withdraw.account = "ned";
    withdraw.role = "owner";
    withdraw.op_type = "withdraw_vesting";
    withdraw.trx_id = "65860eedd33d04ec629589587d8580a413f0ed60";
    withdraw.timestamp = "2016-09-08T16:18:54Z";
    withdraw.vesting_amount = "0.000000";
    withdraw.vesting_symbol = "VESTS";
    withdraw.assets = R"([{"field": "vesting_shares", "amount": "0.000000", "symbol": "VESTS"}])";
    rows.push_back(withdraw);

    // interest_operation: block 2893044, virtual (trx_id shown as null).
    EventRow interest;
    interest.block_num = 2893044;
    interest.trx_in_block = 2;
    interest.op_in_trx = 1;
    interest.virtual_op = 1;
    interest.block_seq = 3;
    interest.account = "xeroc";
    interest.role = "owner";
    interest.op_type = "interest";
    interest.trx_id = "f9e46925b19db80ab57f2e5824b02eae3392133a";
    interest.timestamp = "2016-07-04T03:42:24Z";
    interest.amount = "0.247";
    interest.symbol = "HBD";
    interest.assets = R"([{"field": "interest", "amount": "0.247", "symbol": "HBD"}])";
    rows.push_back(interest);

    // account_history random19: fill_vesting_withdraw, block 4420583.
    EventRow fill;
    fill.block_num = 4420583;
    fill.trx_in_block = 4294967295LL;
    fill.op_in_trx = 2;
    fill.virtual_op = 3;
    fill.block_seq = 7;
    fill.account = "bu328118";
    fill.role = "receiver";
    fill.op_type = "fill_vesting_withdraw";
    fill.timestamp = "2016-08-26T15:01:36Z";
    fill.amount = "0.026";
    fill.symbol = "HIVE";
    fill.vesting_amount = "89.319545";
    fill.vesting_symbol = "VESTS";
    fill.counterparty = "bu328118";
    fill.assets = R"([{"field": "withdrawn", "amount": "89.319545", "symbol": "VESTS"},)"
                  R"( {"field": "deposited", "amount": "0.026", "symbol": "HIVE"}])";
    rows.push_back(fill);
    return rows;
}

class ApiMethods : public ::testing::Test {
protected:
    void SetUp() override {
        insert_events(stack.settings(), fixture_rows());
        stack.set_checkpoint(4800000, "2016-09-09T00:00:00Z");
        stack.start_nginx();
    }
    ApiStack stack;
};

json_t* only_item(json_t* page) {
    json_t* items = json_object_get(page, "items");
    EXPECT_EQ(json_array_size(items), 1u) << dump(page);
    return json_array_get(items, 0);
}

const std::vector<std::string> kEventFields = {"account", "role", "op_type", "block_num", "block_seq", "trx_id",
                                               "op_in_trx", "virtual_op", "timestamp", "amount", "symbol",
                                               "vesting_amount", "vesting_symbol", "counterparty", "memo",
                                               "author", "permlink", "assets"};

void expect_exact_fields(json_t* event) {
    std::vector<std::string> keys;
    const char* key = nullptr;
    json_t* value = nullptr;
    json_object_foreach(event, key, value) keys.emplace_back(key);
    std::vector<std::string> expected = kEventFields;
    std::sort(keys.begin(), keys.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(keys, expected);
}

}  // namespace

TEST_F(ApiMethods, WalletHistoryTransferFieldByField) {
    JsonPtr page = stack.result("wallet_history.get_wallet_history", R"({"account":"stealthtrader"})");
    EXPECT_EQ(str(page.get(), "account"), "stealthtrader");
    EXPECT_TRUE(json_is_null(json_object_get(page.get(), "next_cursor")));
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(page.get(), "indexer"), "indexed_block")), 4800000);
    json_t* e = only_item(page.get());
    expect_exact_fields(e);
    EXPECT_EQ(str(e, "account"), "stealthtrader");
    EXPECT_EQ(str(e, "role"), "sender");
    EXPECT_EQ(str(e, "op_type"), "transfer");
    EXPECT_EQ(json_integer_value(json_object_get(e, "block_num")), 4747375);
    EXPECT_EQ(json_integer_value(json_object_get(e, "block_seq")), 5);
    EXPECT_EQ(str(e, "trx_id"), "0e4bf604dfa68169b01dd537901ebf7bd775470f");
    EXPECT_EQ(json_integer_value(json_object_get(e, "op_in_trx")), 0);
    EXPECT_EQ(json_integer_value(json_object_get(e, "virtual_op")), 0);
    EXPECT_EQ(str(e, "timestamp"), "2016-09-07T00:18:18Z");
    EXPECT_EQ(str(e, "amount"), "1.372");
    EXPECT_EQ(str(e, "symbol"), "HBD");
    EXPECT_TRUE(json_is_null(json_object_get(e, "vesting_amount")));
    EXPECT_TRUE(json_is_null(json_object_get(e, "vesting_symbol")));
    EXPECT_EQ(str(e, "counterparty"), "blocktrades");
    EXPECT_EQ(str(e, "memo"), "54ff32be-1446-4582-b2ef-43c645821a3e");
    EXPECT_TRUE(json_is_null(json_object_get(e, "author")));
    EXPECT_TRUE(json_is_null(json_object_get(e, "permlink")));
    EXPECT_EQ(dump(json_object_get(e, "assets")), R"([{"amount":"1.372","field":"amount","symbol":"HBD"}])");

    JsonPtr other = stack.result("wallet_history.get_wallet_history", R"({"account":"blocktrades"})");
    json_t* r = only_item(other.get());
    EXPECT_EQ(str(r, "role"), "receiver");
    EXPECT_EQ(str(r, "counterparty"), "stealthtrader");
}

TEST_F(ApiMethods, VirtualOperationsShowNullTrxIdAndExactAmounts) {
    JsonPtr interest = stack.result("wallet_history.get_wallet_history", R"({"account":"xeroc"})");
    json_t* e = only_item(interest.get());
    EXPECT_TRUE(json_is_null(json_object_get(e, "trx_id")));
    EXPECT_EQ(json_integer_value(json_object_get(e, "virtual_op")), 1);
    EXPECT_EQ(str(e, "amount"), "0.247");
    EXPECT_EQ(str(e, "symbol"), "HBD");

    JsonPtr fill = stack.result("wallet_history.get_wallet_history", R"({"account":"bu328118"})");
    e = only_item(fill.get());
    expect_exact_fields(e);
    EXPECT_EQ(str(e, "op_type"), "fill_vesting_withdraw");
    EXPECT_EQ(str(e, "amount"), "0.026");
    EXPECT_EQ(str(e, "symbol"), "HIVE");
    EXPECT_EQ(str(e, "vesting_amount"), "89.319545");
    EXPECT_EQ(str(e, "vesting_symbol"), "VESTS");
    EXPECT_EQ(str(e, "counterparty"), "bu328118");
    EXPECT_TRUE(json_is_null(json_object_get(e, "trx_id")));

    JsonPtr withdraw = stack.result("wallet_history.get_wallet_history", R"({"account":"ned"})");
    e = only_item(withdraw.get());
    EXPECT_EQ(str(e, "vesting_amount"), "0.000000");
    EXPECT_TRUE(json_is_null(json_object_get(e, "amount")));
    EXPECT_EQ(str(e, "trx_id"), "65860eedd33d04ec629589587d8580a413f0ed60");
}

TEST_F(ApiMethods, AuthorAndCurationRewards) {
    JsonPtr authors = stack.result("wallet_history.get_author_rewards", R"({"account":"teego"})");
    json_t* e = only_item(authors.get());
    expect_exact_fields(e);
    EXPECT_EQ(str(e, "op_type"), "author_reward");
    EXPECT_EQ(str(e, "role"), "author");
    EXPECT_TRUE(json_is_null(json_object_get(e, "amount")));
    EXPECT_TRUE(json_is_null(json_object_get(e, "symbol")));
    EXPECT_EQ(str(e, "vesting_amount"), "1103.968017");
    EXPECT_EQ(str(e, "vesting_symbol"), "VESTS");
    EXPECT_EQ(str(e, "author"), "teego");
    EXPECT_EQ(str(e, "permlink"), "steem-docker-images-roadmap");
    EXPECT_TRUE(json_is_null(json_object_get(e, "trx_id")));
    EXPECT_EQ(str(e, "timestamp"), "2016-08-14T15:28:48Z");
    EXPECT_EQ(json_array_size(json_object_get(e, "assets")), 4u);

    JsonPtr none = stack.result("wallet_history.get_curation_rewards", R"({"account":"teego"})");
    EXPECT_EQ(json_array_size(json_object_get(none.get(), "items")), 0u);
    EXPECT_TRUE(json_is_null(json_object_get(none.get(), "next_cursor")));
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(none.get(), "indexer"), "indexed_block")), 4800000);

    JsonPtr curations = stack.result("wallet_history.get_curation_rewards", R"({"account":"steempower"})");
    e = only_item(curations.get());
    EXPECT_EQ(str(e, "vesting_amount"), "655.141675");
    EXPECT_EQ(str(e, "author"), "teego");
    EXPECT_EQ(str(e, "role"), "curator");
}

TEST_F(ApiMethods, RewardTotalsLifetimeAndWindow) {
    JsonPtr totals = stack.result("wallet_history.get_reward_totals", R"({"account":"teego"})");
    EXPECT_EQ(str(totals.get(), "account"), "teego");
    EXPECT_EQ(json_object_get(totals.get(), "from"), nullptr);
    EXPECT_EQ(json_object_get(totals.get(), "to"), nullptr);
    json_t* t = json_object_get(totals.get(), "totals");
    EXPECT_EQ(dump(json_object_get(t, "author_reward")),
              R"({"count":1,"liquid":[{"amount":"0.502","symbol":"HBD"},{"amount":"0.000","symbol":"HIVE"}],)"
              R"("vesting_amount":"1103.968017","vesting_symbol":"VESTS"})");
    EXPECT_EQ(dump(json_object_get(t, "curation_reward")),
              R"({"count":0,"liquid":[],"vesting_amount":"0.000000","vesting_symbol":"VESTS"})");
    EXPECT_EQ(dump(json_object_get(t, "comment_benefactor_reward")),
              R"({"count":0,"liquid":[],"vesting_amount":"0.000000","vesting_symbol":"VESTS"})");
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(totals.get(), "indexer"), "indexed_block")), 4800000);

    JsonPtr window = stack.result("wallet_history.get_reward_totals",
                                  R"({"account":"steempower","from":"2016-08-14T15:28:48","to":"2016-08-14T15:28:49Z"})");
    EXPECT_EQ(str(window.get(), "from"), "2016-08-14T15:28:48Z");
    EXPECT_EQ(str(window.get(), "to"), "2016-08-14T15:28:49Z");
    json_t* c = json_object_get(json_object_get(window.get(), "totals"), "curation_reward");
    EXPECT_EQ(str(c, "vesting_amount"), "655.141675");
    EXPECT_EQ(json_integer_value(json_object_get(c, "count")), 1);

    JsonPtr before = stack.result("wallet_history.get_reward_totals",
                                  R"({"account":"steempower","to":"2016-08-14T15:28:48Z"})");
    c = json_object_get(json_object_get(before.get(), "totals"), "curation_reward");
    EXPECT_EQ(json_integer_value(json_object_get(c, "count")), 0);
}

TEST_F(ApiMethods, StatusWithAndWithoutAFreshNodeObservation) {
    JsonPtr status = stack.result("wallet_history.get_status");
    EXPECT_EQ(json_integer_value(json_object_get(status.get(), "indexed_block")), 4800000);
    EXPECT_EQ(str(status.get(), "indexed_time"), "2016-09-09T00:00:00Z");
    EXPECT_EQ(json_object_get(status.get(), "head_block"), nullptr);
    EXPECT_EQ(json_object_get(status.get(), "lag_blocks"), nullptr);
    EXPECT_TRUE(json_is_integer(json_object_get(status.get(), "lag_seconds")));

    stack.pg().query("INSERT INTO node_observation (head_block, head_block_time, last_irreversible, observed_at) "
                     "VALUES (4800020, '2016-09-09T00:01:00Z', 4800000, now())");
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(json_integer_value(json_object_get(status.get(), "head_block")), 4800020);
    EXPECT_EQ(json_integer_value(json_object_get(status.get(), "lag_blocks")), 20);
    EXPECT_EQ(json_integer_value(json_object_get(status.get(), "lag_seconds")), 60);

    // An observation older than INDEXER_HEALTH_MAX_STALL_MS: the node is not reachable.
    stack.pg().query("UPDATE node_observation SET observed_at = now() - interval '1 hour'");
    status = stack.result("wallet_history.get_status");
    EXPECT_EQ(json_object_get(status.get(), "head_block"), nullptr);
    EXPECT_EQ(json_object_get(status.get(), "lag_blocks"), nullptr);
}

TEST_F(ApiMethods, MethodsListAndHealth) {
    JsonPtr methods = stack.result("wallet_history.get_methods");
    EXPECT_EQ(dump(json_object_get(methods.get(), "methods")),
              R"(["wallet_history.get_wallet_history","wallet_history.get_author_rewards",)"
              R"("wallet_history.get_curation_rewards","wallet_history.get_reward_totals",)"
              R"("wallet_history.get_status","wallet_history.get_methods","wallet_history.get_balances",)"
              R"("wallet_history.get_balance_history","wallet_history.get_balance_aggregation","wallet_history.get_delegations"])");
    auto health = harness::http_request("GET", stack.nginx().url("/health"));
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, R"({"ok":true})");
    EXPECT_EQ(health.headers["content-type"], "application/json");

    // The id comes back as sent.
    auto response = stack.post(R"({"jsonrpc":"2.0","id":"abc-1","method":"wallet_history.get_methods"})");
    JsonPtr parsed = parse_json(response.body);
    EXPECT_EQ(str(parsed.get(), "id"), "abc-1");
    EXPECT_EQ(str(parsed.get(), "jsonrpc"), "2.0");
}
