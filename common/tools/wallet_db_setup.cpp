// wallet-db-setup: provisions the database (roles, database, privileges) as the
// superuser and applies the schema migrations as wallet_writer. Idempotent.
#include <cstdio>
#include <cstring>
#include <string>

#include "wallet/cli_options.hpp"
#include "wallet/config.hpp"
#include "wallet/db_setup.hpp"

namespace {

void print_help() {
    std::printf("usage: wallet-db-setup\n\nProvisions the roles wallet_writer and wallet_api_reader, the database and its\n"
                "privileges as the superuser, then applies the schema migrations as wallet_writer.\n"
                "Running it again is a no-op (passwords are re-applied).\n\nEnvironment:\n");
    for (const auto& d : wallet::setting_docs()) {
        if (std::strncmp(d.name, "DB_", 3) == 0 || std::strstr(d.name, "PASSWORD") != nullptr ||
            std::strcmp(d.name, "WALLET_API_STATEMENT_TIMEOUT_MS") == 0) {
            std::printf("  %-32s %-12s %s\n", d.name, d.default_value, d.meaning);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (wallet::answer_help_or_version(argv[i], "wallet-db-setup", print_help)) return 0;
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
