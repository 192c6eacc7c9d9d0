// Limits and security: per-client rate limiting with and without trusted
// proxies, the global in-flight cap, statement timeouts and the request
// deadline, CORS, and configuration errors that make `nginx -t` fail.
#include <atomic>
#include <future>
#include <thread>

#include "support/api_support.hpp"

using namespace api_test;

namespace {

const std::string kStatus = R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_methods"})";
const std::string kHistory =
    R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice"}})";

// Counts 200 and 429 answers of `n` requests sent one after another.
std::pair<int, int> burst(ApiStack& stack, int n, const std::vector<std::string>& headers = {}) {
    int ok = 0;
    int limited = 0;
    for (int i = 0; i < n; ++i) {
        auto response = stack.post(kStatus, headers);
        if (response.status == 200) ++ok;
        if (response.status == 429) {
            ++limited;
            JsonPtr parsed = parse_json(response.body);
            json_t* error = json_object_get(parsed.get(), "error");
            EXPECT_EQ(json_integer_value(json_object_get(error, "code")), -32600);
            EXPECT_EQ(str(error, "message"), "rate limit exceeded");
        }
    }
    return {ok, limited};
}

void expect_error(const HttpResponse& response, long status, int code, const std::string& message) {
    EXPECT_EQ(response.status, status) << response.body;
    JsonPtr parsed = parse_json(response.body);
    json_t* error = json_object_get(parsed.get(), "error");
    EXPECT_EQ(json_integer_value(json_object_get(error, "code")), code) << response.body;
    EXPECT_EQ(str(error, "message"), message);
}

}  // namespace

TEST(ApiLimits, RateLimitPerPeerIgnoresForwardedForUnlessTrusted) {
    ApiStack stack;
    stack.start_nginx({{"WALLET_API_RATE_RPS", "1"}, {"WALLET_API_RATE_BURST", "3"}});
    // Forged X-Forwarded-For headers are not identities when proxies are not trusted.
    int ok = 0;
    int limited = 0;
    for (int i = 0; i < 10; ++i) {
        auto [o, l] = burst(stack, 1, {"X-Forwarded-For: 198.51.100." + std::to_string(i)});
        ok += o;
        limited += l;
    }
    // 3 from the burst, plus at most one refill per second the loop took.
    EXPECT_GE(ok, 3);
    EXPECT_LE(ok, 5);
    EXPECT_EQ(ok + limited, 10);
    // The health check is never limited.
    EXPECT_EQ(harness::http_request("GET", stack.nginx().url("/health")).status, 200);
}

TEST(ApiLimits, TrustedProxyHopsReadFromTheRight) {
    ApiStack stack;
    stack.start_nginx({{"WALLET_API_RATE_RPS", "1"},
                       {"WALLET_API_RATE_BURST", "3"},
                       {"WALLET_API_TRUST_PROXY", "true"},
                       {"WALLET_API_TRUSTED_PROXY_HOPS", "2"}});
    // The client is the second entry from the right; whatever it forges to
    // the left of it mints no new identity.
    int ok = 0;
    for (int i = 0; i < 10; ++i) {
        ok += burst(stack, 1, {"X-Forwarded-For: 10.9.9." + std::to_string(i) + ", 203.0.113.5, 10.0.0.1"}).first;
    }
    EXPECT_GE(ok, 3);
    EXPECT_LE(ok, 5);
    // Another client behind the same proxies has its own bucket.
    EXPECT_EQ(burst(stack, 3, {"X-Forwarded-For: 203.0.113.6, 10.0.0.1"}).first, 3);
    // Two X-Forwarded-For headers count as one list.
    EXPECT_EQ(burst(stack, 3, {"X-Forwarded-For: 203.0.113.7", "X-Forwarded-For: 10.0.0.1"}).first, 3);
    // A header with fewer entries than trusted hops: the peer address is used.
    EXPECT_EQ(burst(stack, 3, {"X-Forwarded-For: 203.0.113.8"}).first, 3);
    EXPECT_EQ(burst(stack, 2, {"X-Forwarded-For: 203.0.113.9"}).second, 2);
}

