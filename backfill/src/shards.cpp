#include "shards.hpp"

#include <algorithm>
#include <cstdlib>

#include "wallet/pg.hpp"

namespace wallet::backfill {
namespace {

std::int64_t int_at(PGresult* result, int row, int column) {
    return std::strtoll(PQgetvalue(result, row, column), nullptr, 10);
}


std::string int_array(const std::vector<std::int64_t>& items) {
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ',';
        out += std::to_string(items[i]);
    }
    return out + "}";
}

// Any constant shared by every backfill process: serializes planning.
constexpr const char* kPlanLockKey = "7264915043";

}  // namespace

std::vector<BlockRange> missing_shards(const BlockRange& range, std::int64_t shard_size,
                                       const std::vector<BlockRange>& existing) {
    std::vector<BlockRange> sorted = existing;
    std::sort(sorted.begin(), sorted.end(), [](const BlockRange& a, const BlockRange& b) { return a.first < b.first; });
    std::vector<BlockRange> gaps;
    std::int64_t cursor = range.first;
    for (const auto& shard : sorted) {
        if (shard.last < cursor) continue;
        if (shard.first > range.last) break;
        if (shard.first > cursor) gaps.push_back({cursor, shard.first - 1});
        cursor = std::max(cursor, shard.last + 1);
    }
    if (cursor <= range.last) gaps.push_back({cursor, range.last});

    std::vector<BlockRange> shards;
    for (const auto& gap : gaps) {
        for (std::int64_t first = gap.first; first <= gap.last;) {
            const std::int64_t grid_end = ((first - 1) / shard_size + 1) * shard_size;
            const std::int64_t last = std::min(grid_end, gap.last);
            shards.push_back({first, last});
            first = last + 1;
        }
    }
    return shards;
}

Result<std::vector<BlockRange>> shards_overlapping(PGconn* conn, const BlockRange& range) {
    auto result = pg::exec_params(conn,
                                  "SELECT start_block, end_block FROM backfill_shards"
                                  " WHERE end_block >= $1::integer AND start_block <= $2::integer ORDER BY start_block",
                                  {std::to_string(range.first), std::to_string(range.last)});
    if (!result) return make_error("shards: " + result.error());
    std::vector<BlockRange> shards;
    for (int row = 0; row < PQntuples(result->get()); ++row) {
        shards.push_back({int_at(result->get(), row, 0), int_at(result->get(), row, 1)});
    }
    return shards;
}

Result<PlanResult> plan_shards(PGconn* conn, const BlockRange& range, std::int64_t shard_size, int decoder_version) {
    if (range.size() == 0 || shard_size < 1) return make_error("plan: empty range or shard size");
    auto tx = pg::Transaction::begin(conn);
    if (!tx) return make_error(tx.error());
    auto locked = pg::exec(conn, std::string("SELECT pg_advisory_xact_lock(") + kPlanLockKey + ")");
    if (!locked) return make_error("plan lock: " + locked.error());
    auto existing = shards_overlapping(conn, range);
    if (!existing) return make_error(existing.error());
    const auto missing = missing_shards(range, shard_size, *existing);
    if (!missing.empty()) {
        std::vector<std::int64_t> starts;
        std::vector<std::int64_t> ends;
        for (const auto& shard : missing) {
            starts.push_back(shard.first);
            ends.push_back(shard.last);
        }
        auto inserted = pg::exec_params(conn,
                                        "INSERT INTO backfill_shards (start_block, end_block, next_block, decoder_version)"
                                        " SELECT s, e, s, $3::smallint FROM unnest($1::integer[], $2::integer[]) AS t(s, e)",
                                        {int_array(starts), int_array(ends), std::to_string(decoder_version)});
        if (!inserted) return make_error("plan: " + inserted.error());
    }
    auto committed = tx.value().commit();
    if (!committed) return make_error("plan: " + committed.error());
    return PlanResult{static_cast<std::int64_t>(existing->size()), static_cast<std::int64_t>(missing.size())};
}

Result<RangeStatus> range_status(PGconn* conn, const BlockRange& range, int decoder_version) {
    auto result = pg::exec_params(
        conn,
        "SELECT count(*), count(*) FILTER (WHERE state = 'done' AND decoder_version >= $3::smallint),"
        " count(*) FILTER (WHERE state = 'running'),"
        " count(*) FILTER (WHERE state = 'pending' OR (state = 'done' AND decoder_version < $3::smallint)),"
        " coalesce(sum(end_block - start_block + 1), 0),"
        // What a pass of an older decoder loaded is loaded again.
        " coalesce(sum(CASE WHEN decoder_version < $3::smallint THEN 0"
        "                   ELSE LEAST(next_block, end_block + 1) - start_block END), 0),"
        " coalesce(sum(rows_written), 0),"
        " coalesce(sum(LEAST(end_block, $2::integer) - GREATEST(start_block, $1::integer) + 1), 0),"
        " count(*) FILTER (WHERE decoder_version < $3::smallint AND (next_block > start_block OR state = 'done'))"
        " FROM backfill_shards WHERE end_block >= $1::integer AND start_block <= $2::integer",
        {std::to_string(range.first), std::to_string(range.last), std::to_string(decoder_version)});
    if (!result) return make_error("shard status: " + result.error());
    PGresult* r = result->get();
    RangeStatus status;
    status.shards = int_at(r, 0, 0);
    status.done = int_at(r, 0, 1);
    status.running = int_at(r, 0, 2);
    status.pending = int_at(r, 0, 3);
    status.blocks_total = int_at(r, 0, 4);
    status.blocks_done = int_at(r, 0, 5);
    status.rows_written = int_at(r, 0, 6);
    // Shards never overlap one another (the planner only fills gaps).
    status.uncovered_blocks = range.size() - int_at(r, 0, 7);
    status.outdated = int_at(r, 0, 8);
    return status;
}

