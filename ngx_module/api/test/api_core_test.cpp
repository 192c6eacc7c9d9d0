// Unit tests of the API core without nginx or PostgreSQL: request
// validation, amount printing, client identity and the token buckets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "api_accounts.hpp"
#include "api_balances.hpp"
#include "api_config.hpp"
#include "api_inflight.hpp"
#include "api_limits.hpp"
#include "api_request.hpp"
#include "api_response.hpp"
#include "api_sql.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/wallet_event.hpp"

using namespace wallet::api;

namespace {

const wallet::CursorCodec kCodec("unit-test-cursor-secret-0001");

ParsedRequest parse(const std::string& body) { return parse_request(body, RequestLimits{}, kCodec); }

// Rows of a page that exercise every way a column is printed: NULL and
// empty texts, texts repeated from row to row (some needing escapes),
// op type names of every length, epochs of ten digits and of others.
PGresult* page_rows() {
    namespace c = page_column;
    PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
    std::vector<PGresAttDesc> attrs(static_cast<std::size_t>(c::kCount));
    for (auto& attr : attrs) {
        attr = PGresAttDesc{};
        attr.name = const_cast<char*>("column");
    }
    PQsetResultAttrs(result, c::kCount, attrs.data());
    struct Row {
        const char* role;
        const char* op_type;
        const char* epoch;
        const char* amount;
        const char* symbol;
        const char* vesting_amount;
        const char* vesting_symbol;
        const char* counterparty;
        const char* memo;
        const char* assets;
    };
    const Row rows[] = {
        {"sender", "transfer", "1577836800", "1.5", "HIVE", nullptr, nullptr, "bob", "", nullptr},
        {"sender", "transfer", "86399", "2.000", "HIVE", nullptr, nullptr, "", nullptr, nullptr},
        {"curator", "curation_reward", "1577836801", nullptr, nullptr, "1.5", "VESTS", nullptr, nullptr, nullptr},
        {"receiver", "transfer", "1577923200", "3.250", "H\"X", nullptr, nullptr, "bob", "a \"quoted\" memo", nullptr},
        {"receiver", "transfer", "-1", "3.250", "H\"X", nullptr, nullptr, "bob", "\\", nullptr},
        {"author", "comment_benefactor_reward", "1577836802", "0.001", "HBD", "0.000001", "VESTS", "x", nullptr,
         "[{\"field\": \"hbd_payout\", \"amount\": \"0.001\", \"symbol\": \"HBD\"}]"},
        {"author", "comment_benefactor_reward", "15778368a2", nullptr, nullptr, "7", "VESTS", "x", nullptr, nullptr},
        {"owner", "fill_vesting_withdraw", "9999999999", nullptr, nullptr, "1.000000", "VESTS", "", "", nullptr},
        {"owner", "interest", "0000000001", "0.5", "HBD", nullptr, nullptr, nullptr, nullptr, "d 0.500 HBD"},
        {"owner", "interest", "", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
    };
    // The header row first: indexed_block, the account id and generation.
    int at = 0;
    auto set = [&](int column, const char* value) {
        PQsetvalue(result, at, column, const_cast<char*>(value), value ? static_cast<int>(std::strlen(value)) : -1);
    };
    set(page_header::kIndexedBlock, "5000000");
    set(page_header::kAccountId, "42");
    set(page_header::kGeneration, "123456789");
    int index = 0;
    for (const Row& r : rows) {
        at = index + 1;
        const int kind = wallet::operation_type_id(r.op_type) * 100 + wallet::role_code(*wallet::parse_role(r.role));
        set(c::kKind, std::to_string(kind).c_str());
        set(c::kBlockNum, std::to_string(4000000 - index).c_str());
        set(c::kBlockSeq, "7");
        set(c::kTrxId, index % 2 ? "0123456789abcdef0123456789abcdef01234567" : nullptr);
        set(c::kOpPlace, index % 3 == 0 ? "0" : "51539607552");  // virtual_op 12, op_in_trx 0
        set(c::kEpoch, r.epoch);
        set(c::kAmount, r.amount);
        set(c::kSymbol, r.symbol);
        set(c::kVestingAmount, r.vesting_amount);
        set(c::kVestingSymbol, r.vesting_symbol);
        set(c::kCounterparty, r.counterparty);
        set(c::kMemo, r.memo);
        set(c::kAuthor, index == 5 ? "alice" : nullptr);
        set(c::kPermlink, index == 5 ? "" : nullptr);
        set(c::kAssets, r.assets);
        ++index;
    }
    return result;
}

}  // namespace

TEST(ApiCore, AmountsPrintAtTheAssetPrecisionWithoutLosingDigits) {
    EXPECT_EQ(format_amount("1.372000", "HBD"), "1.372");
    EXPECT_EQ(format_amount("0.000000", "HIVE"), "0.000");
    EXPECT_EQ(format_amount("655.141675", "VESTS"), "655.141675");
    EXPECT_EQ(format_amount("12", "VESTS"), "12.000000");
    EXPECT_EQ(format_amount("-3.5", "HIVE"), "-3.500");
    EXPECT_EQ(format_amount("123456789012345678901234.000000", "HIVE"), "123456789012345678901234.000");
    EXPECT_EQ(format_amount("1.000100", "HIVE"), "1.000100");  // a digit would be lost: unchanged
    EXPECT_EQ(format_amount("1.1234567", "VESTS"), "1.1234567");
    EXPECT_EQ(format_amount("1.", "HIVE"), "1.000");
    EXPECT_EQ(format_amount("2.5000000", "HBD"), "2.500");  // only zeros dropped
    EXPECT_EQ(format_amount("-7.250", "HBD"), "-7.250");    // at the precision already
    EXPECT_EQ(format_amount("7.250", "VESTS"), "7.250000");
    // Anything but [-]digits[.digits] comes back as it is.
    for (const char* text : {"", "-", ".5", "1.2.3", "1.2340.0", "+1", "1e5", "NaN", "--1", "1a.345", "x.123",
                             ".123", "-.123", "1.2.345"}) {
        EXPECT_EQ(format_amount(text, "HIVE"), text);
    }
}

// The page writer's shortcuts (texts repeated from row to row copied as
// written before, only empty texts asked whether they are NULL, ten-digit
// epochs read a word at a time) print exactly what the plain rendering did
// (this answer is that rendering's, byte for byte).
TEST(ApiCore, PageRowsPrintNullsEmptiesEscapesAndRepeatsExactly) {
    PGresult* rows = page_rows();
    PageQuery query;
    query.account = "alice";
    query.limit = 9;
    ResponseBuffer buffer;
    const std::string answer(write_page_response(buffer, "7", Method::GetWalletHistory, query, rows, kCodec));
    PQclear(rows);
    const std::string expected = R"json({"jsonrpc":"2.0","result":{"account":"alice","items":[{"account":"alice","role":"sender","op_type":"transfer","block_num":4000000,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":0,"timestamp":"2020-01-01T00:00:00Z","amount":"1.500","symbol":"HIVE","vesting_amount":null,"vesting_symbol":null,"counterparty":"bob","memo":"","author":null,"permlink":null,"assets":[{"field": "amount", "amount": "1.500", "symbol": "HIVE"}]})json"
        R"json(,{"account":"alice","role":"sender","op_type":"transfer","block_num":3999999,"block_seq":7,"trx_id":"0123456789abcdef0123456789abcdef01234567","op_in_trx":0,"virtual_op":12,"timestamp":"1970-01-01T23:59:59Z","amount":"2.000","symbol":"HIVE","vesting_amount":null,"vesting_symbol":null,"counterparty":"","memo":null,"author":null,"permlink":null,"assets":[{"field": "amount", "amount": "2.000", "symbol": "HIVE"}]})json"
        R"json(,{"account":"alice","role":"curator","op_type":"curation_reward","block_num":3999998,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":12,"timestamp":"2020-01-01T00:00:01Z","amount":null,"symbol":null,"vesting_amount":"1.500000","vesting_symbol":"VESTS","counterparty":null,"memo":null,"author":null,"permlink":null,"assets":[{"field": "reward", "amount": "1.500000", "symbol": "VESTS"}]})json"
        R"json(,{"account":"alice","role":"receiver","op_type":"transfer","block_num":3999997,"block_seq":7,"trx_id":"0123456789abcdef0123456789abcdef01234567","op_in_trx":0,"virtual_op":0,"timestamp":"2020-01-02T00:00:00Z","amount":"3.250","symbol":"H\"X","vesting_amount":null,"vesting_symbol":null,"counterparty":"bob","memo":"a \"quoted\" memo","author":null,"permlink":null,"assets":[{"field": "amount", "amount": "3.250", "symbol": "H\"X"}]})json"
        R"json(,{"account":"alice","role":"receiver","op_type":"transfer","block_num":3999996,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":12,"timestamp":"1970-01-01T00:00:00Z","amount":"3.250","symbol":"H\"X","vesting_amount":null,"vesting_symbol":null,"counterparty":"bob","memo":"\\","author":null,"permlink":null,"assets":[{"field": "amount", "amount": "3.250", "symbol": "H\"X"}]})json"
        R"json(,{"account":"alice","role":"author","op_type":"comment_benefactor_reward","block_num":3999995,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":12,"timestamp":"2020-01-01T00:00:02Z","amount":"0.001","symbol":"HBD","vesting_amount":"0.000001","vesting_symbol":"VESTS","counterparty":"x","memo":null,"author":"alice","permlink":"","assets":[{"field": "hbd_payout", "amount": "0.001", "symbol": "HBD"}]})json"
        R"json(,{"account":"alice","role":"author","op_type":"comment_benefactor_reward","block_num":3999994,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":0,"timestamp":"1970-07-02T14:52:48Z","amount":null,"symbol":null,"vesting_amount":"7.000000","vesting_symbol":"VESTS","counterparty":"x","memo":null,"author":null,"permlink":null,"assets":[]})json"
        R"json(,{"account":"alice","role":"owner","op_type":"fill_vesting_withdraw","block_num":3999993,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":12,"timestamp":"2286-11-20T17:46:39Z","amount":null,"symbol":null,"vesting_amount":"1.000000","vesting_symbol":"VESTS","counterparty":"","memo":"","author":null,"permlink":null,"assets":[]})json"
        R"json(,{"account":"alice","role":"owner","op_type":"interest","block_num":3999992,"block_seq":7,"trx_id":null,"op_in_trx":0,"virtual_op":12,"timestamp":"1970-01-01T00:00:01Z","amount":"0.500","symbol":"HBD","vesting_amount":null,"vesting_symbol":null,"counterparty":null,"memo":null,"author":null,"permlink":null,"assets":[{"field": "d", "amount": "0.500", "symbol": "HBD"}]}],"next_cursor":"AQHwo-gDDgVvd25lcjirqHEY4qHlOogf9Ki8ICs","indexer":{"indexed_block":5000000}},"id":7})json";
    EXPECT_EQ(answer, expected);
}

