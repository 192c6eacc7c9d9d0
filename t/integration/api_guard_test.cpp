// No C++ exception reaches nginx's event loop from the wallet_history API
// (issue 32, point 3): an allocation failure injected into a statement's
// completion (WALLET_FAULT_INJECT, a test build's fault points:
// ngx_module/ngx_wallet_guard.hpp) is answered with a JSON-RPC internal
// error; the worker lives on (same pid), the exception is counted in
// /metrics, and the next request is served.
#include "support/api_support.hpp"

using namespace api_test;

#ifdef WALLET_FAULT_INJECTION

// The content handler, then a statement's completion.
TEST(ApiGuard, RequestAndStatementCompletionAnswerAnInternalError) {
    ApiStack stack;
    generate_events(stack.pg(), "alice", 10, 100);
    stack.start_nginx({{"WALLET_FAULT_INJECT", "api.request,api.query_done"}});
    ASSERT_TRUE(harness::wait_until([&] { return stack.nginx().worker_pids().size() == 1; }));
    const std::vector<pid_t> workers = stack.nginx().worker_pids();
    const std::string history =
        R"({"jsonrpc":"2.0","id":5,"method":"wallet_history.get_wallet_history","params":{"account":"alice"}})";

    for (const char* where : {"request", "statement completion"}) {
        auto failed = stack.post(history);
        EXPECT_EQ(failed.status, 200) << failed.body;
        JsonPtr error = parse_json(failed.body);
        json_t* e = json_object_get(error.get(), "error");
        EXPECT_EQ(json_integer_value(json_object_get(e, "code")), -32603) << where << ": " << failed.body;
        EXPECT_EQ(str(e, "message"), "internal error");
        EXPECT_NE(harness::read_file(stack.nginx().error_log())
                      .find(std::string("exception in wallet_history: ") + where + ": std::bad_alloc"),
                  std::string::npos)
            << where;
    }

    EXPECT_EQ(stack.nginx().worker_pids(), workers);
    auto metrics = harness::http_request("GET", stack.nginx().url("/metrics"));
    EXPECT_NE(metrics.body.find("\nwallet_module_handler_exceptions_total 2\n"), std::string::npos) << metrics.body;
    // The statement's request is counted with its outcome (the other one had no method yet).
    EXPECT_NE(metrics.body.find(R"(get_wallet_history",outcome="internal_error"} 1)"), std::string::npos);
    auto served = stack.post(history);
    EXPECT_EQ(served.status, 200);
    EXPECT_NE(served.body.find("\"result\""), std::string::npos) << served.body;
}

#else

TEST(ApiGuard, NeedsFaultInjection) {
    GTEST_SKIP() << "the module is built without WALLET_FAULT_INJECTION (the presets turn it on)";
}

#endif
