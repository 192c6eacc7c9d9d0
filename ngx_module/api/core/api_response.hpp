// Result objects of the wallet_history methods, built from the rows of the
// statements in api_sql.hpp (text format). Amounts stay decimal text from
// NUMERIC to JSON and are printed at their asset's precision.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <libpq-fe.h>

#include "api_config.hpp"
#include "api_metrics.hpp"
#include "api_request.hpp"
#include "api_sql.hpp"
#include "wallet/cursor.hpp"

namespace wallet::api {

// An exact decimal printed at the asset's precision (6 for VESTS, 3 for the
// liquid symbols); digits are only ever dropped when they are zeros.
std::string format_amount(std::string_view decimal_text, std::string_view symbol);
// The same written to out, which has room for amount_capacity(size) bytes.
constexpr std::size_t amount_capacity(std::size_t decimal_text_size) { return decimal_text_size + 8; }
char* write_amount(char* out, std::string_view decimal_text, std::string_view symbol);

// The text of a response being written. It grows to the largest response
// written so far and keeps that size, so that a worker reusing one buffer
// renders each page without allocating or zero-filling memory.
class ResponseBuffer {
public:
    void clear() noexcept { used_ = 0; }
    // Room for n more bytes at the end; commit() says how many were written.
    char* reserve(std::size_t n) {
        if (storage_.size() < used_ + n) storage_.resize(std::max(used_ + n, storage_.size() * 2));
        return storage_.data() + used_;
    }
    void commit(const char* end) noexcept { used_ = static_cast<std::size_t>(end - storage_.data()); }
    void append(std::string_view text) {
        char* at = reserve(text.size());
        std::memcpy(at, text.data(), text.size());
        commit(at + text.size());
    }
    std::string_view view() const noexcept { return {storage_.data(), used_}; }

private:
    std::string storage_;
    std::size_t used_ = 0;
};

// The whole JSON-RPC response to a page request, written to buffer (the
// view is valid until the buffer is used again).
// The header row of a page statement's result (api_sql.hpp, page_header).
struct PageHeader {
    int row = -1;  // -1: none (not a page statement's result)
    std::int64_t indexed_block = 0;
    std::optional<std::int64_t> stored_block;
    std::optional<RememberedAccount> account;  // none: no such account
};
PageHeader read_page_header(PGresult* rows);

std::string_view write_page_response(ResponseBuffer& buffer, std::string_view id_json, Method method,
                                     const PageQuery& query, PGresult* rows, const CursorCodec& cursors);
// One row of the push statement (api_sql.hpp, wh_push): the event exactly as
// a page of get_wallet_history prints it, and what a subscription matches
// and orders it by.
struct PushedEvent {
    std::string account;
    std::string op_type;
    bool wide = false;           // outside spec 000's types (scope "all" only)
    std::int64_t block_num = 0;
    std::int64_t position = 0;   // block_seq * 100 + role code, the store's keyset
    CursorPosition cursor;       // as get_wallet_history's cursors hold it
    std::string json;
};
PushedEvent read_pushed_event(PGresult* rows, int row);
std::string totals_result(const PageQuery& query, PGresult* rows);
// The account id and generation a totals statement used (none: no such account).
std::optional<RememberedAccount> totals_account(PGresult* rows);
// `pool`: the database connections this API opens at most (the additive
// `db_connections`, after every field of the spec's status object).
std::string status_result(PGresult* rows, const PoolSize& pool);
std::string methods_result();
// The database statement's answer; none when rows are not one.
std::optional<DatabaseReading> database_reading(PGresult* rows);

}  // namespace wallet::api
