// wallet_events.wide is written by the writers since migration 0015 (no
// longer computed by PostgreSQL): every row's must be its op type's class.
#pragma once

#include <string>

#include "harness/harness.hpp"

namespace store_test {

// "<rows whose wide is not NOT wallet_is_spec_type(op_type)> <wide rows> <spec rows>".
inline std::string wide_column_counts(const harness::PostgresServer& pg, const std::string& database = "wallet") {
    return pg.query("SELECT count(*) FILTER (WHERE wide IS DISTINCT FROM NOT wallet_is_spec_type(op_type)) || ' ' ||"
                    "       count(*) FILTER (WHERE wide) || ' ' || count(*) FILTER (WHERE NOT wide) FROM wallet_events",
                    database)
        .at(0);
}

// Whether every row's wide is its op type's class, with rows of both classes.
inline bool wide_column_is_the_op_types_class(const std::string& counts) {
    return counts.starts_with("0 ") && counts.find(" 0") == std::string::npos;
}

}  // namespace store_test
