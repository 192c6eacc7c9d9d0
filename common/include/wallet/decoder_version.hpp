// The version of the decoder (common/src/decoder.cpp) that loads the store.
// Every writer records it beside the block ranges it loads (backfill shards,
// the indexer's ranges: migration 0006), so that a store loaded by an older
// decoder can be brought up to date by re-running wallet-backfill over the
// ranges get_status reports as outdated (docs/operations.md).
//
// Versions:
//   1  spec 000's 15 operation types (releases up to schema version 5);
//   2  every balance-moving operation (docs/operations.md): 46 types.
//
// Bump rule: add 1 whenever a change of the decoder makes an operation give
// events it did not give before (a new type, a new role or account of an
// existing type), that is, whenever blocks loaded before the change lack rows
// the new decoder stores. A re-run adds exactly the rows the old decoder did
// not store (the dedup key and the merge of wallet_blocks' ops): it never
// changes or removes a row, so a change to the columns of events the old
// decoder already gave needs a migration instead of a bump.
#pragma once

namespace wallet {

inline constexpr int kDecoderVersion = 2;

}  // namespace wallet
