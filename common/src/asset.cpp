#include "wallet/asset.hpp"

#include <array>
#include <cstddef>

namespace wallet {
namespace {

constexpr std::size_t kMaxSymbolLength = 7;
constexpr std::string_view kNaiPrefix = "@@";
constexpr std::size_t kNaiDigits = 9;

// The Damm algorithm's quasigroup of order 10: a number is valid when running
// all its digits through the table ends in 0.
constexpr std::array<std::array<int, 10>, 10> kDammTable{{
    {0, 3, 1, 7, 5, 9, 8, 6, 4, 2},
    {7, 0, 9, 2, 1, 5, 4, 8, 6, 3},
    {4, 2, 0, 6, 8, 7, 1, 3, 5, 9},
    {1, 7, 5, 0, 9, 8, 3, 4, 2, 6},
    {6, 1, 2, 3, 0, 4, 5, 9, 7, 8},
    {3, 6, 7, 4, 2, 0, 9, 5, 8, 1},
    {5, 8, 6, 9, 7, 2, 0, 1, 3, 4},
    {8, 9, 4, 5, 3, 6, 2, 0, 1, 7},
    {9, 4, 3, 8, 6, 1, 7, 2, 0, 5},
    {2, 5, 8, 1, 4, 3, 6, 7, 9, 0},
}};

std::string_view trim_spaces(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return text;
}

// One "NAI=SYMBOL:PRECISION" entry of a table configuration.
Result<AssetDefinition> parse_definition(std::string_view entry) {
    const auto equals = entry.find('=');
    const auto colon = entry.rfind(':');
    if (equals == std::string_view::npos || colon == std::string_view::npos || colon < equals) {
        return make_error("asset table: expected NAI=SYMBOL:PRECISION, got '" + std::string(entry) + "'");
    }
    AssetDefinition definition;
    definition.nai = std::string(entry.substr(0, equals));
    definition.symbol = std::string(entry.substr(equals + 1, colon - equals - 1));
    const std::string_view precision = entry.substr(colon + 1);
    if (!is_valid_nai(definition.nai)) return make_error("asset table: invalid NAI '" + definition.nai + "'");
    if (!is_valid_asset_symbol(definition.symbol)) {
        return make_error("asset table: invalid symbol '" + definition.symbol + "'");
    }
    if (precision.empty() || precision.size() > 2) return make_error("asset table: invalid precision in '" + std::string(entry) + "'");
    for (const char c : precision) {
        if (c < '0' || c > '9') return make_error("asset table: invalid precision in '" + std::string(entry) + "'");
        definition.precision = definition.precision * 10 + (c - '0');
    }
    if (definition.precision > Decimal::kMaxScale) return make_error("asset table: precision above 18 in '" + std::string(entry) + "'");
    return definition;
}

}  // namespace

Result<std::string> Asset::legacy_string() const {
    auto printed = amount_string();
    if (!printed) return printed;
    return *printed + ' ' + symbol;
}

AssetTable AssetTable::mainnet() {
    return AssetTable({{"@@000000021", "HIVE", 3}, {"@@000000013", "HBD", 3}, {"@@000000037", "VESTS", 6}});
}

AssetTable AssetTable::testnet() {
    return AssetTable({{"@@000000021", "TESTS", 3}, {"@@000000013", "TBD", 3}, {"@@000000037", "VESTS", 6}});
}

Result<AssetTable> AssetTable::named(std::string_view name) {
    if (name == "mainnet") return mainnet();
    if (name == "testnet") return testnet();
    return make_error("asset table: unknown network '" + std::string(name) + "' (mainnet or testnet)");
}

Result<AssetTable> AssetTable::from_setting(std::string_view value) {
    return value.find('=') == std::string_view::npos ? named(value) : parse(value);
}

Result<AssetTable> AssetTable::parse(std::string_view config) {
    std::vector<AssetDefinition> definitions;
    while (true) {
        const auto comma = config.find(',');
        auto definition = parse_definition(trim_spaces(config.substr(0, comma)));
        if (!definition) return make_error(definition.error());
        for (const auto& known : definitions) {
            if (known.nai == definition->nai) return make_error("asset table: NAI " + known.nai + " listed twice");
            if (known.symbol == definition->symbol) return make_error("asset table: symbol " + known.symbol + " listed twice");
        }
        definitions.push_back(std::move(definition).value());
        if (comma == std::string_view::npos) break;
        config.remove_prefix(comma + 1);
    }
    return AssetTable(std::move(definitions));
}

const AssetDefinition* AssetTable::find_nai(std::string_view nai) const noexcept {
    for (const auto& definition : definitions_) {
        if (definition.nai == nai) return &definition;
    }
    return nullptr;
}

const AssetDefinition* AssetTable::find_symbol(std::string_view symbol) const noexcept {
    for (const auto& definition : definitions_) {
        if (definition.symbol == symbol) return &definition;
    }
    return nullptr;
}

bool is_valid_nai(std::string_view nai) noexcept {
    if (nai.size() != kNaiPrefix.size() + kNaiDigits || nai.substr(0, kNaiPrefix.size()) != kNaiPrefix) return false;
    int interim = 0;
    for (const char c : nai.substr(kNaiPrefix.size())) {
        if (c < '0' || c > '9') return false;
        interim = kDammTable[static_cast<std::size_t>(interim)][static_cast<std::size_t>(c - '0')];
    }
    return interim == 0;
}

bool is_valid_asset_symbol(std::string_view symbol) noexcept {
    if (symbol.empty() || symbol.size() > kMaxSymbolLength) return false;
    for (const char c : symbol) {
        if (c < 'A' || c > 'Z') return false;
    }
    return true;
}

Result<Asset> parse_legacy_asset(std::string_view text) {
    const auto space = text.find(' ');
    if (space == std::string_view::npos) return make_error("asset: expected '<amount> <SYMBOL>'");
    const std::string_view symbol = text.substr(space + 1);
    if (!is_valid_asset_symbol(symbol)) return make_error("asset: invalid symbol");
    auto amount = Decimal::parse(text.substr(0, space));
    if (!amount) return make_error("asset: " + amount.error());
    const int precision = amount->scale();
    return Asset{std::move(amount).value(), std::string(symbol), precision};
}

namespace {

NaiMembers members_of(const json_t* object) {
    NaiMembers members;
    const json_t* amount = json_object_get(object, "amount");
    if (json_is_string(amount)) {
        members.amount_kind = NaiMembers::Amount::String;
        members.amount_text = std::string_view(json_string_value(amount), json_string_length(amount));
    } else if (json_is_integer(amount)) {
        members.amount_kind = NaiMembers::Amount::Integer;
        members.amount_integer = json_integer_value(amount);
    }
    const json_t* precision = json_object_get(object, "precision");
    if (json_is_integer(precision)) members.precision = json_integer_value(precision);
    const json_t* nai = json_object_get(object, "nai");
    if (json_is_string(nai)) members.nai = std::string_view(json_string_value(nai), json_string_length(nai));
    return members;
}

}  // namespace

Result<Asset> parse_nai_members(const NaiMembers& members, const AssetTable& table) {
    if (!members.precision) return make_error("asset: NAI precision must be an integer");
    if (*members.precision < 0 || *members.precision > Decimal::kMaxScale) return make_error("asset: NAI precision out of range 0..18");
    const int precision = static_cast<int>(*members.precision);
    if (!members.nai) return make_error("asset: NAI must be a string");
    const std::string_view nai = *members.nai;
    if (!is_valid_nai(nai)) return make_error("asset: invalid NAI");

    Result<Decimal> amount = make_error("NAI amount must be a string or an integer");
    if (members.amount_kind == NaiMembers::Amount::String) amount = Decimal::parse_units(members.amount_text, precision);
    if (members.amount_kind == NaiMembers::Amount::Integer) amount = Decimal::from_units(members.amount_integer, precision);
    if (!amount) return make_error("asset: " + amount.error());
    // hived names a NAI only together with its precision; anything else is UNKN.
    const AssetDefinition* definition = table.find_nai(nai);
    std::string symbol(definition != nullptr && definition->precision == precision ? std::string_view(definition->symbol)
                                                                                    : kUnknownAssetSymbol);
    return Asset{std::move(amount).value(), std::move(symbol), precision};
}

bool is_nai_shaped(const NaiMembers& members) noexcept {
    return members.amount_kind != NaiMembers::Amount::Other && members.precision && members.nai;
}

Result<Asset> parse_nai_asset(const json_t* object, const AssetTable& table) {
    if (!json_is_object(object)) return make_error("asset: NAI form must be an object");
    return parse_nai_members(members_of(object), table);
}

Result<Asset> parse_asset(const json_t* value, const AssetTable& table) {
    if (json_is_string(value)) return parse_legacy_asset(std::string_view(json_string_value(value), json_string_length(value)));
    if (json_is_object(value)) return parse_nai_asset(value, table);
    return make_error("asset: expected a string or an object");
}

bool is_asset_json(const json_t* value) {
    if (json_is_string(value)) {
        return parse_legacy_asset(std::string_view(json_string_value(value), json_string_length(value))).ok();
    }
    return json_is_object(value) && is_nai_shaped(members_of(value));
}

}  // namespace wallet
