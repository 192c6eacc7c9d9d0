#include "api_config.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <memory>

#include <libpq-fe.h>

#include "wallet/cursor.hpp"

namespace wallet::api {

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
        // Without a reader password the derived cursor key would be a
        // constant anyone can read in the source: cursors would be forgeable.
        const auto explicit_secret = merged("WALLET_API_CURSOR_SECRET");
        if (settings.db.reader_password.empty() && (!explicit_secret || explicit_secret->empty())) {
            return make_error(
                "WALLET_API_CURSOR_SECRET is required when API_DATABASE_URL is set without WALLET_API_READER_PASSWORD");
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

Result<std::map<std::string, std::string>> nonblocking_conninfo(const std::string& url) {
    char* error = nullptr;
    std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(PQconninfoParse(url.c_str(), &error),
                                                                        &PQconninfoFree);
    if (!options) {
        if (error != nullptr) PQfreemem(error);
        return make_error("invalid API_DATABASE_URL");
    }
    std::map<std::string, std::string> out;
    for (PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
        if (o->val != nullptr && o->val[0] != '\0') out[o->keyword] = o->val;
    }
    const std::string host = out.count("host") ? out["host"] : "";
    if (host.find(',') != std::string::npos) return make_error("API_DATABASE_URL: one host only");
    if (!out.count("hostaddr") && !host.empty() && host.front() != '/') {
        in6_addr v6{};
        in_addr v4{};
        if (inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
            out["hostaddr"] = host;
        } else {
            // Resolved once, at configuration time, where blocking is allowed.
            addrinfo hints{};
            hints.ai_family = AF_UNSPEC;
            hints.ai_socktype = SOCK_STREAM;
            addrinfo* found = nullptr;
            if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
                return make_error("API_DATABASE_URL: cannot resolve the database host");
            }
            char text[INET6_ADDRSTRLEN] = {};
            const void* addr = found->ai_family == AF_INET
                                   ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr)
                                   : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr);
            inet_ntop(found->ai_family, addr, text, sizeof text);
            freeaddrinfo(found);
            out["hostaddr"] = text;
        }
    }
    if (!out.count("sslmode") || out["sslmode"] == "prefer" || out["sslmode"] == "allow") out["sslmode"] = "disable";
    out["gssencmode"] = "disable";
    if (!out.count("connect_timeout")) out["connect_timeout"] = "5";
    return out;
}

}  // namespace wallet::api
