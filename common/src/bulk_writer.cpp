#include "wallet/bulk_writer.hpp"

#include <cstdlib>
#include <string>

#include "wallet/pg.hpp"

namespace wallet::store {
namespace {

constexpr const char* kStagingTable = "wallet_events_bulk";
constexpr const char* kUniqueViolation = "23505";

struct CopyOutcome {
    bool ok = false;
    std::string sqlstate;
    std::string message;
    std::int64_t rows = 0;
};

// COPY ... FROM STDIN of ready-made text; the server's verdict with its SQLSTATE.
CopyOutcome copy_in(PGconn* conn, const std::string& table, const std::string& text) {
    CopyOutcome outcome;
    const std::string sql = "COPY " + table + " (" + std::string(event_columns()) + ") FROM STDIN";
    PgResultPtr started(PQexec(conn, sql.c_str()));
    if (!started || PQresultStatus(started.get()) != PGRES_COPY_IN) {
        outcome.message = "COPY: " + (started ? std::string(PQresultErrorMessage(started.get())) : pg::last_error(conn));
        return outcome;
    }
    // libpq sends large buffers in pieces itself; chunks bound its copies.
    constexpr std::size_t kChunk = 1 << 20;
    bool sent = true;
    for (std::size_t offset = 0; offset < text.size() && sent; offset += kChunk) {
        const std::size_t length = std::min(kChunk, text.size() - offset);
        sent = PQputCopyData(conn, text.data() + offset, static_cast<int>(length)) == 1;
    }
    const bool ended = PQputCopyEnd(conn, sent ? nullptr : "client could not send COPY data") == 1;
    bool failed = !sent || !ended;
    while (PGresult* raw = PQgetResult(conn)) {
        PgResultPtr result(raw);
        if (PQresultStatus(raw) == PGRES_COMMAND_OK) {
            outcome.rows = std::strtoll(PQcmdTuples(raw), nullptr, 10);
        } else if (!failed || outcome.message.empty()) {
            failed = true;
            const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
            outcome.sqlstate = state != nullptr ? state : "";
            outcome.message = PQresultErrorMessage(raw);
        }
    }
    if (failed && outcome.message.empty()) outcome.message = pg::last_error(conn);
    while (!outcome.message.empty() && outcome.message.back() == '\n') outcome.message.pop_back();
    outcome.ok = !failed;
    return outcome;
}

Result<std::int64_t> staged_merge(PGconn* conn, const std::string& text) {
    auto copied = copy_in(conn, kStagingTable, text);
    if (!copied.ok) return make_error(copied.message);
    auto merged = pg::exec(conn, "INSERT INTO wallet_operation_events (" + std::string(event_columns()) + ") SELECT " +
                                     std::string(event_columns()) + " FROM " + kStagingTable + " ON CONFLICT DO NOTHING");
    if (!merged) return make_error("merge: " + merged.error());
    // Emptied now as well as at commit: a fallback inside the same
    // transaction must not see these rows again.
    auto emptied = pg::exec(conn, std::string("TRUNCATE ") + kStagingTable);
    if (!emptied) return make_error("staging: " + emptied.error());
    return std::strtoll(PQcmdTuples(merged->get()), nullptr, 10);
}

}  // namespace

std::optional<BulkMethod> parse_bulk_method(std::string_view name) {
    if (name == "copy-merge") return BulkMethod::CopyMerge;
    if (name == "insert") return BulkMethod::MultiRowInsert;
    if (name == "staged-merge") return BulkMethod::StagedMerge;
    if (name == "direct-copy") return BulkMethod::DirectCopy;
    return std::nullopt;
}

const char* bulk_method_name(BulkMethod method) noexcept {
    switch (method) {
        case BulkMethod::CopyMerge: return "copy-merge";
        case BulkMethod::MultiRowInsert: return "insert";
        case BulkMethod::StagedMerge: return "staged-merge";
        case BulkMethod::DirectCopy: return "direct-copy";
    }
    return "?";
}

Result<bool> prepare_bulk_session(PGconn* conn) {
    auto prepared = prepare_session(conn);
    if (!prepared) return prepared;
    auto created = pg::exec(conn, std::string("CREATE TEMP TABLE IF NOT EXISTS ") + kStagingTable +
                                      " (LIKE wallet_operation_events INCLUDING DEFAULTS) ON COMMIT DELETE ROWS");
    if (!created) return make_error("cannot create the bulk staging table: " + created.error());
    return true;
}

Result<BulkCounts> bulk_insert(PGconn* conn, const std::vector<WalletEvent>& events, BulkMethod method) {
    BulkCounts counts;
    counts.offered = static_cast<std::int64_t>(events.size());
    if (events.empty()) return counts;
    if (method == BulkMethod::CopyMerge || method == BulkMethod::MultiRowInsert) {
        auto written = insert_events(conn, events, method == BulkMethod::CopyMerge ? WriteMethod::CopyMerge : WriteMethod::MultiRowInsert);
        if (!written) return make_error(written.error());
        counts.inserted = written->inserted;
        return counts;
    }
    auto text = copy_text(events);
    if (!text) return make_error(text.error());
    if (method == BulkMethod::DirectCopy) {
        auto savepoint = pg::exec(conn, "SAVEPOINT bulk_direct");
        if (!savepoint) return make_error(savepoint.error());
        auto copied = copy_in(conn, "wallet_operation_events", *text);
        if (copied.ok) {
            auto released = pg::exec(conn, "RELEASE SAVEPOINT bulk_direct");
            if (!released) return make_error(released.error());
            counts.inserted = copied.rows;
            return counts;
        }
        if (copied.sqlstate != kUniqueViolation) return make_error(copied.message);
        auto rolled_back = pg::exec(conn, "ROLLBACK TO SAVEPOINT bulk_direct");
        if (!rolled_back) return make_error(rolled_back.error());
        counts.fell_back = true;
    }
    auto inserted = staged_merge(conn, *text);
    if (!inserted) return make_error(inserted.error());
    counts.inserted = *inserted;
    return counts;
}

}  // namespace wallet::store
