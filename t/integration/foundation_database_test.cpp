// Migrations and roles against a real PostgreSQL 15.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/harness.hpp"
#include "wallet/db_setup.hpp"
#include "wallet/decoder.hpp"
#include "wallet/event_store.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/wallet_event.hpp"
#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"

using namespace harness;

namespace {

wallet::PgConnPtr connect_or_fail(const std::string& url) {
    auto conn = wallet::pg::connect(url);
    if (!conn) throw std::runtime_error(conn.error());
    return std::move(conn).value();
}

// The SQLSTATE of a statement, "" when it succeeds.
std::string sqlstate_of(PGconn* conn, const std::string& sql) {
    wallet::PgResultPtr r(PQexec(conn, sql.c_str()));
    auto status = PQresultStatus(r.get());
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return "";
    const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
    return state != nullptr ? state : "?";
}

int latest_version() { return wallet::embedded_migrations().back().version; }

}  // namespace

TEST(FoundationMigrations, FreshApplyThenSecondApplyIsANoOp) {
    PostgresServer pg;
    auto settings = pg.provision();
    EXPECT_EQ(pg.query("SELECT max(version) FROM schema_version"), std::vector<std::string>{std::to_string(latest_version())});
    auto before = pg.query("SELECT version, name, applied_at FROM schema_version ORDER BY version");
    auto tables_before = pg.query("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace");

    auto writer = connect_or_fail(settings.db.indexer_url);
    auto again = wallet::apply_migrations(writer.get());
    ASSERT_TRUE(again) << again.error();
    EXPECT_EQ(*again, latest_version());
    EXPECT_EQ(pg.query("SELECT version, name, applied_at FROM schema_version ORDER BY version"), before);
    EXPECT_EQ(pg.query("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"), tables_before);

    // Provisioning a second time is also harmless.
    pg.provision();
    EXPECT_EQ(pg.query("SELECT version, name, applied_at FROM schema_version ORDER BY version"), before);
}

TEST(FoundationMigrations, UpgradesADatabaseAtThePreviousVersion) {
    PostgresServer pg;
    auto settings = pg.settings(wallet::Component::DatabaseSetup);
    // Provision roles and database, but apply all migrations except the newest.
    const auto& all = wallet::embedded_migrations();
    std::vector<wallet::Migration> previous(all.begin(), all.end() - 1);
    pg.provision();
    pg.query("DROP SCHEMA public CASCADE; CREATE SCHEMA public AUTHORIZATION wallet_writer; "
             "GRANT USAGE ON SCHEMA public TO wallet_api_reader");
    auto writer = connect_or_fail(settings.db.indexer_url);
    auto old_version = wallet::apply_migrations(writer.get(), previous);
    ASSERT_TRUE(old_version) << old_version.error();
    EXPECT_EQ(*old_version, previous.empty() ? 0 : previous.back().version);

    auto upgraded = wallet::apply_migrations(writer.get());
    ASSERT_TRUE(upgraded) << upgraded.error();
    EXPECT_EQ(*upgraded, latest_version());
    EXPECT_EQ(pg.query("SELECT count(*) FROM schema_version"), std::vector<std::string>{std::to_string(all.size())});
    EXPECT_EQ(pg.query("SELECT to_regclass('wallet_operation_events') IS NOT NULL"), std::vector<std::string>{"t"});
}

TEST(FoundationMigrations, AFailingMigrationLeavesNothingBehind) {
    PostgresServer pg;
    auto settings = pg.provision();
    auto writer = connect_or_fail(settings.db.indexer_url);
    auto migrations = wallet::embedded_migrations();
    migrations.push_back({latest_version() + 1, "broken", "CREATE TABLE half_done (x int); SELECT no_such_function();"});
    auto result = wallet::apply_migrations(writer.get(), migrations);
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find("broken"), std::string::npos);
    EXPECT_EQ(pg.query("SELECT to_regclass('half_done') IS NULL"), std::vector<std::string>{"t"});
    EXPECT_EQ(pg.query("SELECT max(version) FROM schema_version"), std::vector<std::string>{std::to_string(latest_version())});
}

