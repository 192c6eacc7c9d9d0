// Every wallet_history method on the real-data chain, as a deployment runs it:
// hive-node-sim serves every mainnet operation of t/fixtures/hive
// (hived-mainnet-5m) at its real block, the real wallet-indexer indexes it
// into PostgreSQL as the writer role, and nginx with the module serves the
// API from it as the reader role. Checked:
//  - hand-picked events field by field against the fixture files;
//  - every row of the tables, through get_wallet_history, get_author_rewards
//    and get_curation_rewards walked page by page, in keyset order, each field
//    as the spec and decisions.md say it is rendered;
//  - get_reward_totals (lifetime and windows) of every reward-earning account
//    against sums of the raw rows;
//  - get_status against the indexer's checkpoint and the simulator's head,
//    and get_methods.
//
// Two windows of the chain, each indexed by its own indexer into its own
// database and served by its own nginx (one PostgreSQL cluster):
//  - "recent": blocks 4,740,001 .. 4,999,978, the tail of the chain up to the
//    simulator's last irreversible block (head 5,000,000, lag 20) minus
//    INDEXER_TRAIL_BLOCKS (2): transfers, interest, withdraw_vesting, author
//    and curation rewards, 119 events; about 260,000 blocks, almost all empty.
//  - "payout": blocks 2,889,001 .. 2,889,040 on a simulator whose head is
//    2,889,062: block 2,889,020, the first payout block (1,291 reward events of
//    187 accounts, all at one time, so that paging relies on block_seq).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "indexer_support.hpp"
#include "support/api_support.hpp"
#include "wallet/decoder.hpp"
#include "wallet/timestamp.hpp"

using namespace api_test;
using namespace std::chrono_literals;

