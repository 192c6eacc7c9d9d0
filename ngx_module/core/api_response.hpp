// Result objects of the wallet_history methods, built from the rows of the
// statements in api_sql.hpp (text format). Amounts stay decimal text from
// NUMERIC to JSON and are printed at their asset's precision.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <libpq-fe.h>

#include "api_request.hpp"
#include "wallet/cursor.hpp"

namespace wallet::api {

// An exact decimal printed at the asset's precision (6 for VESTS, 3 for the
// liquid symbols); digits are only ever dropped when they are zeros.
std::string format_amount(std::string_view decimal_text, std::string_view symbol);

std::string page_result(Method method, const PageQuery& query, PGresult* rows, const CursorCodec& cursors);
std::string totals_result(const PageQuery& query, PGresult* rows);
std::string status_result(PGresult* rows);
std::string methods_result();

}  // namespace wallet::api