TEST(FoundationRoles, ReaderCanOnlyRead) {
    PostgresServer pg;
    auto settings = pg.provision();
    auto reader = connect_or_fail(settings.db.api_url);
    EXPECT_EQ(sqlstate_of(reader.get(), "SELECT count(*) FROM wallet_operation_events"), "");
    EXPECT_EQ(sqlstate_of(reader.get(), "SELECT * FROM indexer_checkpoint"), "");
    EXPECT_EQ(sqlstate_of(reader.get(), "SELECT * FROM node_observation"), "");
    const char* denied[] = {
        "INSERT INTO wallet_operation_events (block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq,"
        " op_type, \"timestamp\", assets, payload) VALUES (1, 0, 0, 0, 'alice', 'sender', 0, 'transfer', now(), '[]', '{}')",
        "UPDATE wallet_operation_events SET memo = 'x'",
        "DELETE FROM wallet_operation_events",
        "TRUNCATE wallet_operation_events",
        "CREATE TABLE evil (x int)",
        "CREATE TEMP TABLE evil (x int)",
        "CREATE SCHEMA evil",
        "CREATE INDEX evil ON wallet_operation_events (memo)",
        "DROP TABLE wallet_operation_events",
        "SELECT * FROM backfill_shards",
        "UPDATE indexer_checkpoint SET block_num = 1",
    };
    for (const char* sql : denied) {
        std::string state = sqlstate_of(reader.get(), sql);
        // 42501 insufficient privilege, 25006 read-only transaction.
        EXPECT_TRUE(state == "42501" || state == "25006") << sql << " gave SQLSTATE '" << state << "'";
    }
}

TEST(FoundationRoles, WriterIsNotASuperuserAndOwnsTheSchema) {
    PostgresServer pg;
    pg.provision();
    EXPECT_EQ(pg.query("SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = 'wallet_writer'"),
              std::vector<std::string>{"f\tf\tf"});
    EXPECT_EQ(pg.query("SELECT rolsuper FROM pg_roles WHERE rolname = 'wallet_api_reader'"), std::vector<std::string>{"f"});
    EXPECT_EQ(pg.query("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'"),
              std::vector<std::string>{"wallet_writer"});
    // Spec 000's table name stays, as a view over the compact store (0004).
    EXPECT_EQ(pg.query("SELECT viewowner FROM pg_views WHERE viewname = 'wallet_operation_events'"),
              std::vector<std::string>{"wallet_writer"});
}

TEST(FoundationRoles, ReaderStatementTimeoutIsInForce) {
    PostgresServer pg;
    auto env = pg.env();
    env["WALLET_API_STATEMENT_TIMEOUT_MS"] = "300";
    auto settings = wallet::load_settings(wallet::map_env(env), wallet::Component::DatabaseSetup);
    auto version = wallet::provision_database(settings);
    ASSERT_TRUE(version) << version.error();
    auto reader = connect_or_fail(settings.db.api_url);
    auto shown = wallet::pg::exec(reader.get(), "SHOW statement_timeout");
    ASSERT_TRUE(shown);
    EXPECT_EQ(std::string(PQgetvalue(shown->get(), 0, 0)), "300ms");
    EXPECT_EQ(sqlstate_of(reader.get(), "SELECT pg_sleep(2)"), "57014");  // query_canceled by statement_timeout
    // The writer has no such limit.
    auto writer = connect_or_fail(settings.db.indexer_url);
    EXPECT_EQ(sqlstate_of(writer.get(), "SELECT pg_sleep(0.5)"), "");
}

TEST(FoundationSetupTool, RefusesBadPasswordsNamingTheVariable) {
    auto tool = (binary_dir() / "common" / "wallet-db-setup").string();
    auto missing = run_command({tool}, {{"DB_PASSWORD", "superuser-password-1"}, {"WALLET_WRITER_PASSWORD", ""},
                                        {"WALLET_API_READER_PASSWORD", "reader-password-12345"}});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.output.find("WALLET_WRITER_PASSWORD is required"), std::string::npos) << missing.output;
    auto weak = run_command({tool}, {{"DB_PASSWORD", "superuser-password-1"}, {"WALLET_WRITER_PASSWORD", "writer-pw-12345"},
                                     {"WALLET_API_READER_PASSWORD", "reader-password-12345"}});
    EXPECT_EQ(weak.exit_code, 2);
    EXPECT_NE(weak.output.find("WALLET_WRITER_PASSWORD is too weak"), std::string::npos) << weak.output;
}

TEST(FoundationSetupTool, ProvisionsAFreshClusterAndIsRerunnable) {
    PostgresServer pg;
    auto tool = (binary_dir() / "common" / "wallet-db-setup").string();
    auto first = run_command({tool}, pg.env("walletdb"));
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("schema version " + std::to_string(latest_version())), std::string::npos) << first.output;
    auto second = run_command({tool}, pg.env("walletdb"));
    ASSERT_EQ(second.exit_code, 0) << second.output;
    EXPECT_EQ(pg.query("SELECT count(*) FROM schema_version", "walletdb"),
              std::vector<std::string>{std::to_string(wallet::embedded_migrations().size())});

    // A rerun with new passwords holding every character a URL reserves
    // (the superuser's too): the roles take them, and each program's own
    // connection (the URLs it derives) logs in with them.
    auto env = pg.env("walletdb");
    env["DB_PASSWORD"] = "su/+@%:?#&=' \"-password";
    env["WALLET_WRITER_PASSWORD"] = "w/+@%:?#&=' \"-password-1";
    env["WALLET_API_READER_PASSWORD"] = "r/+@%:?#&=' \"-password-1";
    auto superuser = connect_or_fail(pg.superuser_url("postgres"));
    pg.query("ALTER ROLE postgres PASSWORD " + wallet::pg::quote_literal(superuser.get(), env["DB_PASSWORD"]), "postgres");
    auto rerun = run_command({tool}, env);
    ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
    auto migrate = run_command({tool, "--migrate"}, env);
    EXPECT_EQ(migrate.exit_code, 0) << migrate.output;
    auto reader = connect_or_fail(wallet::load_settings(wallet::map_env(env), wallet::Component::Api).db.api_url);
    EXPECT_EQ(sqlstate_of(reader.get(), "SELECT 1"), "");
}

