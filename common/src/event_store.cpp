#include "wallet/event_store.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

#include "wallet/json_util.hpp"
#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"

namespace wallet {
namespace {

// Server notices ("relation already exists, skipping") are not for operators.
void ignore_notice(void*, const char*) {}

}  // namespace

namespace store {
namespace {

constexpr std::string_view kColumns =
    "block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq, op_type, trx_id, \"timestamp\", "
    "amount, symbol, vesting_amount, vesting_symbol, counterparty, memo, author, permlink, assets, payload";
constexpr std::size_t kColumnCount = 20;
using Row = std::array<std::optional<std::string>, kColumnCount>;

// Rows per multi-row INSERT statement: 20 parameters each, well below
// PostgreSQL's 65535-parameter limit.
constexpr std::size_t kRowsPerInsert = 1000;

// PostgreSQL text cannot hold NUL: a memo with one keeps a visible U+FFFD.
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

std::string storable_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '\0') {
            out += kReplacementCharacter;
        } else {
            out += c;
        }
    }
    return out;
}

// jsonb refuses the escape \u0000 for the same reason; it becomes \ufffd.
// Other escapes (an escaped backslash before "u0000" included) stay as they are.
std::string storable_json(std::string text) {
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
        if (text[i] != '\\') continue;
        if (text.compare(i + 1, 5, "u0000") == 0) text.replace(i + 2, 4, "fffd");
        ++i;  // skip the escaped character
    }
    return text;
}

// NUMERIC(30,6) rounds silently; an amount it cannot hold exactly is refused.
Result<std::string> numeric_text(const Asset& asset, const char* column) {
    auto at_scale_6 = asset.amount.rescaled(6);
    if (!at_scale_6) return make_error(std::string(column) + " " + asset.symbol + " has more than 6 decimals");
    Decimal::Units units = at_scale_6->units();
    if (units < 0) units = -units;
    Decimal::Units limit = 1;
    for (int i = 0; i < 30; ++i) limit *= 10;
    if (units >= limit) return make_error(std::string(column) + " " + asset.symbol + " exceeds NUMERIC(30,6)");
    return asset.amount_string();
}

// The `assets` list as JSON, written directly: field names and symbols are
// plain identifiers, amounts exact decimals.
std::string assets_text(const std::vector<AssetField>& assets) {
    std::string out = "[";
    for (const auto& field : assets) {
        if (out.size() > 1) out += ',';
        out += "{\"field\":";
        json::append_quoted(out, field.field);
        out += ",\"amount\":";
        const auto amount = field.asset.amount_string();  // the decoder checked that it prints
        json::append_quoted(out, amount ? *amount : std::string("0"));
        out += ",\"symbol\":";
        json::append_quoted(out, field.asset.symbol);
        out += '}';
    }
    return out + "]";
}

Result<Row> render_row(const WalletEvent& e, const std::string& payload_text) {
    if (!e.block_seq || !e.virtual_op) {
        return make_error("event of block " + std::to_string(e.block_num) + " has no block position (decoded without the block)");
    }
    Row row;
    row[0] = std::to_string(e.block_num);
    row[1] = std::to_string(e.trx_in_block);
    row[2] = std::to_string(e.op_in_trx);
    row[3] = std::to_string(*e.virtual_op);
    row[4] = storable_text(e.account);
    row[5] = std::string(role_name(e.role));
    row[6] = std::to_string(*e.block_seq);
    row[7] = storable_text(e.op_type);
    if (e.trx_id) row[8] = storable_text(*e.trx_id);
    row[9] = e.timestamp.to_iso_z();
    if (e.amount) {
        auto amount = numeric_text(*e.amount, "amount");
        if (!amount) return make_error(amount.error());
        row[10] = std::move(amount).value();
        row[11] = e.amount->symbol;
    }
    if (e.vesting) {
        auto amount = numeric_text(*e.vesting, "vesting_amount");
        if (!amount) return make_error(amount.error());
        row[12] = std::move(amount).value();
        row[13] = e.vesting->symbol;
    }
    if (e.counterparty) row[14] = storable_text(*e.counterparty);
    if (e.memo) row[15] = storable_text(*e.memo);
    if (e.author) row[16] = storable_text(*e.author);
    if (e.permlink) row[17] = storable_text(*e.permlink);
    row[18] = assets_text(e.assets);
    row[19] = payload_text;
    return row;
}

