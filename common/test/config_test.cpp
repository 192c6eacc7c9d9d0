#include "wallet/config.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

using wallet::Component;
using wallet::ConfigError;
using wallet::load_settings;
using wallet::map_env;

namespace {

std::map<std::string, std::string> valid_env() {
    return {{"DB_PASSWORD", "superuser-password-123"},
            {"WALLET_WRITER_PASSWORD", "writer-password-1234"},
            {"WALLET_API_READER_PASSWORD", "reader-password-1234"}};
}

std::string error_of(std::map<std::string, std::string> env, Component c = Component::DatabaseSetup) {
    try {
        load_settings(map_env(std::move(env)), c);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Config, DefaultsMatchTheSpec) {
    auto s = load_settings(map_env(valid_env()), Component::DatabaseSetup);
    EXPECT_EQ(s.db.superuser, "postgres");
    EXPECT_EQ(s.db.name, "wallet");
    EXPECT_EQ(s.db.bind_host, "127.0.0.1");
    EXPECT_EQ(s.db.bind_port, 5432);
    EXPECT_EQ(s.chain.rpc_timeout_ms, 10000);
    EXPECT_EQ(s.chain.max_response_bytes, 64 << 20);
    EXPECT_EQ(s.indexer.start_block, 0);
    EXPECT_EQ(s.indexer.trail_blocks, 2);
    EXPECT_TRUE(s.indexer.target_irreversible);
    EXPECT_EQ(s.indexer.max_fork_depth, 25);
    EXPECT_EQ(s.indexer.poll_interval_ms, 3000);
    ASSERT_TRUE(s.indexer.health_addr.has_value());
    EXPECT_EQ(s.indexer.health_addr->to_string(), "127.0.0.1:8091");
    EXPECT_EQ(s.indexer.health_max_stall_ms, 120000);
    EXPECT_EQ(s.api.bind.to_string(), "127.0.0.1:8090");
    EXPECT_EQ(s.backfill.rpc_urls, std::vector<std::string>{s.chain.rpc_url});
    EXPECT_EQ(s.backfill.rpc_timeout_ms, 30000);
    EXPECT_EQ(s.backfill.start_block, 1);
    EXPECT_EQ(s.backfill.end_block, 0);
    EXPECT_EQ(s.backfill.shard_size, 10000);
    EXPECT_EQ(s.backfill.batch_size, 100);
    EXPECT_EQ(s.backfill.workers, 6);
    EXPECT_EQ(s.api.default_limit, 50);
    EXPECT_EQ(s.api.max_limit, 200);
    EXPECT_EQ(s.api.max_range_days, 366);
    EXPECT_EQ(s.api.statement_timeout_ms, 5000);
    EXPECT_EQ(s.api.db_max_conns, 0);  // derived from the total and the workers
    EXPECT_EQ(s.api.db_max_conns_total, 40);
    EXPECT_EQ(s.api.rate_rps, 10);
    EXPECT_EQ(s.api.rate_burst, 20);
    EXPECT_EQ(s.api.max_inflight, 64);
    EXPECT_FALSE(s.api.trust_proxy);
    EXPECT_EQ(s.api.trusted_proxy_hops, 0);
    EXPECT_TRUE(s.api.allowed_origins.empty());
    EXPECT_EQ(s.api.max_op_types, 16);
    EXPECT_EQ(s.api.max_body_bytes, 65536);
    EXPECT_EQ(s.api.request_deadline_ms, 10000);
    EXPECT_EQ(s.proxy.host, "127.0.0.1");
    EXPECT_EQ(s.proxy.port, 5002);
    EXPECT_EQ(s.proxy.workers, 4);
    EXPECT_FALSE(s.proxy.debug);
    EXPECT_EQ(s.proxy.redis, "127.0.0.1:6379");
}

TEST(Config, DerivedUrlsUseTheRolesAndEncodeCredentials) {
    auto env = valid_env();
    env["WALLET_WRITER_PASSWORD"] = "w@ter:/pass word%1";
    env["DB_BIND_PORT"] = "6543";
    env["DB_NAME"] = "wallet_test";
    auto s = load_settings(map_env(env), Component::DatabaseSetup);
    EXPECT_EQ(s.db.indexer_url, "postgresql://wallet_writer:w%40ter%3A%2Fpass%20word%251@127.0.0.1:6543/wallet_test");
    EXPECT_EQ(s.db.api_url, "postgresql://wallet_api_reader:reader-password-1234@127.0.0.1:6543/wallet_test");
    EXPECT_EQ(s.db.superuser_url("postgres"), "postgresql://postgres:superuser-password-123@127.0.0.1:6543/postgres");
}

TEST(Config, ExplicitUrlsOverrideDerivedOnesAndMakePasswordsOptional) {
    auto s = load_settings(map_env({{"INDEXER_DATABASE_URL", "postgresql://x@127.0.0.1/w"}}), Component::Indexer);
    EXPECT_EQ(s.db.indexer_url, "postgresql://x@127.0.0.1/w");
    auto a = load_settings(map_env({{"API_DATABASE_URL", "postgres://r@127.0.0.1/w"}}), Component::Api);
    EXPECT_EQ(a.db.api_url, "postgres://r@127.0.0.1/w");
    EXPECT_NE(error_of({{"INDEXER_DATABASE_URL", "mysql://x"}}, Component::Indexer).find("INDEXER_DATABASE_URL"), std::string::npos);
}

// A hand-written URL with a password that needs percent-encoding is refused at
// start, naming the variable, saying how to encode, and showing no password.
TEST(Config, HandWrittenUrlsWithUnencodedPasswordsAreRefusedWithAHint) {
    const std::string password = "ab/c+d@e%f:g";
    struct Case {
        const char* name;
        Component component;
        std::string url;
        const char* says;
        const char* secret;  // a piece of the password that must not show
    };
    const std::vector<Case> cases = {
        {"INDEXER_DATABASE_URL", Component::Indexer, "postgresql://wallet_writer:pa/ss+word@127.0.0.1:5432/wallet",
         "port is not a number", "ss+word"},
        {"API_DATABASE_URL", Component::Api, "postgresql://wallet_api_reader:pass@word@127.0.0.1/wallet",
         "host holds an '@'", "word@"},
        {"INDEXER_DATABASE_URL", Component::Backfill, "postgresql://wallet_writer:pass%zzword@127.0.0.1/wallet",
         "invalid percent-encoded token: \"...\"", "zzword"},
        {"INDEXER_DATABASE_URL", Component::Indexer, "postgresql://wallet_writer:" + password + "@127.0.0.1:5432/wallet",
         "invalid percent-encoded token: \"...\"", "e%f:g"},
    };
    for (const auto& c : cases) {
        const std::string error = error_of({{c.name, c.url}}, c.component);
        EXPECT_EQ(error.rfind(std::string("invalid ") + c.name + ": ", 0), 0u) << error;
        EXPECT_NE(error.find(c.says), std::string::npos) << error;
        EXPECT_NE(error.find("/ as %2F, @ as %40"), std::string::npos) << error;
        EXPECT_EQ(error.find(c.secret), std::string::npos) << error;
    }
    // Encoded as the hint says, the same password is taken as written.
    const std::string encoded = "postgresql://wallet_writer:ab%2Fc%2Bd%40e%25f%3Ag@127.0.0.1:5432/wallet";
    EXPECT_EQ(load_settings(map_env({{"INDEXER_DATABASE_URL", encoded}}), Component::Indexer).db.indexer_url, encoded);
    auto parsed = wallet::parse_postgres_url("INDEXER_DATABASE_URL", encoded);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(parsed->at("password"), password);
}

TEST(Config, ProxyNeedsNoDatabaseSecrets) {
    auto s = load_settings(map_env({{"PORT", "6000"}, {"WORKERS", "2"}, {"DEBUG", "True"}}), Component::Proxy);
    EXPECT_EQ(s.proxy.port, 6000);
    EXPECT_EQ(s.proxy.workers, 2);
    EXPECT_TRUE(s.proxy.debug);
}

TEST(Config, MissingWeakOrEqualPasswordsAreRefusedByName) {
    auto env = valid_env();
    env.erase("DB_PASSWORD");
    EXPECT_NE(error_of(env).find("DB_PASSWORD is required"), std::string::npos);

    env = valid_env();
    env["WALLET_API_READER_PASSWORD"] = "short";
    EXPECT_NE(error_of(env).find("WALLET_API_READER_PASSWORD is too weak"), std::string::npos);

    env = valid_env();
    env["WALLET_API_READER_PASSWORD"] = env["WALLET_WRITER_PASSWORD"];
    EXPECT_NE(error_of(env).find("must differ"), std::string::npos);

    env = valid_env();
    env["WALLET_WRITER_PASSWORD"] = env["DB_PASSWORD"];
    EXPECT_NE(error_of(env).find("must differ from DB_PASSWORD"), std::string::npos);

    EXPECT_NE(error_of({}, Component::Indexer).find("WALLET_WRITER_PASSWORD is required"), std::string::npos);
    EXPECT_NE(error_of({}, Component::Api).find("WALLET_API_READER_PASSWORD is required"), std::string::npos);
}

TEST(Config, BadValuesNameTheVariableAndTheAcceptedForm) {
    struct Case {
        const char* name;
        const char* value;
        const char* expect;
    };
    const Case cases[] = {
        {"DB_BIND_PORT", "70000", "integer from 1 to 65535"},
        {"DB_BIND_PORT", "54x", "integer"},
        {"DB_BIND_HOST", "0.0.0.0", "loopback"},
        {"DB_BIND_HOST", "10.1.2.3", "loopback"},
        {"CHAIN_RPC_URL", "ftp://node", "http"},
        {"CHAIN_RPC_TIMEOUT_MS", "-5", "integer"},
        {"INDEXER_TARGET_IRREVERSIBLE", "maybe", "true or false"},
        {"INDEXER_HEALTH_ADDR", "localhost", "host:port"},
        {"INDEXER_HEALTH_ADDR", "127.0.0.1:0", "host:port"},
        {"INDEXER_MAX_FORK_DEPTH", "0", "integer"},
        {"BACKFILL_RPC_URLS", "http://a, ws://b", "http"},
        {"BACKFILL_END_BLOCK", "0x10", "integer"},
        {"BACKFILL_WORKERS", "0", "integer"},
        {"WALLET_API_MAX_LIMIT", "", "integer"},
        {"WALLET_API_DEFAULT_LIMIT", "500", "integer from 1 to 200"},
        {"WALLET_API_TRUST_PROXY", "yes please", "true or false"},
        {"WALLET_API_ALLOWED_ORIGINS", "wallet.example.com", "origins"},
        {"PROXY_REDIS", "redis", "host:port"},
        {"PORT", "http", "integer"},
    };
    for (const auto& c : cases) {
        auto env = valid_env();
        env[c.name] = c.value;
        auto message = error_of(env);
        EXPECT_NE(message.find(c.name), std::string::npos) << c.name << "=" << c.value << ": " << message;
        EXPECT_NE(message.find(c.expect), std::string::npos) << c.name << "=" << c.value << ": " << message;
    }
}

TEST(Config, TrustingProxiesNeedsAHopCount) {
    auto env = valid_env();
    env["WALLET_API_TRUST_PROXY"] = "true";
    EXPECT_NE(error_of(env).find("WALLET_API_TRUSTED_PROXY_HOPS"), std::string::npos);
    env["WALLET_API_TRUSTED_PROXY_HOPS"] = "2";
    auto s = load_settings(map_env(env), Component::Api);
    EXPECT_TRUE(s.api.trust_proxy);
    EXPECT_EQ(s.api.trusted_proxy_hops, 2);
}

TEST(Config, ListsAreSplitAndTrimmed) {
    auto env = valid_env();
    env["BACKFILL_RPC_URLS"] = " http://127.0.0.1:1 ,http://127.0.0.1:2,, https://node.example ";
    env["WALLET_API_ALLOWED_ORIGINS"] = "https://a.example, http://127.0.0.1:3000";
    env["INDEXER_HEALTH_ADDR"] = "";
    auto s = load_settings(map_env(env), Component::Backfill);
    EXPECT_EQ(s.backfill.rpc_urls,
              (std::vector<std::string>{"http://127.0.0.1:1", "http://127.0.0.1:2", "https://node.example"}));
    EXPECT_EQ(s.api.allowed_origins, (std::vector<std::string>{"https://a.example", "http://127.0.0.1:3000"}));
    EXPECT_FALSE(s.indexer.health_addr.has_value());
}

TEST(Config, LoopbackRecognition) {
    EXPECT_TRUE(wallet::is_loopback_host("127.0.0.1"));
    EXPECT_TRUE(wallet::is_loopback_host("127.10.0.3"));
    EXPECT_TRUE(wallet::is_loopback_host("::1"));
    EXPECT_TRUE(wallet::is_loopback_host("localhost"));
    EXPECT_FALSE(wallet::is_loopback_host("0.0.0.0"));
    EXPECT_FALSE(wallet::is_loopback_host("128.0.0.1"));
    EXPECT_FALSE(wallet::is_loopback_host("db.example"));
}

// issue 35: the example files' placeholders cannot pass validation; the error
// names the variable and, through the placeholder, the file to edit.
TEST(Config, PlaceholderSecretsAreRefusedNamingVariableAndFile) {
    auto env = valid_env();
    env["WALLET_WRITER_PASSWORD"] = "CHANGE-ME-in-/etc/wallet/secrets.env";
    EXPECT_NE(error_of(env, Component::Indexer)
                  .find("WALLET_WRITER_PASSWORD is still the placeholder \"CHANGE-ME-in-/etc/wallet/secrets.env\""),
              std::string::npos)
        << error_of(env, Component::Indexer);
}

// The settings files as systemd's EnvironmentFile= reads them.
TEST(Config, EnvFilesReadLikeSystemdReadsThem) {
    const std::string path = testing::TempDir() + "/wallet-env-file-test.env";
    {
        std::ofstream out(path);
        out << "# comment\n; another\n\nA=1\n  B = two words  \nC=\"quoted value\"\nD='single'\nA=last\nE=\n";
    }
    auto values = wallet::read_env_file(path);
    ASSERT_TRUE(values.ok()) << values.error();
    EXPECT_EQ(*values, (std::map<std::string, std::string>{
                           {"A", "last"}, {"B", "two words"}, {"C", "quoted value"}, {"D", "single"}, {"E", ""}}));
    {
        std::ofstream out(path);
        out << "A=1\nnot a setting\n";
    }
    auto bad = wallet::read_env_file(path);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error(), path + " line 2: expected NAME=VALUE");
    std::remove(path.c_str());
    auto missing = wallet::read_env_file(path);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error(), "cannot read " + path + ": No such file or directory");
}

// --help lists what load_settings reads, for each program.
TEST(Config, SettingsReadByEachComponentAreTheOnesItsStartReads) {
    for (auto component : {Component::DatabaseSetup, Component::Indexer, Component::Backfill, Component::Api}) {
        std::vector<std::string> read;
        auto env = valid_env();
        const wallet::EnvLookup recorder = [&](const std::string& name) -> std::optional<std::string> {
            read.push_back(name);
            auto it = env.find(name);
            return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
        load_settings(recorder, component);
        const std::string help = wallet::settings_help(component);
        for (const auto& name : read) EXPECT_NE(help.find("  " + name + " "), std::string::npos) << name;
    }
}
