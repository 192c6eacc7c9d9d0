#include "api_config.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "wallet/cursor.hpp"

namespace wallet::api {

namespace {

// An integer setting of the API alone, from min to max; absent or empty
// keeps `value`. False when it is not such an integer.
bool read_integer(const EnvLookup& lookup, const char* name, std::int64_t min, std::int64_t max, std::int64_t& value) {
    const auto text = lookup(name);
    if (!text || text->empty()) return true;
    std::int64_t parsed = 0;
    const char* end = text->data() + text->size();
    const auto result = std::from_chars(text->data(), end, parsed);
    if (result.ec != std::errc() || result.ptr != end || parsed < min || parsed > max) return false;
    value = parsed;
    return true;
}

}  // namespace

Result<ApiConfig> load_api_config(const EnvLookup& env, const std::map<std::string, std::string>& overrides) {
    EnvLookup merged = [&env, &overrides](const std::string& name) -> std::optional<std::string> {
        auto it = overrides.find(name);
        if (it != overrides.end()) return it->second;
        return env(name);
    };
    ApiConfig config;
    try {
        Settings settings = load_settings(merged, Component::Api);
        config.api = settings.api;
        config.database_url = settings.db.api_url;
        config.node_max_stall_ms = settings.indexer.health_max_stall_ms;
        auto assets = AssetTable::from_setting(settings.chain.asset_table);
        if (!assets) return make_error("invalid CHAIN_ASSET_TABLE: " + assets.error());
        config.balance_rules.assets = std::move(assets).value();
        config.balance_rules.forks = *HardforkSchedule::named(settings.chain.hardforks);  // validated by load_settings
        // An entry is about a hundred bytes: the largest bound is 1 GB.
        if (!read_integer(merged, "WALLET_API_ACCOUNT_CACHE", 0, 10'000'000, config.account_cache)) {
            return make_error("invalid WALLET_API_ACCOUNT_CACHE: expected an integer from 0 to 10000000");
        }
        // At least 100 ms: a probe is one small statement per database.
        if (!read_integer(merged, "WALLET_API_DB_PROBE_INTERVAL_MS", 0, 3'600'000, config.db_probe_interval_ms) ||
            (config.db_probe_interval_ms > 0 && config.db_probe_interval_ms < 100)) {
            return make_error("invalid WALLET_API_DB_PROBE_INTERVAL_MS: expected 0 (no probes) or an integer "
                              "from 100 to 3600000");
        }
        // Without a reader password the derived cursor key would be a
        // constant anyone can read in the source: cursors would be forgeable.
        const auto explicit_secret = merged("WALLET_API_CURSOR_SECRET");
        if (settings.db.reader_password.empty() && (!explicit_secret || explicit_secret->empty())) {
            return make_error(
                "WALLET_API_CURSOR_SECRET is required when API_DATABASE_URL is set without WALLET_API_READER_PASSWORD");
        }
        if (explicit_secret && explicit_secret->rfind(kPlaceholderPrefix, 0) == 0) {
            return make_error("WALLET_API_CURSOR_SECRET is still the placeholder \"" + *explicit_secret +
                              "\": set a generated key there (docs/deploy.md, \"Secrets\")");
        }
        if (config.api.cursor_secret.size() < CursorCodec::kMinSecretLength) {
            return make_error("invalid WALLET_API_CURSOR_SECRET: expected at least " +
                              std::to_string(CursorCodec::kMinSecretLength) + " characters");
        }
    } catch (const ConfigError& e) {
        return make_error(e.what());
    }
    return config;
}

PoolSize pool_size(const ApiSettings& settings, std::int64_t workers) {
    PoolSize size;
    size.workers = std::max<std::int64_t>(workers, 1);
    if (settings.db_max_conns > 0) {
        size.per_worker = settings.db_max_conns;
        return size;
    }
    size.derived = true;
    size.per_worker = std::clamp<std::int64_t>(settings.db_max_conns_total / size.workers, 1, kDefaultPoolPerWorker);
    return size;
}

namespace {

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> parts;
    std::size_t begin = 0;
    for (;;) {
        const std::size_t comma = text.find(',', begin);
        parts.push_back(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
        if (comma == std::string::npos) return parts;
        begin = comma + 1;
    }
}

// The numeric address of a host name or address; empty when it cannot be
// resolved. Runs at configuration time, where blocking is allowed.
std::string numeric_address(const std::string& host) {
    in6_addr v6{};
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1) return host;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return "";
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr = found->ai_family == AF_INET
                           ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr)
                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr);
    inet_ntop(found->ai_family, addr, text, sizeof text);
    freeaddrinfo(found);
    return text;
}

}  // namespace

Result<std::vector<std::map<std::string, std::string>>> nonblocking_conninfo(const std::string& url) {
    auto parsed = parse_postgres_url("API_DATABASE_URL", url);
    if (!parsed) return make_error(parsed.error());
    std::map<std::string, std::string> common = std::move(parsed).value();
    // sslmode keeps libpq's meaning (absent is prefer: TLS whenever the
    // server offers it); PQconnectPoll negotiates TLS without blocking, and
    // the pool follows libpq when allow/prefer retry on a new socket. GSS
    // encryption stays off: its negotiation may block on Kerberos.
    common["gssencmode"] = "disable";
    if (!common.count("connect_timeout")) common["connect_timeout"] = "5";
    // Each database is its own server here: libpq's choice among the hosts
    // (target_session_attrs) does not apply.
    common.erase("target_session_attrs");

    // libpq's lists: host, hostaddr and port hold one entry per database (a
    // single port applies to every host).
    const auto hosts = split_commas(common.count("host") ? common["host"] : "");
    const auto addrs = split_commas(common.count("hostaddr") ? common["hostaddr"] : "");
    const auto ports = split_commas(common.count("port") ? common["port"] : "");
    const std::size_t count = std::max(hosts.size(), addrs.size());
    if ((hosts.size() != count && hosts.size() != 1) || (addrs.size() != count && addrs.size() != 1) ||
        (ports.size() != count && ports.size() != 1)) {
        return make_error("API_DATABASE_URL: the host, hostaddr and port lists differ in length");
    }
    std::vector<std::map<std::string, std::string>> out;
    for (std::size_t i = 0; i < count; ++i) {
        auto info = common;
        info.erase("host");
        info.erase("hostaddr");
        info.erase("port");
        const std::string host = hosts.size() == 1 ? hosts[0] : hosts[i];
        const std::string addr = addrs.size() == 1 ? addrs[0] : addrs[i];
        const std::string port = ports.size() == 1 ? ports[0] : ports[i];
        if (!host.empty()) info["host"] = host;
        if (!port.empty()) info["port"] = port;
        if (!addr.empty()) {
            info["hostaddr"] = addr;
        } else if (!host.empty() && host.front() != '/') {
            info["hostaddr"] = numeric_address(host);
            if (info["hostaddr"].empty()) return make_error("API_DATABASE_URL: cannot resolve the database host");
        }
        out.push_back(std::move(info));
    }
    return out;
}

}  // namespace wallet::api
