// The database pool's pipelining: when every connection is busy, statements
// queue on a connection behind the one it runs. Each answer must still reach
// its own request, one statement's error must not touch its neighbours, and
// statements queued behind a slow one are taken back and answered elsewhere.
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

std::size_t count_in_error_log(ApiStack& stack, const std::string& text) {
    const std::string log = harness::read_file(stack.nginx().error_log());
    std::size_t n = 0;
    for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
}

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

// One connection: everything concurrent goes through its pipeline. The
// answers, byte for byte, are those of the same requests sent one at a time.
TEST(ApiPipeline, AnswersReachTheirOwnRequestsThroughOneConnection) {
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

// One connection, a statement that times out with others queued on the same
// connection: only it fails, the others answer, and its statement (whose
// PREPARE never completed) works on that connection afterwards.
TEST(ApiPipeline, OneStatementsErrorLeavesItsNeighboursAlone) {
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

// Two connections, one held by a slow statement: requests that were queued
// behind it are taken back and answered by the other connection while the
// slow one still waits.
TEST(ApiPipeline, StatementsQueuedBehindASlowOneAreAnsweredElsewhere) {
    ApiStack stack;
    fill_accounts(stack);
    stack.start_nginx({{"WALLET_API_DB_MAX_CONNS", "2"},
                       {"WALLET_API_MAX_INFLIGHT", "0"},
                       {"WALLET_API_STATEMENT_TIMEOUT_MS", "60000"},
                       {"WALLET_API_REQUEST_DEADLINE_MS", "60000"}},
                      1);
    const std::string kMoved = "statements moved away from a slow one";
    // Whether a page lands behind the slow statement depends on arrival
    // times; attempts repeat until one did (each attempt checks everything).
    for (int attempt = 0; attempt < 8 && count_in_error_log(stack, kMoved) == 0; ++attempt) {
        {
            std::vector<std::future<HttpResponse>> warm;  // both connections open, both statements prepared
            for (int i = 0; i < 8; ++i) {
                warm.push_back(std::async(std::launch::async, [&stack, i] { return stack.post(page_body(i)); }));
            }
            for (auto& w : warm) ASSERT_TRUE(is_result(w.get()));
        }
        auto locker = wallet::pg::connect(stack.pg().superuser_url("wallet"));
        ASSERT_TRUE(locker) << locker.error();
        ASSERT_TRUE(wallet::pg::exec(locker->get(), "BEGIN; LOCK TABLE wallet_reward_daily IN ACCESS EXCLUSIVE MODE"));

        auto slow = std::async(std::launch::async, [&] { return stack.post(kSlowTotals); });
        std::vector<std::future<HttpResponse>> pages;
        for (int i = 0; i < 30; ++i) {
            pages.push_back(std::async(std::launch::async, [&stack, i] { return stack.post(page_body(i)); }));
        }
        // Every page is answered while the lock is still held (a page stuck
        // behind the slow statement would wait for the COMMIT below).
        std::size_t answered = 0;
        for (auto& page : pages) answered += page.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
        EXPECT_EQ(answered, pages.size()) << "pages stuck behind the slow statement";
        EXPECT_EQ(slow.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
        ASSERT_TRUE(wallet::pg::exec(locker->get(), "COMMIT"));
        for (auto& page : pages) {
            auto r = page.get();
            EXPECT_TRUE(is_result(r)) << r.body;
        }
        auto totals = slow.get();
        EXPECT_TRUE(is_result(totals)) << totals.body;
    }
    EXPECT_GT(count_in_error_log(stack, kMoved), 0u) << "no page was ever queued behind the slow statement";
}
