// A wallet event: one account's view of one wallet-relevant chain operation
// (spec 000 "Events", decisions.md sections 1 and 2). The decoder makes them,
// the store writes them, the API reads their rows back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wallet/asset.hpp"
#include "wallet/handles.hpp"
#include "wallet/timestamp.hpp"

namespace wallet {

// The spec's eight roles, then the roles of operations beyond the spec where
// none of them fits (docs/operations.md): the two sides of a market fill.
enum class Role { Sender, Receiver, Delegator, Delegatee, Author, Curator, Owner, Beneficiary, Taker, Maker };

// "sender", "receiver", ... as stored and served.
std::string_view role_name(Role role) noexcept;
std::optional<Role> parse_role(std::string_view name) noexcept;
// The store's small code of a role: codes sort as the names do, so ordering
// rows by code orders them by name (the keyset's last tiebreaker).
int role_code(Role role) noexcept;
std::optional<Role> role_of_code(int code) noexcept;

// hived's trx_in_block for operations outside any transaction (uint32 -1).
inline constexpr std::int64_t kBlockLevelTrxInBlock = 4294967295;

// One asset amount of the operation, under the field name the node printed.
struct AssetField {
    std::string field;
    Asset asset;
    friend bool operator==(const AssetField&, const AssetField&) = default;
};

struct OperationBalanceChanges;  // wallet/decoder.hpp

struct WalletEvent {
    // The dedup key (with account and role), positional as hived numbers it.
    std::int64_t block_num = 0;
    std::int64_t trx_in_block = 0;  // kBlockLevelTrxInBlock for block-level virtual ops
    std::int64_t op_in_trx = 0;
    // 0 for real operations. nullopt only when decoded without the whole
    // block (the get_account_history fallback) and the node gave no number.
    std::optional<std::int64_t> virtual_op;
    std::string account;
    Role role = Role::Sender;

    // 0-based position in get_ops_in_block(only_virtual=false); nullopt when
    // decoded without the whole block.
    std::optional<std::int64_t> block_seq;
    std::string op_type;                // "transfer", "author_reward", ... (no "_operation")
    std::optional<std::string> trx_id;  // null for virtual operations
    Timestamp timestamp;
    std::optional<Asset> amount;        // the liquid amount of the event, if any
    std::optional<Asset> vesting;       // the vesting amount of the event, if any
    std::optional<std::string> counterparty;
    std::optional<std::string> memo;
    std::optional<std::string> author;
    std::optional<std::string> permlink;
    std::vector<AssetField> assets;     // every asset amount of the operation
    // The operation entry's JSON text exactly as the node sent it (shared by
    // the events of one operation).
    std::shared_ptr<const std::string> payload;
    // The operation's balance changes when the decoder read them from the
    // same parse (decode_block_entries with a hardfork schedule; shared by
    // the events of one operation); null: the writers read them from the
    // payload again. Not a field of the event (same_event_fields ignores it).
    std::shared_ptr<const OperationBalanceChanges> balance_changes;
};

// Every field but the payload; block_seq and virtual_op only when asked
// (events mapped without block context lack them, decisions.md section 1).
bool same_event_fields(const WalletEvent& a, const WalletEvent& b, bool compare_block_position = true);

// The `assets` list as stored and served: [{"field","amount","symbol"}, ...].
JsonPtr assets_to_json(const std::vector<AssetField>& assets);

// The event as a JSON object: the API's wallet event fields plus
// trx_in_block and assets (amounts as exact decimal strings). No payload.
JsonPtr event_to_json(const WalletEvent& event);

}  // namespace wallet