TEST(ApiLimits, InflightCapAnswersServerBusy) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 10, 100);
    stack.start_nginx({{"WALLET_API_MAX_INFLIGHT", "3"}, {"WALLET_API_STATEMENT_TIMEOUT_MS", "60000"}});
    TableLock lock(stack.pg());
    std::vector<std::future<HttpResponse>> held;
    for (int i = 0; i < 3; ++i) held.push_back(std::async(std::launch::async, [&] { return stack.post(kHistory); }));
    ASSERT_TRUE(harness::wait_until([&] { return api_statements_waiting_on_locks(stack.pg()) == 3; }));
    expect_error(stack.post(kStatus), 503, -32603, "server busy");
    expect_error(stack.post(kHistory), 503, -32603, "server busy");
    lock.release();
    for (auto& f : held) {
        auto response = f.get();
        EXPECT_EQ(response.status, 200);
        EXPECT_NE(response.body.find("\"result\""), std::string::npos) << response.body;
    }
    // Slots are released when requests end.
    for (int i = 0; i < 5; ++i) EXPECT_EQ(stack.post(kStatus).status, 200);
}

TEST(ApiLimits, StatementTimeoutAndDeadlineGiveRequestTimeout) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 10, 100);
    stack.start_nginx({{"WALLET_API_STATEMENT_TIMEOUT_MS", "300"}});
    {
        TableLock lock(stack.pg());
        expect_error(stack.post(kHistory), 200, -32603, "request timeout");
    }
    EXPECT_EQ(json_array_size(json_object_get(stack.result("wallet_history.get_wallet_history", R"({"account":"alice"})").get(), "items")), 11u);

    stack.start_nginx({{"WALLET_API_REQUEST_DEADLINE_MS", "300"}, {"WALLET_API_STATEMENT_TIMEOUT_MS", "60000"}});
    {
        TableLock lock(stack.pg());
        expect_error(stack.post(kHistory), 200, -32603, "request timeout");
        expect_error(stack.post(kHistory), 200, -32603, "request timeout");
    }
    // The abandoned connections were closed; new ones serve the next requests.
    EXPECT_EQ(json_array_size(json_object_get(stack.result("wallet_history.get_wallet_history", R"({"account":"alice"})").get(), "items")), 11u);
    const std::string log = harness::read_file(stack.nginx().error_log());
    EXPECT_EQ(log.find("canceling statement"), std::string::npos);
}

TEST(ApiLimits, CorsOnlyForAllowedOrigins) {
    ApiStack stack;
    stack.start_nginx({{"WALLET_API_ALLOWED_ORIGINS", "https://wallet.example.com, https://other.example.org"}});
    auto allowed = stack.post(kStatus, {"Origin: https://wallet.example.com"});
    EXPECT_EQ(allowed.status, 200);
    EXPECT_EQ(allowed.headers["access-control-allow-origin"], "https://wallet.example.com");
    auto denied = stack.post(kStatus, {"Origin: https://evil.example.net"});
    EXPECT_EQ(denied.status, 200);
    EXPECT_EQ(denied.headers.count("access-control-allow-origin"), 0u);
    auto preflight = harness::http_request("OPTIONS", stack.nginx().url("/"), "",
                                           {"Origin: https://other.example.org", "Access-Control-Request-Method: POST"});
    EXPECT_EQ(preflight.status, 204);
    EXPECT_EQ(preflight.headers["access-control-allow-origin"], "https://other.example.org");
    EXPECT_EQ(preflight.headers["access-control-allow-methods"], "POST");
    auto bad_preflight = harness::http_request("OPTIONS", stack.nginx().url("/"), "", {"Origin: https://evil.example.net"});
    EXPECT_EQ(bad_preflight.status, 405);
    EXPECT_EQ(bad_preflight.headers.count("access-control-allow-origin"), 0u);

    ApiStack plain;
    plain.start_nginx();
    EXPECT_EQ(plain.post(kStatus, {"Origin: https://wallet.example.com"}).headers.count("access-control-allow-origin"), 0u);
}