TEST(ApiCore, ParsesAndNormalisesAPageRequest) {
    auto r = parse(R"({"jsonrpc":"2.0","id":5,"method":"wallet_history.get_wallet_history",)"
                   R"("params":{"account":"alice","limit":500,"op_types":["transfer","interest","transfer"],)"
                   R"("from":"2020-01-01T00:00:00","to":"2020-02-01T00:00:00Z"}})");
    ASSERT_TRUE(r.call) << r.error->message;
    EXPECT_EQ(r.id_json, "5");
    EXPECT_EQ(r.call->page.limit, 200);
    EXPECT_EQ(r.call->page.op_types, (std::vector<std::string>{"interest", "transfer"}));
    EXPECT_EQ(r.call->page.from->to_iso_z(), "2020-01-01T00:00:00Z");
    auto statement = page_statement(r.call->page);
    EXPECT_STREQ(statement.name, "wh_page_types");
    EXPECT_EQ(statement.params.back(), "{55,2}");  // hived's operation ids
    EXPECT_EQ(statement.params[6], "201");
}

TEST(ApiCore, EnvelopeChecksLikeAStrictJsonReader) {
    // The id comes back as the client wrote it, whatever its JSON type.
    for (const std::string id : {"\"a\\u0041\"", "-1.5e3", "123456789012345678901234567890", "null"}) {
        auto r = parse(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"wallet_history.get_methods"})");
        ASSERT_TRUE(r.call) << id;
        EXPECT_EQ(r.id_json, id);
    }
    // Duplicate names anywhere, escaped or not, are a parse error.
    for (const std::string body :
         {R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_status","\u006d\u0065thod":"x"})",
          R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice","account":"bob"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_status","x":[{"a":1,"a":2}]})"}) {
        auto r = parse(body);
        ASSERT_TRUE(r.error) << body;
        EXPECT_EQ(r.error->code, -32700) << body;
    }
    // An escaped method name and params are read decoded; null params read as {}.
    auto escaped = parse(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_\u0073tatus","params":null})");
    ASSERT_TRUE(escaped.call);
    EXPECT_EQ(escaped.call->method, Method::GetStatus);
    auto no_params = parse(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history"})");
    ASSERT_TRUE(no_params.error);
    EXPECT_EQ(no_params.error->message, "missing account");
    // Limits: integers only; one beyond int64 clamps like any large one.
    auto limit = [](const std::string& value) {
        return parse(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice","limit":)" +
                     value + "}}");
    };
    EXPECT_EQ(limit("99999999999999999999999").call->page.limit, 200);
    EXPECT_EQ(limit("7").call->page.limit, 7);
    for (const std::string bad : {"0", "-0", "-5", "1.0", "1e2", "-99999999999999999999999", "\"7\"", "true"}) {
        auto r = limit(bad);
        ASSERT_TRUE(r.error) << bad;
        EXPECT_EQ(r.error->message, "invalid limit") << bad;
    }
    // Nesting beyond what any request needs is refused before it is read.
    EXPECT_EQ(parse(std::string(100, '[') + std::string(100, ']')).error->code, -32700);
}

