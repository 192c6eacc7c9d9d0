// The write side of the event store (migration 0004, docs/store-layout.md),
// shared by the indexer and the backfill loader so that live and historical
// rows have identical shape.
//
// Writes are idempotent: an event is one operation's (block_num, block_seq)
// for one account and role, unique in wallet_events, and a block's raw
// operations are stored once, in its wallet_blocks row. Re-writing any block
// never duplicates a row.
// The store functions run inside the caller's transaction; EventStore wraps
// them into the indexer's one-transaction-per-batch commit together with the
// checkpoint and the ids of the batch's blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <libpq-fe.h>

#include "wallet/asset.hpp"
#include "wallet/balance_change.hpp"
#include "wallet/chain_types.hpp"
#include "wallet/handles.hpp"
#include "wallet/result.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet {

namespace store {

// How events reach the table. The first two are idempotent; CopyMerge (COPY
// into a temporary table, then INSERT ... SELECT ... ON CONFLICT DO NOTHING)
// is the faster one (t/bench/indexer.sh measures both) and the default.
// CopyOnly is a bulk load's (wallet-backfill --bulk): plain COPY, for a store
// whose wallet_events has no unique index; a block already stored fails it.
enum class WriteMethod { CopyMerge, MultiRowInsert, CopyOnly };

struct WriteCounts {
    std::int64_t offered = 0;   // events passed in
    std::int64_t inserted = 0;  // rows new to the table (the rest were already there)
    std::int64_t balance_undecodable = 0;  // of them, stored without balance changes (wallet_balance_undecodable)
};

// The shapes of asset lists `assets` stores as amounts alone (migration
// 0009): fields and symbols, "%s" where the amounts go. The list stored is
// the template's code (kAssetTemplateCodes[index]: no field name starts
// with one) and the amounts; the store's wallet_assets_templates() holds the
// same list (a foundation test keeps the two equal).
inline constexpr std::string_view kAssetTemplateCodes = "#$%&*+:;<=>?^~!|";
std::span<const std::string_view> asset_templates() noexcept;

// What the writers need to compute each stored event's balance changes
// (docs/operations.md, "Balance changes"): the chain's assets and the blocks
// where the rules changed (CHAIN_ASSET_TABLE, CHAIN_HARDFORKS).
struct BalanceRules {
    AssetTable assets = AssetTable::mainnet();
    HardforkSchedule forks = HardforkSchedule::mainnet();
};
const BalanceRules& mainnet_balance_rules();

// Text as it is stored (PostgreSQL's text holds no NUL: it becomes U+FFFD).
std::string storable_text(std::string_view text);

// The integer ids of account names (wallet_accounts) of one database, cached:
// ids are never changed or reused, so a cached id stays right.
class AccountIds {
public:
    // Gives every account of the events an id, adding new names.
    Result<bool> resolve(PGconn* conn, const std::vector<WalletEvent>& events);
    // The same for names (accounts a balance change names without an event).
    Result<bool> resolve_names(PGconn* conn, std::vector<std::string> names);
    std::optional<std::int32_t> find(const std::string& name) const;

private:
    std::unordered_map<std::string, std::int32_t> ids_;
};

// Once per connection, before the first write: silences server notices on
// stderr and creates the session's temporary staging table.
Result<bool> prepare_session(PGconn* conn);

// Inside an open transaction. Every event must carry its block position
// (block_seq and virtual_op): events decoded without the whole block are
// refused; they come in block order, with all events of a block in the same
// call. Amounts must fit NUMERIC(30,6) exactly. Writers that run beside
// others resolve `ids` before opening their transaction. The balance rows
// of exactly the rows inserted (carried and undecodable events, migrations
// 0017 and 0018) are added in the same transaction.
Result<WriteCounts> insert_events(PGconn* conn, AccountIds& ids, const std::vector<WalletEvent>& events,
                                  WriteMethod method = WriteMethod::CopyMerge,
                                  const BalanceRules& rules = mainnet_balance_rules());
// The same with a cache of its own (for one-off writes).
Result<WriteCounts> insert_events(PGconn* conn, const std::vector<WalletEvent>& events,
                                  WriteMethod method = WriteMethod::CopyMerge,
                                  const BalanceRules& rules = mainnet_balance_rules());

// The operation of one entry as wallet_blocks.ops stores it ([trx_in_block,
// entry] or [trx_in_block, entry without the envelope the rows hold, mask]:
// migration 0009), in a form the decoder reads (an entry, or the bare op):
// the entry's "op" with the op type's name put back as
// wallet_operation_payload() puts it back (mask bits 256 and 512), read
// from the stored text without PostgreSQL's json parse of the whole block.
// `op_type` is wallet_op_type_name() of the event rows' op_type.
Result<std::string> stored_entry_operation(std::string_view stored, std::string_view op_type);

// Inside an open transaction: removes every event of blocks above block_num
// and the balance rows of their events.
Result<std::int64_t> delete_events_above(PGconn* conn, std::int64_t block_num);

}  // namespace store

