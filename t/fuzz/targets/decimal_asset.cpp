// Exact decimals and assets in both forms: Decimal::parse and parse_units,
// the legacy string ("1.000 HIVE"), the NAI object through jansson (with the
// mainnet and testnet tables), and the asset-table setting. What parses must
// print back to the same value.
#include <cstddef>
#include <cstdint>
#include <string>

#include <jansson.h>

#include "fuzz_check.hpp"
#include "wallet/asset.hpp"
#include "wallet/decimal.hpp"
#include "wallet/json_util.hpp"

namespace {

void check_decimal(const wallet::Decimal& value) {
    auto reparsed = wallet::Decimal::parse(value.to_string());
    fuzz::check(reparsed.ok() && *reparsed == value && reparsed->scale() == value.scale(),
                "a decimal prints back to itself");
    auto units = value.units_string(value.scale());
    fuzz::check(units.ok(), "a decimal has a unit count at its own scale");
    auto from_units = wallet::Decimal::parse_units(*units, value.scale());
    fuzz::check(from_units.ok() && *from_units == value, "the unit count parses back");
    if (auto wider = value.rescaled(value.scale() + 1)) {
        fuzz::check(*wider == value, "rescaling keeps the value");
    }
    if (auto sum = value.add(-value)) fuzz::check(sum->is_zero(), "x + -x is zero");
    if (auto twice = value.add(value)) fuzz::check((value.is_negative() ? *twice <= value : *twice >= value), "2x beyond x");
}

void check_asset(const wallet::Asset& asset) {
    fuzz::check(asset.amount.scale() == asset.precision, "an asset's amount is at its precision");
    auto legacy = asset.legacy_string();
    if (!legacy) return;
    auto reparsed = wallet::parse_legacy_asset(*legacy);
    fuzz::check(reparsed.ok() && *reparsed == asset, "an asset prints back to itself");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text(data, size);

    if (auto value = wallet::Decimal::parse(text)) check_decimal(*value);
    const int scale = size == 0 ? 0 : static_cast<int>(data[0] % 21) - 1;  // -1 .. 19, past both ends
    if (auto value = wallet::Decimal::parse_units(text.substr(size == 0 ? 0 : 1), scale)) check_decimal(*value);

    if (auto asset = wallet::parse_legacy_asset(text)) check_asset(*asset);
    (void)wallet::is_valid_nai(text);
    (void)wallet::AssetTable::from_setting(text);

    if (auto json = wallet::json::parse(text)) {
        static const wallet::AssetTable mainnet = wallet::AssetTable::mainnet();
        static const wallet::AssetTable testnet = wallet::AssetTable::testnet();
        const bool shaped = wallet::is_asset_json(json->get());
        for (const wallet::AssetTable* table : {&mainnet, &testnet}) {
            auto asset = wallet::parse_asset(json->get(), *table);
            if (asset) {
                fuzz::check(shaped, "what parses as an asset is asset-shaped");
                fuzz::check(asset->amount.scale() == asset->precision, "an asset's amount is at its precision");
            }
        }
    }
    return 0;
}