TEST(ApiCore, CursorsAreBoundToAccountAndQuery) {
    PageQuery query;
    query.account = "alice";
    wallet::CursorPosition position{*wallet::Timestamp::parse("2020-01-01T00:00:00Z"), 10, 2, "sender"};
    const std::string cursor = kCodec.encode(position, "alice", query_fingerprint(Method::GetWalletHistory, query));
    auto ok = parse(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice","cursor":")" +
                    cursor + "\"}}");
    ASSERT_TRUE(ok.call);
    EXPECT_EQ(ok.call->page.after->block_num, 10);
    auto other_method = parse(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_author_rewards","params":{"account":"alice","cursor":")" +
                              cursor + "\"}}");
    ASSERT_TRUE(other_method.error);
    EXPECT_EQ(other_method.error->message, "invalid cursor");
}

TEST(ApiCore, TotalsWindowsSplitIntoWholeAndPartialDays) {
    PageQuery q;
    q.account = "alice";
    // Lifetime: the lifetime aggregate rows only.
    EXPECT_STREQ(totals_statement(q).name, "wh_totals_days");
    EXPECT_EQ(totals_statement(q).params, (std::vector<std::optional<std::string>>{"alice", "infinity", "infinity", std::nullopt, std::nullopt}));
    // Whole days: their aggregate rows only.
    q.from = *wallet::Timestamp::parse("2020-01-02T00:00:00Z");
    q.to = *wallet::Timestamp::parse("2020-01-04T00:00:00Z");
    EXPECT_STREQ(totals_statement(q).name, "wh_totals_days");
    EXPECT_EQ(totals_statement(q).params, (std::vector<std::optional<std::string>>{"alice", "2020-01-02", "2020-01-03", std::nullopt, std::nullopt}));
    q.from = *wallet::Timestamp::parse("2020-01-01T12:00:00Z");
    q.to = *wallet::Timestamp::parse("2020-01-04T06:00:00Z");
    EXPECT_STREQ(totals_statement(q).name, "wh_totals");
    EXPECT_EQ(totals_statement(q).params,
              (std::vector<std::optional<std::string>>{"alice", "2020-01-02", "2020-01-03", "2020-01-01T12:00:00Z",
                                                       "2020-01-02T00:00:00Z", "2020-01-04T00:00:00Z",
                                                       "2020-01-04T06:00:00Z", std::nullopt, std::nullopt}));
    q.to = *wallet::Timestamp::parse("2020-01-01T18:00:00Z");
    EXPECT_EQ(totals_statement(q).params,
              (std::vector<std::optional<std::string>>{"alice", "infinity", "-infinity", "2020-01-01T12:00:00Z",
                                                       "2020-01-01T18:00:00Z", "infinity", "infinity", std::nullopt, std::nullopt}));
}

