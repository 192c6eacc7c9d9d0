// Real clients (issue 16): the router driven by client libraries nobody on
// this project wrote, from npm (pinned in t/clients/package-lock.json):
// @hiveio/dhive over HTTP (plus a batch through fetch) and `ws` over
// WebSocket. The stack is the deployment's: the chain routing file
// (conf/routes.hive.json) with the node simulator on the real-data chain as
// node, and the wallet_history API (nginx with the module, PostgreSQL filled
// by the real wallet-indexer) as wallet_indexer; Redis as the router's cache.
// Every answer is compared with the mainnet recordings of t/fixtures/hive.
//
// Without node/npm, or when npm cannot install the pinned packages (no
// registry), the test is skipped and says why; under CI=true it fails.
#include "indexer_support.hpp"
#include "router_support.hpp"
#include "support/api_support.hpp"
#include "support/npm_packages.hpp"

using namespace router_test;
using wallet::JsonPtr;

namespace {

// The block of camilla's payout indexed for wallet_history (see hive_clients.js).
constexpr std::int64_t kWalletBlock = 4785210;

JsonPtr fixture(const std::string& relative) {
    json_error_t error;
    JsonPtr j(json_load_file((fixtures_dir() / "hived-mainnet-5m" / relative).c_str(), JSON_DECODE_ANY, &error));
    if (!j) throw std::runtime_error("cannot read fixture " + relative + ": " + error.text);
    return j;
}

std::string compact(json_t* j) { return j != nullptr ? api_test::dump(j) : "<absent>"; }

// The routing file of the chain deployment with its targets on this stack.
std::string deployment_routes(const std::string& node_url, const std::string& api_url) {
    return routes_with_targets(source_dir() / "conf" / "routes.hive.json",
                               {{"node", node_url}, {"hafah", node_url}, {"social", node_url}, {"wallet_indexer", api_url}});
}

// camilla's four wallet events of block 4785210 (2016-09-08T07:52:42; the
// fixture account_history_api_patterns/get_account_history/default_val),
// newest first: two curation rewards, an author reward, HBD interest.
void expect_camilla_payout(json_t* page, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(json_is_object(page)) << compact(page);
    EXPECT_EQ(text_at(page, "account"), "camilla");
    json_t* items = json_object_get(page, "items");
    ASSERT_EQ(json_array_size(items), 4u) << compact(page);
    const std::vector<std::vector<std::string>> expected = {
        {"curation_reward", "34.413657", "steemswede"},
        {"curation_reward", "68.827315", "joelinux"},
        {"author_reward", "59.441772", "camilla"},
        {"interest", "2.260", "<null>"},
    };
    for (std::size_t i = 0; i < expected.size(); ++i) {
        json_t* item = json_array_get(items, i);
        const std::string amount = json_is_string(json_object_get(item, "vesting_amount")) ? text_at(item, "vesting_amount")
                                                                                          : text_at(item, "amount");
        const std::string author = json_is_null(json_object_get(item, "author")) ? "<null>" : text_at(item, "author");
        EXPECT_EQ((std::vector<std::string>{text_at(item, "op_type"), amount, author}), expected[i]) << compact(item);
        EXPECT_EQ(text_at(item, "block_num"), std::to_string(kWalletBlock));
        EXPECT_TRUE(json_is_null(json_object_get(item, "trx_id")));  // all virtual operations
    }
}

void expect_fixture(json_t* actual, const std::string& relative) {
    JsonPtr expected = fixture(relative);
    EXPECT_TRUE(json_equal(actual, expected.get())) << relative << "\n  got:      " << compact(actual).substr(0, 2000)
                                                    << "\n  expected: " << compact(expected.get()).substr(0, 2000);
}

// A batch answer: the elements in request order, each with its own id.
std::vector<json_t*> batch_results(json_t* batch, const std::vector<std::string>& ids) {
    std::vector<json_t*> results;
    EXPECT_TRUE(json_is_array(batch)) << compact(batch);
    EXPECT_EQ(json_array_size(batch), ids.size()) << compact(batch);
    for (std::size_t i = 0; i < ids.size() && i < json_array_size(batch); ++i) {
        json_t* element = json_array_get(batch, i);
        EXPECT_EQ(text_at(element, "id"), ids[i]) << compact(element);
        EXPECT_EQ(json_object_get(element, "error"), nullptr) << compact(element);
        results.push_back(json_object_get(element, "result"));
    }
    results.resize(ids.size(), nullptr);
    return results;
}

// The mainnet recordings of the calls hive_clients.js makes, in one call style.
struct Recordings {
    std::string dynamic_global_properties, block_header, ops_in_block, account_history;
};
const Recordings kCondenser{"condenser_api_patterns/get_dynamic_global_properties/get.pat.json",
                            "condenser_api_patterns/get_block_header/milion.pat.json",
                            "condenser_api_patterns/get_ops_in_block/random04.pat.json",
                            "condenser_api_patterns/get_account_history/transfer_operation.pat.json"};
const Recordings kAppbase{"database_api_patterns/get_dynamic_global_properties/get.pat.json",
                          "block_api_patterns/get_block_header/milion.pat.json",
                          "account_history_api_patterns/get_ops_in_block/random04.pat.json",
                          "account_history_api_patterns/get_account_history/transfer_operation.pat.json"};

// One transport's answers: the single calls in `singles`' style, the batch
// (global properties, wallet_history, block header) in `batch_style`'s.
void expect_transport(json_t* answers, const std::string& what, const Recordings& singles, const Recordings& batch_style,
                      const std::vector<std::string>& batch_ids, json_t* direct_page) {
    SCOPED_TRACE(what);
    expect_fixture(at(answers, "dynamic_global_properties"), singles.dynamic_global_properties);
    expect_fixture(at(answers, "block_header"), singles.block_header);
    expect_fixture(at(answers, "ops_in_block"), singles.ops_in_block);
    expect_fixture(at(answers, "account_history"), singles.account_history);
    expect_camilla_payout(at(answers, "wallet_history"), "wallet_history");
    EXPECT_TRUE(json_equal(at(answers, "wallet_history"), direct_page));
    auto batch = batch_results(at(answers, "batch"), batch_ids);
    expect_fixture(batch[0], batch_style.dynamic_global_properties);
    expect_camilla_payout(batch[1], "batch element 2");
    expect_fixture(batch[2], batch_style.block_header);
}

}  // namespace

