#include "wallet/db_setup.hpp"

#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"

namespace wallet {

namespace {

Result<bool> role_exists(PGconn* conn, const char* role) {
    auto r = pg::exec_params(conn, "SELECT 1 FROM pg_roles WHERE rolname = $1", {std::string(role)});
    if (!r) return make_error(r.error());
    return PQntuples(r->get()) == 1;
}

Result<bool> ensure_role(PGconn* conn, const char* role, const std::string& password) {
    auto exists = role_exists(conn, role);
    if (!exists) return make_error(exists.error());
    std::string sql = std::string(*exists ? "ALTER ROLE " : "CREATE ROLE ") + pg::quote_identifier(conn, role) +
                      " WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD " +
                      pg::quote_literal(conn, password);
    auto r = pg::exec(conn, sql);
    if (!r) return make_error(std::string("cannot provision role ") + role + ": " + r.error());
    return true;
}

}  // namespace

Result<int> provision_database(const Settings& settings, std::optional<int> up_to_version) {
    const auto& db = settings.db;
    auto admin = pg::connect(db.superuser_url("postgres"));
    if (!admin) return make_error(admin.error());
    PGconn* conn = admin->get();

    for (auto [role, password] : {std::pair{kWriterRole, &db.writer_password}, std::pair{kReaderRole, &db.reader_password}}) {
        auto ok = ensure_role(conn, role, *password);
        if (!ok) return make_error(ok.error());
    }

    auto exists = pg::exec_params(conn, "SELECT 1 FROM pg_database WHERE datname = $1", {db.name});
    if (!exists) return make_error(exists.error());
    const std::string dbname = pg::quote_identifier(conn, db.name);
    if (PQntuples(exists->get()) == 0) {
        auto created = pg::exec(conn, "CREATE DATABASE " + dbname + " OWNER " + kWriterRole + " ENCODING 'UTF8' TEMPLATE template0");
        if (!created) return make_error("cannot create database: " + created.error());
    }
    // The reader's limits live on the role, so no client can forget them.
    const std::string timeout = std::to_string(settings.api.statement_timeout_ms) + "ms";
    for (const std::string& sql : {
             std::string("ALTER ROLE ") + kReaderRole + " SET statement_timeout = " + pg::quote_literal(conn, timeout),
             std::string("ALTER ROLE ") + kReaderRole + " SET default_transaction_read_only = on",
             // Its statements are short index reads, planned once per connection
             // (the balance functions are inlined into them, migration 0021):
             // JIT would compile a cached plan with a high estimate on every call.
             std::string("ALTER ROLE ") + kReaderRole + " SET jit = off",
             "REVOKE ALL ON DATABASE " + dbname + " FROM PUBLIC",
             "GRANT CONNECT ON DATABASE " + dbname + " TO " + kWriterRole + ", " + kReaderRole,
             "GRANT TEMPORARY ON DATABASE " + dbname + " TO " + kWriterRole,
             // wallet-reorder waits for the standbys' replay between its transactions.
             std::string("GRANT pg_read_all_stats TO ") + kWriterRole,
         }) {
        auto r = pg::exec(conn, sql);
        if (!r) return make_error("cannot set database privileges: " + r.error());
    }

    auto in_db = pg::connect(db.superuser_url(db.name));
    if (!in_db) return make_error(in_db.error());
    for (const std::string& sql : {
             std::string("REVOKE ALL ON SCHEMA public FROM PUBLIC"),
             std::string("ALTER SCHEMA public OWNER TO ") + kWriterRole,
             std::string("GRANT USAGE ON SCHEMA public TO ") + kReaderRole,
         }) {
        auto r = pg::exec(in_db->get(), sql);
        if (!r) return make_error("cannot set schema privileges: " + r.error());
    }

    auto writer = pg::connect(db.indexer_url);
    if (!writer) return make_error(writer.error());
    if (!up_to_version) return apply_migrations(writer->get());
    std::vector<Migration> wanted;
    for (const auto& m : embedded_migrations()) {
        if (m.version <= *up_to_version) wanted.push_back(m);
    }
    return apply_migrations(writer->get(), wanted);
}

}  // namespace wallet