TEST(ApiCore, ClientIdentityReadsTrustedHopsFromTheRight) {
    EXPECT_EQ(client_identity("127.0.0.1", "1.2.3.4", false, 0), "127.0.0.1");
    EXPECT_EQ(client_identity("127.0.0.1", "6.6.6.6, 1.2.3.4", true, 1), "1.2.3.4");
    EXPECT_EQ(client_identity("127.0.0.1", "6.6.6.6, 1.2.3.4, 10.0.0.1", true, 2), "1.2.3.4");
    EXPECT_EQ(client_identity("127.0.0.1", "1.2.3.4", true, 2), "127.0.0.1");
    EXPECT_EQ(client_identity("127.0.0.1", "junk, 10.0.0.1", true, 2), "127.0.0.1");
    EXPECT_EQ(client_identity("127.0.0.1", "2001:db8::1, 10.0.0.1", true, 2), "2001:db8::1");
}

TEST(ApiCore, RouterClientHeaderNeedsTheToken) {
    const std::string token = "0123456789abcdef0123456789abcdef";
    EXPECT_EQ(router_client(router_client_value(token, "127.0.0.2"), token), "127.0.0.2");
    EXPECT_EQ(router_client(router_client_value(token, "2001:db8::1"), token), "2001:db8::1");
    EXPECT_EQ(router_client(router_client_value(token, "unix:"), token), "unix:");
    EXPECT_EQ(router_client(router_client_value("0123456789abcdef0123456789abcdee", "127.0.0.2"), token), "");
    EXPECT_EQ(router_client("127.0.0.2", token), "");
    EXPECT_EQ(router_client(router_client_value(token, "not-an-address"), token), "");
    EXPECT_EQ(router_client(router_client_value(token, ""), token), "");
    EXPECT_EQ(router_client(router_client_value("", "127.0.0.2"), ""), "");  // no token: never trusted
}

