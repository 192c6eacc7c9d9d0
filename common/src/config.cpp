#include "wallet/config.hpp"

#include "wallet/balance_change.hpp"

#include <arpa/inet.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <utility>

namespace wallet {

EnvLookup process_env() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
    };
}

EnvLookup map_env(std::map<std::string, std::string> values) {
    return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
        auto it = values.find(name);
        if (it == values.end()) return std::nullopt;
        return it->second;
    };
}

std::string HostPort::to_string() const {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

bool is_loopback_host(const std::string& host) {
    if (host == "localhost" || host == "::1") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
        return (ntohl(v4.s_addr) >> 24) == 127;
    }
    return false;
}

namespace {

const std::vector<SettingDoc> kDocs = {
    {"DB_USER", "postgres", "Superuser role of the database (used only to provision)."},
    {"DB_PASSWORD", "(required)", "Superuser password."},
    {"DB_NAME", "wallet", "Database name."},
    {"WALLET_WRITER_PASSWORD", "(required)", "Password of the non-superuser role wallet_writer (indexer, backfill)."},
    {"WALLET_API_READER_PASSWORD", "(required)", "Password of the SELECT-only role wallet_api_reader (API)."},
    {"DB_BIND_HOST", "127.0.0.1", "Address the database listens on; must be loopback."},
    {"DB_BIND_PORT", "5432", "Port of the database."},
    {"CHAIN_RPC_URL", "https://api.hive.blog", "JSON-RPC endpoint of the Hive node read by the indexer."},
    {"CHAIN_RPC_TIMEOUT_MS", "10000", "Per-request timeout against the node."},
    {"CHAIN_RPC_MAX_RESPONSE_BYTES", "67108864", "Largest node response accepted."},
    {"CHAIN_ASSET_TABLE", "mainnet", "NAI symbol table: mainnet, testnet, or NAI=SYMBOL:PRECISION,..."},
    {"CHAIN_EVERY_BLOCK_REWARDED", "true",
     "Every block after the first producer_reward carries one (mainnet): a node's empty answer for such a block is refused "
     "as not indexed yet. false only for a chain with truly empty blocks."},
    {"CHAIN_HARDFORKS", "mainnet",
     "Blocks where the balance rules changed (docs/operations.md, \"Balance changes\"): mainnet (hived's hardfork "
     "blocks), or genesis (every rule from block 1: testnets and the simulator's synthetic chain)."},
    {"CHAIN_BALANCE_SNAPSHOT_BLOCKS", "28800",
     "Blocks per period of the balance pass (docs/store-layout.md, \"Balances from the history\"): each period "
     "appends the change runs of the accounts it changes; a get_balances read below the pass takes one run. "
     "1 to 10,000,000."},
    {"INDEXER_START_BLOCK", "0", "First block to index on a fresh database; 0 means genesis."},
    {"INDEXER_TRAIL_BLOCKS", "2", "Blocks to stay behind the target."},
    {"INDEXER_TARGET_IRREVERSIBLE", "true", "Index only up to the last irreversible block."},
    {"INDEXER_MAX_FORK_DEPTH", "25", "Bound on reorganisation reconciliation depth."},
    {"INDEXER_POLL_INTERVAL_MS", "3000", "Delay between polls when caught up."},
    {"INDEXER_HEALTH_ADDR", "127.0.0.1:8091", "Liveness endpoint address; empty disables it."},
    {"INDEXER_HEALTH_MAX_STALL_MS", "120000", "Time without progress before liveness reports unhealthy."},
    {"INDEXER_MAX_BATCH_BLOCKS", "100", "Most blocks per JSON-RPC batch and database transaction while catching up."},
    {"INDEXER_DATABASE_URL", "(derived)", "Connection string of the indexer and backfill (writer role)."},
    {"API_BIND_HOST", "127.0.0.1", "Address the API listens on."},
    {"API_BIND_PORT", "8090", "Port of the API."},
    {"API_DATABASE_URL", "(derived)", "Connection string of the API (reader role)."},
    {"BACKFILL_RPC_URLS", "(CHAIN_RPC_URL)", "Comma-separated node pool for historical load."},
    {"BACKFILL_RPC_TIMEOUT_MS", "30000", "Per-request timeout during backfill."},
    {"BACKFILL_START_BLOCK", "1", "First block to backfill."},
    {"BACKFILL_END_BLOCK", "0", "Last block to backfill; 0 means the node's last irreversible block."},
    {"BACKFILL_SHARD_SIZE", "10000", "Blocks per shard."},
    {"BACKFILL_BATCH_SIZE", "100", "Blocks per JSON-RPC batch within a shard."},
    {"BACKFILL_WORKERS", "6", "Concurrent shard workers."},
    {"WALLET_API_DEFAULT_LIMIT", "50", "Page size when limit is omitted."},
    {"WALLET_API_MAX_LIMIT", "200", "Maximum page size; larger values are clamped."},
    {"WALLET_API_MAX_RANGE_DAYS", "366", "Cap on an explicit two-sided from/to range."},
    {"WALLET_API_STATEMENT_TIMEOUT_MS", "5000", "Database statement timeout per query."},
    {"WALLET_API_DB_MAX_CONNS", "(derived)",
     "Most database connections of each nginx worker, per database (1 to 1000); by default "
     "WALLET_API_DB_MAX_CONNS_TOTAL shared among the workers, at most 10 each."},
    {"WALLET_API_DB_MAX_CONNS_TOTAL", "40",
     "Most database connections of all nginx workers together, per database, when WALLET_API_DB_MAX_CONNS "
     "is not set (1 to 100000; docs/scaling-out.md)."},
    {"WALLET_API_RATE_RPS", "10", "Sustained per-client request rate; 0 disables."},
    {"WALLET_API_RATE_BURST", "20", "Token-bucket burst of the per-client limiter."},
    {"WALLET_API_MAX_INFLIGHT", "64", "Global cap on concurrent in-flight requests; 0 disables."},
    {"WALLET_API_TRUST_PROXY", "false", "Whether X-Forwarded-For is trusted."},
    {"WALLET_API_TRUSTED_PROXY_HOPS", "0", "Number of trusted proxies in front."},
    {"WALLET_API_ALLOWED_ORIGINS", "", "Comma-separated cross-origin allowlist."},
    {"WALLET_API_MAX_OP_TYPES", "16", "Most entries accepted in op_types."},
    {"WALLET_API_MAX_BODY_BYTES", "65536", "Largest request body accepted."},
    {"WALLET_API_REQUEST_DEADLINE_MS", "10000", "Deadline of one API request."},
    {"WALLET_API_ACCOUNT_CACHE", "100000", "Account ids each API worker remembers by name (0 to 10000000); 0 disables."},
    {"WALLET_API_DB_PROBE_INTERVAL_MS", "5000",
     "How often each API worker asks each database whether it is a standby and its replay delay (/metrics); "
     "0 never, else 100 to 3600000."},
    {"WALLET_API_CURSOR_SECRET", "(derived)", "Key that signs cursors; derived from the reader password when empty."},
    {"HOST", "127.0.0.1", "Bind address of the routing proxy."},
    {"PORT", "5002", "Listen port of the routing proxy."},
    {"WORKERS", "4", "Worker processes of the routing proxy."},
    {"DEBUG", "false", "Debug logging of the routing proxy."},
    {"PROXY_REDIS", "127.0.0.1:6379", "Cache store of the routing proxy: host:port or unix:/path."},
    {"PROXY_MAX_BATCH", "50", "Largest JSON-RPC batch the proxy accepts."},
};

const SettingDoc& doc_of(const std::string& name) {
    for (const auto& d : kDocs) {
        if (name == d.name) return d;
    }
    throw std::logic_error("undocumented setting " + name);
}

// Reads settings by name, remembering which variable a failure concerns.
class Reader {
public:
    explicit Reader(const EnvLookup& env) : env_(env) {}

