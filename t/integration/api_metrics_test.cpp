// The wallet_history API's metrics on the module's Prometheus endpoint, with
// real nginx (two workers, one counters zone), PostgreSQL and the API: after
// a call of each outcome (answers of every kind, invalid params, an unknown
// method, a parse error, a wrong HTTP method, a statement timeout, a
// database that is down), the counters equal what was sent, the text is
// valid exposition format 0.0.4, and the client's method name is no label.
#include <set>

#include "support/api_support.hpp"
#include "support/prometheus_text.hpp"

using namespace api_test;

namespace {

constexpr int kWorkers = 2;

std::string rpc(const std::string& method, const std::string& params) {
    return R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"(","params":)" + params + "}";
}

}  // namespace

TEST(ApiMetrics, RequestsByMethodAndOutcomeOverBothWorkers) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 30, 100);
    stack.set_checkpoint(500, "2020-01-02T00:00:00Z");
    harness::NginxServer::Options options;
    // reuseport: each new connection goes to either worker.
    options.http_config = "server {\n    listen 127.0.0.1:{{PORT}} reuseport;\n"
                          "    location = /metrics { jsonrpc_router_metrics; allow 127.0.0.1; deny all; }\n"
                          "    location / { wallet_history_api; add_header X-Worker $pid always; }\n}\n";
    options.workers = kWorkers;
    options.env = stack.pg().env();
    options.env.erase("DB_PASSWORD");
    options.env["WALLET_API_RATE_RPS"] = "0";
    options.env["WALLET_API_STATEMENT_TIMEOUT_MS"] = "300";
    options.env["WALLET_API_REQUEST_DEADLINE_MS"] = "20000";
    harness::NginxServer nginx(options);

    std::set<std::string> workers;
    auto post = [&](const std::string& body) {
        HttpResponse r = harness::http_post_json(nginx.url("/"), body);
        workers.insert(r.headers["x-worker"]);
        return r;
    };
    auto code_of = [&](const HttpResponse& r) { return str(json_object_get(parse_json(r.body).get(), "error"), "code"); };
    const std::string history = "wallet_history.get_wallet_history";

    // Answers, on fresh connections until both workers served some.
    int history_ok = 0;
    while (workers.size() < kWorkers && history_ok < 200) {
        HttpResponse r = post(rpc(history, R"({"account":"alice","limit":2})"));
        ASSERT_EQ(code_of(r), "<absent>") << r.body;
        ++history_ok;
    }
    ASSERT_EQ(workers.size(), static_cast<std::size_t>(kWorkers)) << "one worker answered everything";
    for (const char* method : {"wallet_history.get_methods", "wallet_history.get_status"}) {
        EXPECT_EQ(code_of(post(rpc(method, "{}"))), "<absent>") << method;
    }
    EXPECT_EQ(code_of(post(rpc("wallet_history.get_reward_totals", R"({"account":"alice"})"))), "<absent>");
    // Errors a client causes.
    EXPECT_EQ(code_of(post(rpc(history, R"({"limit":2})"))), "-32602");
    EXPECT_EQ(code_of(post(rpc("wallet_history.client_chosen_method_name", "{}"))), "-32601");
    EXPECT_EQ(code_of(post("{not json")), "-32700");
    EXPECT_EQ(harness::http_request("GET", nginx.url("/")).status, 405);

    // A statement that waits on a lock past statement_timeout.
    auto locker = wallet::pg::connect(stack.pg().superuser_url("wallet"));
    ASSERT_TRUE(locker) << locker.error();
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "BEGIN; LOCK TABLE wallet_operation_events IN ACCESS EXCLUSIVE MODE"));
    HttpResponse timed_out = post(rpc(history, R"({"account":"alice","limit":3})"));
    EXPECT_NE(timed_out.body.find("request timeout"), std::string::npos) << timed_out.body;
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "COMMIT"));

    // The database is down.
    stack.pg().stop();
    HttpResponse down = post(rpc(history, R"({"account":"alice","limit":4})"));
    EXPECT_EQ(code_of(down), "-32603") << down.body;

    HttpResponse page = harness::http_request("GET", nginx.url("/metrics"));
    ASSERT_EQ(page.status, 200);
    EXPECT_EQ(page.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    const prometheus_text::Scrape s = prometheus_text::parse(page.body);
    ASSERT_EQ(s.error, "") << page.body;
    EXPECT_EQ(page.body.find("client_chosen_method_name"), std::string::npos) << "a client's method became a label";
    EXPECT_EQ(s.types.at("wallet_history_requests_total"), "counter");
    EXPECT_EQ(s.types.at("wallet_history_request_duration_seconds"), "histogram");

    auto requests = [&](const std::string& method, const std::string& outcome) {
        return s.value("wallet_history_requests_total", {{"method", method}, {"outcome", outcome}}).value_or(-1);
    };
    EXPECT_EQ(requests(history, "ok"), history_ok);
    EXPECT_EQ(requests("wallet_history.get_methods", "ok"), 1);
    EXPECT_EQ(requests("wallet_history.get_status", "ok"), 1);
    EXPECT_EQ(requests("wallet_history.get_reward_totals", "ok"), 1);
    EXPECT_EQ(requests(history, "invalid_params"), 1);
    EXPECT_EQ(requests("unknown", "method_not_found"), 1);
    EXPECT_EQ(requests("unknown", "parse_error"), 1);
    EXPECT_EQ(requests("unknown", "invalid_request"), 1);
    EXPECT_EQ(requests(history, "timeout"), 1);
    EXPECT_EQ(requests(history, "database_error"), 1) << down.body;
    const int total = history_ok + 3 + 1 + 3 + 1 + 1;
    EXPECT_EQ(s.sum("wallet_history_requests_total"), total);
    EXPECT_EQ(s.sum("wallet_history_request_duration_seconds_count"), total);
    EXPECT_EQ(s.value("wallet_history_request_duration_seconds_count", {{"method", history}}), history_ok + 1 + 1 + 1);
    EXPECT_EQ(s.value("wallet_history_postgresql_errors_total", {{"error", "timeout"}}), 1);
    EXPECT_EQ(s.sum("wallet_history_postgresql_errors_total"), 2);
    // Each worker's first statement waited for its first connection; later
    // ones found it idle (sequential calls), but the database went down.
    const double waits = s.value("wallet_history_pool_waits_total").value_or(-1);
    EXPECT_GE(waits, kWorkers);
    EXPECT_LE(waits, history_ok + 4);
    // The timeout waited 0.3 s or more: above the 0.25 s bucket.
    EXPECT_LE(s.value("wallet_history_request_duration_seconds_bucket", {{"method", history}, {"le", "0.250000"}}),
              history_ok + 2);
}
