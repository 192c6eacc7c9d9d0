// wallet-db-setup: provisions the database (roles, database, privileges) as the
// superuser and applies the schema migrations as wallet_writer. Idempotent.
#include <cstdio>
#include <cstring>
#include <string>

#include "wallet/cli_options.hpp"
#include "wallet/config.hpp"
#include "wallet/db_setup.hpp"
#include "wallet/migrations.hpp"
#include "wallet/pg.hpp"

namespace {

void print_help() {
    std::printf("usage: wallet-db-setup [--migrate | --api-settings]\n\nProvisions the roles wallet_writer and wallet_api_reader, the database and its\n"
                "privileges as the superuser, then applies the schema migrations as wallet_writer.\n"
                "Running it again is a no-op (passwords are re-applied).\n\n"
                "  --migrate       only apply the pending schema migrations, as wallet_writer (the\n"
                "                  indexer's settings: no superuser), printing each; the upgrade step\n"
                "                  the package runs with the daemons stopped (docs/deploy.md)\n"
                "  --api-settings  print every setting the wallet_history API (the nginx module) reads,\n"
                "                  with its default, and exit\n\n"
                "Settings (environment variables; every one it reads and validates at start):\n%s",
                wallet::settings_help(wallet::Component::DatabaseSetup).c_str());
}

}  // namespace

namespace {

// The upgrade step: the pending migrations, one by one, each announced
// before it runs (a long one is visible as such), as the writer role.
int migrate() {
    auto settings = wallet::load_settings(wallet::process_env(), wallet::Component::Indexer);
    auto writer = wallet::pg::connect(settings.db.indexer_url);
    if (!writer) {
        std::fprintf(stderr, "wallet-db-setup: %s\n", writer.error().c_str());
        return 1;
    }
    auto current = wallet::current_schema_version(writer->get());
    if (!current) {
        std::fprintf(stderr, "wallet-db-setup: %s\n", current.error().c_str());
        return 1;
    }
    std::printf("wallet-db-setup: schema version %d\n", *current);
    int version = *current;
    for (const auto& m : wallet::embedded_migrations()) {
        if (m.version <= version) continue;
        std::printf("wallet-db-setup: applying migration %04d %s ...\n", m.version, m.name);
        std::fflush(stdout);
        auto applied = wallet::apply_migrations(writer->get(), {m});
        if (!applied) {
            std::fprintf(stderr, "wallet-db-setup: migration %04d: %s\n", m.version, applied.error().c_str());
            return 1;
        }
        version = *applied;
    }
    std::printf("wallet-db-setup: schema at version %d\n", version);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--migrate") == 0) {
        try {
            return migrate();
        } catch (const wallet::ConfigError& e) {
            std::fprintf(stderr, "wallet-db-setup: %s\n", e.what());
            return 2;
        }
    }
    for (int i = 1; i < argc; ++i) {
        if (wallet::answer_help_or_version(argv[i], "wallet-db-setup", print_help)) return 0;
        if (std::strcmp(argv[i], "--api-settings") == 0) {
            // The module has no command line: its settings are listed here.
            std::printf("Settings of the wallet_history API (nginx module; environment, the files named by\n"
                        "wallet_history_env_file, or wallet_history_set):\n%s",
                        wallet::settings_help(wallet::Component::Api).c_str());
            return 0;
        }
        std::fprintf(stderr, "wallet-db-setup: unknown argument %s (try --help)\n", argv[i]);
        return 2;
    }
    try {
        auto settings = wallet::load_settings(wallet::process_env(), wallet::Component::DatabaseSetup);
        auto version = wallet::provision_database(settings);
        if (!version) {
            std::fprintf(stderr, "wallet-db-setup: %s\n", version.error().c_str());
            return 1;
        }
        std::printf("wallet-db-setup: database %s ready at schema version %d\n", settings.db.name.c_str(), *version);
        return 0;
    } catch (const wallet::ConfigError& e) {
        std::fprintf(stderr, "wallet-db-setup: %s\n", e.what());
        return 2;
    }
}
