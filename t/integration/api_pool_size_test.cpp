// How many database connections the API opens by default: a total
// (WALLET_API_DB_MAX_CONNS_TOTAL, 40) shared among the nginx workers, so that
// a worker per core does not exceed PostgreSQL's max_connections
// (docs/scaling-out.md). Labels api and deploy (a deployment default).
#include <future>

#include "support/api_support.hpp"
#include "support/prometheus_text.hpp"

using namespace api_test;

namespace {

bool is_result(const HttpResponse& r) { return r.status == 200 && r.body.find("\"result\"") != std::string::npos; }

std::string totals_body(int id) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"wallet_history.get_reward_totals","params":{"account":"sized"}})";
}

}  // namespace

// Sixteen workers (a 16-core edge's `worker_processes auto`) at the shipped
// defaults: 2 connections each, 32 per database, said in the log, the metrics
// and get_status.
TEST(ApiPoolSize, SixteenWorkersShareTheDefaultTotal) {
    ApiStack stack;
    stack.start_nginx({}, 16);
    // The master writes the line after it has bound the port, which may
    // already answer: read the log until it is there (or the wait ends).
    const std::string said =
        "at most 32 database connections per database: 16 workers x 2 "
        "(WALLET_API_DB_MAX_CONNS_TOTAL shared among the workers)";
    std::string log;
    harness::wait_until([&] {
        log = harness::read_file(stack.nginx().error_log());
        return log.find(said) != std::string::npos;
    });
    EXPECT_NE(log.find(said), std::string::npos) << log;
    HttpResponse page = harness::http_request("GET", stack.nginx().url("/metrics"));
    ASSERT_EQ(page.status, 200);
    const auto scrape = prometheus_text::parse(page.body);
    ASSERT_EQ(scrape.error, "");
    EXPECT_EQ(scrape.value("wallet_history_db_connections_max"), 32);
    EXPECT_EQ(scrape.value("wallet_history_db_connections_per_worker_max"), 2);
    // And in get_status, additively: after every field of the spec's status
    // object, whose text stays as it was.
    stack.set_checkpoint(9000, "2020-01-02T00:00:00Z");
    const HttpResponse status =
        stack.post(R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_status"})");
    ASSERT_EQ(status.status, 200);
    EXPECT_EQ(status.body.rfind(R"({"jsonrpc":"2.0","result":{"indexed_block":9000,"indexed_time":"2020-01-02T00:00:00Z",)"
                                R"("lag_seconds":)",
                                0),
              0u)
        << status.body;
    EXPECT_NE(status.body.find(R"(,"decoder":{"current_version":2,"up_to_date":true},)"
                               R"("db_connections":{"max":32,"per_worker_max":2}},"id":1})"),
              std::string::npos)
        << status.body;
}

// The pool holds to its share. The reader role may hold only 3 connections
// (PostgreSQL refuses a fourth), the total is 3, and 12 requests wait on a
// lock at once: every one answers on the 3 connections, and no connection
// attempt is refused.
TEST(ApiPoolSize, TheWorkersStayWithinTheTotal) {
    ApiStack stack;
    generate_events(stack.pg(), "sized", 20, 1000);
    stack.set_checkpoint(9000, "2020-01-02T00:00:00Z");
    stack.pg().query("ALTER ROLE wallet_api_reader CONNECTION LIMIT 3", "postgres");
    stack.start_nginx({{"WALLET_API_DB_MAX_CONNS_TOTAL", "3"}, {"WALLET_API_REQUEST_DEADLINE_MS", "60000"}}, 1);

    // Reward totals read the aggregates: held by this lock.
    auto locker = wallet::pg::connect(stack.pg().superuser_url("wallet"));
    ASSERT_TRUE(locker) << locker.error();
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "BEGIN; LOCK TABLE wallet_reward_daily IN ACCESS EXCLUSIVE MODE"));
    std::vector<std::future<HttpResponse>> answers;
    for (int i = 0; i < 12; ++i) {
        answers.push_back(std::async(std::launch::async, [&stack, i] { return stack.post(totals_body(i)); }));
    }
    const auto waiting = [&] {
        return stack.pg().query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wallet_history_api' "
                                "AND wait_event_type = 'Lock'",
                                "postgres")
            .at(0);
    };
    EXPECT_TRUE(harness::wait_until([&] { return waiting() == "3"; }));
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "COMMIT"));
    for (auto& answer : answers) {
        const auto r = answer.get();
        EXPECT_TRUE(is_result(r)) << r.body;
    }
    const std::string log = harness::read_file(stack.nginx().error_log());
    EXPECT_NE(log.find("at most 3 database connections per database: 1 workers x 3"), std::string::npos) << log;
    // No connection attempt was refused (nor logged as failed).
    EXPECT_EQ(log.find("database connect to"), std::string::npos) << log;
    EXPECT_EQ(log.find("database connect failed"), std::string::npos) << log;
    EXPECT_EQ(log.find("too many connections"), std::string::npos) << log;
}
