#include "wallet/migrations.hpp"

#include <cstdlib>

#include "wallet/pg.hpp"

namespace wallet {

namespace {

// Serializes concurrent migrators (indexer and backfill starting together).
constexpr const char* kLockKey = "7426584211";

}  // namespace

Result<int> current_schema_version(PGconn* conn) {
    auto exists = pg::exec(conn, "SELECT to_regclass('schema_version') IS NOT NULL");
    if (!exists) return make_error(exists.error());
    if (std::string(PQgetvalue(exists->get(), 0, 0)) != "t") return 0;
    auto version = pg::exec(conn, "SELECT coalesce(max(version), 0) FROM schema_version");
    if (!version) return make_error(version.error());
    return std::atoi(PQgetvalue(version->get(), 0, 0));
}

Result<int> apply_migrations(PGconn* conn, const std::vector<Migration>& migrations) {
    auto setup = pg::exec(conn,
                          "CREATE TABLE IF NOT EXISTS schema_version ("
                          " version integer PRIMARY KEY, name text NOT NULL,"
                          " applied_at timestamptz NOT NULL DEFAULT now())");
    if (!setup) return make_error("cannot create schema_version: " + setup.error());

    for (const auto& m : migrations) {
        auto tx = pg::Transaction::begin(conn);
        if (!tx) return make_error(tx.error());
        auto locked = pg::exec(conn, std::string("SELECT pg_advisory_xact_lock(") + kLockKey + ")");
        if (!locked) return make_error(locked.error());
        auto current = current_schema_version(conn);
        if (!current) return make_error(current.error());
        if (m.version <= *current) continue;  // the transaction rolls back: nothing to do
        auto applied = pg::exec(conn, m.sql);
        if (!applied) {
            return make_error("migration " + std::to_string(m.version) + " (" + m.name + ") failed: " + applied.error());
        }
        auto recorded = pg::exec_params(conn, "INSERT INTO schema_version (version, name) VALUES ($1::integer, $2)",
                                        {std::to_string(m.version), std::string(m.name)});
        if (!recorded) return make_error(recorded.error());
        auto committed = tx.value().commit();
        if (!committed) return make_error(committed.error());
    }
    return current_schema_version(conn);
}

}  // namespace wallet