    std::optional<std::string> raw(const std::string& name) const {
        doc_of(name);  // every variable read must be documented
        return env_(name);
    }

    std::string text(const std::string& name, const std::string& fallback) const {
        auto v = raw(name);
        return v ? *v : fallback;
    }

    std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
        auto v = raw(name);
        if (!v) return fallback;
        std::int64_t out = 0;
        const char* first = v->data();
        const char* last = first + v->size();
        auto [ptr, ec] = std::from_chars(first, last, out);
        if (v->empty() || ec != std::errc() || ptr != last || out < min || out > max) {
            fail(name, "an integer from " + std::to_string(min) + " to " + std::to_string(max), *v);
        }
        return out;
    }

    bool boolean(const std::string& name, bool fallback) const {
        auto v = raw(name);
        if (!v) return fallback;
        std::string lower = *v;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return true;
        if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return false;
        fail(name, "true or false", *v);
    }

    std::string required_password(const std::string& name) const {
        auto v = raw(name);
        if (!v || v->empty()) throw ConfigError(name + " is required: set a strong password (at least 16 characters)");
        if (v->rfind(kPlaceholderPrefix, 0) == 0) {
            // A placeholder is no secret: showing it names the file to edit.
            throw ConfigError(name + " is still the placeholder \"" + *v +
                              "\": set a generated password there (docs/deploy.md, \"Secrets\")");
        }
        if (v->size() < 16) throw ConfigError(name + " is too weak: use at least 16 characters");
        return *v;
    }