Result<std::optional<Shard>> claim_shard(PGconn* conn, const BlockRange& range, const std::string& owner,
                                         std::chrono::milliseconds heartbeat_timeout, const std::vector<std::int64_t>& skip,
                                         int decoder_version) {
    // The locking subquery re-checks a row changed by a concurrent claim
    // before taking it, and skips rows another claim holds: two workers
    // never get the same shard.
    //
    // A shard an older decoder loaded (done or not) is claimed too, and its
    // pass starts over from its first block with this decoder: the blocks
    // the older passes stored stay recorded as stored (stored_through, with
    // the lowest of their versions), so they never count as missing. A shard
    // of a newer decoder is left to the newer loader.
    auto result = pg::exec_params(
        conn,
        "WITH pick AS ("
        "  SELECT start_block, state AS previous_state, owner AS previous_owner FROM backfill_shards"
        "   WHERE end_block >= $2::integer AND start_block <= $3::integer AND start_block <> ALL($5::integer[])"
        "     AND decoder_version <= $6::smallint"
        "     AND (state = 'pending' OR (state = 'running' AND"
        "          heartbeat_at < clock_timestamp() - $4::bigint * interval '1 millisecond')"
        "          OR (state = 'done' AND decoder_version < $6::smallint))"
        "   ORDER BY start_block LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " UPDATE backfill_shards s SET state = 'running', owner = $1, heartbeat_at = clock_timestamp(),"
        "   attempts = s.attempts + 1, started_at = coalesce(s.started_at, clock_timestamp()),"
        "   stored_through = CASE WHEN s.decoder_version < $6::smallint"
        "                         THEN GREATEST(s.stored_through, s.next_block - 1) ELSE s.stored_through END,"
        "   stored_version = CASE WHEN s.decoder_version < $6::smallint"
        "                         THEN LEAST(CASE WHEN s.next_block > s.start_block THEN s.decoder_version END,"
        "                                    CASE WHEN s.stored_through >= s.next_block THEN s.stored_version END)"
        "                         ELSE s.stored_version END,"
        "   next_block = CASE WHEN s.decoder_version < $6::smallint THEN s.start_block ELSE s.next_block END,"
        "   decoder_version = $6::smallint"
        "  FROM pick WHERE s.start_block = pick.start_block"
        " RETURNING s.start_block, s.end_block, s.next_block, s.rows_written, s.attempts,"
        "   CASE WHEN pick.previous_state = 'running' THEN coalesce(pick.previous_owner, '') END",
        {owner, std::to_string(range.first), std::to_string(range.last), std::to_string(heartbeat_timeout.count()),
         int_array(skip), std::to_string(decoder_version)});
    if (!result) return make_error("claim: " + result.error());
    PGresult* r = result->get();
    if (PQntuples(r) == 0) return std::optional<Shard>();
    Shard shard;
    shard.start_block = int_at(r, 0, 0);
    shard.end_block = int_at(r, 0, 1);
    shard.next_block = int_at(r, 0, 2);
    shard.rows_written = int_at(r, 0, 3);
    shard.attempts = int_at(r, 0, 4);
    if (!PQgetisnull(r, 0, 5)) shard.previous_owner = PQgetvalue(r, 0, 5);
    return std::optional<Shard>(std::move(shard));
}

Result<bool> record_progress(PGconn* conn, const Shard& shard, const std::string& owner, std::int64_t next_block,
                             std::int64_t rows_added) {
    auto result = pg::exec_params(
        conn,
        "UPDATE backfill_shards SET next_block = $3::integer, rows_written = rows_written + $4::bigint,"
        "   heartbeat_at = clock_timestamp(),"
        "   state = CASE WHEN $3::integer > end_block THEN 'done' ELSE 'running' END,"
        "   finished_at = CASE WHEN $3::integer > end_block THEN clock_timestamp() END"
        " WHERE start_block = $1::integer AND owner = $2 AND state = 'running'",
        {std::to_string(shard.start_block), owner, std::to_string(next_block), std::to_string(rows_added)});
    if (!result) return make_error("shard progress: " + result.error());
    return std::string_view(PQcmdTuples(result->get())) == "1";
}

Result<std::int64_t> heartbeat(PGconn* conn, const std::vector<std::string>& owners) {
    if (owners.empty()) return std::int64_t{0};
    auto result = pg::exec_params(conn,
                                  "UPDATE backfill_shards SET heartbeat_at = clock_timestamp()"
                                  " WHERE state = 'running' AND owner = ANY($1::text[])",
                                  {pg::text_array_literal(owners)});
    if (!result) return make_error("heartbeat: " + result.error());
    return std::strtoll(PQcmdTuples(result->get()), nullptr, 10);
}

Result<bool> release_shard(PGconn* conn, std::int64_t start_block, const std::string& owner) {
    auto result = pg::exec_params(conn,
                                  "UPDATE backfill_shards SET state = 'pending', owner = NULL, heartbeat_at = NULL"
                                  " WHERE start_block = $1::integer AND owner = $2 AND state = 'running'",
                                  {std::to_string(start_block), owner});
    if (!result) return make_error("release: " + result.error());
    return std::string_view(PQcmdTuples(result->get())) == "1";
}

}  // namespace wallet::backfill
