// Dropping the bodies of non-wallet operations before parsing: the decoded
// events are exactly those of the untouched answer, and text that is not a
// condenser-form operation list is left alone.
#include <gtest/gtest.h>

#include "thin_response.hpp"
#include "wallet/decoder.hpp"
#include "wallet/event_store.hpp"
#include "wallet/json_util.hpp"

using wallet::backfill::thin_non_wallet_operations;

namespace {

std::string thinned(std::string text) {
    thin_non_wallet_operations(text);
    return text;
}

// A block as condenser_api.get_ops_in_block lists it: a vote, a custom_json
// whose text imitates an op entry, a transfer, and virtual operations.
const std::string kBlock = R"([
 {"trx_id":"aa","block":9,"trx_in_block":0,"op_in_trx":0,"virtual_op":0,"timestamp":"2016-09-07T00:18:18",
  "op":["vote",{"voter":"a","author":"b","permlink":"p","weight":100}]},
 {"trx_id":"bb","block":9,"trx_in_block":1,"op_in_trx":0,"virtual_op":0,"timestamp":"2016-09-07T00:18:18",
  "op" : [ "custom_json" , {"id":"x","json":"{\"op\":[\"vote\",{\"a\":1}], \"q\":\"\\\"}\"}","nested":{"op":["vote",{}]}} ]},
 {"trx_id":"cc","block":9,"trx_in_block":2,"op_in_trx":0,"virtual_op":0,"timestamp":"2016-09-07T00:18:18",
  "op":["transfer",{"from":"alice","to":"bob","amount":"1.000 HIVE","memo":"\"op\":[\"vote\",{}]"}]},
 {"trx_id":"0000000000000000000000000000000000000000","block":9,"trx_in_block":4294967295,"op_in_trx":1,"virtual_op":1,
  "timestamp":"2016-09-07T00:18:18","op":["producer_reward",{"producer":"dave","vesting_shares":"1.000000 VESTS"}]},
 {"trx_id":"0000000000000000000000000000000000000000","block":9,"trx_in_block":4294967295,"op_in_trx":2,"virtual_op":2,
  "timestamp":"2016-09-07T00:18:18","op":["curation_reward",{"curator":"carol","reward":"2.000000 VESTS","comment_author":"b","comment_permlink":"p"}]}
])";

std::string events_text(const std::string& block) {
    auto ops = wallet::json::parse(block);
    if (!ops) return "parse error: " + ops.error();
    auto events = wallet::decode_block(ops->get(), wallet::AssetTable::mainnet());
    if (!events) return "decode error: " + events.error();
    auto text = wallet::store::copy_text(*events);
    return text ? *text : text.error();
}

}  // namespace

TEST(BackfillThinResponse, DropsOnlyBodiesOfOperationsThatMakeNoEvents) {
    const std::string thin = thinned(kBlock);
    EXPECT_NE(thin.find(R"("op":["vote",{}]})"), std::string::npos) << thin;
    EXPECT_NE(thin.find(R"("op" : [ "custom_json" , {} ]})"), std::string::npos) << thin;
    EXPECT_NE(thin.find(R"("op":["producer_reward",{}]})"), std::string::npos) << thin;
    // Wallet operations keep their bytes, a memo imitating an op included.
    EXPECT_NE(thin.find(R"("op":["transfer",{"from":"alice","to":"bob","amount":"1.000 HIVE","memo":"\"op\":[\"vote\",{}]"}]})"),
              std::string::npos);
    EXPECT_NE(thin.find(R"(["curation_reward",{"curator":"carol","reward":"2.000000 VESTS","comment_author":"b","comment_permlink":"p"}])"),
              std::string::npos);
    // Envelopes stay: positions and virtual-op numbers are unchanged.
    EXPECT_NE(thin.find(R"("trx_id":"bb","block":9,"trx_in_block":1)"), std::string::npos);
    const std::string events = events_text(kBlock);
    EXPECT_EQ(events_text(thin), events);
    EXPECT_NE(events.find("curation_reward"), std::string::npos);
}

TEST(BackfillThinResponse, LeavesOtherTextAloneAndBrokenTextBroken) {
    for (const std::string& text : {
             std::string(R"({"jsonrpc":"2.0","result":{"head_block_number":5},"id":1})"),
             // The account_history_api form is not rewritten.
             std::string(R"([{"block":1,"op":{"type":"vote_operation","value":{"voter":"a"}}}])"),
             // An escaped type name is the decoder's business.
             std::string(R"([{"block":1,"op":["vot\u0065",{"voter":"a"}]}])"),
             std::string(R"([{"block":1,"op":["vote",{"voter":"a]}])"), std::string(R"("unterminated)"), std::string(""),
         }) {
        EXPECT_EQ(thinned(text), text);
    }
    // Broken or truncated answers stay unparsable: the node client still refuses them.
    for (const std::string& text : {std::string(R"([{"block":1,"op":["vote",{"voter":"a"}})"),
                                    std::string(R"([{"block":1,"op":["vote",{"voter":"a"}]},{"block":1,"op":["vo)"),
                                    std::string(R"([{"block":1,"op":["vote",{"voter":"a"}]})")}) {
        EXPECT_FALSE(wallet::json::parse(thinned(text))) << text;
    }
}
