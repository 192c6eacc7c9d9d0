// Asset amounts as nodes print them, in either form:
//   legacy string  "1.000 HIVE", "0.018325 VESTS", "2.000 STEEM"
//   NAI object     {"amount":"1000","precision":3,"nai":"@@000000021"}
// Both decode to the same Asset, given the network's NAI table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <jansson.h>

#include "wallet/decimal.hpp"
#include "wallet/result.hpp"

namespace wallet {

// The symbol hived prints for a NAI (or a NAI/precision pair) it does not know.
inline constexpr std::string_view kUnknownAssetSymbol = "UNKN";

struct Asset {
    Decimal amount;      // at scale == precision
    std::string symbol;  // as printed ("HIVE", "STEEM", "TESTS", "UNKN" ...)
    int precision = 0;   // decimals of the canonical print

    // The exact amount at the asset's precision: "1.000", "0.018325".
    Result<std::string> amount_string() const { return amount.to_string(precision); }
    // The legacy form: "1.000 HIVE".
    Result<std::string> legacy_string() const;

    // Same number, symbol and precision (1.0 at precision 1 equals 1.00 at
    // precision 2 numerically, but these are different assets).
    friend bool operator==(const Asset& a, const Asset& b) noexcept {
        return a.precision == b.precision && a.symbol == b.symbol && a.amount == b.amount;
    }
};

struct AssetDefinition {
    std::string nai;  // "@@000000021"
    std::string symbol;
    int precision = 0;
};

// NAI -> (symbol, precision) for one network. The node prints other symbols
// for the same NAIs on a testnet, so the table is configuration, not code.
class AssetTable {
public:
    // @@000000021 HIVE/3, @@000000013 HBD/3, @@000000037 VESTS/6.
    static AssetTable mainnet();
    // @@000000021 TESTS/3, @@000000013 TBD/3, @@000000037 VESTS/6.
    static AssetTable testnet();
    // "mainnet" or "testnet".
    static Result<AssetTable> named(std::string_view name);
    // "@@000000021=HIVE:3,@@000000013=HBD:3,@@000000037=VESTS:6": at least one
    // entry; NAIs and symbols unique; spaces around entries are ignored.
    static Result<AssetTable> parse(std::string_view config);
    // The value of CHAIN_ASSET_TABLE: a name (as named) or a list (as parse).
    static Result<AssetTable> from_setting(std::string_view value);

    // nullptr when the table has no such entry.
    const AssetDefinition* find_nai(std::string_view nai) const noexcept;
    const AssetDefinition* find_symbol(std::string_view symbol) const noexcept;
    const std::vector<AssetDefinition>& definitions() const noexcept { return definitions_; }

private:
    explicit AssetTable(std::vector<AssetDefinition> definitions) : definitions_(std::move(definitions)) {}

    std::vector<AssetDefinition> definitions_;
};

// "@@" then 9 digits whose last is the Damm check digit of the first 8, as
// hived builds them.
bool is_valid_nai(std::string_view nai) noexcept;

// A legacy symbol: 1 to 7 capital letters (hived packs it into 7 bytes).
bool is_valid_asset_symbol(std::string_view symbol) noexcept;

// "<decimal> <SYMBOL>" with exactly one space; the precision is the number of
// decimals printed and the symbol is kept as printed.
Result<Asset> parse_legacy_asset(std::string_view text);

// {"amount": "<int>" or <int>, "precision": <int>, "nai": "@@..."}; an unknown
// NAI, or a known one with another precision, gets the symbol "UNKN".
Result<Asset> parse_nai_asset(const json_t* object, const AssetTable& table);

// Either form.
Result<Asset> parse_asset(const json_t* value, const AssetTable& table);

// The members of a NAI object as a JSON reader found them (jansson's tree or
// the decoder's tape): one set of rules for both.
struct NaiMembers {
    enum class Amount { Other, String, Integer };
    Amount amount_kind = Amount::Other;
    std::string_view amount_text;  // a string amount's bytes
    std::int64_t amount_integer = 0;
    std::optional<std::int64_t> precision;  // when an integer
    std::optional<std::string_view> nai;    // when a string
};
Result<Asset> parse_nai_members(const NaiMembers& members, const AssetTable& table);
// is_asset_json's shape test of an object's members.
bool is_nai_shaped(const NaiMembers& members) noexcept;

// Whether a JSON value is asset-shaped: a string that parses as a legacy
// asset, or an object with a string/integer amount, an integer precision and
// a string nai. Shape only: a NAI object may still fail to parse.
bool is_asset_json(const json_t* value);

}  // namespace wallet
