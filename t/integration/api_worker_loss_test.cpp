// The in-flight cap (WALLET_API_MAX_INFLIGHT) after workers die with requests
// in flight (issue 32, point 2): a worker killed with SIGKILL never runs its
// requests' cleanups, and the next one must not inherit them as busy slots.
#include <signal.h>

#include <future>
#include <thread>

#include "support/api_support.hpp"

using namespace api_test;

namespace {

const std::string kMethods = R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_methods"})";
const std::string kHistory =
    R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"alice"}})";

std::vector<std::future<HttpResponse>> send_held(ApiStack& stack, int n) {
    std::vector<std::future<HttpResponse>> held;
    for (int i = 0; i < n; ++i) held.push_back(std::async(std::launch::async, [&stack] { return stack.post(kHistory); }));
    return held;
}

}  // namespace

TEST(ApiWorkerLoss, InflightCapSurvivesWorkersKilledWithRequestsInFlight) {
    constexpr int kCap = 3;
    constexpr int kKills = kCap + 1;  // each kill used to leak kCap slots for good
    ApiStack stack;
    stack.expect_killed_workers();
    generate_events(stack.pg(), "alice", 10, 100);
    stack.start_nginx({{"WALLET_API_MAX_INFLIGHT", std::to_string(kCap)},
                       {"WALLET_API_STATEMENT_TIMEOUT_MS", "60000"},
                       {"WALLET_API_REQUEST_DEADLINE_MS", "60000"}});
    {
        TableLock lock(stack.pg());
        for (int kill = 0; kill < kKills; ++kill) {
            // The killed workers' statements keep waiting on the lock.
            const int waiting_before = api_statements_waiting_on_locks(stack.pg());
            auto held = send_held(stack, kCap);
            ASSERT_TRUE(harness::wait_until([&] { return api_statements_waiting_on_locks(stack.pg()) == waiting_before + kCap; }))
                << "kill " << kill << ": the cap refused requests while none was in flight: "
                << stack.post(kMethods).body;
            // Full: the cap holds.
            EXPECT_EQ(stack.post(kMethods).status, 503);
            const std::vector<pid_t> workers = stack.nginx().worker_pids();
            ASSERT_EQ(workers.size(), 1u);
            ASSERT_EQ(::kill(workers[0], SIGKILL), 0);
            for (auto& f : held) EXPECT_NE(f.get().status, 200);  // the connection died with the worker
            ASSERT_TRUE(harness::wait_until([&] {
                auto now = stack.nginx().worker_pids();
                return now.size() == 1 && now[0] != workers[0];
            }));
        }
    }
    ASSERT_TRUE(harness::wait_until([&] { return api_statements_waiting_on_locks(stack.pg()) == 0; }));

    // Full service: the whole cap is free again, and exact.
    EXPECT_EQ(stack.post(kMethods).status, 200);
    TableLock lock(stack.pg());
    auto held = send_held(stack, kCap);
    ASSERT_TRUE(harness::wait_until([&] { return api_statements_waiting_on_locks(stack.pg()) == kCap; }));
    EXPECT_EQ(stack.post(kMethods).status, 503);
    lock.release();
    for (auto& f : held) {
        auto response = f.get();
        EXPECT_EQ(response.status, 200) << response.body;
        EXPECT_NE(response.body.find("\"result\""), std::string::npos) << response.body;
    }
    for (int i = 0; i < kCap + 2; ++i) EXPECT_EQ(stack.post(kMethods).status, 200);
}
