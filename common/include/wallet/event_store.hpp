// The write side of wallet_operation_events, shared by the indexer and the
// backfill loader so that live and historical rows have identical shape.
//
// Writes are idempotent on the dedup key (block_num, trx_in_block, op_in_trx,
// virtual_op, account, role): re-writing any block never duplicates a row.
// The store functions run inside the caller's transaction; EventStore wraps
// them into the indexer's one-transaction-per-batch commit together with the
// checkpoint and the ids of the batch's blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "wallet/chain_types.hpp"
#include "wallet/handles.hpp"
#include "wallet/result.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet {

namespace store {

// How events reach the table. Both are idempotent; CopyMerge (COPY into a
// temporary table, then INSERT ... SELECT ... ON CONFLICT DO NOTHING) is the
// faster one (t/bench/indexer.sh measures both) and the default.
enum class WriteMethod { CopyMerge, MultiRowInsert };

struct WriteCounts {
    std::int64_t offered = 0;   // events passed in
    std::int64_t inserted = 0;  // rows new to the table (the rest were already there)
};

// Once per connection, before the first write: silences server notices on
// stderr and creates the session's temporary staging table.
Result<bool> prepare_session(PGconn* conn);

// Inside an open transaction. Every event must carry its block position
// (block_seq and virtual_op): events decoded without the whole block are
// refused. Amounts must fit NUMERIC(30,6) exactly.
Result<WriteCounts> insert_events(PGconn* conn, const std::vector<WalletEvent>& events,
                                  WriteMethod method = WriteMethod::CopyMerge);

// Inside an open transaction: removes every event of blocks above block_num.
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
    // One transaction: rewind, events, block ids, checkpoint. All or nothing.
    Result<store::WriteCounts> commit_batch(const Batch& batch, store::WriteMethod method = store::WriteMethod::CopyMerge);

    // Records the latest observation of the node for get_status.
    Result<bool> record_observation(const ChainHead& head);

    PGconn* connection() const noexcept { return conn_.get(); }
    // Whether the connection is still usable (false after the server went away).
    bool healthy() const noexcept;

private:
    explicit EventStore(PgConnPtr conn) : conn_(std::move(conn)) {}
    PgConnPtr conn_;
};

}  // namespace wallet
