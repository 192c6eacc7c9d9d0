// The backfill shard table (backfill_shards, migration 0001): the plan of a
// block range cut into shards, and the claims of workers on them.
//
// Claims are safe across processes and machines: a worker takes one shard
// with UPDATE ... FOR UPDATE SKIP LOCKED and writes its owner token into it;
// every later write to the shard (progress, done, release) names that token
// and fails when another worker has taken the shard over. A running shard
// whose heartbeat is older than the timeout is taken over (its worker died);
// a done shard is claimed again only by a newer decoder (wallet/decoder_version.hpp),
// whose pass loads the rows the older one did not store. Progress (next_block, rows_written) is
// recorded in the caller's transaction, the one that stores the rows, so a
// crash loses nothing and a re-run loads only what is missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "wallet/decoder_version.hpp"
#include "wallet/result.hpp"

namespace wallet::backfill {

struct BlockRange {
    std::int64_t first = 0;
    std::int64_t last = 0;  // inclusive
    std::int64_t size() const noexcept { return last >= first ? last - first + 1 : 0; }
};

struct Shard {
    std::int64_t start_block = 0;
    std::int64_t end_block = 0;    // inclusive
    std::int64_t next_block = 0;   // the first block not yet stored
    std::int64_t rows_written = 0;
    std::int64_t attempts = 0;     // claims so far, this one included
    // Set when the claim took a running shard over from a silent worker.
    std::optional<std::string> previous_owner;
};

// What the table says about a range.
struct RangeStatus {
    std::int64_t shards = 0;
    std::int64_t done = 0;
    std::int64_t running = 0;
    std::int64_t pending = 0;
    std::int64_t blocks_total = 0;  // blocks of the range's shards
    std::int64_t blocks_done = 0;   // of them, stored (next_block progress)
    std::int64_t rows_written = 0;
    std::int64_t uncovered_blocks = 0;  // blocks of the range that no shard covers
    // Shards with blocks stored by an older decoder than this one, to be
    // loaded again (counted as pending once done, not done).
    std::int64_t outdated = 0;
    bool complete() const noexcept { return shards > 0 && done == shards && uncovered_blocks == 0; }
};

// The shards a plan adds: the parts of the range no existing shard covers,
// cut at multiples of shard_size (block k*size+1 starts a shard), so that
// runs with other start blocks agree on shard boundaries.
std::vector<BlockRange> missing_shards(const BlockRange& range, std::int64_t shard_size,
                                       const std::vector<BlockRange>& existing);

struct PlanResult {
    std::int64_t existing = 0;  // shards of the range already in the table
    std::int64_t added = 0;
};

// Adds the missing shards of the range (serialized by an advisory lock, so
// that processes planning at once add each shard once).
// New shards are this decoder's (decoder_version).
Result<PlanResult> plan_shards(PGconn* conn, const BlockRange& range, std::int64_t shard_size,
                               int decoder_version = kDecoderVersion);

// The shards of the table overlapping the range, ascending.
Result<std::vector<BlockRange>> shards_overlapping(PGconn* conn, const BlockRange& range);

// Done and blocks_done count what decoder_version (or a newer one) loaded.
Result<RangeStatus> range_status(PGconn* conn, const BlockRange& range, int decoder_version = kDecoderVersion);

// Claims the first pending shard of the range, a running one whose
// heartbeat is older than heartbeat_timeout, or one that an older decoder
// than decoder_version loaded (its pass starts over at its first block);
// nullopt when there is none. Shards whose start block is in `skip` are left alone.
Result<std::optional<Shard>> claim_shard(PGconn* conn, const BlockRange& range, const std::string& owner,
                                         std::chrono::milliseconds heartbeat_timeout,
                                         const std::vector<std::int64_t>& skip = {},
                                         int decoder_version = kDecoderVersion);

// Inside the caller's transaction: the shard's rows up to next_block - 1 are
// stored (rows_added more of them); the shard is done when next_block passes
// its end. False when the owner no longer holds the shard: the caller must
// roll back.
Result<bool> record_progress(PGconn* conn, const Shard& shard, const std::string& owner, std::int64_t next_block,
                             std::int64_t rows_added);

// Refreshes the heartbeat of the running shards of these owners.
Result<std::int64_t> heartbeat(PGconn* conn, const std::vector<std::string>& owners);

// Gives a shard back (pending, no owner), keeping its progress.
Result<bool> release_shard(PGconn* conn, std::int64_t start_block, const std::string& owner);

}  // namespace wallet::backfill
