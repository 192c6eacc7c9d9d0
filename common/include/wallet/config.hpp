// Configuration from environment variables: every setting of the two spec
// documents and of decisions.md, with its documented default, validated at
// start-up. A bad value is reported with the variable's name and the form it
// accepts; nothing starts with a half-valid configuration.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "wallet/result.hpp"

namespace wallet {

// Where settings come from: the process environment, or a map in tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_env();
EnvLookup map_env(std::map<std::string, std::string> values);

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct HostPort {
    std::string host;
    std::uint16_t port = 0;
    std::string to_string() const;
};

// Settings of the database and of its two roles.
struct DatabaseSettings {
    std::string superuser;           // DB_USER
    std::string superuser_password;  // DB_PASSWORD
    std::string name;                // DB_NAME
    std::string writer_password;     // WALLET_WRITER_PASSWORD
    std::string reader_password;     // WALLET_API_READER_PASSWORD
    std::string bind_host;           // DB_BIND_HOST (loopback only)
    std::uint16_t bind_port = 5432;  // DB_BIND_PORT
    std::string indexer_url;         // INDEXER_DATABASE_URL or derived (writer role)
    std::string api_url;             // API_DATABASE_URL or derived (reader role)
    std::string superuser_url(const std::string& database) const;
};

struct ChainSettings {
    std::string rpc_url;                     // CHAIN_RPC_URL
    std::int64_t rpc_timeout_ms = 10000;     // CHAIN_RPC_TIMEOUT_MS
    std::int64_t max_response_bytes = 64LL << 20;  // CHAIN_RPC_MAX_RESPONSE_BYTES
    std::string asset_table = "mainnet";     // CHAIN_ASSET_TABLE: mainnet, testnet, or NAI=SYM:P,...
    bool every_block_rewarded = true;        // CHAIN_EVERY_BLOCK_REWARDED
    std::string hardforks = "mainnet";       // CHAIN_HARDFORKS: mainnet or genesis (HardforkSchedule::named)
    std::int64_t balance_snapshot_blocks = 28'800;  // CHAIN_BALANCE_SNAPSHOT_BLOCKS: the snapshot pass's period
};

struct IndexerSettings {
    std::int64_t start_block = 0;            // INDEXER_START_BLOCK (0 = genesis)
    std::int64_t trail_blocks = 2;           // INDEXER_TRAIL_BLOCKS
    bool target_irreversible = true;         // INDEXER_TARGET_IRREVERSIBLE
    std::int64_t max_fork_depth = 25;        // INDEXER_MAX_FORK_DEPTH
    std::int64_t poll_interval_ms = 3000;    // INDEXER_POLL_INTERVAL_MS
    std::optional<HostPort> health_addr;     // INDEXER_HEALTH_ADDR (empty disables)
    std::int64_t health_max_stall_ms = 120000;  // INDEXER_HEALTH_MAX_STALL_MS
    std::int64_t max_batch_blocks = 100;     // INDEXER_MAX_BATCH_BLOCKS (additive: catch-up batch bound)
};

struct BackfillSettings {
    std::vector<std::string> rpc_urls;       // BACKFILL_RPC_URLS (default: CHAIN_RPC_URL)
    std::int64_t rpc_timeout_ms = 30000;     // BACKFILL_RPC_TIMEOUT_MS
    std::int64_t start_block = 1;            // BACKFILL_START_BLOCK
    std::int64_t end_block = 0;              // BACKFILL_END_BLOCK (0 = last irreversible)
    std::int64_t shard_size = 10000;         // BACKFILL_SHARD_SIZE
    std::int64_t batch_size = 100;           // BACKFILL_BATCH_SIZE
    std::int64_t workers = 6;                // BACKFILL_WORKERS
};

struct ApiSettings {
    HostPort bind{"127.0.0.1", 8090};        // API_BIND_HOST, API_BIND_PORT
    std::int64_t default_limit = 50;         // WALLET_API_DEFAULT_LIMIT
    std::int64_t max_limit = 200;            // WALLET_API_MAX_LIMIT
    std::int64_t max_range_days = 366;       // WALLET_API_MAX_RANGE_DAYS
    std::int64_t statement_timeout_ms = 5000;  // WALLET_API_STATEMENT_TIMEOUT_MS
    std::int64_t db_max_conns = 0;           // WALLET_API_DB_MAX_CONNS per worker (0: derived from the total)
    std::int64_t db_max_conns_total = 40;    // WALLET_API_DB_MAX_CONNS_TOTAL, all workers
    std::int64_t rate_rps = 10;              // WALLET_API_RATE_RPS (0 disables)
    std::int64_t rate_burst = 20;            // WALLET_API_RATE_BURST
    std::int64_t max_inflight = 64;          // WALLET_API_MAX_INFLIGHT (0 disables)
    bool trust_proxy = false;                // WALLET_API_TRUST_PROXY
    std::int64_t trusted_proxy_hops = 0;     // WALLET_API_TRUSTED_PROXY_HOPS
    std::vector<std::string> allowed_origins;  // WALLET_API_ALLOWED_ORIGINS
    std::int64_t max_op_types = 16;          // WALLET_API_MAX_OP_TYPES
    std::int64_t max_body_bytes = 64 * 1024;  // WALLET_API_MAX_BODY_BYTES
    std::int64_t request_deadline_ms = 10000;  // WALLET_API_REQUEST_DEADLINE_MS
    std::string cursor_secret;               // WALLET_API_CURSOR_SECRET (derived when empty)
};

// The routing proxy's runtime settings (spec 001) and its cache.
struct ProxySettings {
    std::string host = "127.0.0.1";          // HOST
    std::uint16_t port = 5002;               // PORT
    std::int64_t workers = 4;                // WORKERS
    bool debug = false;                      // DEBUG
    std::string redis = "127.0.0.1:6379";    // PROXY_REDIS: host:port or unix:/path
    std::int64_t max_batch = 50;             // PROXY_MAX_BATCH
};

// Which parts a process needs: validation of required secrets depends on it
// (the proxy needs no database password, for example).
enum class Component { DatabaseSetup, Indexer, Backfill, Api, Proxy };

struct Settings {
    DatabaseSettings db;
    ChainSettings chain;
    IndexerSettings indexer;
    BackfillSettings backfill;
    ApiSettings api;
    ProxySettings proxy;
};

// Throws ConfigError naming the first bad variable and its accepted form.
Settings load_settings(const EnvLookup& env, Component component);

// Every variable load_settings reads, for --help texts and the docs.
struct SettingDoc {
    const char* name;
    const char* default_value;
    const char* meaning;
};
const std::vector<SettingDoc>& setting_docs();

// The variables a component reads at start (everything load_settings reads
// for it, plus what only that component reads), in reading order: what its
// --help lists. Recorded from load_settings itself, so a new setting cannot
// be missing from a program's help.
std::vector<SettingDoc> settings_read_by(Component component);
// settings_read_by as aligned "  NAME  DEFAULT  MEANING" lines, for --help.
std::string settings_help(Component component);

// postgresql:// URL with percent-encoded credentials.
std::string make_postgres_url(const std::string& user, const std::string& password,
                              const std::string& host, std::uint16_t port, const std::string& database);

// The libpq connection options of a hand-written postgresql:// URL (the
// variable `name`), parsed as libpq parses it, empty values left out. The
// error names the variable, quotes libpq's message without the credentials,
// and says how to percent-encode them: a password with an unencoded `/` or
// `@` parses into a wrong port or host, which is refused here too.
Result<std::map<std::string, std::string>> parse_postgres_url(const std::string& name, const std::string& url);

bool is_loopback_host(const std::string& host);

// The KEY=VALUE lines of a settings file as systemd's EnvironmentFile= reads
// them (blank lines and lines starting with # or ; skipped, whitespace around
// the key and before the value dropped, one pair of enclosing quotes
// removed). The error names the file, and the line when it is not KEY=VALUE.
Result<std::map<std::string, std::string>> read_env_file(const std::string& path);

// The example settings files ship secrets as "CHANGE-ME-in-<file>":
// required_password refuses such a value, naming the variable and the file.
inline constexpr const char* kPlaceholderPrefix = "CHANGE-ME";

}  // namespace wallet
