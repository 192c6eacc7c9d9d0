// wallet-indexer: tails a Hive node into wallet_operation_events.
// Configuration is the environment (spec 000 "Deployment configuration");
// SIGTERM or SIGINT stop it after the open batch is committed or rolled back.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "liveness.hpp"
#include "systemd_notify.hpp"
#include "tail.hpp"
#include "wallet/cli_options.hpp"
#include "wallet/config.hpp"
#include "wallet/http_server.hpp"
#include "wallet/log.hpp"
#include "wallet/stop_signals.hpp"

namespace {

using namespace wallet;
using namespace wallet::indexer;

void print_help() {
    std::cout << "Usage: wallet-indexer [--help] [--version] [--write-method=copy|insert]\n\n"
                 "Tails a Hive node (get_ops_in_block) into the wallet_operation_events table of\n"
                 "PostgreSQL, with a checkpoint, fork reconciliation and a liveness endpoint\n"
                 "(GET /health, GET /metrics on INDEXER_HEALTH_ADDR). Stops on SIGTERM or SIGINT.\n\n"
                 "  --write-method=copy|insert  how rows reach the table (default copy: COPY into a\n"
                 "                              staging table, then an idempotent merge)\n\n"
                 "Settings (environment variables; every one it reads and validates at start):\n"
              << settings_help(Component::Indexer);
    std::cout << "\nExit status: 0 stopped by a signal, 2 bad configuration (or a bulk load of the store,\n"
                 "wallet-backfill --bulk, is unfinished), 3 halted by a fork deeper than INDEXER_MAX_FORK_DEPTH.\n";
}

}  // namespace

int main(int argc, char** argv) {
    set_log_program("wallet-indexer");
    store::WriteMethod write_method = store::WriteMethod::CopyMerge;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (answer_help_or_version(arg, "wallet-indexer", print_help)) return 0;
        if (arg == "--write-method=copy") {
            write_method = store::WriteMethod::CopyMerge;
        } else if (arg == "--write-method=insert") {
            write_method = store::WriteMethod::MultiRowInsert;
        } else {
            std::cerr << "wallet-indexer: unknown argument '" << arg << "' (see --help)\n";
            return kExitConfiguration;
        }
    }

    TailOptions options;
    options.write_method = write_method;
    try {
        options.settings = load_settings(process_env(), Component::Indexer);
    } catch (const ConfigError& error) {
        log_error(std::string("configuration: ") + error.what());
        return kExitConfiguration;
    }
    auto table = AssetTable::from_setting(options.settings.chain.asset_table);
    if (!table) {
        log_error("configuration: CHAIN_ASSET_TABLE: " + table.error());
        return kExitConfiguration;
    }
    options.assets = std::move(table).value();

    StopSignals stop("stopping after the open batch");

    Liveness liveness(std::chrono::milliseconds(options.settings.indexer.health_max_stall_ms));
    std::unique_ptr<HttpServer> health_server;
    if (const auto& address = options.settings.indexer.health_addr) {
        HttpServerOptions server_options;
        server_options.host = address->host;
        server_options.port = address->port;
        server_options.max_body_bytes = 4096;
        server_options.max_connections = 16;
        auto started = HttpServer::start(server_options, [&liveness](const HttpRequest& request, HttpResponse& response) {
            liveness.handle(request, response);
        });
        if (!started) {
            log_error("cannot listen on INDEXER_HEALTH_ADDR " + address->to_string() + ": " + started.error());
            return kExitConfiguration;
        }
        health_server = std::move(started).value();
        log_info("liveness endpoint on http://" + address->to_string() + "/health");
    }

    SystemdNotifier notifier;
    auto indexer = TailIndexer::create(std::move(options), liveness, notifier, stop.token());
    if (!indexer) {
        log_error(indexer.error());
        return kExitConfiguration;
    }
    const int code = indexer.value().run();
    notifier.notify("STOPPING=1");
    if (health_server) health_server->stop();
    return code;
}