TEST(ApiCore, TokenBucketsRefillAtTheRate) {
    std::vector<unsigned char> memory(RateLimitTable::bytes_for(64), 0);
    RateLimitTable table(memory.data(), 64);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(table.allow("a", 1000, 2, 3));
    EXPECT_FALSE(table.allow("a", 1000, 2, 3));
    EXPECT_TRUE(table.allow("b", 1000, 2, 3));
    EXPECT_TRUE(table.allow("a", 1500, 2, 3));  // 2/s: one token after 500 ms
    EXPECT_FALSE(table.allow("a", 1500, 2, 3));
    EXPECT_TRUE(table.allow("a", 100000, 0, 3));  // rate 0 disables
    // Many identities in a small table: buckets are reused, nothing breaks.
    for (int i = 0; i < 1000; ++i) table.allow("client-" + std::to_string(i), 2000, 2, 3);
    EXPECT_FALSE(table.allow("a", 1500, 2, 3) && table.allow("a", 1500, 2, 3) && table.allow("a", 1500, 2, 3) &&
                 table.allow("a", 1500, 2, 3));
}

TEST(ApiCore, ADatabaseUrlWithSeveralHostsGivesOneDatabaseEach) {
    auto one = nonblocking_conninfo("postgresql://reader:pw@127.0.0.1:5433/wallet");
    ASSERT_TRUE(one) << one.error();
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ(one->at(0).at("hostaddr"), "127.0.0.1");
    EXPECT_EQ(one->at(0).at("port"), "5433");
    // libpq's default (prefer: TLS when the server offers it) stays.
    EXPECT_EQ(one->at(0).count("sslmode") ? one->at(0).at("sslmode") : "prefer", "prefer");
    for (const std::string mode : {"disable", "allow", "prefer", "require", "verify-full"}) {
        auto given = nonblocking_conninfo("postgresql://reader:pw@127.0.0.1:5433/wallet?sslmode=" + mode);
        ASSERT_TRUE(given) << given.error();
        EXPECT_EQ(given->at(0).at("sslmode"), mode);
    }

    auto several = nonblocking_conninfo(
        "postgresql://reader:pw@127.0.0.1:5433,127.0.0.2:5434,localhost/wallet?target_session_attrs=read-write");
    ASSERT_TRUE(several) << several.error();
    ASSERT_EQ(several->size(), 3u);
    EXPECT_EQ(several->at(1).at("hostaddr"), "127.0.0.2");
    EXPECT_EQ(several->at(1).at("port"), "5434");
    EXPECT_EQ(several->at(1).at("user"), "reader");
    EXPECT_EQ(several->at(1).at("dbname"), "wallet");
    EXPECT_FALSE(several->at(2).at("hostaddr").empty());  // resolved now, not in the event loop
    EXPECT_EQ(several->at(2).count("target_session_attrs"), 0u);

    auto shared_port = nonblocking_conninfo("postgresql://reader:pw@127.0.0.1,127.0.0.2/wallet?port=6000");
    ASSERT_TRUE(shared_port) << shared_port.error();
    ASSERT_EQ(shared_port->size(), 2u);
    EXPECT_EQ(shared_port->at(0).at("port"), "6000");
    EXPECT_EQ(shared_port->at(1).at("port"), "6000");
    EXPECT_FALSE(nonblocking_conninfo("host=127.0.0.1,127.0.0.2,127.0.0.3 port=1,2 dbname=wallet"));
}

// By default the workers share WALLET_API_DB_MAX_CONNS_TOTAL (at least one
// connection, at most 10 each); WALLET_API_DB_MAX_CONNS, when set, is each one's.
TEST(ApiCore, ThePoolSizeIsAShareOfTheTotalUnlessGiven) {
    wallet::ApiSettings s;
    const auto per_worker = [&s](std::int64_t workers) { return pool_size(s, workers).per_worker; };
    EXPECT_EQ(per_worker(1), 10);
    EXPECT_EQ(per_worker(4), 10);
    EXPECT_EQ(per_worker(8), 5);
    EXPECT_EQ(per_worker(16), 2);
    EXPECT_EQ(pool_size(s, 16).per_database(), 32);
    EXPECT_EQ(per_worker(64), 1);
    EXPECT_TRUE(pool_size(s, 16).derived);
    s.db_max_conns_total = 100;
    EXPECT_EQ(per_worker(1), 10);
    EXPECT_EQ(per_worker(3), 10);
    EXPECT_EQ(per_worker(12), 8);
    s.db_max_conns = 7;
    EXPECT_EQ(per_worker(16), 7);
    EXPECT_EQ(pool_size(s, 16).per_database(), 112);
    EXPECT_FALSE(pool_size(s, 16).derived);
}