    std::optional<HostPort> host_port(const std::string& name, const std::string& fallback) const {
        std::string v = text(name, fallback);
        if (v.empty()) return std::nullopt;
        auto parsed = parse_host_port(v);
        if (!parsed) fail(name, "host:port, [ipv6]:port, or empty", v);
        return parsed;
    }

    [[noreturn]] static void fail(const std::string& name, const std::string& accepted, const std::string& value) {
        // The value is echoed only when short: a misplaced secret must not end up in a log.
        std::string shown = value.size() <= 64 ? " (got \"" + value + "\")" : "";
        throw ConfigError("invalid " + name + shown + ": expected " + accepted);
    }

    static std::optional<HostPort> parse_host_port(const std::string& v) {
        std::string host;
        std::string port;
        if (!v.empty() && v.front() == '[') {
            auto close = v.find(']');
            if (close == std::string::npos || close + 1 >= v.size() || v[close + 1] != ':') return std::nullopt;
            host = v.substr(1, close - 1);
            port = v.substr(close + 2);
        } else {
            auto colon = v.rfind(':');
            if (colon == std::string::npos || v.find(':') != colon) return std::nullopt;
            host = v.substr(0, colon);
            port = v.substr(colon + 1);
        }
        if (host.empty() || port.empty()) return std::nullopt;
        int p = 0;
        auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
        if (ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535) return std::nullopt;
        return HostPort{host, static_cast<std::uint16_t>(p)};
    }

private:
    const EnvLookup& env_;
};

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::string item;
    auto flush = [&] {
        auto b = item.find_first_not_of(" \t");
        auto e = item.find_last_not_of(" \t");
        if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
        item.clear();
    };
    for (char c : text) {
        if (c == ',') flush();
        else item.push_back(c);
    }
    flush();
    return out;
}

bool is_http_url(const std::string& url) {
    return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

bool is_postgres_url(const std::string& url) {
    return url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
}

std::uint16_t port_of(const Reader& r, const std::string& name, std::uint16_t fallback) {
    return static_cast<std::uint16_t>(r.integer(name, fallback, 1, 65535));
}

}  // namespace

std::string make_postgres_url(const std::string& user, const std::string& password, const std::string& host,
                              std::uint16_t port, const std::string& database) {
    auto encode = [](const std::string& s) {
        static const char* hex = "0123456789ABCDEF";
        std::string out;
        for (char ch : s) {
            const auto c = static_cast<unsigned char>(ch);
            if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
                out.push_back(static_cast<char>(c));
            } else {
                out.push_back('%');
                out.push_back(hex[c >> 4]);
                out.push_back(hex[c & 15]);
            }
        }
        return out;
    };
    std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return "postgresql://" + encode(user) + ":" + encode(password) + "@" + h + ":" + std::to_string(port) + "/" +
           encode(database);
}

