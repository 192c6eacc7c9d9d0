// The event loop and the database pool under stress: slow queries never delay
// other requests of the same worker, and a PostgreSQL restart under load is
// survived (clean errors during the outage, answers after it).
#include <atomic>
#include <future>
#include <thread>

#include "support/api_support.hpp"

using namespace api_test;

namespace {

const std::string kHistory =
    R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice"}})";
const std::string kStatus = R"({"jsonrpc":"2.0","id":2,"method":"wallet_history.get_status"})";

bool is_result(const HttpResponse& r) { return r.status == 200 && r.body.find("\"result\"") != std::string::npos; }

}  // namespace

TEST(ApiResilience, SlowQueriesDoNotDelayHealthOrFastMethodsOnOneWorker) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 20, 100);
    stack.set_checkpoint(200, "2020-01-01T00:00:00Z");
    stack.start_nginx({{"WALLET_API_DB_MAX_CONNS", "60"},
                       {"WALLET_API_MAX_INFLIGHT", "0"},
                       {"WALLET_API_STATEMENT_TIMEOUT_MS", "60000"},
                       {"WALLET_API_REQUEST_DEADLINE_MS", "60000"}},
                      1);
    // Every statement reading the events table waits while this lock is held.
    auto locker = wallet::pg::connect(stack.pg().superuser_url("wallet"));
    ASSERT_TRUE(locker) << locker.error();
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "BEGIN; LOCK TABLE wallet_operation_events IN ACCESS EXCLUSIVE MODE"));

    std::atomic<int> completed{0};
    std::vector<std::future<HttpResponse>> slow;
    for (int i = 0; i < 50; ++i) {
        slow.push_back(std::async(std::launch::async, [&] {
            auto r = stack.post(kHistory);
            ++completed;
            return r;
        }));
    }
    ASSERT_TRUE(harness::wait_until([&] {
        return stack.pg().query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wallet_history_api' "
                                "AND wait_event_type = 'Lock'") == std::vector<std::string>{"50"};
    }, std::chrono::seconds(30)));

    // While all 50 are held in the database, the same worker answers these.
    auto health = harness::http_request("GET", stack.nginx().url("/health"));
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, R"({"ok":true})");
    auto status = stack.post(kStatus);
    EXPECT_TRUE(is_result(status)) << status.body;
    EXPECT_NE(status.body.find("\"indexed_block\":200"), std::string::npos);
    auto methods = stack.post(R"({"jsonrpc":"2.0","id":3,"method":"wallet_history.get_methods"})");
    EXPECT_TRUE(is_result(methods));
    EXPECT_EQ(completed.load(), 0);  // the slow ones are all still waiting

    ASSERT_TRUE(wallet::pg::exec(locker->get(), "COMMIT"));
    for (auto& f : slow) {
        auto r = f.get();
        EXPECT_TRUE(is_result(r)) << r.body;
    }
    EXPECT_EQ(completed.load(), 50);
}

TEST(ApiResilience, PostgresRestartUnderLoad) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 20, 100);
    stack.start_nginx({{"WALLET_API_DB_MAX_CONNS", "4"}}, 2);
    std::atomic<bool> stop{false};
    std::atomic<int> results{0}, errors{0}, other{0};
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t) {
        clients.emplace_back([&] {
            for (int i = 0; i < 5000 && !stop; ++i) {
                auto r = stack.post(kHistory);
                if (is_result(r)) {
                    ++results;
                } else if (r.status == 200 && r.body.find("\"code\":-32603") != std::string::npos &&
                           r.body.find("internal error") != std::string::npos) {
                    ++errors;
                } else {
                    ++other;
                    ADD_FAILURE() << r.status << " " << r.error << " " << r.body;
                }
            }
        });
    }
    ASSERT_TRUE(harness::wait_until([&] { return results.load() > 50; }));
    stack.pg().stop();
    ASSERT_TRUE(harness::wait_until([&] { return errors.load() > 20; }));
    // The outage is visible to load balancers.
    EXPECT_TRUE(harness::wait_until(
        [&] { return harness::http_request("GET", stack.nginx().url("/health")).body == R"({"ok":false})"; }));
    stack.pg().start();
    const int before = results.load();
    EXPECT_TRUE(harness::wait_until([&] { return results.load() > before + 50; }));
    stop = true;
    for (auto& c : clients) c.join();
    EXPECT_EQ(other.load(), 0);
    // After the outage every request succeeds again, and health recovers.
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(is_result(stack.post(kHistory)));
    EXPECT_TRUE(harness::wait_until(
        [&] { return harness::http_request("GET", stack.nginx().url("/health")).body == R"({"ok":true})"; }));
}