TEST(RouterClients, DhiveOverHttpAndWsOverWebSocketGetTheChainsAndTheWalletApisAnswers) {
    const fs::path clients_dir = binary_dir() / "t" / "clients";
    if (std::string why = npm_test::install_packages("clients", {"hive_clients.js"}, clients_dir); !why.empty()) {
        if (npm_test::missing_tools_fail()) FAIL() << why << " (CI=true: a skip would hide it)";
        GTEST_SKIP() << why;
    }

    // The node: the real-data chain, head 5,000,000 (the fixtures' head).
    indexer_test::Simulator sim(indexer_test::Simulator::real_chain_args());

    // The wallet API over a database the real indexer fills from the node,
    // from just before camilla's payout block; stopped once it is indexed.
    PostgresServer pg;
    pg.provision();
    const auto health_port = free_port();
    auto indexer_env = indexer_test::indexer_env(pg, "wallet", sim.url(), health_port);
    indexer_env.erase("DB_PASSWORD");
    indexer_env["INDEXER_START_BLOCK"] = std::to_string(kWalletBlock - 9);
    indexer_env["INDEXER_MAX_BATCH_BLOCKS"] = "20";
    // The real-data chain serves only the recorded operations: blocks without a producer_reward.
    indexer_env["CHAIN_EVERY_BLOCK_REWARDED"] = "false";
    indexer_test::IndexerDaemon indexer(indexer_env, health_port);
    indexer.start();
    ASSERT_TRUE(indexer_test::wait_for_checkpoint(pg, "wallet", kWalletBlock)) << indexer.log();
    EXPECT_EQ(indexer.stop(), 0) << indexer.log();

    NginxServer::Options api_options;
    api_options.http_config = api_test::nginx_http_config();
    api_options.env = pg.env();
    api_options.env.erase("DB_PASSWORD");  // the API connects as the reader role
    api_options.env["WALLET_API_RATE_RPS"] = "0";
    NginxServer api(api_options);

    // The router, two workers, the deployment's routing file and Redis.
    RedisServer redis;
    TempDir dir("router-clients");
    const fs::path routes = dir.path() / "routes.json";
    write_file(routes, deployment_routes(sim.url(), "http://127.0.0.1:" + std::to_string(api.port())));
    NginxServer router(nginx_options(router_http_config(routes, redis_directive(redis)), 2));

    const fs::path answers_path = dir.path() / "answers.json";
    auto clients = run_command({"node", (clients_dir / "hive_clients.js").string(), std::to_string(router.port()),
                                answers_path.string()},
                               {}, 120s);
    ASSERT_EQ(clients.exit_code, 0) << clients.output;
    JsonPtr answers = router_test::parse_json(read_file(answers_path));
    ASSERT_TRUE(answers) << clients.output;

    // The same wallet_history page straight from the API: the router passes it through unchanged.
    JsonPtr direct = router_test::parse_json(
        http_post_json(api.url(), rpc("wallet_history.get_wallet_history",
                                      R"({"account":"camilla","from":"2016-09-08T07:52:42Z","to":"2016-09-08T07:52:43Z"})"))
            .body);
    json_t* direct_page = json_object_get(direct.get(), "result");
    expect_camilla_payout(direct_page, "straight from the API");

    // dhive calls condenser_api, the WebSocket client the appbase APIs; each batch mixes in the other style.
    expect_transport(json_object_get(answers.get(), "http"), "@hiveio/dhive over HTTP (batch: fetch)", kCondenser, kAppbase,
                     {"1", "2", "3"}, direct_page);
    expect_transport(json_object_get(answers.get(), "ws"), "ws over WebSocket", kAppbase, kCondenser, {"21", "22", "23"},
                     direct_page);
    EXPECT_TRUE(router.fatal_log_lines().empty());
    EXPECT_TRUE(api.fatal_log_lines().empty());
}
