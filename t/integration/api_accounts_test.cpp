// Account ids remembered by the worker (WALLET_API_ACCOUNT_CACHE): a page
// uses the id the worker saw for the name while the store is the one it saw
// it on (wallet_store_state.generation), and answers for the name asked
// otherwise. The stores here are changed under a running nginx by renaming
// accounts: the same names then stand for other ids, as in a store recreated
// under the same database name.
#include "support/api_support.hpp"

using namespace api_test;

namespace {

class ApiAccounts : public ::testing::Test {
protected:
    void SetUp() override {
        generate_events(stack.pg(), "alice", 3, 1000);
        generate_events(stack.pg(), "bob", 5, 2000);
    }

    // How many events the first page of `account` holds.
    std::size_t events_of(const std::string& account) {
        JsonPtr page = stack.result("wallet_history.get_wallet_history", R"({"account":")" + account + R"(","limit":100})");
        return json_array_size(json_object_get(page.get(), "items"));
    }

    // How many events the store holds for the account of that name now.
    std::size_t stored(const std::string& account) {
        return std::stoul(stack.pg().query("SELECT count(*) FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                                           " WHERE a.name = '" + account + "'").at(0));
    }

    // alice's history becomes bob's and bob's alice's (ids follow the rows).
    void swap_alice_and_bob() {
        stack.pg().query("UPDATE wallet_accounts SET name = 'swap' WHERE name = 'alice';"
                         "UPDATE wallet_accounts SET name = 'alice' WHERE name = 'bob';"
                         "UPDATE wallet_accounts SET name = 'bob' WHERE name = 'swap'");
    }

    void new_generation() { stack.pg().query("UPDATE wallet_store_state SET generation = generation + 1"); }

    ApiStack stack;
};

}  // namespace

// The remembered id is what the page uses: with the generation unchanged (a
// real store never renames), alice still answers with the id remembered for
// her; once the generation differs, the name's own account answers.
TEST_F(ApiAccounts, ARememberedIdIsUsedOnlyOnTheStoreItCameFrom) {
    stack.start_nginx();
    const std::size_t alices = stored("alice");
    const std::size_t bobs = stored("bob");
    ASSERT_NE(alices, bobs);
    EXPECT_EQ(events_of("alice"), alices);
    EXPECT_EQ(events_of("bob"), bobs);
    swap_alice_and_bob();
    EXPECT_EQ(events_of("alice"), alices);  // remembered
    new_generation();
    EXPECT_EQ(events_of("alice"), bobs);
    EXPECT_EQ(events_of("bob"), alices);
    // And what the other store's answer taught the worker holds from then on.
    EXPECT_EQ(events_of("alice"), bobs);
}

// A store dropped and created again under the same database name, nginx
// running all along: the new store's generation is another random number,
// and its ids are assigned anew (here in the other order).
TEST_F(ApiAccounts, AStoreRecreatedUnderTheSameNameAnswersByName) {
    stack.start_nginx();
    EXPECT_EQ(events_of("alice"), stored("alice"));
    EXPECT_EQ(events_of("bob"), stored("bob"));
    stack.pg().query("DROP DATABASE wallet WITH (FORCE)", "postgres");
    stack.pg().provision("wallet");
    generate_events(stack.pg(), "bob", 5, 2000);  // bob first: he gets alice's old id
    generate_events(stack.pg(), "alice", 2, 1000);
    ASSERT_NE(stored("alice"), stored("bob"));
    // The pool reconnects (its connections were terminated: a statement may
    // fail meanwhile); each name then pages its own account.
    for (int attempt = 0; attempt < 50; ++attempt) {
        const HttpResponse answer = stack.post(
            R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"carol"}})");
        if (answer.body.find("\"result\"") != std::string::npos) break;
    }
    EXPECT_EQ(events_of("alice"), stored("alice"));
    EXPECT_EQ(events_of("bob"), stored("bob"));
}

// With room for one name, paging bob makes the worker forget alice: she is
// looked up by name again (and so answers as her name's account even on an
// unchanged generation). Unknown names are never remembered: an account
// that appears later is found.
TEST_F(ApiAccounts, TheWorkerRemembersAtMostItsBoundAndNoUnknownName) {
    stack.start_nginx({{"WALLET_API_ACCOUNT_CACHE", "1"}});
    EXPECT_EQ(events_of("alice"), stored("alice"));
    EXPECT_EQ(events_of("bob"), stored("bob"));  // alice is forgotten
    swap_alice_and_bob();
    EXPECT_EQ(events_of("alice"), stored("alice"));  // looked up
    EXPECT_EQ(events_of("carol"), 0U);
    generate_events(stack.pg(), "carol", 4, 3000);
    EXPECT_EQ(events_of("carol"), stored("carol"));
    EXPECT_GT(stored("carol"), 0U);
}
