#include "wallet/pg.hpp"

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

Result<PgResultPtr> exec_params(PGconn* conn, const std::string& sql, const std::vector<std::optional<std::string>>& params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return checked(conn, PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                      nullptr, nullptr, 0));
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

}  // namespace wallet::pg