// The indexer's view of its database: checkpoint, recent block ids, batches.
class EventStore {
public:
    // Connects (as the writer), applies pending schema migrations when asked,
    // and prepares the session.
    static Result<EventStore> connect(const std::string& url, bool apply_schema_migrations = false);

    // The last fully indexed block, nullopt on a fresh database.
    Result<std::optional<BlockRef>> checkpoint();

    // Stored ids of blocks >= from_block, ascending.
    Result<std::vector<BlockRef>> block_ids_from(std::int64_t from_block);

    struct Batch {
        // Fork reconciliation: rows and ids of blocks above this are deleted first.
        std::optional<std::int64_t> rewind_above;
        std::vector<WalletEvent> events;  // the events of `blocks`
        std::vector<BlockRef> blocks;     // ascending; the blocks these events come from
        BlockRef checkpoint;              // the last fully indexed block after the batch
        std::int64_t keep_block_ids = 0;  // ids kept at or below the checkpoint (fork depth + 1)
    };
    // One transaction: rewind, events, block ids, checkpoint, and the range
    // recorded as loaded by this decoder version (indexer_ranges). All or nothing.
    Result<store::WriteCounts> commit_batch(const Batch& batch, store::WriteMethod method = store::WriteMethod::CopyMerge);

    // Records the latest observation of the node for get_status.
    Result<bool> record_observation(const ChainHead& head);

    // What an operator's monitoring reads from the primary (the indexer's
    // /metrics): the backfill's shards and the standbys streaming from it.
    struct StandbyLag {
        std::string name;  // application_name@client address, [A-Za-z0-9_.:@-] only
        double replay_seconds = 0;     // pg_stat_replication.replay_lag (0 while idle and caught up)
        std::int64_t replay_bytes = 0; // WAL written on the primary and not yet replayed there
    };
    struct MonitoredState {
        std::int64_t shards_pending = 0;
        std::int64_t shards_running = 0;
        std::int64_t shards_done = 0;
        // Running shards whose owner stopped beating for longer than a
        // backfill's default takeover timeout: their worker died or hangs.
        std::int64_t shards_stalled = 0;
        std::int64_t shard_attempts_max = 0;  // the most claims of an unfinished shard (1 is normal)
        // The lowest run of stored blocks an older decoder than this build's
        // (wallet::kDecoderVersion) loaded, as get_status's `decoder.outdated`; 0..0: none.
        std::int64_t outdated_from = 0;
        std::int64_t outdated_to = 0;
        std::vector<StandbyLag> standbys;
    };
    Result<MonitoredState> monitored_state();

    PGconn* connection() const noexcept { return conn_.get(); }
    void set_balance_rules(store::BalanceRules rules) { balance_rules_ = std::move(rules); }
    // Whether the connection is still usable (false after the server went away).
    bool healthy() const noexcept;

private:
    explicit EventStore(PgConnPtr conn) : conn_(std::move(conn)) {}
    PgConnPtr conn_;
    store::AccountIds account_ids_;
    store::BalanceRules balance_rules_;
};

}  // namespace wallet