// The probe's answer and its gauges: standby and replay delay only for a
// database that answered; the interval setting's bounds.
TEST(ApiCore, DatabaseProbesReadTheirAnswerAndWriteTheirGauges) {
    PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
    std::vector<PGresAttDesc> attrs(2);
    for (auto& attr : attrs) {
        attr = PGresAttDesc{};
        attr.name = const_cast<char*>("column");
    }
    PQsetResultAttrs(result, 2, attrs.data());
    PQsetvalue(result, 0, database_column::kStandby, const_cast<char*>("t"), 1);
    PQsetvalue(result, 0, database_column::kReplayDelayUs, const_cast<char*>("2500000"), 7);
    const auto reading = database_reading(result);
    PQclear(result);
    ASSERT_TRUE(reading);
    EXPECT_TRUE(reading->standby);
    EXPECT_EQ(reading->replay_delay_us, 2500000u);
    EXPECT_FALSE(database_reading(nullptr));
    EXPECT_STREQ(database_statement().name, "wh_database");
    EXPECT_EQ(prepared_statements().at("wh_database").rfind("AS SELECT pg_is_in_recovery(), ", 0), 0u);

    metrics::TextWriter out;
    write_database_metrics(out, {{"10.0.0.1:5432/wallet", DatabaseReading{false, 0}},
                                 {"10.0.0.2:5432/wallet", DatabaseReading{true, 2500000}},
                                 {"10.0.0.3:5432/wallet", std::nullopt}});
    const std::string& text = out.text();
    for (const char* line : {"wallet_history_database_up{database=\"10.0.0.1:5432/wallet\"} 1\n",
                             "wallet_history_database_up{database=\"10.0.0.3:5432/wallet\"} 0\n",
                             "wallet_history_database_standby{database=\"10.0.0.1:5432/wallet\"} 0\n",
                             "wallet_history_database_standby{database=\"10.0.0.2:5432/wallet\"} 1\n",
                             "wallet_history_database_replay_delay_seconds{database=\"10.0.0.1:5432/wallet\"} 0.000000\n",
                             "wallet_history_database_replay_delay_seconds{database=\"10.0.0.2:5432/wallet\"} 2.500000\n"}) {
        EXPECT_NE(text.find(line), std::string::npos) << line << text;
    }
    EXPECT_EQ(text.find("standby{database=\"10.0.0.3"), std::string::npos) << text;
    EXPECT_EQ(text.find("seconds{database=\"10.0.0.3"), std::string::npos) << text;

    const auto interval = [](const char* value) -> std::optional<std::int64_t> {
        auto config = load_api_config(wallet::map_env({{"WALLET_API_READER_PASSWORD", "a-reader-password-of-length"},
                                                       {"WALLET_API_DB_PROBE_INTERVAL_MS", value}}),
                                      {});
        if (!config) return std::nullopt;
        return config->db_probe_interval_ms;
    };
    EXPECT_EQ(interval(""), 5000);
    EXPECT_EQ(interval("0"), 0);
    EXPECT_EQ(interval("100"), 100);
    EXPECT_EQ(interval("99"), std::nullopt);
    EXPECT_EQ(interval("-1"), std::nullopt);
    EXPECT_EQ(interval("5s"), std::nullopt);
    EXPECT_EQ(interval("3600001"), std::nullopt);
}

// A worker remembers at most its capacity of names, the least recently used
// going first; a page that found no account makes it forget the name.
TEST(ApiCore, RememberedAccountsAreBoundedAndForgetUnknownNames) {
    RememberedAccounts accounts(2);
    EXPECT_FALSE(accounts.find("alice"));
    accounts.learn("alice", RememberedAccount{1, 77});
    accounts.learn("bob", RememberedAccount{2, 77});
    ASSERT_TRUE(accounts.find("alice"));  // alice is now the most recently used
    accounts.learn("carol", RememberedAccount{3, 77});
    EXPECT_EQ(accounts.size(), 2U);
    EXPECT_FALSE(accounts.find("bob"));
    EXPECT_EQ(accounts.find("alice")->id, 1);
    EXPECT_EQ(accounts.find("carol")->id, 3);
    // Another store's answer replaces what was remembered.
    accounts.learn("alice", RememberedAccount{9, 78});
    EXPECT_EQ(accounts.find("alice")->id, 9);
    EXPECT_EQ(accounts.find("alice")->generation, 78);
    // No such account (on the store that answered): not remembered.
    accounts.learn("alice", std::nullopt);
    accounts.learn("nobody", std::nullopt);
    EXPECT_FALSE(accounts.find("alice"));
    EXPECT_FALSE(accounts.find("nobody"));
    EXPECT_EQ(accounts.size(), 1U);
    RememberedAccounts none(0);
    none.learn("alice", RememberedAccount{1, 77});
    EXPECT_FALSE(none.find("alice"));
}