namespace {

// libpq quotes the piece it could not parse, often with the rest of the URL
// after it; everything quoted but an option name becomes "...", so that no
// password reaches a log.
std::string without_credentials(std::string message, const std::string& url) {
    const auto scheme_end = url.find("://");
    const auto at = url.rfind('@');
    const std::string credentials =
        scheme_end == std::string::npos || at == std::string::npos || at < scheme_end
            ? ""
            : url.substr(scheme_end + 3, at - scheme_end - 3);
    std::size_t from = 0;
    for (;;) {
        const auto open = message.find('"', from);
        const auto close = open == std::string::npos ? open : message.find('"', open + 1);
        if (close == std::string::npos) break;
        const std::string quoted = message.substr(open + 1, close - open - 1);
        const bool option_name = !quoted.empty() && quoted.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
        const bool secret = !quoted.empty() && (!option_name || credentials.find(quoted) != std::string::npos);
        if (secret) message.replace(open + 1, quoted.size(), "...");
        from = secret ? open + 5 : close + 1;
    }
    return message;
}

}  // namespace

Result<std::map<std::string, std::string>> parse_postgres_url(const std::string& name, const std::string& url) {
    const std::string hint =
        "; percent-encode the user and password in the URL (/ as %2F, @ as %40, : as %3A, % as %25, + as %2B, "
        "? as %3F, # as %23), or leave " + name + " unset to derive it from the role's password";
    if (!is_postgres_url(url)) return make_error("invalid " + name + ": expected a postgresql:// URL");
    char* error = nullptr;
    std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(PQconninfoParse(url.c_str(), &error),
                                                                        &PQconninfoFree);
    if (!options) {
        std::string message = error != nullptr ? error : "out of memory";
        if (error != nullptr) PQfreemem(error);
        while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
        return make_error("invalid " + name + ": " + without_credentials(message, url) + hint);
    }
    std::map<std::string, std::string> values;
    for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
        if (o->val != nullptr && o->val[0] != '\0') values[o->keyword] = o->val;
    }
    // What an unencoded '/' or '@' in the password leaves behind (libpq
    // itself reports these only when connecting).
    if (values.count("port") && values["port"].find_first_not_of("0123456789,") != std::string::npos) {
        return make_error("invalid " + name + ": its port is not a number (a '/' in the password ends the host part)" + hint);
    }
    if (values.count("host") && values["host"].find('@') != std::string::npos) {
        return make_error("invalid " + name + ": its host holds an '@' (an '@' in the password)" + hint);
    }
    return values;
}

std::string DatabaseSettings::superuser_url(const std::string& database) const {
    return make_postgres_url(superuser, superuser_password, bind_host, bind_port, database);
}

const std::vector<SettingDoc>& setting_docs() { return kDocs; }

Result<std::map<std::string, std::string>> read_env_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return make_error("cannot read " + path + ": " + std::strerror(errno));
    std::map<std::string, std::string> values;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        auto trim = [](std::string text) {
            const auto begin = text.find_first_not_of(" \t\r");
            if (begin == std::string::npos) return std::string();
            return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
        };
        line = trim(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        const auto eq = line.find('=');
        const std::string key = eq == std::string::npos ? "" : trim(line.substr(0, eq));
        const bool name_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
            return std::isalnum(c) || c == '_';
        });
        if (!name_ok) return make_error(path + " line " + std::to_string(number) + ": expected NAME=VALUE");
        std::string value = trim(line.substr(eq + 1));
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
            value = value.substr(1, value.size() - 2);
        }
        values[key] = value;
    }
    return values;
}