namespace {

using harness::NginxServer;
using harness::PostgresServer;

constexpr std::int64_t kRecentFirst = 4740001;
constexpr std::int64_t kRecentHead = 5000000;  // the real chain's head (the fixtures')
constexpr std::int64_t kRecentIndexed = 4999978;
constexpr std::int64_t kPayoutFirst = 2889001;
constexpr std::int64_t kPayoutHead = 2889062;
constexpr std::int64_t kPayoutIndexed = 2889040;

// The spec's default and maximum page sizes (WALLET_API_DEFAULT_LIMIT, WALLET_API_MAX_LIMIT).
constexpr std::size_t kDefaultLimit = 50;
constexpr std::size_t kMaxLimit = 200;

// The 7 virtual operation types of the spec's Events table: trx_id null in API output.
constexpr const char* kVirtualTypesSql =
    "('fill_transfer_from_savings', 'fill_vesting_withdraw', 'return_vesting_delegation', 'interest',"
    " 'author_reward', 'curation_reward', 'comment_benefactor_reward')";

std::string canonical(json_t* value) { return value != nullptr ? dump(value) : std::string("<absent>"); }

std::string canonical_text(const std::string& json_text) {
    JsonPtr parsed = parse_json(json_text);
    return canonical(parsed.get());
}

std::vector<std::string> keys_of(json_t* object) {
    std::vector<std::string> keys;
    const char* key = nullptr;
    json_t* value = nullptr;
    json_object_foreach(object, key, value) keys.emplace_back(key);
    std::sort(keys.begin(), keys.end());
    return keys;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// Rows of a query as the superuser, NULL as nullopt (memos may hold tabs and
// newlines, so no text splitting).
using SqlRow = std::vector<std::optional<std::string>>;

std::vector<SqlRow> sql_rows(PGconn* conn, const std::string& sql) {
    auto result = wallet::pg::exec(conn, sql);
    if (!result) throw std::runtime_error(result.error() + "\nin: " + sql);
    PGresult* r = result->get();
    std::vector<SqlRow> rows;
    for (int i = 0; i < PQntuples(r); ++i) {
        SqlRow row;
        for (int j = 0; j < PQnfields(r); ++j) {
            if (PQgetisnull(r, i, j) != 0) {
                row.emplace_back(std::nullopt);
            } else {
                row.emplace_back(std::string(PQgetvalue(r, i, j), static_cast<std::size_t>(PQgetlength(r, i, j))));
            }
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string sql_value(PGconn* conn, const std::string& sql) {
    auto rows = sql_rows(conn, sql);
    if (rows.size() != 1 || rows[0].size() != 1 || !rows[0][0]) throw std::runtime_error("not one value: " + sql);
    return *rows[0][0];
}

std::int64_t epoch_of(const std::string& iso) {
    auto t = wallet::Timestamp::parse(iso);
    if (!t) throw std::runtime_error("not a time: " + iso);
    return t->seconds();
}

// One window of the chain: its simulator, database, indexer and API.
class IndexedChain {
public:
    IndexedChain(PostgresServer& pg, std::string database, std::int64_t first_block, std::optional<std::int64_t> head)
        : pg_(pg), database_(std::move(database)), sim_(sim_args(head)), health_port_(harness::free_port()) {
        pg_.provision(database_);
        auto env = indexer_test::indexer_env(pg_, database_, sim_.url(), health_port_);
        env.erase("DB_PASSWORD");  // the indexer needs only the writer role
        env["INDEXER_START_BLOCK"] = std::to_string(first_block);
        env["INDEXER_TRAIL_BLOCKS"] = "2";
        env["INDEXER_MAX_BATCH_BLOCKS"] = "1000";  // catching up over runs of empty blocks
        env["INDEXER_POLL_INTERVAL_MS"] = "200";
        env["CHAIN_RPC_TIMEOUT_MS"] = "10000";
        // The real-data chain serves only the recorded operations: most of its
        // blocks are empty although mainnet's all carry a producer_reward.
        env["CHAIN_EVERY_BLOCK_REWARDED"] = "false";
        indexer_ = std::make_unique<indexer_test::IndexerDaemon>(env, health_port_, "wallet-indexer-" + database_);

        NginxServer::Options options;
        options.http_config = nginx_http_config();
        options.env = pg_.env(database_);
        options.env.erase("DB_PASSWORD");  // the API connects as the reader role
        options.env["WALLET_API_RATE_RPS"] = "0";
        nginx_ = std::make_unique<NginxServer>(options);

        auto conn = wallet::pg::connect(pg_.superuser_url(database_));
        if (!conn) throw std::runtime_error(conn.error());
        conn_ = std::move(conn).value();
    }

    ~IndexedChain() {
        auto fatal = nginx_->fatal_log_lines();
        EXPECT_TRUE(fatal.empty()) << database_ << ": " << fatal.front();
    }

    void start_indexer() { indexer_->start(); }
    // Statistics of the freshly indexed rows: without them the planner may
    // join the events view to a block's operations once per event, which is
    // quadratic in the payout block's 1,291 events (PostgresServer::query_analyzed).
    void analyze() { pg_.query("ANALYZE", database_); }
    bool wait_indexed(std::int64_t block) { return indexer_test::wait_for_checkpoint(pg_, database_, block, 300s); }

    const std::string& name() const { return database_; }
    indexer_test::Simulator& sim() { return sim_; }
    indexer_test::IndexerDaemon& indexer() { return *indexer_; }
    PGconn* db() { return conn_.get(); }
    // The indexer's checkpoint, read on the test's own connection.
    std::int64_t checkpoint() { return std::stoll(sql_value(conn_.get(), "SELECT block_num FROM indexer_checkpoint")); }

    // The whole JSON-RPC response of one call.
    JsonPtr call(const std::string& method, json_t* params) {
        const std::string body = R"({"jsonrpc":"2.0","id":7,"method":"wallet_history.)" + method + R"(","params":)" +
                                 canonical(params) + "}";
        auto response = harness::http_post_json(nginx_->url("/"), body);
        ++calls_;
        EXPECT_EQ(response.status, 200) << database_ << " " << body << " -> " << response.body;
        JsonPtr parsed = parse_json(response.body);
        return parsed ? std::move(parsed) : JsonPtr(json_object());
    }

    // The result of a call that must succeed (an empty object otherwise).
    JsonPtr result(const std::string& method, const std::string& params_json = "{}") {
        JsonPtr params = parse_json(params_json);
        return result(method, params.get());
    }
    JsonPtr result(const std::string& method, json_t* params) {
        JsonPtr response = call(method, params);
        json_t* result = json_object_get(response.get(), "result");
        EXPECT_NE(result, nullptr) << database_ << " " << method << " " << canonical(params) << " -> "
                                   << canonical(response.get());
        return result != nullptr ? wallet::json_ref(result) : JsonPtr(json_object());
    }

    std::size_t calls() const { return calls_; }

private:
    static std::vector<std::string> sim_args(std::optional<std::int64_t> head) {
        auto args = indexer_test::Simulator::real_chain_args();  // the head does not move by itself
        if (head) {
            args.push_back("--length");
            args.push_back(std::to_string(*head));
        }
        return args;
    }

    PostgresServer& pg_;
    std::string database_;
    indexer_test::Simulator sim_;
    std::uint16_t health_port_;
    std::unique_ptr<indexer_test::IndexerDaemon> indexer_;
    std::unique_ptr<NginxServer> nginx_;
    wallet::PgConnPtr conn_;
    std::size_t calls_ = 0;
};

// ---------------------------------------------------------------------------
// Hand-checked events: the expected objects are written from the fixture
// files. block_seq and virtual_op are positions in the block as the simulator
// serves it (the operations the fixtures hold for that block, in node order).

// The one item of a page, checked with the page envelope.
json_t* only_item(json_t* page, std::int64_t indexed_block) {
    EXPECT_EQ(keys_of(page), sorted({"account", "items", "next_cursor", "indexer"})) << canonical(page);
    EXPECT_TRUE(json_is_null(json_object_get(page, "next_cursor"))) << canonical(page);
    EXPECT_EQ(canonical(json_object_get(page, "indexer")), R"({"indexed_block":)" + std::to_string(indexed_block) + "}");
    json_t* items = json_object_get(page, "items");
    EXPECT_EQ(json_array_size(items), 1u) << canonical(page);
    return json_array_get(items, 0);
}

void expect_items(json_t* page, const std::vector<std::string>& expected_json) {
    json_t* items = json_object_get(page, "items");
    ASSERT_EQ(json_array_size(items), expected_json.size()) << canonical(page);
    for (std::size_t i = 0; i < expected_json.size(); ++i) {
        EXPECT_EQ(canonical(json_array_get(items, i)), canonical_text(expected_json[i])) << "item " << i;
    }
}

void check_hand_picked_recent(IndexedChain& chain) {
    SCOPED_TRACE("hand-picked events of the recent window");
    // condenser_api_patterns/get_account_history/transfer_operation.pat.json, block 4747375:
    // transfer 1.372 HBD stealthtrader -> blocktrades, trx 0e4bf604..., trx_in_block 2, op_in_trx 0,
    // 2016-09-07T00:18:18; the only operation of its block here.
    const std::string transfer_tail =
        R"("op_type":"transfer","block_num":4747375,"block_seq":0,"trx_id":"0e4bf604dfa68169b01dd537901ebf7bd775470f",)"
        R"("op_in_trx":0,"virtual_op":0,"timestamp":"2016-09-07T00:18:18Z","amount":"1.372","symbol":"HBD",)"
        R"("vesting_amount":null,"vesting_symbol":null,"memo":"54ff32be-1446-4582-b2ef-43c645821a3e",)"
        R"("author":null,"permlink":null,"assets":[{"field":"amount","amount":"1.372","symbol":"HBD"}]})";
    const std::string at_transfer = R"(,"from":"2016-09-07T00:18:18Z","to":"2016-09-07T00:18:19Z"})";
    JsonPtr page = chain.result("get_wallet_history", R"({"account":"stealthtrader")" + at_transfer);
    EXPECT_EQ(str(page.get(), "account"), "stealthtrader");
    EXPECT_EQ(canonical(only_item(page.get(), kRecentIndexed)),
              canonical_text(R"({"account":"stealthtrader","role":"sender","counterparty":"blocktrades",)" + transfer_tail));
    page = chain.result("get_wallet_history", R"({"account":"blocktrades")" + at_transfer);
    EXPECT_EQ(canonical(only_item(page.get(), kRecentIndexed)),
              canonical_text(R"({"account":"blocktrades","role":"receiver","counterparty":"stealthtrader",)" + transfer_tail));
    // The same row through an op_types filter; no reward rows for a transfer-only window.
    page = chain.result("get_wallet_history",
                        R"({"account":"stealthtrader","op_types":["transfer","withdraw_vesting"])" + at_transfer);
    EXPECT_EQ(str(only_item(page.get(), kRecentIndexed), "trx_id"), "0e4bf604dfa68169b01dd537901ebf7bd775470f");
    page = chain.result("get_author_rewards", R"({"account":"stealthtrader")" + at_transfer);
    EXPECT_EQ(json_array_size(json_object_get(page.get(), "items")), 0u) << canonical(page.get());

    // condenser_api_patterns/get_account_history/withdraw_vesting_operation.pat.json, block 4795273:
    // ned's power-down cancel, 0.000000 VESTS, trx 65860eed..., trx_in_block 4, 2016-09-08T16:18:54.
    page = chain.result("get_wallet_history",
                        R"({"account":"ned","from":"2016-09-08T16:18:54Z","to":"2016-09-08T16:18:55Z"})");
    EXPECT_EQ(canonical(only_item(page.get(), kRecentIndexed)),
              canonical_text(R"({"account":"ned","role":"owner","op_type":"withdraw_vesting","block_num":4795273,)"
                             R"("block_seq":0,"trx_id":"65860eedd33d04ec629589587d8580a413f0ed60","op_in_trx":0,)"
                             R"("virtual_op":0,"timestamp":"2016-09-08T16:18:54Z","amount":null,"symbol":null,)"
                             R"("vesting_amount":"0.000000","vesting_symbol":"VESTS","counterparty":null,"memo":null,)"
                             R"("author":null,"permlink":null,)"
                             R"("assets":[{"field":"vesting_shares","amount":"0.000000","symbol":"VESTS"}]})"));

    // account_history_api_patterns/get_account_history/default_val.pat.json, block 4785210
    // (2016-09-08T07:52:42, all virtual, trx_in_block 4294967295, virtual_op true): camilla's interest
    // (op_in_trx 2), author_reward (3), curation_rewards (20, 24); the block holds 10 operations here
    // (op_in_trx 2, 3, 4, 5, 7, 9, 19, 20, 24, 28), so block_seq 0, 1, 7, 8 and virtual_op 1, 2, 8, 9.
    const std::string at_payout = R"({"account":"camilla","from":"2016-09-08T07:52:42Z","to":"2016-09-08T07:52:43Z"})";
    const std::string curation_24 =
        R"({"account":"camilla","role":"curator","op_type":"curation_reward","block_num":4785210,"block_seq":8,)"
        R"("trx_id":null,"op_in_trx":24,"virtual_op":9,"timestamp":"2016-09-08T07:52:42Z","amount":null,"symbol":null,)"
        R"("vesting_amount":"34.413657","vesting_symbol":"VESTS","counterparty":null,"memo":null,"author":"steemswede",)"
        R"("permlink":"re-camilla-a-steem-whale-in-a-dream-world-art-and-poem-20160828t214107644z",)"
        R"("assets":[{"field":"reward","amount":"34.413657","symbol":"VESTS"}]})";
    const std::string curation_20 =
        R"({"account":"camilla","role":"curator","op_type":"curation_reward","block_num":4785210,"block_seq":7,)"
        R"("trx_id":null,"op_in_trx":20,"virtual_op":8,"timestamp":"2016-09-08T07:52:42Z","amount":null,"symbol":null,)"
        R"("vesting_amount":"68.827315","vesting_symbol":"VESTS","counterparty":null,"memo":null,"author":"joelinux",)"
        R"("permlink":"re-camilla-a-steem-whale-in-a-dream-world-art-and-poem-20160810t164328721z",)"
        R"("assets":[{"field":"reward","amount":"68.827315","symbol":"VESTS"}]})";
    const std::string author_3 =
        R"({"account":"camilla","role":"author","op_type":"author_reward","block_num":4785210,"block_seq":1,)"
        R"("trx_id":null,"op_in_trx":3,"virtual_op":2,"timestamp":"2016-09-08T07:52:42Z","amount":null,"symbol":null,)"
        R"("vesting_amount":"59.441772","vesting_symbol":"VESTS","counterparty":null,"memo":null,"author":"camilla",)"
        R"("permlink":"a-steem-whale-in-a-dream-world-art-and-poem",)"
        R"("assets":[{"field":"hbd_payout","amount":"0.015","symbol":"HBD"},)"
        R"({"field":"hive_payout","amount":"0.000","symbol":"HIVE"},)"
        R"({"field":"vesting_payout","amount":"59.441772","symbol":"VESTS"},)"
        R"({"field":"curators_vesting_payout","amount":"0.000000","symbol":"VESTS"}]})";
    const std::string interest_2 =
        R"({"account":"camilla","role":"owner","op_type":"interest","block_num":4785210,"block_seq":0,)"
        R"("trx_id":null,"op_in_trx":2,"virtual_op":1,"timestamp":"2016-09-08T07:52:42Z","amount":"2.260","symbol":"HBD",)"
        R"("vesting_amount":null,"vesting_symbol":null,"counterparty":null,"memo":null,"author":null,"permlink":null,)"
        R"("assets":[{"field":"interest","amount":"2.260","symbol":"HBD"}]})";
    {
        SCOPED_TRACE("camilla, block 4785210: get_wallet_history");
        JsonPtr all = chain.result("get_wallet_history", at_payout);
        EXPECT_TRUE(json_is_null(json_object_get(all.get(), "next_cursor")));
        expect_items(all.get(), {curation_24, curation_20, author_3, interest_2});
    }
    {
        SCOPED_TRACE("camilla, block 4785210: get_author_rewards");
        JsonPtr authors = chain.result("get_author_rewards", at_payout);
        expect_items(authors.get(), {author_3});
    }
    {
        SCOPED_TRACE("camilla, block 4785210: get_curation_rewards, one per page");
        JsonPtr first = chain.result("get_curation_rewards", at_payout.substr(0, at_payout.size() - 1) + R"(,"limit":1})");
        expect_items(first.get(), {curation_24});
        ASSERT_TRUE(json_is_string(json_object_get(first.get(), "next_cursor"))) << canonical(first.get());
        JsonPtr second = chain.result("get_curation_rewards", at_payout.substr(0, at_payout.size() - 1) +
                                                                   R"(,"limit":1,"cursor":")" +
                                                                   str(first.get(), "next_cursor") + R"("})");
        expect_items(second.get(), {curation_20});
        EXPECT_TRUE(json_is_null(json_object_get(second.get(), "next_cursor"))) << canonical(second.get());
    }
    {
        // The same second as a totals window: count, VESTS and liquid sums of those rewards.
        SCOPED_TRACE("camilla, block 4785210: get_reward_totals");
        JsonPtr totals = chain.result("get_reward_totals", at_payout);
        EXPECT_EQ(canonical(totals.get()),
                  canonical_text(R"({"account":"camilla","from":"2016-09-08T07:52:42Z","to":"2016-09-08T07:52:43Z",)"
                                 R"("totals":{"author_reward":{"vesting_amount":"59.441772","vesting_symbol":"VESTS",)"
                                 R"("count":1,"liquid":[{"amount":"0.015","symbol":"HBD"},{"amount":"0.000","symbol":"HIVE"}]},)"
                                 R"("curation_reward":{"vesting_amount":"103.240972","vesting_symbol":"VESTS","count":2,"liquid":[]},)"
                                 R"("comment_benefactor_reward":{"vesting_amount":"0.000000","vesting_symbol":"VESTS",)"
                                 R"("count":0,"liquid":[]}},"indexer":{"indexed_block":4999978}})"));
    }
}

void check_hand_picked_payout(IndexedChain& chain) {
    SCOPED_TRACE("hand-picked events of block 2889020");
    // account_history_api_patterns/enum_virtual_ops/random20.pat.json (and block_2889020_filter_16388),
    // block 2889020, 2016-07-04T00:00:06: producer_missed (op_in_trx 1), producer_reward (2), then
    // curation_reward anonymous <- abit/spam 3952.229956 VESTS (3) and author_reward abit/spam (4):
    // vesting 1978.732349 VESTS, 0.082 HBD, curators' 3952.229956 VESTS.
    JsonPtr page = chain.result("get_curation_rewards", R"({"account":"anonymous","limit":200})");
    json_t* items = json_object_get(page.get(), "items");
    ASSERT_EQ(json_array_size(items), 26u) << canonical(page.get());  // anonymous' 26 curation rewards of the block
    // Newest first and all at one time: the last item is the lowest block_seq.
    EXPECT_EQ(canonical(json_array_get(items, 25)),
              canonical_text(R"({"account":"anonymous","role":"curator","op_type":"curation_reward","block_num":2889020,)"
                             R"("block_seq":2,"trx_id":null,"op_in_trx":3,"virtual_op":3,"timestamp":"2016-07-04T00:00:06Z",)"
                             R"("amount":null,"symbol":null,"vesting_amount":"3952.229956","vesting_symbol":"VESTS",)"
                             R"("counterparty":null,"memo":null,"author":"abit","permlink":"spam",)"
                             R"("assets":[{"field":"reward","amount":"3952.229956","symbol":"VESTS"}]})"));
    // xeroc's steem-blockchain-data-structure (op_in_trx 61): the seventh oldest of anonymous' rewards.
    EXPECT_EQ(str(json_array_get(items, 19), "vesting_amount"), "36224.412319");
    EXPECT_EQ(str(json_array_get(items, 19), "permlink"), "steem-blockchain-data-structure");
    EXPECT_EQ(json_integer_value(json_object_get(json_array_get(items, 19), "block_seq")), 60);

    page = chain.result("get_author_rewards", R"({"account":"abit"})");
    json_t* authored = json_object_get(page.get(), "items");
    ASSERT_EQ(json_array_size(authored), 8u) << canonical(page.get());  // abit's 8 author rewards of the block
    EXPECT_EQ(canonical(json_array_get(authored, 7)),
              canonical_text(R"({"account":"abit","role":"author","op_type":"author_reward","block_num":2889020,)"
                             R"("block_seq":3,"trx_id":null,"op_in_trx":4,"virtual_op":4,"timestamp":"2016-07-04T00:00:06Z",)"
                             R"("amount":null,"symbol":null,"vesting_amount":"1978.732349","vesting_symbol":"VESTS",)"
                             R"("counterparty":null,"memo":null,"author":"abit","permlink":"spam",)"
                             R"("assets":[{"field":"hbd_payout","amount":"0.082","symbol":"HBD"},)"
                             R"({"field":"hive_payout","amount":"0.000","symbol":"HIVE"},)"
                             R"({"field":"vesting_payout","amount":"1978.732349","symbol":"VESTS"},)"
                             R"({"field":"curators_vesting_payout","amount":"3952.229956","symbol":"VESTS"}]})"));
}

// ---------------------------------------------------------------------------
// Whole-table agreement.

// Every row of the table as the API must render it, per account in keyset
// order: (op_type, expected event JSON).
std::map<std::string, std::vector<std::pair<std::string, std::string>>> expected_events(IndexedChain& chain) {
    const std::string liquid = "CASE WHEN symbol IN ('HIVE', 'HBD') THEN amount::numeric(30,3)::text"
                               " WHEN symbol = 'VESTS' THEN amount::numeric(30,6)::text END";
    const std::string vesting = "CASE WHEN vesting_symbol IN ('HIVE', 'HBD') THEN vesting_amount::numeric(30,3)::text"
                                " WHEN vesting_symbol = 'VESTS' THEN vesting_amount::numeric(30,6)::text END";
    const auto rows = sql_rows(
        chain.db(),
        "SELECT account, op_type, jsonb_build_object("
        " 'account', account, 'role', role, 'op_type', op_type, 'block_num', block_num, 'block_seq', block_seq,"
        " 'trx_id', CASE WHEN op_type IN " + std::string(kVirtualTypesSql) + " THEN NULL ELSE trx_id END,"
        " 'op_in_trx', op_in_trx, 'virtual_op', virtual_op,"
        " 'timestamp', to_char(\"timestamp\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " 'amount', " + liquid + ", 'symbol', symbol, 'vesting_amount', " + vesting + ", 'vesting_symbol', vesting_symbol,"
        " 'counterparty', counterparty, 'memo', memo, 'author', author, 'permlink', permlink, 'assets', assets)::text"
        " FROM wallet_operation_events"
        " ORDER BY account, \"timestamp\" DESC, block_num DESC, block_seq DESC, role DESC");
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_account;
    for (const auto& row : rows) by_account[*row[0]].emplace_back(*row[1], canonical_text(*row[2]));
    return by_account;
}

// Every amount of the API's output: an exact decimal at its symbol's precision.
void expect_amount_text(const std::string& what, json_t* amount, json_t* symbol) {
    if (json_is_null(amount) && json_is_null(symbol)) return;
    ASSERT_TRUE(json_is_string(amount) && json_is_string(symbol)) << what << ": " << canonical(amount) << " " << canonical(symbol);
    const std::string text = json_string_value(amount);
    const std::string sym = json_string_value(symbol);
    const std::size_t precision = sym == "VESTS" ? 6 : (sym == "HIVE" || sym == "HBD") ? 3 : 0;
    const std::size_t point = text.find('.');
    const bool digits = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
    EXPECT_TRUE(precision > 0 && digits && point != std::string::npos && point > 0 && text.size() - point - 1 == precision &&
                text.find('.', point + 1) == std::string::npos)
        << what << ": " << text << " " << sym;
}

void expect_rendered_amounts(json_t* item) {
    expect_amount_text("amount", json_object_get(item, "amount"), json_object_get(item, "symbol"));
    expect_amount_text("vesting_amount", json_object_get(item, "vesting_amount"), json_object_get(item, "vesting_symbol"));
    std::size_t index = 0;
    json_t* asset = nullptr;
    json_array_foreach(json_object_get(item, "assets"), index, asset) {
        expect_amount_text("assets", json_object_get(asset, "amount"), json_object_get(asset, "symbol"));
    }
}

struct WalkStats {
    std::size_t accounts = 0, events = 0, pages = 0;
};

// Walks one paged method for one account to its end; compares with the rows.
// `all_types`: with scope "all" (every stored type, not only spec 000's).
void walk(IndexedChain& chain, const std::string& method, const std::string& account, std::optional<std::size_t> limit,
          const std::vector<std::string>& expected, WalkStats& stats, bool all_types = false) {
    SCOPED_TRACE(chain.name() + " " + method + " " + account + " limit " + (limit ? std::to_string(*limit) : "default") +
                 (all_types ? " scope all" : ""));
    const std::size_t page_size = std::min(limit.value_or(kDefaultLimit), kMaxLimit);
    const std::string indexer = R"({"indexed_block":)" + std::to_string(chain.checkpoint()) + "}";
    std::vector<std::string> actual;
    std::optional<std::string> cursor;
    const std::size_t max_pages = expected.size() / page_size + 2;
    for (std::size_t page_number = 0;; ++page_number) {
        ASSERT_LT(page_number, max_pages) << "more pages than rows";
        JsonPtr params(json_pack("{s:s}", "account", account.c_str()));
        if (limit) json_object_set_new(params.get(), "limit", json_integer(static_cast<json_int_t>(*limit)));
        if (all_types) json_object_set_new(params.get(), "scope", json_string("all"));
        if (cursor) json_object_set_new(params.get(), "cursor", json_string(cursor->c_str()));
        JsonPtr page = chain.result(method, params.get());
        ++stats.pages;
        ASSERT_EQ(keys_of(page.get()), sorted({"account", "items", "next_cursor", "indexer"})) << canonical(page.get());
        EXPECT_EQ(str(page.get(), "account"), account);
        EXPECT_EQ(canonical(json_object_get(page.get(), "indexer")), indexer);
        json_t* items = json_object_get(page.get(), "items");
        ASSERT_TRUE(json_is_array(items));
        std::size_t index = 0;
        json_t* item = nullptr;
        json_array_foreach(items, index, item) {
            expect_rendered_amounts(item);
            actual.push_back(canonical(item));
        }
        json_t* next = json_object_get(page.get(), "next_cursor");
        if (json_is_null(next)) {
            EXPECT_LE(json_array_size(items), page_size);
            break;
        }
        ASSERT_TRUE(json_is_string(next)) << canonical(page.get());
        EXPECT_EQ(json_array_size(items), page_size) << "a page before the last one is full";
        cursor = json_string_value(next);
    }
    EXPECT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
        if (actual[i] != expected[i]) {
            ADD_FAILURE() << "first different event " << i << ":\n  api:      " << actual[i] << "\n  expected: " << expected[i];
            break;
        }
    }
    stats.events += actual.size();
}

WalkStats check_whole_table(IndexedChain& chain) {
    SCOPED_TRACE("whole table of " + chain.name());
    // The rendering below casts amounts to their symbol's precision: no stored
    // amount may have more digits than that, or the cast would hide them.
    EXPECT_EQ(sql_value(chain.db(),
                        "SELECT count(*) FROM wallet_operation_events WHERE"
                        " (amount IS NOT NULL AND (symbol IS NULL OR amount <> round(amount, CASE WHEN symbol = 'VESTS' THEN 6 ELSE 3 END)))"
                        " OR (vesting_amount IS NOT NULL AND (vesting_symbol IS DISTINCT FROM 'VESTS' OR vesting_amount <> round(vesting_amount, 6)))"),
              "0");
    const auto by_account = expected_events(chain);
    // Page sizes by account, in turn: the default, 1, 3, 7 and more than the maximum.
    const std::vector<std::optional<std::size_t>> limits = {std::nullopt, 1, 3, 7, 1000};
    WalkStats stats;
    std::size_t n = 0;
    for (const auto& [account, rows] : by_account) {
        const auto& limit = limits[n++ % limits.size()];
        std::vector<std::string> all, spec, authors, curations;
        for (const auto& [op_type, event] : rows) {
            all.push_back(event);
            if (wallet::is_spec_wallet_operation(op_type)) spec.push_back(event);
            if (op_type == "author_reward") authors.push_back(event);
            if (op_type == "curation_reward") curations.push_back(event);
        }
        walk(chain, "get_wallet_history", account, limit, spec, stats);
        walk(chain, "get_wallet_history", account, limit, all, stats, true);
        walk(chain, "get_author_rewards", account, limit, authors, stats);
        walk(chain, "get_curation_rewards", account, limit, curations, stats);
        ++stats.accounts;
    }
    return stats;
}

// ---------------------------------------------------------------------------
// Reward totals against sums of the raw rows.

struct Window {
    std::optional<std::string> from, to;
};

// The expected totals object of every reward-earning account for a window.
std::map<std::string, std::string> expected_totals(IndexedChain& chain, const Window& window) {
    std::string where = "op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')";
    if (window.from) where += " AND \"timestamp\" >= '" + *window.from + "'::timestamptz";
    if (window.to) where += " AND \"timestamp\" < '" + *window.to + "'::timestamptz";
    // account -> op_type -> (count, vesting sum, [(symbol, liquid sum)])
    struct Sums {
        std::string count = "0", vesting = "0.000000";
        std::vector<std::pair<std::string, std::string>> liquid;
    };
    std::map<std::string, std::map<std::string, Sums>> sums;
    for (const auto& account : sql_rows(chain.db(),
                                        "SELECT DISTINCT account FROM wallet_operation_events WHERE op_type IN"
                                        " ('author_reward', 'curation_reward', 'comment_benefactor_reward')")) {
        for (const char* type : {"author_reward", "curation_reward", "comment_benefactor_reward"}) sums[*account[0]][type];
    }
    for (const auto& row : sql_rows(chain.db(), "SELECT account, op_type, count(*), coalesce(sum(vesting_amount), 0)::numeric(40,6)::text"
                                                " FROM wallet_operation_events WHERE " + where + " GROUP BY 1, 2")) {
        sums[*row[0]][*row[1]].count = *row[2];
        sums[*row[0]][*row[1]].vesting = *row[3];
    }
    for (const auto& row : sql_rows(chain.db(),
                                    "SELECT account, op_type, a->>'symbol', sum((a->>'amount')::numeric)::numeric(40,3)::text"
                                    " FROM wallet_operation_events, jsonb_array_elements(assets) AS a WHERE " + where +
                                        " AND a->>'field' IN ('hbd_payout', 'sbd_payout', 'hive_payout', 'steem_payout')"
                                        " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")) {
        sums[*row[0]][*row[1]].liquid.emplace_back(*row[2], *row[3]);
    }
    const std::string indexed_block = std::to_string(chain.checkpoint());
    std::map<std::string, std::string> out;
    for (const auto& [account, types] : sums) {
        std::string text = R"({"account":")" + account + "\"";
        if (window.from) text += R"(,"from":")" + *window.from + "\"";
        if (window.to) text += R"(,"to":")" + *window.to + "\"";
        text += R"(,"totals":{)";
        bool first = true;
        for (const auto& [type, s] : types) {
            if (!first) text += ',';
            first = false;
            text += "\"" + type + R"(":{"vesting_amount":")" + s.vesting + R"(","vesting_symbol":"VESTS","count":)" + s.count +
                    R"(,"liquid":[)";
            for (std::size_t i = 0; i < s.liquid.size(); ++i) {
                if (i > 0) text += ',';
                text += R"({"amount":")" + s.liquid[i].second + R"(","symbol":")" + s.liquid[i].first + "\"}";
            }
            text += "]}";
        }
        text += R"(},"indexer":{"indexed_block":)" + indexed_block + "}}";
        out[account] = canonical_text(text);
    }
    return out;
}