// Renders every event; the payload of an operation with several events is
// made storable once.
Result<std::vector<Row>> render_rows(const std::vector<WalletEvent>& events) {
    std::vector<Row> rows;
    rows.reserve(events.size());
    const std::string* last_payload = nullptr;
    std::string payload_text;
    for (const auto& event : events) {
        if (event.payload.get() != last_payload || last_payload == nullptr) {
            last_payload = event.payload.get();
            payload_text = last_payload != nullptr ? storable_json(*last_payload) : "{}";
        }
        auto row = render_row(event, payload_text);
        if (!row) return make_error(row.error());
        rows.push_back(std::move(row).value());
    }
    return rows;
}

// COPY text format: backslash escapes for the characters that delimit it.
void append_copy_field(std::string& out, const std::optional<std::string>& value) {
    if (!value) {
        out += "\\N";
        return;
    }
    for (const char c : *value) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\t': out += "\\t"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            default: out += c;
        }
    }
}

std::int64_t affected_rows(PGresult* result) {
    const char* count = PQcmdTuples(result);
    return count != nullptr && *count != '\0' ? std::strtoll(count, nullptr, 10) : 0;
}

// The outcome of a COPY: empty on success, else the message and SQLSTATE.
struct CopyFailure {
    std::string message;
    std::string sqlstate;
};

std::optional<CopyFailure> copy_rows(PGconn* conn, const std::string& table, const std::vector<Row>& rows) {
    auto started = pg::exec(conn, "COPY " + table + " (" + std::string(kColumns) + ") FROM STDIN");
    if (!started) return CopyFailure{"COPY: " + started.error(), ""};
    std::string buffer;
    constexpr std::size_t kFlushBytes = 1 << 20;
    bool sent = true;
    for (const auto& row : rows) {
        for (std::size_t column = 0; column < kColumnCount; ++column) {
            if (column > 0) buffer += '\t';
            append_copy_field(buffer, row[column]);
        }
        buffer += '\n';
        if (buffer.size() >= kFlushBytes) {
            sent = PQputCopyData(conn, buffer.data(), static_cast<int>(buffer.size())) == 1;
            buffer.clear();
            if (!sent) break;
        }
    }
    if (sent && !buffer.empty()) sent = PQputCopyData(conn, buffer.data(), static_cast<int>(buffer.size())) == 1;
    const bool ended = PQputCopyEnd(conn, sent ? nullptr : "client could not send COPY data") == 1;
    std::optional<CopyFailure> failure;
    while (PGresult* raw = PQgetResult(conn)) {
        PgResultPtr result(raw);
        if (PQresultStatus(raw) != PGRES_COMMAND_OK && !failure) {
            const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
            failure = CopyFailure{std::string("COPY: ") + PQresultErrorMessage(raw), state != nullptr ? state : ""};
        }
    }
    if (!failure && (!sent || !ended)) failure = CopyFailure{"COPY: " + pg::last_error(conn), ""};
    return failure;
}

constexpr const char* kUniqueViolation = "23505";

// COPY straight into the table: the common case, where none of the rows is
// stored yet. When some are (a block written again, a backfill overlapping),
// the COPY fails as a whole on the dedup key, is rolled back to a savepoint,
// and the rows go through the staging table and ON CONFLICT DO NOTHING.
Result<std::int64_t> copy_merge(PGconn* conn, const std::vector<Row>& rows) {
    auto saved = pg::exec(conn, "SAVEPOINT wallet_direct_copy");
    if (!saved) return make_error(saved.error());
    const auto direct = copy_rows(conn, "wallet_operation_events", rows);
    if (!direct) {
        auto released = pg::exec(conn, "RELEASE SAVEPOINT wallet_direct_copy");
        if (!released) return make_error(released.error());
        return static_cast<std::int64_t>(rows.size());
    }
    if (direct->sqlstate != kUniqueViolation) return make_error(direct->message);
    auto undone = pg::exec(conn, "ROLLBACK TO SAVEPOINT wallet_direct_copy");
    if (!undone) return make_error(undone.error());
    if (const auto staged = copy_rows(conn, "wallet_events_incoming", rows)) return make_error(staged->message);
    // Moving the rows leaves the staging table empty for the next insert; a
    // rollback undoes both the COPY and the move.
    auto merged = pg::exec(conn, "WITH moved AS (DELETE FROM wallet_events_incoming RETURNING *)"
                                 " INSERT INTO wallet_operation_events (" + std::string(kColumns) + ") SELECT " +
                                     std::string(kColumns) + " FROM moved ON CONFLICT DO NOTHING");
    if (!merged) return make_error("merge: " + merged.error());
    return affected_rows(merged->get());
}

