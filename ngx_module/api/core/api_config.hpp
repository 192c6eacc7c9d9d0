// The API's configuration: the WALLET_API_* and API_* variables of the spec
// (wallet/config.hpp reads and validates them), optionally overridden by
// nginx directives, plus the rules only the API needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "wallet/config.hpp"
#include "wallet/event_store.hpp"
#include "wallet/result.hpp"

namespace wallet::api {

struct ApiConfig {
    ApiSettings api;
    std::string database_url;            // API_DATABASE_URL or derived (reader role)
    std::int64_t node_max_stall_ms = 0;  // INDEXER_HEALTH_MAX_STALL_MS: get_status freshness
    // WALLET_API_ACCOUNT_CACHE: account ids each worker remembers by name
    // (api_accounts.hpp); 0 remembers none.
    std::int64_t account_cache = kDefaultAccountCache;
    // WALLET_API_DB_PROBE_INTERVAL_MS: how often each worker asks each
    // database whether it is a standby and how far its replay is behind
    // (ngx_http_wallet_history_probe.hpp); 0 never.
    std::int64_t db_probe_interval_ms = kDefaultDbProbeIntervalMs;
    // get_balances reads operations as the writers do: CHAIN_ASSET_TABLE and
    // CHAIN_HARDFORKS, the same values as the indexer's and backfill's.
    store::BalanceRules balance_rules;
    static constexpr std::int64_t kDefaultAccountCache = 100000;
    static constexpr std::int64_t kDefaultDbProbeIntervalMs = 5000;
};

// How many database connections the API opens at most, per database.
struct PoolSize {
    std::int64_t per_worker = 0;
    std::int64_t workers = 0;
    std::int64_t per_database() const { return per_worker * workers; }
    bool derived = false;  // shared out of WALLET_API_DB_MAX_CONNS_TOTAL
};
// A worker's pool never grows past this by default: more statements than
// the database's cores only queue inside PostgreSQL (wallet-history-api.md).
inline constexpr std::int64_t kDefaultPoolPerWorker = 10;

// WALLET_API_DB_MAX_CONNS when set; else WALLET_API_DB_MAX_CONNS_TOTAL
// divided among the nginx workers (rounded down, at least 1, at most
// kDefaultPoolPerWorker), so that the workers together stay within the total
// (docs/scaling-out.md).
PoolSize pool_size(const ApiSettings& settings, std::int64_t workers);

// `overrides` (from nginx directives) win over the environment. The error
// names the offending variable.
Result<ApiConfig> load_api_config(const EnvLookup& env, const std::map<std::string, std::string>& overrides);

// libpq connection keywords for a non-blocking connect, one set per
// database: the URL's own settings, plus hostaddr resolved now (libpq would
// otherwise resolve the name with blocking DNS inside the event loop), the
// URL's sslmode as libpq means it (absent: prefer) and no GSS encryption. A URL naming several hosts in libpq's form
// (postgresql://user@primary:5432,standby:5433/wallet) gives one database per
// host, in that order (a primary and its standbys: docs/scaling-out.md).
Result<std::vector<std::map<std::string, std::string>>> nonblocking_conninfo(const std::string& url);

}  // namespace wallet::api