// The store's SQL names the codes and sole asset fields the C++ writer and
// the API use (migration 0004): both sides agree on every type and role.
TEST(FoundationStoreCodes, SqlAndCppAgreeOnOpTypesRolesAndSoleAssetFields) {
    PostgresServer pg;
    pg.provision();
    for (const auto type : wallet::wallet_operation_types()) {
        const std::string name(type);
        const auto field = wallet::sole_asset_field(type);
        EXPECT_EQ(pg.query("SELECT wallet_op_type_code('" + name + "') || ' ' || "
                           "coalesce(wallet_sole_asset_field(wallet_op_type_code('" + name + "')), '-')"),
                  std::vector<std::string>{std::to_string(wallet::operation_type_id(type)) + " " +
                                           (field ? std::string(*field) : std::string("-"))})
            << name;
    }
    // wallet_events.wide (written by the C++ writer since migration 0015):
    // the decoder's spec types are the SQL's, code by code.
    std::string spec_by_code;
    for (const auto type : wallet::kOperationTypes) spec_by_code += wallet::is_spec_wallet_operation(type) ? 't' : 'f';
    EXPECT_EQ(pg.query("SELECT string_agg(CASE WHEN wallet_is_spec_type(code::smallint) THEN 't' ELSE 'f' END, '' ORDER BY code)"
                       "  FROM generate_series(0, " + std::to_string(wallet::kOperationTypes.size() - 1) + ") AS code"),
              std::vector<std::string>{spec_by_code});
    EXPECT_EQ(std::count(spec_by_code.begin(), spec_by_code.end(), 't'), 15);
    // The asset templates (migration 0009) and their codes.
    std::string templates;
    for (const auto shape : wallet::store::asset_templates()) templates += std::string(shape) + "\n";
    EXPECT_EQ(pg.query("SELECT array_to_string(wallet_assets_templates(), E'\\n') || E'\\n' || wallet_assets_template_codes()"),
              std::vector<std::string>{templates + std::string(wallet::store::kAssetTemplateCodes)});
    for (int code = 0; code < 100; ++code) {
        const auto role = wallet::role_of_code(code);
        EXPECT_EQ(pg.query("SELECT coalesce(wallet_role_name(" + std::to_string(code) + "::smallint), '-')"),
                  std::vector<std::string>{role ? std::string(wallet::role_name(*role)) : std::string("-")})
            << code;
        if (role) {
            EXPECT_EQ(pg.query("SELECT wallet_role_code('" + std::string(wallet::role_name(*role)) + "')"),
                      std::vector<std::string>{std::to_string(code)});
        }
    }
}

// trx_id is stored as bytes (migration 0007): a 40-digit lowercase hex id as
// the 20 bytes it spells, any other text as its own bytes; every text reads
// back as it was written, the 20-byte texts an id could be mistaken for too.
TEST(FoundationStoreCodes, TransactionIdsReadBackAsWritten) {
    PostgresServer pg;
    pg.provision();
    // Each text and the bytes it is stored in.
    const std::vector<std::pair<std::string, int>> ids = {
        {"0e4bf604dfa68169b01dd537901ebf7bd775470f", 20},   // an id
        {"0E4BF604DFA68169B01DD537901EBF7BD775470F", 40},   // upper case: kept as text
        {"0e4bf604dfa68169b01dd537901ebf7bd775470", 39},    // odd length
        {"0e4bf604dfa68169b01dd537901ebf7bd775470ff", 41},  // 41 digits
        {"twenty-characters-ab", 21},                       // 20 bytes of text, a NUL appended
        {"\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC", 21},  // 20 bytes of UTF-8
        {"00ff", 4},
        {"", 0}};
    for (const auto& [id, stored] : ids) {
        EXPECT_EQ(pg.query("SELECT wallet_trx_id_text(wallet_trx_id_bytes('" + id + "')) || '|' ||"
                           " octet_length(wallet_trx_id_bytes('" + id + "'))"),
                  std::vector<std::string>{id + "|" + std::to_string(stored)})
            << id;
    }
}
