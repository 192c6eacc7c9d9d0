#include "wallet/pg.hpp"

#include <algorithm>

namespace wallet::pg {

namespace {

std::string trimmed(const char* text) {
    std::string s = text != nullptr ? text : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

Result<PgResultPtr> checked(PGconn* conn, PGresult* raw) {
    PgResultPtr result(raw);
    if (!result) return make_error(last_error(conn));
    auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_COPY_IN) {
        return make_error(trimmed(PQresultErrorMessage(result.get())));
    }
    return result;
}

}  // namespace

std::string last_error(PGconn* conn) { return trimmed(PQerrorMessage(conn)); }

Result<PgConnPtr> connect(const std::string& url) {
    PgConnPtr conn(PQconnectdb(url.c_str()));
    if (!conn) return make_error("out of memory connecting to PostgreSQL");
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        std::string message = "cannot connect to PostgreSQL: " + last_error(conn.get());
        // A '%' followed by two hex digits in a hand-written URL's password
        // parses (decoded) and then fails here.
        if (message.find("password authentication failed") != std::string::npos) {
            message += " (in a hand-written *_DATABASE_URL the password must be percent-encoded: % as %25, / as %2F)";
        }
        return make_error(message);
    }
    return conn;
}

Result<PgResultPtr> exec(PGconn* conn, const std::string& sql) { return checked(conn, PQexec(conn, sql.c_str())); }

namespace {

Result<PgResultPtr> exec_in(PGconn* conn, const std::string& sql, const std::vector<std::optional<std::string>>& params,
                            int result_format) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return checked(conn, PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                      nullptr, nullptr, result_format));
}

}  // namespace

Result<PgResultPtr> exec_params(PGconn* conn, const std::string& sql, const std::vector<std::optional<std::string>>& params) {
    return exec_in(conn, sql, params, 0);
}

Result<PgResultPtr> exec_binary(PGconn* conn, const std::string& sql, const std::vector<std::optional<std::string>>& params) {
    return exec_in(conn, sql, params, 1);
}

Result<Transaction> Transaction::begin(PGconn* conn, const std::string& begin_sql) {
    auto r = exec(conn, begin_sql);
    if (!r) return make_error(r.error());
    return Transaction(conn);
}

Transaction::~Transaction() {
    if (conn_ != nullptr) PgResultPtr(PQexec(conn_, "ROLLBACK"));
}

Result<bool> Transaction::commit() {
    PGconn* conn = std::exchange(conn_, nullptr);
    auto r = exec(conn, "COMMIT");
    if (!r) return make_error(r.error());
    return true;
}

std::string quote_literal(PGconn* conn, std::string_view text) {
    MallocPtr<char> quoted(PQescapeLiteral(conn, text.data(), text.size()));
    return quoted ? std::string(quoted.get()) : std::string();
}

std::string quote_identifier(PGconn* conn, std::string_view text) {
    MallocPtr<char> quoted(PQescapeIdentifier(conn, text.data(), text.size()));
    return quoted ? std::string(quoted.get()) : std::string();
}

std::string text_array_literal(const std::vector<std::string>& items) {
    std::string out = "{";
    for (const auto& item : items) {
        if (out.size() > 1) out += ',';
        out += '"';
        for (const char c : item) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

namespace {

void put_be(std::string& out, std::uint32_t value, int bytes) {
    for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

}  // namespace

BinaryRows::BinaryRows() : data_(std::string("PGCOPY\n\xff\r\n\0", 11)) {
    put_be(data_, 0, 4);  // flags
    put_be(data_, 0, 4);  // header extension
}

void BinaryRows::row(int fields) {
    put_be(data_, static_cast<std::uint32_t>(fields), 2);
    ++count_;
}

void BinaryRows::int4(std::int32_t value) {
    put_be(data_, 4, 4);
    put_be(data_, static_cast<std::uint32_t>(value), 4);
}

void BinaryRows::bytes(std::string_view value) {
    put_be(data_, static_cast<std::uint32_t>(value.size()), 4);
    data_ += value;
}

Result<bool> copy_binary(PGconn* conn, const std::string& table, std::string_view columns, BinaryRows rows) {
    auto started = exec(conn, "COPY " + table + " (" + std::string(columns) + ") FROM STDIN (FORMAT binary)");
    if (!started) return make_error("COPY: " + started.error());
    std::string data = std::move(rows).data();
    put_be(data, 0xffff, 2);  // the trailer
    constexpr std::size_t kChunk = 1 << 20;
    bool sent = true;
    for (std::size_t at = 0; sent && at < data.size(); at += kChunk) {
        const std::size_t size = std::min(kChunk, data.size() - at);
        sent = PQputCopyData(conn, data.data() + at, static_cast<int>(size)) == 1;
    }
    const bool ended = PQputCopyEnd(conn, sent ? nullptr : "client could not send COPY data") == 1;
    std::optional<std::string> failure;
    while (PGresult* raw = PQgetResult(conn)) {
        PgResultPtr result(raw);
        if (PQresultStatus(raw) != PGRES_COMMAND_OK && !failure) failure = "COPY: " + trimmed(PQresultErrorMessage(raw));
    }
    if (!failure && (!sent || !ended)) failure = "COPY: " + last_error(conn);
    if (failure) return make_error(*failure);
    return true;
}

}  // namespace wallet::pg
