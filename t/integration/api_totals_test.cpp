// get_reward_totals is exact: the daily aggregates of migration 0002 always
// equal the raw sums of wallet_operation_events (after inserts, re-inserts,
// updates and fork deletes), and the API's window totals (whole days from the
// aggregates, partial days from raw rows) equal a direct SQL sum.
#include "support/api_support.hpp"

using namespace api_test;

namespace {

class ApiTotals : public ::testing::Test {
protected:
    void SetUp() override {
        // Three bursts of rewards; the first crosses midnight.
        generate_events(stack.pg(), "rewarded", 3000, 1000, "2020-01-01T23:30:00Z");
        generate_events(stack.pg(), "rewarded", 2000, 5000, "2020-01-05T12:00:00Z");
        generate_events(stack.pg(), "rewarded", 2000, 9000, "2020-03-01T00:00:00Z");
        generate_events(stack.pg(), "other", 500, 1000, "2020-01-02T00:00:00Z");
        stack.set_checkpoint(20000, "2020-03-02T00:00:00Z");
        stack.start_nginx();
    }

    // Rows of the aggregates that differ from the raw sums (both directions).
    std::vector<std::string> aggregate_differences() {
        // Per UTC day, and per account and op type (the lifetime row, day 'infinity').
        const std::string raw_vesting =
            "SELECT account, op_type, d, count(*)::bigint, coalesce(sum(vesting_amount), 0) "
            "FROM wallet_operation_events, LATERAL (VALUES ((\"timestamp\" AT TIME ZONE 'UTC')::date), "
            "('infinity'::date)) AS k(d) "
            "WHERE op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward') GROUP BY 1, 2, 3";
        const std::string agg_vesting = "SELECT a.name, wallet_op_type_name(d.op_type), d.day, d.event_count, d.vesting_sum"
                                        " FROM wallet_reward_daily d JOIN wallet_accounts a ON a.id = d.account_id";
        const std::string raw_liquid =
            "SELECT r.account, r.op_type, d, l.symbol, sum(l.amount) "
            "FROM wallet_operation_events r, wallet_reward_liquid_parts(r.assets) l, "
            "LATERAL (VALUES ((r.\"timestamp\" AT TIME ZONE 'UTC')::date), ('infinity'::date)) AS k(d) "
            "WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward') GROUP BY 1, 2, 3, 4";
        const std::string agg_liquid = "SELECT a.name, wallet_op_type_name(d.op_type), d.day, d.symbol, d.amount_sum"
                                       " FROM wallet_reward_liquid_daily d JOIN wallet_accounts a ON a.id = d.account_id";
        auto out = stack.pg().query("(" + raw_vesting + " EXCEPT " + agg_vesting + ") UNION ALL (" + agg_vesting +
                                    " EXCEPT " + raw_vesting + ")");
        auto liquid = stack.pg().query("(" + raw_liquid + " EXCEPT " + agg_liquid + ") UNION ALL (" + agg_liquid +
                                       " EXCEPT " + raw_liquid + ")");
        out.insert(out.end(), liquid.begin(), liquid.end());
        return out;
    }

