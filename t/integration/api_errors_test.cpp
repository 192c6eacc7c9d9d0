// A table of bad requests, each answered with the right JSON-RPC code and
// HTTP status (decisions.md section 3), with generic messages, the server
// staying up throughout.
#include "support/api_support.hpp"

using namespace api_test;

namespace {

struct BadRequest {
    std::string name;
    std::string http_method;  // POST unless set
    std::string body;
    long status;
    int code;
    std::string message;  // empty: not checked
};

std::string rpc(const std::string& method, const std::string& params) {
    return R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"(","params":)" + params + "}";
}

std::string history(const std::string& params) { return rpc("wallet_history.get_wallet_history", params); }

std::string tamper(std::string cursor) {
    char& c = cursor[cursor.size() / 2];
    c = c == 'A' ? 'B' : 'A';
    return cursor;
}

class ApiErrors : public ::testing::Test {
protected:
    void SetUp() override {
        generate_events(stack.pg(), "alice", 30, 100);
        generate_events(stack.pg(), "bob", 30, 100);
        stack.set_checkpoint(500, "2020-01-02T00:00:00Z");
        stack.start_nginx();
    }

    // A real next_cursor of a query (params without the cursor).
    std::string cursor_of(const std::string& method, const std::string& params) {
        JsonPtr page = stack.result(method, params);
        json_t* next = json_object_get(page.get(), "next_cursor");
        EXPECT_TRUE(json_is_string(next)) << dump(page.get());
        return json_is_string(next) ? json_string_value(next) : "";
    }

    ApiStack stack;
};

}  // namespace

