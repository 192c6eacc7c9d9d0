#include "wallet/asset.hpp"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "hive_fixtures.hpp"

namespace wallet {
namespace {

using test::hive_fixtures_dir;
using test::json_string_of;
using test::JsonVisit;
using test::load_json_file;
using test::walk_json;

JsonPtr parse_json(const char* text) {
    json_error_t error;
    JsonPtr value = json_own(json_loads(text, JSON_DECODE_ANY, &error));
    EXPECT_TRUE(value) << text << ": " << error.text;
    return value;
}

Asset asset_of(const char* json_text, const AssetTable& table = AssetTable::mainnet()) {
    JsonPtr value = parse_json(json_text);
    auto parsed = parse_asset(value.get(), table);
    EXPECT_TRUE(parsed.ok()) << json_text << ": " << (parsed.ok() ? "" : parsed.error());
    return parsed.ok() ? *parsed : Asset{};
}

TEST(Asset, ParsesLegacyStrings) {
    const Asset hive = asset_of(R"("1.000 HIVE")");
    EXPECT_EQ(hive.symbol, "HIVE");
    EXPECT_EQ(hive.precision, 3);
    EXPECT_EQ(hive.amount_string().value(), "1.000");
    EXPECT_EQ(hive.legacy_string().value(), "1.000 HIVE");

    const Asset vests = asset_of(R"("0.018325 VESTS")");
    EXPECT_EQ(vests.precision, 6);
    EXPECT_EQ(vests.amount.units_string(6).value(), "18325");

    EXPECT_EQ(asset_of(R"("2.000 STEEM")").symbol, "STEEM");
    EXPECT_EQ(asset_of(R"("1.000 SBD")").symbol, "SBD");
    EXPECT_EQ(asset_of(R"("1.000 TESTS")").symbol, "TESTS");
    EXPECT_EQ(asset_of(R"("5 SYM")").precision, 0);
    EXPECT_EQ(asset_of(R"("-0.001 HBD")").legacy_string().value(), "-0.001 HBD");
}

TEST(Asset, RejectsMalformedLegacyStrings) {
    for (const char* text : {"", "1.000", "HIVE", "1.000  HIVE", " 1.000 HIVE", "1.000 HIVE ", "1.000 hive", "1.000 HIVE1",
                             "1.000 TOOLONGSYM", "1,000 HIVE", "1e3 HIVE", "1. HIVE", ".5 HIVE", "1.000\tHIVE",
                             "1.000 HI VE", "- HIVE", "1.0000000000000000000 HIVE"}) {
        EXPECT_FALSE(parse_legacy_asset(text).ok()) << '"' << text << '"';
    }
}

TEST(Asset, ParsesNaiObjects) {
    const Asset hive = asset_of(R"({"amount":"1000","precision":3,"nai":"@@000000021"})");
    EXPECT_EQ(hive, (Asset{Decimal::parse("1.000").value(), "HIVE", 3}));
    EXPECT_EQ(asset_of(R"({"amount":"13300","precision":3,"nai":"@@000000013"})").legacy_string().value(), "13.300 HBD");
    EXPECT_EQ(asset_of(R"({"amount":"448144916705468383","precision":6,"nai":"@@000000037"})").legacy_string().value(),
              "448144916705.468383 VESTS");
    // An integer amount is accepted as well as a string.
    EXPECT_EQ(asset_of(R"({"amount":1000,"precision":3,"nai":"@@000000021"})").legacy_string().value(), "1.000 HIVE");
    // Key order does not matter.
    EXPECT_EQ(asset_of(R"({"nai":"@@000000037","precision":6,"amount":"0"})").legacy_string().value(), "0.000000 VESTS");
}

TEST(Asset, UnknownNaiPrintsUnkn) {
    // @@000000045: 00000004 with its Damm check digit 5.
    const Asset other = asset_of(R"({"amount":"12345","precision":4,"nai":"@@000000045"})");
    EXPECT_EQ(other.symbol, "UNKN");
    EXPECT_EQ(other.precision, 4);
    EXPECT_EQ(other.amount_string().value(), "1.2345");
    // A known NAI with another precision is another asset to hived.
    EXPECT_EQ(asset_of(R"({"amount":"1000","precision":4,"nai":"@@000000021"})").symbol, "UNKN");
}

TEST(Asset, RejectsMalformedNaiObjects) {
    const AssetTable table = AssetTable::mainnet();
    for (const char* text : {
             R"({"amount":"1.000","precision":3,"nai":"@@000000021"})",
             R"({"amount":"","precision":3,"nai":"@@000000021"})",
             R"({"amount":"1e3","precision":3,"nai":"@@000000021"})",
             R"({"amount":1.5,"precision":3,"nai":"@@000000021"})",
             R"({"amount":null,"precision":3,"nai":"@@000000021"})",
             R"({"precision":3,"nai":"@@000000021"})",
             R"({"amount":"1000","precision":"3","nai":"@@000000021"})",
             R"({"amount":"1000","precision":-1,"nai":"@@000000021"})",
             R"({"amount":"1000","precision":19,"nai":"@@000000021"})",
             R"({"amount":"1000","nai":"@@000000021"})",
             R"({"amount":"1000","precision":3,"nai":"@@000000022"})",
             R"({"amount":"1000","precision":3,"nai":"@@00000002"})",
             R"({"amount":"1000","precision":3,"nai":"000000021"})",
             R"({"amount":"1000","precision":3,"nai":21})",
             R"({"amount":"1000","precision":3})",
             R"({"amount":"123456789012345678901234567890123456789","precision":3,"nai":"@@000000021"})",
             R"([])", R"(12)", R"(null)", R"(true)", R"("1.000")"}) {
        JsonPtr value = parse_json(text);
        EXPECT_FALSE(parse_asset(value.get(), table).ok()) << text;
    }
    EXPECT_FALSE(parse_asset(nullptr, table).ok());
}

TEST(Asset, RecognisesAssetShapedJson) {
    for (const char* yes : {R"("1.000 HIVE")", R"("0 X")", R"({"amount":"1","precision":3,"nai":"@@000000021"})",
                            R"({"amount":1,"precision":3,"nai":"@@000000092","extra":1})"}) {
        EXPECT_TRUE(is_asset_json(parse_json(yes).get())) << yes;
    }
    for (const char* no : {R"("hello world")", R"("1.000")", R"("HIVE")", R"("2016-01-01T00:00:00")", R"(1000)",
                           R"({"amount":"1","precision":3})", R"({"amount":"1","precision":"3","nai":"@@000000021"})",
                           R"({"amount":[],"precision":3,"nai":"@@000000021"})", R"([1,3,"@@000000021"])"}) {
        EXPECT_FALSE(is_asset_json(parse_json(no).get())) << no;
    }
    EXPECT_FALSE(is_asset_json(nullptr));
}

TEST(AssetTable, DefaultTables) {
    const AssetTable mainnet = AssetTable::mainnet();
    ASSERT_NE(mainnet.find_nai("@@000000021"), nullptr);
    EXPECT_EQ(mainnet.find_nai("@@000000021")->symbol, "HIVE");
    EXPECT_EQ(mainnet.find_nai("@@000000013")->symbol, "HBD");
    EXPECT_EQ(mainnet.find_nai("@@000000037")->symbol, "VESTS");
    EXPECT_EQ(mainnet.find_nai("@@000000037")->precision, 6);
    EXPECT_EQ(mainnet.find_symbol("HBD")->nai, "@@000000013");
    EXPECT_EQ(mainnet.find_nai("@@000000045"), nullptr);

    const AssetTable testnet = AssetTable::named("testnet").value();
    EXPECT_EQ(testnet.find_nai("@@000000021")->symbol, "TESTS");
    EXPECT_EQ(testnet.find_nai("@@000000013")->symbol, "TBD");
    EXPECT_EQ(testnet.find_nai("@@000000037")->symbol, "VESTS");
    EXPECT_EQ(AssetTable::named("mainnet")->find_nai("@@000000021")->symbol, "HIVE");
    EXPECT_FALSE(AssetTable::named("Mainnet").ok());
    EXPECT_FALSE(AssetTable::named("").ok());
}

TEST(AssetTable, FromSettingTakesANameOrAList) {
    EXPECT_EQ(AssetTable::from_setting("testnet")->find_nai("@@000000021")->symbol, "TESTS");
    EXPECT_EQ(AssetTable::from_setting("@@000000021=STEEM:3")->find_nai("@@000000021")->symbol, "STEEM");
    EXPECT_FALSE(AssetTable::from_setting("Mainnet").ok());
    EXPECT_FALSE(AssetTable::from_setting("@@000000021=STEEM").ok());
}

TEST(AssetTable, ParsesConfiguration) {
    auto table = AssetTable::parse("@@000000021=HIVE:3,@@000000013=HBD:3,@@000000037=VESTS:6");
    ASSERT_TRUE(table.ok()) << table.error();
    ASSERT_EQ(table->definitions().size(), 3U);
    EXPECT_EQ(table->find_nai("@@000000037")->symbol, "VESTS");
    EXPECT_EQ(table->find_nai("@@000000037")->precision, 6);

    auto spaced = AssetTable::parse(" @@000000021=STEEM:3 , @@000000013=SBD:3");
    ASSERT_TRUE(spaced.ok()) << spaced.error();
    EXPECT_EQ(spaced->find_nai("@@000000013")->symbol, "SBD");

    for (const char* bad : {"", ",", "@@000000021=HIVE:3,", "@@000000021=HIVE", "@@000000021:3", "HIVE:3",
                            "@@000000022=HIVE:3", "@@000000021=hive:3", "@@000000021=:3", "@@000000021=HIVE:",
                            "@@000000021=HIVE:19", "@@000000021=HIVE:-1", "@@000000021=HIVE:3x", "@@000000021=HIVE:003",
                            "@@000000021=HIVE:3,@@000000021=TESTS:3", "@@000000021=HIVE:3,@@000000013=HIVE:3",
                            "@@000000021=HI:VE:3", "@@000000021=HIVE:3;@@000000013=HBD:3"}) {
        EXPECT_FALSE(AssetTable::parse(bad).ok()) << '"' << bad << '"';
    }
}

TEST(AssetTable, ConfiguredTableDecidesNaiSymbols) {
    const AssetTable steem = AssetTable::parse("@@000000021=STEEM:3,@@000000013=SBD:3,@@000000037=VESTS:6").value();
    EXPECT_EQ(asset_of(R"({"amount":"2000","precision":3,"nai":"@@000000021"})", steem), asset_of(R"("2.000 STEEM")"));
    EXPECT_EQ(asset_of(R"({"amount":"2000","precision":3,"nai":"@@000000021"})", AssetTable::testnet()),
              asset_of(R"("2.000 TESTS")"));
}

TEST(Nai, ChecksTheDammDigit) {
    EXPECT_TRUE(is_valid_nai("@@000000021"));
    EXPECT_TRUE(is_valid_nai("@@000000013"));
    EXPECT_TRUE(is_valid_nai("@@000000037"));
    EXPECT_FALSE(is_valid_nai("@@000000020"));
    EXPECT_FALSE(is_valid_nai("@@000000031"));
    EXPECT_FALSE(is_valid_nai("@000000021"));
    EXPECT_FALSE(is_valid_nai("@@0000000021"));
    EXPECT_FALSE(is_valid_nai("@@00000002a"));
    EXPECT_FALSE(is_valid_nai(""));
}

// Every asset-shaped value of every fixture prints back exactly as the node
// printed it (legacy) or re-encodes to the same units and precision (NAI).
TEST(AssetFixtures, EveryAssetRoundTrips) {
    const AssetTable table = AssetTable::mainnet();
    int legacy_count = 0;
    int nai_count = 0;
    int files = 0;
    for (const auto& path : test::hive_fixture_files()) {
        JsonPtr document = load_json_file(path);
        ASSERT_TRUE(document);
        ++files;
        walk_json(document.get(), [&](const JsonVisit& visit) {
            if (!is_asset_json(visit.value)) return;
            auto asset = parse_asset(visit.value, table);
            ASSERT_TRUE(asset.ok()) << path << " ." << visit.key << ": " << asset.error();
            if (json_is_string(visit.value)) {
                ++legacy_count;
                EXPECT_EQ(asset->legacy_string().value(), json_string_of(visit.value)) << path;
            } else {
                ++nai_count;
                const json_t* amount = json_object_get(visit.value, "amount");
                const std::string original =
                    json_is_string(amount) ? json_string_of(amount) : std::to_string(json_integer_value(amount));
                EXPECT_EQ(asset->amount.units_string(asset->precision).value(), original) << path;
                EXPECT_EQ(asset->precision, json_integer_value(json_object_get(visit.value, "precision"))) << path;
                EXPECT_NE(asset->symbol, kUnknownAssetSymbol) << path;
            }
        });
    }
    std::printf("[ assets   ] %d fixture files: %d legacy strings and %d NAI objects round-tripped\n", files,
                legacy_count, nai_count);
    EXPECT_GT(files, 400);
    EXPECT_GT(legacy_count, 2000);
    EXPECT_GT(nai_count, 8000);
}

// Walks a NAI-form document and its legacy-form twin side by side and checks
// that every asset decodes to the same Asset. Returns the number compared.
int compare_forms(const json_t* nai_form, const json_t* legacy_form, const AssetTable& table, const std::string& where) {
    if (json_is_object(nai_form) && is_asset_json(nai_form)) {
        EXPECT_TRUE(json_is_string(legacy_form)) << where;
        auto from_nai = parse_asset(nai_form, table);
        auto from_legacy = parse_asset(legacy_form, table);
        EXPECT_TRUE(from_nai.ok() && from_legacy.ok()) << where;
        if (!from_nai.ok() || !from_legacy.ok()) return 0;
        EXPECT_EQ(*from_nai, *from_legacy) << where << ": " << from_legacy->legacy_string().value();
        return 1;
    }
    int compared = 0;
    if (json_is_object(nai_form) && json_is_array(legacy_form)) {
        // {"type":"x_operation","value":{...}} against ["x",{...}].
        EXPECT_EQ(json_array_size(legacy_form), 2U) << where;
        return compare_forms(json_object_get(nai_form, "value"), json_array_get(legacy_form, 1), table, where + ".op");
    }
    if (json_is_object(nai_form)) {
        EXPECT_TRUE(json_is_object(legacy_form)) << where;
        const char* key = nullptr;
        json_t* child = nullptr;
        json_object_foreach(const_cast<json_t*>(nai_form), key, child) {
            const json_t* twin = json_object_get(legacy_form, key);
            // Only the NAI form has operation_id; no asset may be unmatched.
            if (twin == nullptr) {
                EXPECT_FALSE(is_asset_json(child)) << where << '.' << key << " has no legacy twin";
                continue;
            }
            compared += compare_forms(child, twin, table, where + '.' + key);
        }
    } else if (json_is_array(nai_form)) {
        EXPECT_EQ(json_array_size(nai_form), json_array_size(legacy_form)) << where;
        for (std::size_t i = 0; i < json_array_size(nai_form) && i < json_array_size(legacy_form); ++i) {
            compared += compare_forms(json_array_get(nai_form, i), json_array_get(legacy_form, i), table,
                                      where + '[' + std::to_string(i) + ']');
        }
    }
    return compared;
}

TEST(AssetFixtures, MainnetFormsOfOneOperationAgree) {
    const auto base = hive_fixtures_dir() / "hived-mainnet-5m";
    const auto nai_dir = base / "account_history_api_patterns" / "get_ops_in_block";
    const auto legacy_dir = base / "condenser_api_patterns" / "get_ops_in_block";
    int files = 0;
    int compared = 0;
    for (const auto& entry : std::filesystem::directory_iterator(legacy_dir)) {
        const auto nai_path = nai_dir / entry.path().filename();
        ASSERT_TRUE(std::filesystem::exists(nai_path)) << nai_path;
        JsonPtr legacy = load_json_file(entry.path());
        JsonPtr nai = load_json_file(nai_path);
        ASSERT_TRUE(legacy && nai);
        const json_t* nai_ops = json_object_get(nai.get(), "ops");
        if (nai_ops == nullptr) continue;  // an error pattern, not a result
        ++files;
        compared += compare_forms(nai_ops, legacy.get(), AssetTable::mainnet(), entry.path().filename().string());
    }
    std::printf("[ assets   ] %d mainnet get_ops_in_block pairs: %d assets agree in both forms\n", files, compared);
    EXPECT_GE(files, 20);
    EXPECT_GT(compared, 20);
}

TEST(AssetFixtures, TestnetFormsOfOneOperationAgree) {
    const auto dir = hive_fixtures_dir() / "hived-testnet-unit-expected";
    int compared = 0;
    for (const char* name : {"get_ops_in_block_pairs.json", "get_account_history_pairs.json"}) {
        JsonPtr document = load_json_file(dir / name);
        ASSERT_TRUE(document);
        const json_t* pairs = json_object_get(document.get(), "pairs");
        ASSERT_TRUE(json_is_array(pairs));
        for (std::size_t i = 0; i < json_array_size(pairs); ++i) {
            const json_t* pair = json_array_get(pairs, i);
            compared += compare_forms(json_object_get(pair, "account_history_api"), json_object_get(pair, "condenser_api"),
                                      AssetTable::testnet(), std::string(name) + '[' + std::to_string(i) + ']');
        }
    }
    std::printf("[ assets   ] testnet pairs: %d assets agree in both forms\n", compared);
    EXPECT_GT(compared, 250);
}

}  // namespace
}  // namespace wallet