    // Compares the API's totals with SQL over the raw rows of the window.
    void expect_api_equals_raw(const std::string& account, const std::optional<std::string>& from,
                               const std::optional<std::string>& to) {
        SCOPED_TRACE(account + " " + from.value_or("-") + " " + to.value_or("-"));
        std::string params = R"({"account":")" + account + "\"";
        std::string where = "account = '" + account + "'";
        if (from) {
            params += R"(,"from":")" + *from + "\"";
            where += " AND \"timestamp\" >= '" + *from + "'";
        }
        if (to) {
            params += R"(,"to":")" + *to + "\"";
            where += " AND \"timestamp\" < '" + *to + "'";
        }
        params += "}";
        JsonPtr result = stack.result("wallet_history.get_reward_totals", params);
        json_t* totals = json_object_get(result.get(), "totals");
        for (const char* type : {"author_reward", "curation_reward", "comment_benefactor_reward"}) {
            SCOPED_TRACE(type);
            auto raw = stack.pg().query("SELECT count(*), coalesce(sum(vesting_amount), 0)::numeric(38,6) "
                                        "FROM wallet_operation_events WHERE " + where + " AND op_type = '" + type + "'");
            json_t* t = json_object_get(totals, type);
            EXPECT_EQ(std::to_string(json_integer_value(json_object_get(t, "count"))) + "\t" + str(t, "vesting_amount"),
                      raw.at(0));
            auto liquid = stack.pg().query(
                "SELECT l.symbol || '=' || sum(l.amount)::numeric(38,3) FROM wallet_operation_events r, "
                "wallet_reward_liquid_parts(r.assets) l WHERE " + where + " AND r.op_type = '" + type +
                "' GROUP BY l.symbol ORDER BY l.symbol");
            std::vector<std::string> api_liquid;
            size_t i = 0;
            json_t* entry = nullptr;
            json_array_foreach(json_object_get(t, "liquid"), i, entry) {
                api_liquid.push_back(str(entry, "symbol") + "=" + str(entry, "amount"));
            }
            EXPECT_EQ(api_liquid, liquid);
        }
    }

    void expect_windows_exact() {
        expect_api_equals_raw("rewarded", std::nullopt, std::nullopt);
        expect_api_equals_raw("rewarded", "2020-01-01T23:45:10Z", "2020-01-05T12:20:01Z");  // partial days both ends
        expect_api_equals_raw("rewarded", "2020-01-02T00:00:00Z", "2020-01-06T00:00:00Z");  // whole days only
        expect_api_equals_raw("rewarded", "2020-01-01T23:50:00Z", "2020-01-02T00:10:00Z");  // within two days
        expect_api_equals_raw("rewarded", "2020-01-05T12:00:03Z", "2020-01-05T12:30:00Z");  // within one day
        expect_api_equals_raw("rewarded", "2020-01-05T12:10:00Z", std::nullopt);
        expect_api_equals_raw("rewarded", std::nullopt, "2020-03-01T00:40:00Z");
        expect_api_equals_raw("rewarded", "2020-01-02T00:00:00Z", std::nullopt);
        expect_api_equals_raw("rewarded", std::nullopt, "2020-01-06T00:00:00Z");
        expect_api_equals_raw("other", std::nullopt, std::nullopt);
        expect_api_equals_raw("nobody", std::nullopt, std::nullopt);
    }

    ApiStack stack;
};

}  // namespace

TEST_F(ApiTotals, AggregatesEqualRawSumsThroughInsertsUpdatesAndDeletes) {
    EXPECT_EQ(aggregate_differences(), std::vector<std::string>{});
    ASSERT_GT(std::stoi(stack.pg().query("SELECT count(*) FROM wallet_reward_daily").at(0)), 3);
    EXPECT_EQ(stack.pg().query("SELECT count(*) FROM wallet_reward_daily WHERE day = 'infinity'"),
              std::vector<std::string>{"4"});  // author and curation rewards of two accounts
    expect_windows_exact();

    // Re-inserting the same rows (an idempotent re-run) changes nothing.
    generate_events(stack.pg(), "rewarded", 2000, 5000, "2020-01-05T12:00:00Z");
    stack.pg().query("INSERT INTO wallet_operation_events SELECT * FROM wallet_operation_events "
                     "WHERE account = 'other' ON CONFLICT DO NOTHING");
    EXPECT_EQ(aggregate_differences(), std::vector<std::string>{});

    // A fork: everything above a block goes; a day partly emptied, another emptied.
    stack.pg().query("DELETE FROM wallet_operation_events WHERE block_num > 9200");
    EXPECT_EQ(aggregate_differences(), std::vector<std::string>{});
    stack.pg().query("DELETE FROM wallet_operation_events WHERE account = 'rewarded' AND block_num BETWEEN 5000 AND 5099");
    EXPECT_EQ(aggregate_differences(), std::vector<std::string>{});
    // Corrections by UPDATE (amount and day) are followed too.
    stack.pg().query("UPDATE wallet_operation_events SET vesting_amount = vesting_amount + 1.000001, "
                     "\"timestamp\" = \"timestamp\" + interval '1 day' WHERE account = 'rewarded' AND block_num < 1100");
    EXPECT_EQ(aggregate_differences(), std::vector<std::string>{});
    expect_windows_exact();

    // Emptied days leave no rows behind.
    stack.pg().query("DELETE FROM wallet_operation_events WHERE account = 'other'");
    EXPECT_EQ(stack.pg().query("SELECT count(*) FROM wallet_reward_daily d JOIN wallet_accounts a ON a.id = d.account_id"
                               " WHERE a.name = 'other'"),
              std::vector<std::string>{"0"});
    EXPECT_EQ(stack.pg().query("SELECT count(*) FROM wallet_reward_liquid_daily d JOIN wallet_accounts a"
                               " ON a.id = d.account_id WHERE a.name = 'other'"),
              std::vector<std::string>{"0"});
    EXPECT_EQ(aggregate_differences(), std::vector<std::string>{});
    stack.pg().query("TRUNCATE wallet_events");
    EXPECT_EQ(stack.pg().query("SELECT count(*) FROM wallet_reward_daily"), std::vector<std::string>{"0"});
}
