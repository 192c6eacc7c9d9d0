// Node operations -> wallet events, exactly as decisions.md sections 1 and 2
// say. Accepts what nodes serve: the condenser form (["transfer", {...}],
// legacy asset strings) and the account_history_api form ({"type":
// "transfer_operation", "value": {...}}, NAI assets), both field namings of
// node versions (hive_/steem_, hbd_/sbd_, author/comment_author), virtual_op
// as bool, int or 0, and HAfAH REST envelopes (trx_in_block -1, trx_id null).
// The same operation gives the same events whichever form served it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jansson.h>

#include "wallet/asset.hpp"
#include "wallet/balance_change.hpp"
#include "wallet/result.hpp"
#include "wallet/timestamp.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet {

// The operation types that give wallet events: the 15 of spec 000's Events
// table and every other operation that moves a balance (docs/operations.md).
bool is_wallet_operation(std::string_view op_type) noexcept;
// The same types as a list (without "_operation"), the spec's 15 first.
std::span<const std::string_view> wallet_operation_types() noexcept;
// The asset field of a type whose operations carry exactly one asset, under
// one name on every node version ("amount" of a transfer, "reward" of a
// curation reward); nullopt for every other type. The store leaves `assets`
// out of rows whose one asset is what their amount columns hold.
std::optional<std::string_view> sole_asset_field(std::string_view op_type) noexcept;

// The 15 types of spec 000's Events table alone: what the API answers when
// no op_types are asked for.
std::span<const std::string_view> spec_wallet_operation_types() noexcept;
bool is_spec_wallet_operation(std::string_view op_type) noexcept;

// Virtual-ness by operation type (decisions.md section 1); the node's own
// flag decides only for a type this build does not know.
bool is_virtual_operation(std::string_view op_type, bool node_says_virtual) noexcept;

// An operation entry's envelope, normalized.
struct OpEnvelope {
    std::int64_t block_num = 0;
    std::int64_t trx_in_block = 0;            // HAfAH REST's -1 becomes kBlockLevelTrxInBlock
    std::int64_t op_in_trx = 0;
    bool node_virtual_flag = false;           // virtual_op true or a positive integer
    std::optional<std::int64_t> node_virtual_number;  // virtual_op when a positive integer
    std::optional<std::string> trx_id;        // as sent (null stays nullopt)
    Timestamp timestamp;
};

// What only the whole block knows about one of its operations.
struct BlockPosition {
    std::int64_t block_seq = 0;        // 0-based position in get_ops_in_block(only_virtual=false)
    std::int64_t virtual_ordinal = 0;  // 1-based among the block's virtual ops; 0 for a real op
};

// The JSON text rows keep as an operation's raw payload.
using PayloadText = std::shared_ptr<const std::string>;

// Every function below reads the node's JSON text through one decoder, a
// flat tape of the text (json::Tape) instead of a jansson tree; those taking
// jansson values serialize them compactly first (their payload text).

// The events of one bare operation (["transfer", {...}] or {"type": ...,
// "value": {...}}) with a known envelope; `payload` is what the rows keep
// as the raw operation. Other operation types give no events.
Result<std::vector<WalletEvent>> decode_bare_operation(const json_t* op, const OpEnvelope& envelope,
                                                       const std::optional<BlockPosition>& position, PayloadText payload,
                                                       const AssetTable& assets);

// The events of one entry without block context: the mapping of a wallet's
// get_account_history fallback. block_seq is nullopt, and so is virtual_op
// of a virtual operation unless the node numbered it.
Result<std::vector<WalletEvent>> decode_entry(json_t* entry, const AssetTable& assets);

// The events of one block: `ops` is the whole get_ops_in_block(block,
// only_virtual=false) list (a JSON array of entries, either form), from which
// block_seq and virtual_op are derived identically on every read. Every entry
// must belong to the same block.
Result<std::vector<WalletEvent>> decode_block(json_t* ops, const AssetTable& assets);

// One entry of a block's list located in the node's answer but not parsed:
// what block position needs (type, block, the node's virtual flag) and its
// text. Only wallet operations are decoded, which spares the many other
// operations of a block.
struct RawEntry {
    std::string_view text;  // the entry's JSON text as the node sent it
    std::string_view type;  // without "_operation"
    std::int64_t block = 0;
    bool node_virtual_flag = false;
};

// Locates an entry's fields in its text (either form); the text is checked
// to be well-formed JSON (its strings' UTF-8 only when it is decoded).
Result<RawEntry> scan_entry(std::string_view entry_text);

// The events of one block from its located entries (decode_block's list,
// text as the node sent it, which the events keep as their payload). With a
// hardfork schedule, each operation's balance changes are read from the same
// parse too (WalletEvent::balance_changes, with these assets and forks): a
// writer then does not parse the payload again.
Result<std::vector<WalletEvent>> decode_block_entries(const std::vector<RawEntry>& entries, const AssetTable& assets,
                                                      const HardforkSchedule* forks = nullptr);

// The balance changes one decoded event carries (docs/operations.md,
// "Balance changes"): every change the event's operation makes to a balance
// component of the event's account in the event's role, plus those of its
// counterparty where the operation gives that account no event of its own
// (a routed fill_vesting_withdraw, a fill_transfer_from_savings to another
// account). Read from the event's payload by the same field rules as the
// events (both forms, both namings); zero sums are left out, and so is the
// `null` account, whose balances hived burns in the block they arrive.
Result<std::vector<BalanceChange>> balance_changes(const WalletEvent& event, const AssetTable& assets,
                                                   const HardforkSchedule& forks);

// The balance changes of the event's whole operation, each with the role of
// the operation's event that carries it (balance_changes is the event's own
// role's share): read once for all the events of one operation.
struct CarriedBalanceChange {
    Role carrier = Role::Sender;
    BalanceChange change;
};
Result<std::vector<CarriedBalanceChange>> operation_balance_changes(const WalletEvent& event, const AssetTable& assets,
                                                                    const HardforkSchedule& forks);

// What decode_block_entries read of an operation's balance changes, and by
// which schedule (a writer with other rules reads them again).
struct OperationBalanceChanges {
    HardforkSchedule forks;
    Result<std::vector<CarriedBalanceChange>> changes;
};

// The event's operation_balance_changes: the decoder's when it read them with
// these forks, else read from the payload.
Result<std::vector<CarriedBalanceChange>> event_balance_changes(const WalletEvent& event, const AssetTable& assets,
                                                                const HardforkSchedule& forks);

}  // namespace wallet
