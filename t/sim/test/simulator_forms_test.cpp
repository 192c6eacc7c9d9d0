// The two serialization forms of operations, as hived converts them, and the
// simulator's text helpers.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "json_writer.hpp"
#include "protocol.hpp"

namespace {

std::filesystem::path fixtures() { return WALLET_HIVE_FIXTURES_DIR; }

wallet::JsonPtr load(const std::filesystem::path& path) {
    json_error_t error;
    wallet::JsonPtr value = wallet::json_own(json_load_file(path.c_str(), 0, &error));
    if (!value) throw std::runtime_error(path.string() + ": " + error.text);
    return value;
}

std::string legacy_text(const json_t* nai_value, const sim::SymbolTable& symbols) {
    sim::OutputBuffer buffer;
    sim::JsonWriter out(buffer);
    sim::write_legacy_value(out, nai_value, symbols);
    return buffer.str();
}

wallet::JsonPtr parse(const std::string& text) {
    json_error_t error;
    wallet::JsonPtr value = wallet::json_own(sim::parse_json(text, &error));
    if (!value) throw std::runtime_error(text + ": " + error.text);
    return value;
}

std::string dump(const json_t* value) {
    wallet::MallocPtr<char> text(json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY));
    return text.get();
}

struct Pair {
    const json_t* nai;        // {"type": "..._operation", "value": {...}}
    const json_t* condenser;  // ["...", {...}]
};

// Every (account_history_api, condenser_api) pair of an operation in a pairs file.
std::vector<Pair> pairs_of(const json_t* file) {
    std::vector<Pair> out;
    const json_t* pairs = json_object_get(file, "pairs");
    for (std::size_t i = 0; i < json_array_size(pairs); ++i) {
        const json_t* nai = json_object_get(json_array_get(pairs, i), "account_history_api");
        const json_t* condenser = json_object_get(json_array_get(pairs, i), "condenser_api");
        if (json_is_array(nai)) {  // [seq, envelope] in account-history pairs
            nai = json_array_get(nai, 1);
            condenser = json_array_get(condenser, 1);
        }
        out.push_back({json_object_get(nai, "op"), json_object_get(condenser, "op")});
    }
    return out;
}

}  // namespace

TEST(SimulatorForms, TestnetPairsConvertFromNaiToLegacyAndBack) {
    std::size_t checked = 0;
    for (const char* name : {"get_ops_in_block_pairs.json", "get_account_history_pairs.json"}) {
        wallet::JsonPtr file = load(fixtures() / "hived-testnet-unit-expected" / name);
        for (const Pair& pair : pairs_of(file.get())) {
            std::string type = json_string_value(json_object_get(pair.nai, "type"));
            std::string op_name = type.substr(0, type.size() - std::string("_operation").size());
            ASSERT_EQ(op_name, json_string_value(json_array_get(pair.condenser, 0)));
            const json_t* nai_value = json_object_get(pair.nai, "value");
            const json_t* legacy_value = json_array_get(pair.condenser, 1);
            wallet::JsonPtr converted = parse(legacy_text(nai_value, sim::SymbolTable::testnet()));
            EXPECT_TRUE(json_equal(converted.get(), legacy_value))
                << op_name << "\nexpected " << dump(legacy_value) << "\ngot      " << dump(converted.get());
            wallet::JsonPtr back = sim::legacy_to_nai(op_name, legacy_value);
            EXPECT_TRUE(json_equal(back.get(), nai_value))
                << op_name << "\nexpected " << dump(nai_value) << "\ngot      " << dump(back.get());
            ++checked;
        }
    }
    EXPECT_GT(checked, 400u);
}

TEST(SimulatorForms, MainnetGetOpsInBlockPairsConvertBothWays) {
    std::size_t checked = 0;
    auto dir = fixtures() / "hived-mainnet-5m";
    for (const auto& entry :
         std::filesystem::directory_iterator(dir / "account_history_api_patterns" / "get_ops_in_block")) {
        auto condenser_path = dir / "condenser_api_patterns" / "get_ops_in_block" / entry.path().filename();
        if (!std::filesystem::exists(condenser_path)) continue;
        wallet::JsonPtr nai = load(entry.path());
        wallet::JsonPtr condenser = load(condenser_path);
        const json_t* ops = json_object_get(nai.get(), "ops");
        ASSERT_EQ(json_array_size(ops), json_array_size(condenser.get())) << entry.path();
        for (std::size_t i = 0; i < json_array_size(ops); ++i) {
            const json_t* nai_op = json_object_get(json_array_get(ops, i), "op");
            const json_t* legacy_op = json_object_get(json_array_get(condenser.get(), i), "op");
            wallet::JsonPtr converted =
                parse(legacy_text(json_object_get(nai_op, "value"), sim::SymbolTable::mainnet()));
            EXPECT_TRUE(json_equal(converted.get(), json_array_get(legacy_op, 1))) << entry.path();
            wallet::JsonPtr back =
                sim::legacy_to_nai(json_string_value(json_array_get(legacy_op, 0)), json_array_get(legacy_op, 1));
            EXPECT_TRUE(json_equal(back.get(), json_object_get(nai_op, "value"))) << entry.path();
            ++checked;
        }
    }
    EXPECT_GT(checked, 60u);
}

