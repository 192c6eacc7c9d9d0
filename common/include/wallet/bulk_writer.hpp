// Bulk writes of wallet events for the backfill loader: the same rows as
// store::insert_events (same rendering and checks), idempotent on the dedup
// key, inside the caller's transaction, through whichever path is fastest.
// Statement-level triggers on wallet_operation_events (the API's reward
// aggregates) fire on every path: nothing bypasses them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <libpq-fe.h>

#include "wallet/event_store.hpp"

namespace wallet::store {

enum class BulkMethod {
    // store::insert_events: COPY into the session's staging table, then
    // DELETE ... RETURNING into INSERT ... ON CONFLICT DO NOTHING.
    CopyMerge,
    // store::insert_events: multi-row INSERT ... ON CONFLICT DO NOTHING.
    MultiRowInsert,
    // COPY into a staging table emptied at commit (ON COMMIT DELETE ROWS),
    // then one INSERT ... SELECT ... ON CONFLICT DO NOTHING.
    StagedMerge,
    // COPY straight into the table under a savepoint; when a row is already
    // there (overlap with the live tail or an earlier load), the savepoint is
    // rolled back and the batch goes through StagedMerge.
    DirectCopy,
};

std::optional<BulkMethod> parse_bulk_method(std::string_view name);
const char* bulk_method_name(BulkMethod method) noexcept;

// Once per connection: store::prepare_session plus the bulk staging table.
Result<bool> prepare_bulk_session(PGconn* conn);

struct BulkCounts : WriteCounts {
    bool fell_back = false;  // DirectCopy met rows already stored and merged instead
};

// Inside an open transaction (DirectCopy uses a savepoint in it).
Result<BulkCounts> bulk_insert(PGconn* conn, const std::vector<WalletEvent>& events, BulkMethod method);

}  // namespace wallet::store