TEST(ApiLimits, ConfigurationErrorsFailNginxTestNamingTheVariable) {
    harness::PostgresServer pg;
    auto check = [&](std::map<std::string, std::string> env, const std::string& main_extra = "") {
        harness::NginxServer::Options options;
        options.http_config = main_extra + nginx_http_config();
        options.env = pg.env();
        options.env.erase("DB_PASSWORD");
        for (const auto& [k, v] : env) {
            if (v.empty()) {
                options.env.erase(k);
            } else {
                options.env[k] = v;
            }
        }
        return harness::NginxServer::test_config(options);
    };
    EXPECT_EQ(check({}).exit_code, 0);
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"WALLET_API_MAX_LIMIT", "lots"},
             {"WALLET_API_DEFAULT_LIMIT", "0"},
             {"WALLET_API_RATE_RPS", "-1"},
             {"WALLET_API_TRUST_PROXY", "maybe"},
             {"WALLET_API_MAX_RANGE_DAYS", "1.5"},
             {"WALLET_API_STATEMENT_TIMEOUT_MS", "x"},
             {"WALLET_API_DB_MAX_CONNS", "0"},
             {"WALLET_API_ALLOWED_ORIGINS", "wallet.example.com"},
             {"WALLET_API_ACCOUNT_CACHE", "-1"},
             {"WALLET_API_ACCOUNT_CACHE", "many"},
             {"API_BIND_PORT", "70000"},
             {"API_DATABASE_URL", "mysql://x"},
         }) {
        auto result = check({{name, value}});
        EXPECT_NE(result.exit_code, 0) << name;
        EXPECT_NE(result.output.find(name), std::string::npos) << result.output;
    }
    // A hand-written URL whose password holds an unencoded '/': nginx -t says
    // how to encode it, without showing the password.
    auto slash = check({{"API_DATABASE_URL", "postgresql://wallet_api_reader:pass/word@127.0.0.1:5432/wallet"}});
    EXPECT_NE(slash.exit_code, 0);
    EXPECT_NE(slash.output.find("invalid API_DATABASE_URL: its port is not a number"), std::string::npos) << slash.output;
    EXPECT_NE(slash.output.find("/ as %2F"), std::string::npos) << slash.output;
    EXPECT_EQ(slash.output.find("pass/word"), std::string::npos) << slash.output;
    // Without a reader password the cursor key must be given explicitly.
    const std::string url = pg.url("wallet_api_reader", harness::kReaderPassword, "wallet");
    auto no_secret = check({{"API_DATABASE_URL", url}, {"WALLET_API_READER_PASSWORD", ""}});
    EXPECT_NE(no_secret.exit_code, 0);
    EXPECT_NE(no_secret.output.find("WALLET_API_CURSOR_SECRET"), std::string::npos) << no_secret.output;
    EXPECT_EQ(check({{"API_DATABASE_URL", url}, {"WALLET_API_READER_PASSWORD", ""},
                     {"WALLET_API_CURSOR_SECRET", "a-long-random-cursor-secret"}}).exit_code, 0);
    // nginx directives override the environment, with the same validation.
    auto bad_directive = check({}, "wallet_history_set WALLET_API_MAX_LIMIT none;\n");
    EXPECT_NE(bad_directive.exit_code, 0);
    EXPECT_NE(bad_directive.output.find("WALLET_API_MAX_LIMIT"), std::string::npos);
    EXPECT_NE(check({}, "wallet_history_set NO_SUCH_SETTING 1;\n").exit_code, 0);
    EXPECT_EQ(check({}, "wallet_history_set WALLET_API_MAX_LIMIT 5;\n").exit_code, 0);
    EXPECT_EQ(check({}, "wallet_history_set WALLET_API_ACCOUNT_CACHE 0;\n").exit_code, 0);
}

TEST(ApiLimits, DirectiveOverridesTheEnvironment) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 30, 100);
    harness::NginxServer::Options options;
    options.http_config = "wallet_history_set WALLET_API_MAX_LIMIT 5;\n" + nginx_http_config();
    options.env = stack.pg().env();
    options.env["WALLET_API_MAX_LIMIT"] = "100";
    harness::NginxServer nginx(options);
    auto response = harness::http_post_json(
        nginx.url("/"),
        R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice","limit":50}})");
    JsonPtr parsed = parse_json(response.body);
    EXPECT_EQ(json_array_size(json_object_get(json_object_get(parsed.get(), "result"), "items")), 5u);
}