// The page statement takes the remembered id and its generation after the
// page's parameters (NULL when the worker has none).
TEST(ApiCore, PageStatementPassesTheRememberedAccount) {
    PageQuery query;
    query.account = "alice";
    query.limit = 50;
    const auto fresh = page_statement(query);
    ASSERT_EQ(fresh.params.size(), 9U);
    EXPECT_FALSE(fresh.params[7]);
    EXPECT_FALSE(fresh.params[8]);
    const auto warm = page_statement(query, RememberedAccount{42, 123456789});
    EXPECT_EQ(warm.params[7], "42");
    EXPECT_EQ(warm.params[8], "123456789");
    query.op_types = {"transfer"};
    EXPECT_EQ(page_statement(query, RememberedAccount{42, 1}).params.size(), 10U);
}

// get_balances (not at a time) and a balance-history page take it too
// (migration 0030), and the worker learns it from their header row (kind 0:
// the account id in n3, the generation in n6; none when either is NULL).
TEST(ApiCore, BalanceStatementsPassAndReturnTheRememberedAccount) {
    BalanceQuery balances;
    balances.account = "alice";
    const auto fresh = balances_statement(balances);
    ASSERT_EQ(fresh.params.size(), 5U);
    EXPECT_FALSE(fresh.params[3]);
    EXPECT_FALSE(fresh.params[4]);
    const auto warm = balances_statement(balances, RememberedAccount{42, 123456789});
    EXPECT_EQ(warm.params[3], "42");
    EXPECT_EQ(warm.params[4], "123456789");
    balances.time = wallet::Timestamp::from_seconds(1577836800).value();
    EXPECT_EQ(balances_statement(balances, RememberedAccount{42, 1}).params.size(), 3U);
    BalanceHistoryQuery history;
    history.account = "alice";
    history.limit = 25;
    const auto page = balance_history_statement(history, RememberedAccount{42, 7});
    ASSERT_EQ(page.params.size(), 9U);
    EXPECT_EQ(page.params[7], "42");
    EXPECT_EQ(page.params[8], "7");
    EXPECT_FALSE(balance_history_statement(history).params[8]);

    namespace c = balances_column;
    PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
    std::vector<PGresAttDesc> attrs(11);
    for (auto& attr : attrs) {
        attr = PGresAttDesc{};
        attr.name = const_cast<char*>("column");
    }
    PQsetResultAttrs(result, 11, attrs.data());
    auto set = [&](int row, int column, const char* value) {
        PQsetvalue(result, row, column, const_cast<char*>(value), value ? static_cast<int>(std::strlen(value)) : -1);
    };
    set(0, c::kKind, "1");  // a run row first: the header is found by its kind
    set(1, c::kKind, "0");
    set(1, c::kN3, "42");
    set(1, c::kN6, "123456789");
    const auto learned = balance_rows_account(result);
    ASSERT_TRUE(learned);
    EXPECT_EQ(learned->id, 42);
    EXPECT_EQ(learned->generation, 123456789);
    set(1, c::kN6, nullptr);  // the previous functions' header: no generation
    EXPECT_FALSE(balance_rows_account(result));
    set(1, c::kN6, "5");
    set(1, c::kN3, nullptr);  // an unknown account
    EXPECT_FALSE(balance_rows_account(result));
    PQclear(result);
}

TEST(ApiCore, InflightTableTakesTheRequestsOfDeadWorkersOut) {
    auto table = std::make_unique<InflightTable>();
    std::vector<std::int64_t> dead;
    auto alive = [&dead](std::int64_t pid) { return std::find(dead.begin(), dead.end(), pid) == dead.end(); };
    InflightTable::Slot* a = table->claim(100, alive);
    InflightTable::Slot* b = table->claim(200, alive);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, a);
    EXPECT_TRUE(table->try_enter(a, 3));
    EXPECT_TRUE(table->try_enter(a, 3));
    EXPECT_TRUE(table->try_enter(b, 3));
    EXPECT_FALSE(table->try_enter(b, 3));  // the cap counts every worker
    EXPECT_EQ(table->total(), 3);
    // Worker 100 dies with two requests in flight; its successor starts.
    dead.push_back(100);
    InflightTable::Slot* c = table->claim(300, alive);
    EXPECT_EQ(table->total(), 1);
    EXPECT_TRUE(table->try_enter(c, 3));
    EXPECT_TRUE(table->try_enter(c, 3));
    EXPECT_FALSE(table->try_enter(c, 3));
    table->leave(b);
    table->leave(c);
    EXPECT_EQ(table->total(), 1);
    // Found by a worker at the cap, without a new one starting.
    dead.push_back(300);
    EXPECT_EQ(table->reclaim_dead(alive), 1);
    EXPECT_EQ(table->total(), 0);
    // A worker that exits gives back what it still counts.
    EXPECT_TRUE(table->try_enter(b, 3));
    table->release(b);
    EXPECT_EQ(table->total(), 0);
    // A recycled pid is a new process: the old slot's count does not follow it.
    InflightTable::Slot* d = table->claim(400, alive);
    EXPECT_TRUE(table->try_enter(d, 3));
    dead.clear();
    InflightTable::Slot* e = table->claim(400, alive);
    EXPECT_EQ(table->total(), 0);
    EXPECT_TRUE(table->try_enter(e, 3));
    EXPECT_EQ(table->total(), 1);
}