TEST(SimulatorForms, LegacyAmountsAreDigitManipulation) {
    auto asset = [](const char* amount, int precision, const char* nai) {
        wallet::JsonPtr value =
            wallet::json_own(json_pack("{s:s, s:i, s:s}", "amount", amount, "precision", precision, "nai", nai));
        return legacy_text(value.get(), sim::SymbolTable::mainnet());
    };
    EXPECT_EQ(asset("18325", 6, "@@000000037"), "\"0.018325 VESTS\"");
    EXPECT_EQ(asset("0", 3, "@@000000021"), "\"0.000 HIVE\"");
    EXPECT_EQ(asset("1000", 3, "@@000000013"), "\"1.000 HBD\"");
    EXPECT_EQ(asset("448144916705468383", 6, "@@000000037"), "\"448144916705.468383 VESTS\"");
    EXPECT_EQ(asset("5", 3, "@@000000099"), "\"0.005 UNKN\"");
    // A memo that looks like an amount stays a memo.
    wallet::JsonPtr transfer = parse(R"({"from":"a","to":"b","amount":"1.000 HIVE","memo":"2.000 HIVE"})");
    wallet::JsonPtr nai = sim::legacy_to_nai("transfer", transfer.get());
    EXPECT_EQ(
        dump(nai.get()),
        R"({"from":"a","to":"b","amount":{"amount":"1000","precision":3,"nai":"@@000000021"},"memo":"2.000 HIVE"})");
}

TEST(SimulatorForms, TimesAreFormattedLikeGmtime) {
    auto by_libc = [](std::int64_t seconds) {
        std::time_t t = static_cast<std::time_t>(seconds);
        std::tm parts{};
        gmtime_r(&t, &parts);
        char text[32];
        std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
        return std::string(text);
    };
    for (std::int64_t seconds : {0LL, 1458835200LL, 1458835203LL, 951782400LL /* 2000-02-29 */, 1709164799LL,
                                 4102444800LL, 1700000000LL + 86399LL}) {
        EXPECT_EQ(sim::format_time(seconds), by_libc(seconds)) << seconds;
        EXPECT_EQ(sim::parse_time(by_libc(seconds)), seconds);
    }
    for (std::int64_t seconds = 1458835200; seconds < 1458835200 + 3LL * 90000000; seconds += 86400 * 37 + 4321)
        ASSERT_EQ(sim::format_time(seconds), by_libc(seconds)) << seconds;
}

TEST(SimulatorForms, RequestsWithUint64BeyondInt64Parse) {
    wallet::JsonPtr request = parse(R"({"params":["gtg",-1,1000,14526362277415747612,8193],"id":9223372036854775807})");
    const json_t* params = json_object_get(request.get(), "params");
    EXPECT_STREQ(json_string_value(json_array_get(params, 3)), "14526362277415747612");
    EXPECT_EQ(json_integer_value(json_array_get(params, 4)), 8193);
    EXPECT_EQ(json_integer_value(json_array_get(params, 1)), -1);
    EXPECT_EQ(json_integer_value(json_object_get(request.get(), "id")), 9223372036854775807LL);
    // Digits inside strings are left alone.
    wallet::JsonPtr text = parse(R"(["12345678901234567890123", 1.5e300])");
    EXPECT_STREQ(json_string_value(json_array_get(text.get(), 0)), "12345678901234567890123");
}

TEST(SimulatorForms, WriterEscapesStringsAndGrowsItsBuffer) {
    sim::OutputBuffer buffer;
    sim::JsonWriter out(buffer);
    out.string("a\"b\\c\nd\x01");
    EXPECT_EQ(buffer.str(), "\"a\\\"b\\\\c\\nd\\u0001\"");
    std::string big(100000, 'x');
    for (int i = 0; i < 20; ++i) out.string(big);
    EXPECT_EQ(buffer.size(), 18 + 20 * (big.size() + 2));
    out.truncate(3);
    out.decimal(-12345, 3);
    EXPECT_EQ(buffer.str(), "\"a\\-12.345");
}

TEST(SimulatorForms, OperationTypeIdsAreHivedsStaticVariantOrder) {
    EXPECT_EQ(sim::op_type_id("vote"), 0);
    EXPECT_EQ(sim::op_type_id("transfer"), 2);
    EXPECT_EQ(sim::op_type_id("claim_reward_balance"), 39);
    EXPECT_EQ(sim::op_type_id("delegate_vesting_shares"), 40);
    EXPECT_EQ(sim::op_type_id("fill_convert_request"), 50);
    EXPECT_EQ(sim::op_type_id("author_reward"), 51);
    EXPECT_EQ(sim::op_type_id("interest"), 55);
    EXPECT_EQ(sim::op_type_id("comment_benefactor_reward"), 63);
    EXPECT_EQ(sim::op_type_id("producer_reward"), 64);
    EXPECT_EQ(sim::op_type_id("effective_comment_vote"), 72);
    EXPECT_EQ(sim::op_type_id("transfer_to_vesting_completed"), 77);
    EXPECT_EQ(sim::op_type_id("declined_voting_rights"), 92);
    EXPECT_EQ(sim::op_type_id("no_such_op"), -1);
}