std::size_t check_totals(IndexedChain& chain, const std::vector<Window>& windows) {
    SCOPED_TRACE("reward totals of " + chain.name());
    std::size_t compared = 0;
    for (const auto& window : windows) {
        SCOPED_TRACE("window " + window.from.value_or("-") + " .. " + window.to.value_or("-"));
        const auto expected = expected_totals(chain, window);
        EXPECT_GT(expected.size(), 0u);
        for (const auto& [account, totals] : expected) {
            JsonPtr params(json_pack("{s:s}", "account", account.c_str()));
            if (window.from) json_object_set_new(params.get(), "from", json_string(window.from->c_str()));
            if (window.to) json_object_set_new(params.get(), "to", json_string(window.to->c_str()));
            JsonPtr result = chain.result("get_reward_totals", params.get());
            EXPECT_EQ(canonical(result.get()), totals) << account;
            ++compared;
        }
        std::cout << chain.name() << " totals window " << window.from.value_or("-") << " .. " << window.to.value_or("-") << ": "
                  << expected.size() << " accounts" << std::endl;
    }
    return compared;
}

// ---------------------------------------------------------------------------
// get_status and get_methods.

void check_status(IndexedChain& chain, std::int64_t indexed, std::int64_t head) {
    SCOPED_TRACE("get_status of " + chain.name());
    EXPECT_EQ(chain.checkpoint(), indexed);
    EXPECT_EQ(indexer_test::sim_head(chain.sim()), head);
    // The times of both blocks as the node reports them.
    JsonPtr header = chain.sim().call("block_api.get_block_header", R"({"block_num":)" + std::to_string(indexed) + "}");
    const std::string indexed_time =
        str(json_object_get(json_object_get(header.get(), "result"), "header"), "timestamp") + "Z";
    JsonPtr properties = chain.sim().call("database_api.get_dynamic_global_properties", "{}");
    json_t* props = json_object_get(properties.get(), "result");
    ASSERT_EQ(json_integer_value(json_object_get(props, "head_block_number")), head) << canonical(properties.get());
    const std::string head_time = str(props, "time") + "Z";
    // The checkpoint as stored holds the same time.
    EXPECT_EQ(sql_value(chain.db(), "SELECT to_char(block_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                                    " FROM indexer_checkpoint"),
              indexed_time);

    JsonPtr status = chain.result("get_status");
    // The deployment's, not the chain's: api_pool_size_test.
    EXPECT_EQ(json_object_del(status.get(), "db_connections"), 0);
    EXPECT_EQ(canonical(status.get()),
              canonical_text(R"({"indexed_block":)" + std::to_string(indexed) + R"(,"indexed_time":")" + indexed_time +
                             R"(","head_block":)" + std::to_string(head) + R"(,"lag_blocks":)" +
                             std::to_string(head - indexed) + R"(,"lag_seconds":)" +
                             std::to_string(epoch_of(head_time) - epoch_of(indexed_time)) +
                             R"(,"decoder":{"current_version":2,"up_to_date":true}})"));

    JsonPtr methods = chain.result("get_methods");
    EXPECT_EQ(canonical(json_object_get(methods.get(), "methods")),
              canonical_text(R"(["wallet_history.get_wallet_history","wallet_history.get_author_rewards",)"
                             R"("wallet_history.get_curation_rewards","wallet_history.get_reward_totals",)"
                             R"("wallet_history.get_status","wallet_history.get_methods","wallet_history.get_balances",)"
              R"("wallet_history.get_balance_history","wallet_history.get_balance_aggregation","wallet_history.get_delegations"])"));
}