// `wallet-db-setup --api-settings` lists settings_read_by(Api): every
// variable the module's configuration reads must be there.
TEST(ApiCore, EverySettingTheModuleReadsIsListed) {
    std::vector<std::string> read;
    const wallet::EnvLookup recorder = [&read](const std::string& name) -> std::optional<std::string> {
        read.push_back(name);
        if (name == "WALLET_API_READER_PASSWORD") return "a-reader-password-of-length";
        return std::nullopt;
    };
    ASSERT_TRUE(wallet::api::load_api_config(recorder, {}).ok());
    std::vector<std::string> listed;
    for (const auto& doc : wallet::settings_read_by(wallet::Component::Api)) listed.emplace_back(doc.name);
    for (const auto& name : read) {
        EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end()) << name << " is read but not listed";
    }
    const std::string help = wallet::settings_help(wallet::Component::Api);
    EXPECT_NE(help.find("WALLET_API_ACCOUNT_CACHE"), std::string::npos) << help;
    EXPECT_NE(help.find("API_BIND_PORT"), std::string::npos) << help;
}

TEST(ApiCore, PushRequestsAreRecognisedAndValidated) {
    auto push = [](const std::string& body) { return parse_push_request(body, RequestLimits{}, 2, kCodec); };
    EXPECT_TRUE(names_push_method(R"({"method":"wallet_history.subscribe"})"));
    EXPECT_FALSE(names_push_method(R"({"method":"wallet_history.get_status"})"));
    // Not one push call: routed as before (a batch, another method, bad JSON).
    EXPECT_FALSE(push(R"([{"jsonrpc":"2.0","id":1,"method":"wallet_history.subscribe","params":{"accounts":["a1"]}}])"));
    EXPECT_FALSE(push(R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"note":"wallet_history.subscribe"}})"));
    EXPECT_FALSE(push(R"({"jsonrpc":"2.0","method":"wallet_history.subscribe",)"));

    auto ok = push(R"({"jsonrpc":"2.0","id":"s","method":"wallet_history.subscribe",)"
                   R"("params":{"accounts":["bob","alice"],"op_types":["transfer"]}})");
    ASSERT_TRUE(ok);
    EXPECT_FALSE(ok->error);
    EXPECT_EQ(ok->id_json, "\"s\"");
    EXPECT_EQ(ok->accounts, (std::vector<std::string>{"alice", "bob"}));
    EXPECT_EQ(ok->filter.op_types, (std::vector<std::string>{"transfer"}));

    // A cursor made for one of the accounts, with the same filter.
    PageQuery filter;
    filter.op_types = {"transfer"};
    wallet::CursorPosition position;
    position.block_num = 7;
    position.block_seq = 2;
    position.role = "sender";
    const std::string cursor = kCodec.encode(position, "bob", query_fingerprint(Method::GetWalletHistory, filter));
    auto resumed = push(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.subscribe","params":{"accounts":["alice","bob"],)"
                        R"("op_types":["transfer"],"cursor":")" + cursor + R"("}})");
    ASSERT_TRUE(resumed && !resumed->error);
    EXPECT_EQ(resumed->after_account, "bob");
    EXPECT_EQ(resumed->after->block_num, 7);
    auto other_filter = push(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.subscribe","params":{"accounts":["bob"],)"
                             R"("cursor":")" + cursor + R"("}})");
    ASSERT_TRUE(other_filter && other_filter->error);
    EXPECT_EQ(other_filter->error->message, "invalid cursor");

    auto too_many = push(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.subscribe","params":{"accounts":["a1","a2","a3"]}})");
    ASSERT_TRUE(too_many && too_many->error);
    EXPECT_EQ(too_many->error->message, "too many accounts (at most 2)");
    auto unsubscribe = push(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.unsubscribe","params":{"subscription":"9"}})");
    ASSERT_TRUE(unsubscribe && !unsubscribe->error);
    EXPECT_EQ(unsubscribe->kind, PushRequest::Kind::Unsubscribe);
    EXPECT_EQ(unsubscribe->subscription, "9");
    auto extra = push(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.unsubscribe","params":{"subscription":"9","x":1}})");
    ASSERT_TRUE(extra && extra->error);
    EXPECT_EQ(extra->error->message, "unknown parameter");
}