std::vector<SettingDoc> settings_read_by(Component component) {
    // A run of load_settings that records each name it asks for; the required
    // passwords get distinct valid values so that every later read happens.
    std::vector<std::string> names;
    const EnvLookup recorder = [&names](const std::string& name) -> std::optional<std::string> {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        if (name == "DB_PASSWORD" || name == "WALLET_WRITER_PASSWORD" || name == "WALLET_API_READER_PASSWORD") {
            return "recorded-" + name;
        }
        return std::nullopt;
    };
    load_settings(recorder, component);
    // The API module also reads these itself (ngx_module/api/core/api_config.cpp).
    if (component == Component::Api) names.insert(names.end(), {"WALLET_API_ACCOUNT_CACHE", "WALLET_API_DB_PROBE_INTERVAL_MS"});
    std::vector<SettingDoc> out;
    for (const auto& name : names) out.push_back(doc_of(name));
    return out;
}

std::string settings_help(Component component) {
    std::string out;
    char line[512];
    for (const auto& doc : settings_read_by(component)) {
        std::snprintf(line, sizeof line, "  %-32s %-18s %s\n", doc.name, doc.default_value, doc.meaning);
        out += line;
    }
    return out;
}

Settings load_settings(const EnvLookup& env, Component component) {
    Reader r(env);
    Settings s;

    // Database and roles.
    s.db.superuser = r.text("DB_USER", "postgres");
    s.db.name = r.text("DB_NAME", "wallet");
    if (s.db.name.empty()) Reader::fail("DB_NAME", "a database name", s.db.name);
    s.db.bind_host = r.text("DB_BIND_HOST", "127.0.0.1");
    if (!is_loopback_host(s.db.bind_host)) {
        Reader::fail("DB_BIND_HOST", "a loopback address (127.0.0.0/8, ::1 or localhost): the database is never published",
                     s.db.bind_host);
    }
    s.db.bind_port = port_of(r, "DB_BIND_PORT", 5432);
    const bool needs_superuser = component == Component::DatabaseSetup;
    const bool needs_writer = component == Component::DatabaseSetup || component == Component::Indexer ||
                              component == Component::Backfill;
    const bool needs_reader = component == Component::DatabaseSetup || component == Component::Api;
    auto indexer_url = r.raw("INDEXER_DATABASE_URL");
    auto api_url = r.raw("API_DATABASE_URL");
    if (needs_superuser) s.db.superuser_password = r.required_password("DB_PASSWORD");
    if (needs_writer && !(component != Component::DatabaseSetup && indexer_url && !indexer_url->empty())) {
        s.db.writer_password = r.required_password("WALLET_WRITER_PASSWORD");
    }
    if (needs_reader && !(component != Component::DatabaseSetup && api_url && !api_url->empty())) {
        s.db.reader_password = r.required_password("WALLET_API_READER_PASSWORD");
    }
    if (component == Component::DatabaseSetup) {
        if (s.db.writer_password == s.db.superuser_password || s.db.reader_password == s.db.superuser_password) {
            throw ConfigError("WALLET_WRITER_PASSWORD and WALLET_API_READER_PASSWORD must differ from DB_PASSWORD");
        }
    }
    if (!s.db.writer_password.empty() && s.db.writer_password == s.db.reader_password) {
        throw ConfigError("WALLET_WRITER_PASSWORD and WALLET_API_READER_PASSWORD must differ");
    }
    if (indexer_url && !indexer_url->empty()) {
        if (auto parsed = parse_postgres_url("INDEXER_DATABASE_URL", *indexer_url); !parsed) throw ConfigError(parsed.error());
        s.db.indexer_url = *indexer_url;
    } else if (!s.db.writer_password.empty()) {
        s.db.indexer_url = make_postgres_url("wallet_writer", s.db.writer_password, s.db.bind_host, s.db.bind_port, s.db.name);
    }
    if (api_url && !api_url->empty()) {
        if (auto parsed = parse_postgres_url("API_DATABASE_URL", *api_url); !parsed) throw ConfigError(parsed.error());
        s.db.api_url = *api_url;
    } else if (!s.db.reader_password.empty()) {
        s.db.api_url = make_postgres_url("wallet_api_reader", s.db.reader_password, s.db.bind_host, s.db.bind_port, s.db.name);
    }

    // Chain node.
    s.chain.rpc_url = r.text("CHAIN_RPC_URL", "https://api.hive.blog");
    if (!is_http_url(s.chain.rpc_url)) Reader::fail("CHAIN_RPC_URL", "an http:// or https:// URL", s.chain.rpc_url);
    s.chain.rpc_timeout_ms = r.integer("CHAIN_RPC_TIMEOUT_MS", 10000, 1, 3'600'000);
    s.chain.max_response_bytes = r.integer("CHAIN_RPC_MAX_RESPONSE_BYTES", 64LL << 20, 1024, 1LL << 32);
    s.chain.asset_table = r.text("CHAIN_ASSET_TABLE", "mainnet");
    s.chain.every_block_rewarded = r.boolean("CHAIN_EVERY_BLOCK_REWARDED", true);
    if (s.chain.asset_table.empty()) Reader::fail("CHAIN_ASSET_TABLE", "mainnet, testnet or NAI=SYMBOL:PRECISION,...", "");
    s.chain.hardforks = r.text("CHAIN_HARDFORKS", "mainnet");
    if (!HardforkSchedule::named(s.chain.hardforks)) Reader::fail("CHAIN_HARDFORKS", "mainnet or genesis", s.chain.hardforks);
    s.chain.balance_snapshot_blocks = r.integer("CHAIN_BALANCE_SNAPSHOT_BLOCKS", 28'800, 1, 10'000'000);

    // Indexer.
    s.indexer.start_block = r.integer("INDEXER_START_BLOCK", 0, 0, 4'294'967'295LL);
    s.indexer.trail_blocks = r.integer("INDEXER_TRAIL_BLOCKS", 2, 0, 100'000);
    s.indexer.target_irreversible = r.boolean("INDEXER_TARGET_IRREVERSIBLE", true);
    s.indexer.max_fork_depth = r.integer("INDEXER_MAX_FORK_DEPTH", 25, 1, 100'000);
    s.indexer.poll_interval_ms = r.integer("INDEXER_POLL_INTERVAL_MS", 3000, 1, 3'600'000);
    s.indexer.health_addr = r.host_port("INDEXER_HEALTH_ADDR", "127.0.0.1:8091");
    s.indexer.health_max_stall_ms = r.integer("INDEXER_HEALTH_MAX_STALL_MS", 120000, 1, 86'400'000);
    s.indexer.max_batch_blocks = r.integer("INDEXER_MAX_BATCH_BLOCKS", 100, 1, 1000);

    // Backfill.
    auto pool = split_list(r.text("BACKFILL_RPC_URLS", s.chain.rpc_url));
    if (pool.empty()) Reader::fail("BACKFILL_RPC_URLS", "a comma-separated list of http(s):// URLs", "");
    for (const auto& url : pool) {
        if (!is_http_url(url)) Reader::fail("BACKFILL_RPC_URLS", "a comma-separated list of http(s):// URLs", url);
    }
    s.backfill.rpc_urls = pool;
    s.backfill.rpc_timeout_ms = r.integer("BACKFILL_RPC_TIMEOUT_MS", 30000, 1, 3'600'000);
    s.backfill.start_block = r.integer("BACKFILL_START_BLOCK", 1, 1, 4'294'967'295LL);
    s.backfill.end_block = r.integer("BACKFILL_END_BLOCK", 0, 0, 4'294'967'295LL);
    if (s.backfill.end_block != 0 && s.backfill.end_block < s.backfill.start_block) {
        Reader::fail("BACKFILL_END_BLOCK", "0 or a block at or after BACKFILL_START_BLOCK", std::to_string(s.backfill.end_block));
    }
    s.backfill.shard_size = r.integer("BACKFILL_SHARD_SIZE", 10000, 1, 100'000'000);
    s.backfill.batch_size = r.integer("BACKFILL_BATCH_SIZE", 100, 1, 10'000);
    s.backfill.workers = r.integer("BACKFILL_WORKERS", 6, 1, 256);

    // API.
    s.api.bind.host = r.text("API_BIND_HOST", "127.0.0.1");
    if (s.api.bind.host.empty()) Reader::fail("API_BIND_HOST", "an address", "");
    s.api.bind.port = port_of(r, "API_BIND_PORT", 8090);
    s.api.max_limit = r.integer("WALLET_API_MAX_LIMIT", 200, 1, 10'000);
    s.api.default_limit = r.integer("WALLET_API_DEFAULT_LIMIT", 50, 1, s.api.max_limit);
    s.api.max_range_days = r.integer("WALLET_API_MAX_RANGE_DAYS", 366, 1, 36'500);
    s.api.statement_timeout_ms = r.integer("WALLET_API_STATEMENT_TIMEOUT_MS", 5000, 1, 3'600'000);
    s.api.db_max_conns = r.integer("WALLET_API_DB_MAX_CONNS", 0, 1, 1000);
    s.api.db_max_conns_total = r.integer("WALLET_API_DB_MAX_CONNS_TOTAL", 40, 1, 100'000);
    s.api.rate_rps = r.integer("WALLET_API_RATE_RPS", 10, 0, 1'000'000);
    s.api.rate_burst = r.integer("WALLET_API_RATE_BURST", 20, 0, 1'000'000);
    if (s.api.rate_rps > 0 && s.api.rate_burst < 1) {
        Reader::fail("WALLET_API_RATE_BURST", "at least 1 while WALLET_API_RATE_RPS is set", std::to_string(s.api.rate_burst));
    }
    s.api.max_inflight = r.integer("WALLET_API_MAX_INFLIGHT", 64, 0, 1'000'000);
    s.api.trust_proxy = r.boolean("WALLET_API_TRUST_PROXY", false);
    s.api.trusted_proxy_hops = r.integer("WALLET_API_TRUSTED_PROXY_HOPS", 0, 0, 32);
    if (s.api.trust_proxy && s.api.trusted_proxy_hops == 0) {
        Reader::fail("WALLET_API_TRUSTED_PROXY_HOPS", "the number (1 or more) of trusted proxies when WALLET_API_TRUST_PROXY is true", "0");
    }
    s.api.allowed_origins = split_list(r.text("WALLET_API_ALLOWED_ORIGINS", ""));
    for (const auto& origin : s.api.allowed_origins) {
        if (!is_http_url(origin) || origin.back() == '/') {
            Reader::fail("WALLET_API_ALLOWED_ORIGINS", "comma-separated origins like https://wallet.example.com", origin);
        }
    }
    s.api.max_op_types = r.integer("WALLET_API_MAX_OP_TYPES", 16, 1, 64);
    s.api.max_body_bytes = r.integer("WALLET_API_MAX_BODY_BYTES", 64 * 1024, 256, 16 << 20);
    s.api.request_deadline_ms = r.integer("WALLET_API_REQUEST_DEADLINE_MS", 10000, 1, 600'000);
    s.api.cursor_secret = r.text("WALLET_API_CURSOR_SECRET", "");
    if (s.api.cursor_secret.empty()) s.api.cursor_secret = "wallet-cursor:" + s.db.reader_password;

    // Routing proxy.
    s.proxy.host = r.text("HOST", "127.0.0.1");
    if (s.proxy.host.empty()) Reader::fail("HOST", "an address", "");
    s.proxy.port = port_of(r, "PORT", 5002);
    s.proxy.workers = r.integer("WORKERS", 4, 1, 256);
    s.proxy.debug = r.boolean("DEBUG", false);
    s.proxy.redis = r.text("PROXY_REDIS", "127.0.0.1:6379");
    if (s.proxy.redis.rfind("unix:", 0) != 0 && !Reader::parse_host_port(s.proxy.redis)) {
        Reader::fail("PROXY_REDIS", "host:port or unix:/path/to/redis.sock", s.proxy.redis);
    }
    s.proxy.max_batch = r.integer("PROXY_MAX_BATCH", 50, 1, 10'000);
    return s;
}

}  // namespace wallet