TEST_F(ApiErrors, BadRequestTable) {
    const std::string alice_cursor = cursor_of("wallet_history.get_wallet_history", R"({"account":"alice","limit":2})");
    const std::string bob_cursor = cursor_of("wallet_history.get_wallet_history", R"({"account":"bob","limit":2})");
    const std::string typed_cursor =
        cursor_of("wallet_history.get_wallet_history", R"({"account":"alice","limit":2,"op_types":["transfer"]})");
    const std::string author_cursor = cursor_of("wallet_history.get_author_rewards", R"({"account":"alice","limit":2})");
    const std::string window_cursor = cursor_of(
        "wallet_history.get_wallet_history", R"({"account":"alice","limit":2,"from":"2020-01-01T00:00:00Z"})");
    std::string seventeen_types = "[";
    for (int i = 0; i < 17; ++i) seventeen_types += std::string(i ? "," : "") + "\"transfer\"";
    seventeen_types += "]";
    const std::string big_body = history(R"({"account":"alice","memo":")" + std::string(70 * 1024, 'x') + "\"}");

    const int kParse = -32700, kRequest = -32600, kMethod = -32601, kParams = -32602;
    const std::vector<BadRequest> table = {
        {"bad JSON", "", "{", 200, kParse, "parse error"},
        {"empty body", "", "", 200, kParse, ""},
        {"trailing garbage", "", rpc("wallet_history.get_status", "{}") + " x", 200, kParse, ""},
        {"duplicate keys", "", R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"wallet_history.get_status"})", 200, kParse, ""},
        {"invalid UTF-8", "", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wallet_history.get_status\xff\"}", 200, kParse, ""},
        {"empty batch", "", "[]", 200, kRequest, ""},
        {"batch array", "", "[" + rpc("wallet_history.get_status", "{}") + "]", 200, kRequest, ""},
        {"string envelope", "", "\"hello\"", 200, kRequest, ""},
        {"number envelope", "", "42", 200, kRequest, ""},
        {"null envelope", "", "null", 200, kRequest, ""},
        {"no jsonrpc", "", R"({"id":1,"method":"wallet_history.get_status"})", 200, kRequest, ""},
        {"jsonrpc 1.0", "", R"({"jsonrpc":"1.0","id":1,"method":"wallet_history.get_status"})", 200, kRequest, ""},
        {"jsonrpc number", "", R"({"jsonrpc":2.0,"id":1,"method":"wallet_history.get_status"})", 200, kRequest, ""},
        {"no method", "", R"({"jsonrpc":"2.0","id":1})", 200, kRequest, ""},
        {"method number", "", R"({"jsonrpc":"2.0","id":1,"method":7})", 200, kRequest, ""},
        {"id object", "", R"({"jsonrpc":"2.0","id":{"a":1},"method":"wallet_history.get_status"})", 200, kRequest, ""},
        {"id array", "", R"({"jsonrpc":"2.0","id":[1],"method":"wallet_history.get_status"})", 200, kRequest, ""},
        {"unknown method", "", rpc("wallet_history.get_everything", "{}"), 200, kMethod, "method not found"},
        {"other namespace", "", rpc("condenser_api.get_block", "{}"), 200, kMethod, ""},
        {"prefix only", "", rpc("wallet_history.", "{}"), 200, kMethod, ""},
        {"upper-case method", "", rpc("wallet_history.GET_STATUS", "{}"), 200, kMethod, ""},
        {"params array", "", history(R"(["alice"])"), 200, kParams, ""},
        {"params string", "", history(R"("alice")"), 200, kParams, ""},
        {"missing account", "", history("{}"), 200, kParams, ""},
        {"account number", "", history(R"({"account":12345})"), 200, kParams, "invalid account"},
        {"account too short", "", history(R"({"account":"ab"})"), 200, kParams, "invalid account"},
        {"account too long", "", history(R"({"account":"abcdefghijklmnopq"})"), 200, kParams, "invalid account"},
        {"account upper case", "", history(R"({"account":"Alice"})"), 200, kParams, "invalid account"},
        {"account SQL", "", history(R"({"account":"alice'; DROP TABLE wallet_operation_events;--"})"), 200, kParams, "invalid account"},
        {"account space", "", history(R"({"account":"al ice"})"), 200, kParams, ""},
        {"account empty", "", history(R"({"account":""})"), 200, kParams, ""},
        {"account with NUL", "", history(R"({"account":"ali\u0000ce"})"), 200, kParams, ""},
        {"from words", "", history(R"({"account":"alice","from":"yesterday"})"), 200, kParams, "invalid from"},
        {"from number", "", history(R"({"account":"alice","from":1577836800})"), 200, kParams, ""},
        {"from offset", "", history(R"({"account":"alice","from":"2020-01-01T00:00:00+02:00"})"), 200, kParams, ""},
        {"from no such day", "", history(R"({"account":"alice","from":"2020-02-30T00:00:00Z"})"), 200, kParams, ""},
        {"to bad month", "", history(R"({"account":"alice","to":"2020-13-01T00:00:00Z"})"), 200, kParams, "invalid to"},
        {"to SQL", "", history(R"({"account":"alice","to":"2020-01-01' OR '1'='1"})"), 200, kParams, ""},
        {"reversed range", "", history(R"({"account":"alice","from":"2020-02-01T00:00:00Z","to":"2020-01-01T00:00:00Z"})"), 200, kParams, "invalid date range"},
        {"empty range", "", history(R"({"account":"alice","from":"2020-01-01T00:00:00Z","to":"2020-01-01T00:00:00Z"})"), 200, kParams, ""},
        {"over-long range", "", history(R"({"account":"alice","from":"2019-01-01T00:00:00Z","to":"2020-02-01T00:00:00Z"})"), 200, kParams, "date range too long"},
        {"over-long totals range", "", rpc("wallet_history.get_reward_totals", R"({"account":"alice","from":"2010-01-01T00:00:00Z","to":"2020-01-01T00:00:00Z"})"), 200, kParams, ""},
        {"limit zero", "", history(R"({"account":"alice","limit":0})"), 200, kParams, "invalid limit"},
        {"limit negative", "", history(R"({"account":"alice","limit":-5})"), 200, kParams, "invalid limit"},
        {"limit string", "", history(R"({"account":"alice","limit":"10"})"), 200, kParams, ""},
        {"limit fraction", "", history(R"({"account":"alice","limit":1.5})"), 200, kParams, ""},
        {"limit boolean", "", history(R"({"account":"alice","limit":true})"), 200, kParams, ""},
        {"limit huge real", "", history(R"({"account":"alice","limit":1e300})"), 200, kParams, ""},
        {"cursor number", "", history(R"({"account":"alice","cursor":5})"), 200, kParams, "invalid cursor"},
        {"cursor garbage", "", history(R"({"account":"alice","cursor":"abc"})"), 200, kParams, "invalid cursor"},
        {"cursor empty", "", history(R"({"account":"alice","cursor":""})"), 200, kParams, "invalid cursor"},
        {"cursor tampered", "", history(R"({"account":"alice","limit":2,"cursor":")" + tamper(alice_cursor) + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor truncated", "", history(R"({"account":"alice","limit":2,"cursor":")" + alice_cursor.substr(0, alice_cursor.size() - 3) + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor of another account", "", history(R"({"account":"alice","limit":2,"cursor":")" + bob_cursor + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor of another op_types", "", history(R"({"account":"alice","limit":2,"cursor":")" + typed_cursor + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor of another method", "", rpc("wallet_history.get_curation_rewards", R"({"account":"alice","cursor":")" + author_cursor + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor of another window", "", history(R"({"account":"alice","cursor":")" + window_cursor + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor too long", "", history(R"({"account":"alice","cursor":")" + std::string(1000, 'A') + "\"}"), 200, kParams, "invalid cursor"},
        {"cursor SQL", "", history(R"({"account":"alice","cursor":"' OR 1=1 --"})"), 200, kParams, "invalid cursor"},
        {"op_types string", "", history(R"({"account":"alice","op_types":"transfer"})"), 200, kParams, ""},
        {"op_types empty", "", history(R"({"account":"alice","op_types":[]})"), 200, kParams, ""},
        {"op_types too many", "", history(R"({"account":"alice","op_types":)" + seventeen_types + "}"), 200, kParams, "too many op_types"},
        {"op_types unknown", "", history(R"({"account":"alice","op_types":["vote"]})"), 200, kParams, "unknown op_type"},
        {"op_types number", "", history(R"({"account":"alice","op_types":[1]})"), 200, kParams, ""},
        {"op_types SQL", "", history(R"({"account":"alice","op_types":["transfer'); DELETE FROM wallet_operation_events; --"]})"), 200, kParams, "unknown op_type"},
        {"op_types on author rewards", "", rpc("wallet_history.get_author_rewards", R"({"account":"alice","op_types":["transfer"]})"), 200, kParams, ""},
        {"unknown parameter", "", history(R"({"account":"alice","offset":100})"), 200, kParams, "unknown parameter"},
        {"limit on totals", "", rpc("wallet_history.get_reward_totals", R"({"account":"alice","limit":5})"), 200, kParams, ""},
        {"params on status", "", rpc("wallet_history.get_status", R"({"account":"alice"})"), 200, kParams, ""},
        {"GET", "GET", "", 405, kRequest, "method not allowed"},
        {"PUT", "PUT", history(R"({"account":"alice"})"), 405, kRequest, ""},
        {"DELETE", "DELETE", "", 405, kRequest, ""},
        {"PATCH", "PATCH", history(R"({"account":"alice"})"), 405, kRequest, ""},
        {"oversized body", "", big_body, 413, kRequest, "request too large"},
    };
    ASSERT_GE(table.size(), 60u);

    for (const auto& bad : table) {
        SCOPED_TRACE(bad.name);
        HttpResponse response = bad.http_method.empty() || bad.http_method == "POST"
                                    ? stack.post(bad.body)
                                    : harness::http_request(bad.http_method, stack.nginx().url("/"), bad.body,
                                                            {"Content-Type: application/json"});
        ASSERT_TRUE(response.error.empty()) << response.error;
        EXPECT_EQ(response.status, bad.status);
        EXPECT_EQ(response.headers["content-type"], "application/json");
        JsonPtr parsed = parse_json(response.body);
        json_t* error = json_object_get(parsed.get(), "error");
        ASSERT_TRUE(json_is_object(error)) << response.body;
        EXPECT_EQ(json_integer_value(json_object_get(error, "code")), bad.code) << response.body;
        if (!bad.message.empty()) {
            EXPECT_EQ(str(error, "message"), bad.message);
        }
        EXPECT_EQ(str(parsed.get(), "jsonrpc"), "2.0");
        EXPECT_NE(json_object_get(parsed.get(), "id"), nullptr);
        EXPECT_EQ(json_object_get(parsed.get(), "result"), nullptr);
        // Generic messages: nothing of SQL, PostgreSQL or the request leaks.
        for (const char* leak : {"SQL", "postgres", "wallet_operation_events", "DROP", "select", "syntax"}) {
            EXPECT_EQ(str(error, "message").find(leak), std::string::npos) << str(error, "message");
        }
    }

    // Still up, still correct, and the data untouched.
    EXPECT_EQ(harness::http_request("GET", stack.nginx().url("/health")).status, 200);
    JsonPtr page = stack.result("wallet_history.get_wallet_history", R"({"account":"alice","limit":1000000})");
    EXPECT_EQ(json_array_size(json_object_get(page.get(), "items")), 31u);  // 30 + one self transfer's sender row
    EXPECT_EQ(stack.pg().query("SELECT count(*) FROM wallet_operation_events"), std::vector<std::string>{"62"});
    // The id of a request that could be read comes back with its error.
    auto response = stack.post(R"({"jsonrpc":"2.0","id":"x-9","method":"wallet_history.nope"})");
    EXPECT_EQ(str(parse_json(response.body).get(), "id"), "x-9");
    // No request content in the logs.
    const std::string log = harness::read_file(stack.nginx().error_log());
    EXPECT_EQ(log.find("DROP TABLE"), std::string::npos);
    EXPECT_EQ(log.find("xxxxxxxxxx"), std::string::npos);
}
