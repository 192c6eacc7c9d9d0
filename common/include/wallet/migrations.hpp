// Versioned SQL migrations, embedded at build time from sql/migrations.
#pragma once

#include <string>
#include <vector>

#include <libpq-fe.h>

#include "wallet/result.hpp"

namespace wallet {

struct Migration {
    int version;
    const char* name;
    const char* sql;
};

// Every migration of sql/migrations, ascending by version.
const std::vector<Migration>& embedded_migrations();

// Applies the migrations newer than the database's schema_version, each in its
// own transaction under an advisory lock, so concurrent starters are safe and a
// second run is a no-op. Returns the resulting schema version.
Result<int> apply_migrations(PGconn* conn, const std::vector<Migration>& migrations = embedded_migrations());

// The database's current schema version (0 when none was applied).
Result<int> current_schema_version(PGconn* conn);

}  // namespace wallet