Result<std::int64_t> multi_row_insert(PGconn* conn, const std::vector<Row>& rows) {
    std::int64_t inserted = 0;
    for (std::size_t first = 0; first < rows.size(); first += kRowsPerInsert) {
        const std::size_t count = std::min(kRowsPerInsert, rows.size() - first);
        std::string sql = "INSERT INTO wallet_operation_events (" + std::string(kColumns) + ") VALUES ";
        std::vector<std::optional<std::string>> params;
        params.reserve(count * kColumnCount);
        for (std::size_t r = 0; r < count; ++r) {
            sql += r == 0 ? "(" : ",(";
            for (std::size_t column = 0; column < kColumnCount; ++column) {
                params.push_back(rows[first + r][column]);
                sql += (column == 0 ? "$" : ",$") + std::to_string(params.size());
            }
            sql += ')';
        }
        sql += " ON CONFLICT DO NOTHING";
        auto result = pg::exec_params(conn, sql, params);
        if (!result) return make_error("insert: " + result.error());
        inserted += affected_rows(result->get());
    }
    return inserted;
}

}  // namespace

Result<bool> prepare_session(PGconn* conn) {
    PQsetNoticeProcessor(conn, ignore_notice, nullptr);
    auto created = pg::exec(conn,
                            "CREATE TEMP TABLE IF NOT EXISTS wallet_events_incoming "
                            "(LIKE wallet_operation_events INCLUDING DEFAULTS)");
    if (!created) return make_error("cannot create the staging table: " + created.error());
    return true;
}

Result<WriteCounts> insert_events(PGconn* conn, const std::vector<WalletEvent>& events, WriteMethod method) {
    WriteCounts counts;
    counts.offered = static_cast<std::int64_t>(events.size());
    if (events.empty()) return counts;
    auto rows = render_rows(events);
    if (!rows) return make_error(rows.error());
    auto inserted = method == WriteMethod::CopyMerge ? copy_merge(conn, *rows) : multi_row_insert(conn, *rows);
    if (!inserted) return make_error(inserted.error());
    counts.inserted = *inserted;
    return counts;
}

Result<std::int64_t> delete_events_above(PGconn* conn, std::int64_t block_num) {
    auto deleted = pg::exec_params(conn, "DELETE FROM wallet_operation_events WHERE block_num > $1::integer",
                                   {std::to_string(block_num)});
    if (!deleted) return make_error("delete: " + deleted.error());
    return affected_rows(deleted->get());
}

}  // namespace store

namespace {

Result<BlockRef> block_ref_of(PGresult* result, int row) {
    BlockRef ref;
    ref.num = std::strtoll(PQgetvalue(result, row, 0), nullptr, 10);
    ref.id = PQgetvalue(result, row, 1);
    auto seconds = std::strtoll(PQgetvalue(result, row, 2), nullptr, 10);
    auto time = Timestamp::from_seconds(seconds);
    if (!time) return make_error(time.error());
    ref.time = *time;
    return ref;
}

// "{1,2,3}" array literals for unnest(): ids are hex, times ISO, so nothing
// needs quoting.
template <typename Render>
std::string array_literal(const std::vector<BlockRef>& refs, Render render) {
    std::string out = "{";
    for (std::size_t i = 0; i < refs.size(); ++i) {
        if (i > 0) out += ',';
        out += render(refs[i]);
    }
    return out + "}";
}

bool is_hex_id(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    for (const char c : id) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    return true;
}

}  // namespace

Result<EventStore> EventStore::connect(const std::string& url, bool apply_schema_migrations) {
    auto conn = pg::connect(url);
    if (!conn) return make_error(conn.error());
    PQsetNoticeProcessor(conn->get(), ignore_notice, nullptr);
    if (apply_schema_migrations) {
        auto migrated = apply_migrations(conn->get());
        if (!migrated) return make_error("schema migration: " + migrated.error());
    }
    auto prepared = store::prepare_session(conn->get());
    if (!prepared) return make_error(prepared.error());
    return EventStore(std::move(conn).value());
}

bool EventStore::healthy() const noexcept { return conn_ && PQstatus(conn_.get()) == CONNECTION_OK; }

Result<std::optional<BlockRef>> EventStore::checkpoint() {
    auto result = pg::exec(conn_.get(),
                           "SELECT block_num, block_id, extract(epoch FROM block_time)::bigint FROM indexer_checkpoint");
    if (!result) return make_error("checkpoint: " + result.error());
    if (PQntuples(result->get()) == 0) return std::optional<BlockRef>();
    auto ref = block_ref_of(result->get(), 0);
    if (!ref) return make_error(ref.error());
    return std::optional<BlockRef>(std::move(ref).value());
}

