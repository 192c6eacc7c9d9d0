// What the simulator knows of hived's protocol: operation type ids, asset
// symbols per network, the two serialization forms of an operation and the
// accounts an operation lands in the history of.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json_writer.hpp"
#include "wallet/handles.hpp"
#include "wallet/operation_types.hpp"

namespace sim {

// condenser_api form: legacy asset strings, ops as ["transfer", {...}];
// NAI form (account_history_api, block_api, database_api): asset objects,
// ops as {"type": "transfer_operation", "value": {...}}.
enum class Form { legacy, nai };

// Field and symbol naming of the node software: current hived, or a
// Steem-era node (STEEM/SBD, steem_payout, comment_author, integer virtual_op).
enum class Naming { current, legacy };

inline constexpr std::string_view kHiveNai = "@@000000021";
inline constexpr std::string_view kHbdNai = "@@000000013";
inline constexpr std::string_view kVestsNai = "@@000000037";

// The symbols a node prints for the three NAIs.
struct SymbolTable {
    std::string hive;
    std::string hbd;
    std::string vests;

    static SymbolTable mainnet() { return {"HIVE", "HBD", "VESTS"}; }
    static SymbolTable testnet() { return {"TESTS", "TBD", "VESTS"}; }
    static SymbolTable steem() { return {"STEEM", "SBD", "VESTS"}; }

    // "UNKN" for a NAI the chain does not have, as hived prints it.
    std::string_view symbol_of(std::string_view nai) const;
};

struct NaiAsset {
    std::string_view nai;
    int precision;
};
// Any symbol a node of any network or era printed for the three NAIs.
std::optional<NaiAsset> nai_of_symbol(std::string_view symbol);

// Operation type ids as in hived's operation static_variant (0 vote ... 92).
int op_type_id(std::string_view name);  // name without "_operation"; -1 if unknown
std::string_view op_type_name(int id);
inline bool is_virtual_op_type(int id) { return id >= wallet::kFirstVirtualOperationId; }
inline constexpr int kOpTypeCount = static_cast<int>(wallet::kOperationTypes.size());

// Writes a value given in NAI form (as a jansson value) in the legacy form:
// asset objects become "1.000 HIVE" strings, operations
// {"type": "transfer_operation", "value": v} become ["transfer", v] and other
// static variants {"type": name, "value": v} become [index, v].
void write_legacy_value(JsonWriter& out, const json_t* nai_value, const SymbolTable& symbols);

// The inverse, for operations only known from condenser_api data: legacy asset
// strings in amount fields become NAI objects, indexed static variants named.
wallet::JsonPtr legacy_to_nai(std::string_view op_name, const json_t* legacy_value);

// The accounts whose history an operation enters (hived's impacted accounts).
std::vector<std::string> impacted_accounts(std::string_view op_name, const json_t* value);

// Seconds since the epoch <-> "YYYY-MM-DDTHH:MM:SS" (UTC, no zone suffix).
inline constexpr std::size_t kTimeLength = 19;
void format_time(std::int64_t epoch_seconds, char* out);  // writes kTimeLength chars
std::string format_time(std::int64_t epoch_seconds);
std::optional<std::int64_t> parse_time(std::string_view text);

}  // namespace sim
