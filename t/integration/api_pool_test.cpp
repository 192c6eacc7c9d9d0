// The database pool when requests outnumber its connections: they wait in the
// worker's queue and take turns on the connections. Each answer must reach
// its own request, and one statement's error must touch no other request.
#include <future>
#include <set>

#include "support/api_support.hpp"

using namespace api_test;

namespace {

constexpr int kAccounts = 24;

std::string account_name(int i) { return "pipe" + std::to_string(100 + i); }

// A mix of methods and accounts; every body differs.
std::vector<std::string> request_bodies() {
    std::vector<std::string> bodies;
    for (int i = 0; i < kAccounts; ++i) {
        const std::string account = account_name(i);
        const auto id = [i](int n) { return std::to_string(i * 10 + n); };
        bodies.push_back(R"({"jsonrpc":"2.0","id":)" + id(1) +
                         R"(,"method":"wallet_history.get_wallet_history","params":{"account":")" + account +
                         R"(","limit":)" + std::to_string(3 + i % 5) + "}}");
        bodies.push_back(R"({"jsonrpc":"2.0","id":)" + id(2) +
                         R"(,"method":"wallet_history.get_curation_rewards","params":{"account":")" + account +
                         R"(","limit":4}})");
        bodies.push_back(R"({"jsonrpc":"2.0","id":)" + id(3) +
                         R"(,"method":"wallet_history.get_reward_totals","params":{"account":")" + account + R"("}})");
    }
    return bodies;
}

bool is_result(const HttpResponse& r) { return r.status == 200 && r.body.find("\"result\"") != std::string::npos; }

const std::string kSlowTotals =
    R"({"jsonrpc":"2.0","id":"slow","method":"wallet_history.get_reward_totals","params":{"account":"pipe100"}})";

std::string page_body(int i) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
           R"(,"method":"wallet_history.get_wallet_history","params":{"account":")" + account_name(i % kAccounts) +
           R"(","limit":2}})";
}

void fill_accounts(ApiStack& stack) {
    for (int i = 0; i < kAccounts; ++i) generate_events(stack.pg(), account_name(i), 5 + i * 3, 1000 + i * 100);
    stack.set_checkpoint(9000, "2020-01-02T00:00:00Z");
}

}  // namespace

// One connection for 72 concurrent requests of three methods. The answers,
// byte for byte, are those of the same requests sent one at a time.
TEST(ApiPool, AnswersReachTheirOwnRequestsThroughOneConnection) {
    ApiStack stack;
    fill_accounts(stack);
    stack.start_nginx({{"WALLET_API_DB_MAX_CONNS", "1"}, {"WALLET_API_MAX_INFLIGHT", "0"}}, 1);

    const auto bodies = request_bodies();
    std::vector<std::string> expected;
    for (const auto& body : bodies) {
        auto r = stack.post(body);
        ASSERT_TRUE(is_result(r)) << r.body;
        expected.push_back(r.body);
    }
    // Distinct answers, so a mix-up cannot go unnoticed.
    ASSERT_EQ(std::set<std::string>(expected.begin(), expected.end()).size(), expected.size());

    for (int round = 0; round < 3; ++round) {
        std::vector<std::future<HttpResponse>> answers;
        for (const auto& body : bodies) {
            answers.push_back(std::async(std::launch::async, [&stack, body] { return stack.post(body); }));
        }
        for (std::size_t i = 0; i < answers.size(); ++i) {
            EXPECT_EQ(answers[i].get().body, expected[i]) << "request " << i << " in round " << round;
        }
    }
}

// One connection, a statement that times out while others wait for the
// connection: only it fails, the others answer, and its statement (whose
// PREPARE never completed) works on that connection afterwards.
TEST(ApiPool, OneStatementsErrorLeavesTheOthersAlone) {
    ApiStack stack;
    fill_accounts(stack);
    stack.start_nginx({{"WALLET_API_DB_MAX_CONNS", "1"},
                       {"WALLET_API_MAX_INFLIGHT", "0"},
                       {"WALLET_API_STATEMENT_TIMEOUT_MS", "1500"},
                       {"WALLET_API_REQUEST_DEADLINE_MS", "60000"}},
                      1);
    ASSERT_TRUE(is_result(stack.post(page_body(0))));  // the connection is open

    // Reward totals read the aggregates: held by this lock, pages are not.
    auto locker = wallet::pg::connect(stack.pg().superuser_url("wallet"));
    ASSERT_TRUE(locker) << locker.error();
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "BEGIN; LOCK TABLE wallet_reward_daily IN ACCESS EXCLUSIVE MODE"));

    auto slow = std::async(std::launch::async, [&] { return stack.post(kSlowTotals); });
    std::vector<std::future<HttpResponse>> pages;
    for (int i = 0; i < 20; ++i) {
        pages.push_back(std::async(std::launch::async, [&stack, i] { return stack.post(page_body(i)); }));
    }
    const auto timed_out = slow.get();
    JsonPtr error = parse_json(timed_out.body);
    json_t* e = json_object_get(error.get(), "error");
    EXPECT_EQ(json_integer_value(json_object_get(e, "code")), -32603) << timed_out.body;
    EXPECT_EQ(str(e, "message"), "request timeout");
    EXPECT_EQ(str(error.get(), "id"), "slow");
    for (auto& page : pages) {
        auto r = page.get();
        EXPECT_TRUE(is_result(r)) << r.body;
    }
    ASSERT_TRUE(wallet::pg::exec(locker->get(), "COMMIT"));
    auto totals = stack.post(kSlowTotals);
    EXPECT_TRUE(is_result(totals)) << totals.body;
}