// The table's make-up, counted by hand from the fixtures: the wallet
// operations of each window, two rows for a transfer (no self transfers).
void check_table_counts(IndexedChain& chain, const std::string& expected_by_type, const std::string& expected_accounts) {
    SCOPED_TRACE("table of " + chain.name());
    EXPECT_EQ(sql_value(chain.db(), "SELECT string_agg(op_type || ' ' || n, ', ' ORDER BY op_type) FROM"
                                    " (SELECT op_type, count(*) AS n FROM wallet_operation_events GROUP BY 1) AS t"),
              expected_by_type);
    EXPECT_EQ(sql_value(chain.db(), "SELECT count(DISTINCT account) FROM wallet_operation_events"), expected_accounts);
}

}  // namespace

TEST(ApiIndexed, EveryMethodOnTheRealChainIndexedByTheIndexer) {
    const auto started = std::chrono::steady_clock::now();
    auto seconds_since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    PostgresServer pg;
    IndexedChain recent(pg, "recent", kRecentFirst, std::nullopt);
    IndexedChain payout(pg, "payout", kPayoutFirst, kPayoutHead);
    // Both indexers run at once; each stops advancing at its simulator's last
    // irreversible block minus INDEXER_TRAIL_BLOCKS, and keeps following.
    const auto indexing = std::chrono::steady_clock::now();
    recent.start_indexer();
    payout.start_indexer();
    ASSERT_TRUE(payout.wait_indexed(kPayoutIndexed)) << payout.indexer().log();
    ASSERT_TRUE(recent.wait_indexed(kRecentIndexed)) << recent.indexer().log();
    recent.analyze();
    payout.analyze();
    std::cout << "indexed " << kRecentFirst << ".." << kRecentIndexed << " and " << kPayoutFirst << ".." << kPayoutIndexed
              << " in " << seconds_since(indexing) << " s" << std::endl;

    // Beyond the spec's types (docs/operations.md): the recent window holds 17
    // transfer_to_vesting_completed (2 rows each, 14 accounts, blocktrades
    // already counted) and 2 producer_reward (clayop, silversteem); the payout
    // window 2 producer_reward (bitcube, witness.svk, both already counted).
    check_table_counts(recent,
                       "author_reward 9, curation_reward 76, interest 1, producer_reward 2, transfer 32,"
                       " transfer_to_vesting_completed 34, withdraw_vesting 1",
                       "32");
    check_table_counts(payout, "author_reward 228, curation_reward 1063, producer_reward 2", "187");

    check_hand_picked_recent(recent);
    check_hand_picked_payout(payout);

    const auto walking = std::chrono::steady_clock::now();
    for (IndexedChain* chain : {&recent, &payout}) {
        const WalkStats stats = check_whole_table(*chain);
        const std::string rows = sql_value(chain->db(), "SELECT count(*) FROM wallet_operation_events");
        std::cout << chain->name() << ": " << stats.accounts << " accounts, " << stats.events << " events over "
                  << stats.pages << " pages (table rows " << rows << ")" << std::endl;
        // Every row was seen once through get_wallet_history with scope "all", each of spec 000's types once
        // more without it, and each reward once more through its own method.
        EXPECT_EQ(std::to_string(stats.events),
                  sql_value(chain->db(), "SELECT count(*) + count(*) FILTER (WHERE wallet_is_spec_type(op_type))"
                                         " + count(*) FILTER (WHERE op_type IN (52, 51)) FROM wallet_events"));
    }
    std::cout << "whole tables walked in " << seconds_since(walking) << " s" << std::endl;

    const auto totals = std::chrono::steady_clock::now();
    // camilla's rewards fall on 2016-09-08 .. 2016-09-14, up to 25 a day.
    const std::size_t recent_totals = check_totals(
        recent, {{}, {"2016-09-10T00:00:00Z", {}}, {{}, "2016-09-12T01:11:48Z"},
                 {"2016-09-08T07:52:42Z", "2016-09-12T01:11:49Z"}, {"2016-09-09T00:00:00Z", "2016-09-13T00:00:00Z"},
                 {"2016-09-08T12:00:00Z", "2016-09-08T23:00:00Z"}});
    // The payout block's time is 2016-07-04T00:00:06: windows that hold it in
    // a partial first or last day, in a whole day, in a window shorter than a
    // day, and windows that end at it (exclusive) or start after it.
    const std::size_t payout_totals = check_totals(
        payout, {{}, {{}, "2016-07-04T00:00:07Z"}, {"2016-07-04T00:00:07Z", {}},
                 {"2016-07-04T00:00:06Z", "2016-07-04T00:00:07Z"}, {"2016-07-03T00:00:00Z", "2016-07-04T00:00:06Z"},
                 {"2016-07-04T00:00:00Z", "2016-07-05T00:00:00Z"}, {"2016-07-02T12:00:00Z", "2016-07-04T00:00:07Z"},
                 {"2016-07-04T00:00:06Z", "2016-07-06T00:00:00Z"}});
    std::cout << "reward totals compared: " << recent_totals + payout_totals << " in " << seconds_since(totals) << " s"
              << std::endl;

    check_status(recent, kRecentIndexed, kRecentHead);
    check_status(payout, kPayoutIndexed, kPayoutHead);
    std::cout << "API calls: " << recent.calls() + payout.calls() << "; the test took " << seconds_since(started) << " s"
              << std::endl;
}
