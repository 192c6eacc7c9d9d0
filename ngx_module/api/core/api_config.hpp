// The API's configuration: the WALLET_API_* and API_* variables of the spec
// (wallet/config.hpp reads and validates them), optionally overridden by
// nginx directives, plus the rules only the API needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "wallet/config.hpp"
#include "wallet/result.hpp"

namespace wallet::api {

struct ApiConfig {
    ApiSettings api;
    std::string database_url;            // API_DATABASE_URL or derived (reader role)
    std::int64_t node_max_stall_ms = 0;  // INDEXER_HEALTH_MAX_STALL_MS: get_status freshness
    // WALLET_API_ACCOUNT_CACHE: account ids each worker remembers by name
    // (api_accounts.hpp); 0 remembers none.
    std::int64_t account_cache = kDefaultAccountCache;
    static constexpr std::int64_t kDefaultAccountCache = 100000;
};

// `overrides` (from nginx directives) win over the environment. The error
// names the offending variable.
Result<ApiConfig> load_api_config(const EnvLookup& env, const std::map<std::string, std::string>& overrides);

// libpq connection keywords for a non-blocking connect, one set per
// database: the URL's own settings, plus hostaddr resolved now (libpq would
// otherwise resolve the name with blocking DNS inside the event loop) and no
// SSL or GSS negotiation fallback (which makes libpq switch sockets
// mid-connect). A URL naming several hosts in libpq's form
// (postgresql://user@primary:5432,standby:5433/wallet) gives one database per
// host, in that order (a primary and its standbys: docs/scaling-out.md).
Result<std::vector<std::map<std::string, std::string>>> nonblocking_conninfo(const std::string& url);

}  // namespace wallet::api