Result<std::vector<BlockRef>> EventStore::block_ids_from(std::int64_t from_block) {
    auto result = pg::exec_params(conn_.get(),
                                  "SELECT block_num, block_id, extract(epoch FROM block_time)::bigint FROM indexer_block_ids "
                                  "WHERE block_num >= $1::integer ORDER BY block_num",
                                  {std::to_string(from_block)});
    if (!result) return make_error("block ids: " + result.error());
    std::vector<BlockRef> refs;
    for (int row = 0; row < PQntuples(result->get()); ++row) {
        auto ref = block_ref_of(result->get(), row);
        if (!ref) return make_error(ref.error());
        refs.push_back(std::move(ref).value());
    }
    return refs;
}

Result<store::WriteCounts> EventStore::commit_batch(const Batch& batch, store::WriteMethod method) {
    for (const auto& ref : batch.blocks) {
        if (!is_hex_id(ref.id)) return make_error("block " + std::to_string(ref.num) + " has a malformed id");
    }
    if (!is_hex_id(batch.checkpoint.id)) return make_error("checkpoint block has a malformed id");
    PGconn* conn = conn_.get();
    auto tx = pg::Transaction::begin(conn);
    if (!tx) return make_error(tx.error());

    if (batch.rewind_above) {
        auto deleted = store::delete_events_above(conn, *batch.rewind_above);
        if (!deleted) return make_error(deleted.error());
        auto ids = pg::exec_params(conn, "DELETE FROM indexer_block_ids WHERE block_num > $1::integer",
                                   {std::to_string(*batch.rewind_above)});
        if (!ids) return make_error(ids.error());
    }
    auto counts = store::insert_events(conn, batch.events, method);
    if (!counts) return make_error(counts.error());

    // Only the ids fork detection may still compare are kept.
    const std::int64_t keep_from = batch.checkpoint.num - batch.keep_block_ids + 1;
    std::vector<BlockRef> kept;
    for (const auto& ref : batch.blocks) {
        if (ref.num >= keep_from) kept.push_back(ref);
    }
    auto saved = pg::exec_params(
        conn,
        "WITH saved AS ("
        "  INSERT INTO indexer_block_ids (block_num, block_id, block_time)"
        "  SELECT * FROM unnest($1::integer[], $2::text[], $3::timestamptz[])"
        "  ON CONFLICT (block_num) DO UPDATE SET block_id = EXCLUDED.block_id, block_time = EXCLUDED.block_time),"
        " trimmed AS (DELETE FROM indexer_block_ids WHERE block_num < $4::integer OR block_num > $5::integer)"
        " INSERT INTO indexer_checkpoint (singleton, block_num, block_id, block_time, updated_at)"
        " VALUES (true, $5::integer, $6, $7::timestamptz, now())"
        " ON CONFLICT (singleton) DO UPDATE SET block_num = EXCLUDED.block_num, block_id = EXCLUDED.block_id,"
        "   block_time = EXCLUDED.block_time, updated_at = EXCLUDED.updated_at",
        {array_literal(kept, [](const BlockRef& r) { return std::to_string(r.num); }),
         array_literal(kept, [](const BlockRef& r) { return r.id; }),
         array_literal(kept, [](const BlockRef& r) { return r.time.to_iso_z(); }), std::to_string(keep_from),
         std::to_string(batch.checkpoint.num), batch.checkpoint.id, batch.checkpoint.time.to_iso_z()});
    if (!saved) return make_error("checkpoint: " + saved.error());
    auto committed = tx.value().commit();
    if (!committed) return make_error("commit: " + committed.error());
    return counts;
}

Result<bool> EventStore::record_observation(const ChainHead& head) {
    std::optional<std::string> lib;
    if (head.last_irreversible) lib = std::to_string(*head.last_irreversible);
    auto saved = pg::exec_params(
        conn_.get(),
        "INSERT INTO node_observation (singleton, head_block, head_block_time, last_irreversible, observed_at)"
        " VALUES (true, $1::integer, $2::timestamptz, $3::integer, clock_timestamp())"
        " ON CONFLICT (singleton) DO UPDATE SET head_block = EXCLUDED.head_block,"
        "   head_block_time = EXCLUDED.head_block_time, last_irreversible = EXCLUDED.last_irreversible,"
        "   observed_at = EXCLUDED.observed_at",
        {std::to_string(head.head_block), head.head_time.to_iso_z(), lib});
    if (!saved) return make_error("node observation: " + saved.error());
    return true;
}

}  // namespace wallet
