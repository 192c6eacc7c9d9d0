// Small synchronous libpq helpers for the daemons and tools (never used inside
// nginx, whose database access is asynchronous).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wallet/handles.hpp"
#include "wallet/result.hpp"

namespace wallet::pg {

// Connects and checks the connection; the error names no password.
Result<PgConnPtr> connect(const std::string& url);

// Runs SQL (no parameters, possibly several statements).
Result<PgResultPtr> exec(PGconn* conn, const std::string& sql);

// Runs one parameterized statement; std::nullopt parameters are SQL NULL.
Result<PgResultPtr> exec_params(PGconn* conn, const std::string& sql,
                                const std::vector<std::optional<std::string>>& params);

// The same with every result column in binary format (integers in network
// byte order, bytea as its bytes).
Result<PgResultPtr> exec_binary(PGconn* conn, const std::string& sql,
                                const std::vector<std::optional<std::string>>& params = {});

// A literal or identifier quoted by libpq (for DDL, which takes no parameters).
std::string quote_literal(PGconn* conn, std::string_view text);
std::string quote_identifier(PGconn* conn, std::string_view text);

// {"a","b"}: a text[] parameter's literal, every element quoted.
std::string text_array_literal(const std::vector<std::string>& items);

// A transaction that rolls back unless committed: every early return is safe.
class Transaction {
public:
    static Result<Transaction> begin(PGconn* conn, const std::string& begin_sql = "BEGIN");
    Transaction(Transaction&& other) noexcept : conn_(std::exchange(other.conn_, nullptr)) {}
    Transaction& operator=(Transaction&&) = delete;
    Transaction(const Transaction&) = delete;
    ~Transaction();
    Result<bool> commit();

private:
    explicit Transaction(PGconn* conn) : conn_(conn) {}
    PGconn* conn_;
};

// The error text of the last failed call, without a trailing newline.
std::string last_error(PGconn* conn);

// Rows in COPY's binary format (no hex or escaped text): integer and bytea
// fields, sent by copy_binary.
class BinaryRows {
public:
    BinaryRows();
    void row(int fields);
    void int4(std::int32_t value);
    void bytes(std::string_view value);
    std::size_t count() const { return count_; }
    const std::string& data() const { return data_; }

private:
    std::string data_;
    std::size_t count_ = 0;
};

// COPY table (columns) FROM STDIN in the binary format.
Result<bool> copy_binary(PGconn* conn, const std::string& table, std::string_view columns, BinaryRows rows);

}  // namespace wallet::pg
