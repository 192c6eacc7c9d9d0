// The page statements evaluate SQL functions on every row they return (codes
// to names, stored forms to the API's). PostgreSQL inlines such a function
// into the statement only when its body is no more volatile than declared;
// one that is not inlined runs through the SQL function executor once per
// row, several times the cost of the expression (migration 0011). The
// generic plan of every page statement must show none of them as a call.
#include "support/api_support.hpp"

#include "api_sql.hpp"

using namespace api_test;
using harness::PostgresServer;

namespace {

std::string literal(const std::optional<std::string>& value) {
    if (!value) return "NULL";
    std::string out = "'";
    for (char c : *value) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

std::string generic_plan(const PostgresServer& pg, const wallet::api::PageQuery& query, const std::string& options,
                         const std::optional<wallet::api::RememberedAccount>& remembered = std::nullopt) {
    const wallet::api::StatementCall call = wallet::api::page_statement(query, remembered);
    std::string execute = "EXPLAIN (" + options + ") EXECUTE " + std::string(call.name) + "(";
    for (std::size_t i = 0; i < call.params.size(); ++i) execute += (i ? ", " : "") + literal(call.params[i]);
    execute += ")";
    const auto lines = pg.query("PREPARE " + std::string(call.name) + " " +
                                wallet::api::prepared_statements().at(call.name) +
                                "; SET plan_cache_mode = force_generic_plan; " + execute);
    std::string plan;
    for (const auto& line : lines) plan += line + "\n";
    return plan;
}

}  // namespace

TEST(ApiPlan, PageStatementsInlineTheirPerRowFunctions) {
    PostgresServer pg;
    pg.provision();
    wallet::api::PageQuery default_types;
    default_types.account = "alice";
    wallet::api::PageQuery all_types = default_types;
    all_types.all_types = true;
    wallet::api::PageQuery one_type = default_types;
    one_type.op_types = {"transfer"};
    wallet::api::PageQuery two_types = default_types;
    two_types.op_types = {"author_reward", "transfer"};
    for (const auto& query : {default_types, all_types, one_type, two_types}) {
        const std::string plan = generic_plan(pg, query, "VERBOSE");
        ASSERT_NE(plan.find("Output:"), std::string::npos) << plan;
        for (const char* function : {"wallet_assets_triples(", "wallet_role_name(", "wallet_op_type_name(",
                                     "wallet_trx_id_text("}) {
            EXPECT_EQ(plan.find(function), std::string::npos) << function << " is called per row:\n" << plan;
        }
    }
}

// A next page returns stored_block (what a standby holds, for its cursor
// check: docs/scaling-out.md). Only a standby's answer is judged by it, so a
// primary does not read it: the lookup costs a page three to four buffers
// (t/bench/run scale, buffers_per_page).
TEST(ApiPlan, APrimarysNextPageDoesNotLookUpTheStoredBlock) {
    PostgresServer pg;
    pg.provision();
    wallet::api::PageQuery next_page;
    next_page.account = "alice";
    next_page.after = wallet::CursorPosition{*wallet::Timestamp::parse("2020-01-01T00:00:00Z"), 10, 2, "sender"};
    const std::string plan = generic_plan(pg, next_page, "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF");
    const auto blocks = plan.find("wallet_blocks");
    ASSERT_NE(blocks, std::string::npos) << plan;
    const auto line_end = plan.find('\n', blocks);
    EXPECT_NE(plan.substr(blocks, line_end - blocks).find("never executed"), std::string::npos) << plan;
}

// The plan line of the lookup of the account's name (the hash index on
// wallet_accounts.name), with its execution counts.
std::string name_lookup_line(const std::string& plan) {
    const auto at = plan.find("wallet_accounts_name");
    if (at == std::string::npos) return "";
    return plan.substr(at, plan.find('\n', at) - at);
}

// A worker that remembers the account's id with the store's generation
// sends both, and the page does not look the name up (the two buffers of the
// hash index and the row: t/bench/run scale, buffers_per_page); with another
// store's generation it does, and pages the name's account.
TEST(ApiPlan, ARememberedAccountIdSkipsTheNameLookupOnlyOnItsStore) {
    PostgresServer pg;
    pg.provision();
    pg.query("INSERT INTO wallet_accounts (id, name) VALUES (7, 'alice')");
    const long long generation = std::stoll(pg.query("SELECT generation FROM wallet_store_state").at(0));
    wallet::api::PageQuery first_page;
    first_page.account = "alice";
    wallet::api::PageQuery curation = first_page;
    curation.op_types = {"curation_reward"};
    const char* options = "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF";
    for (const auto& query : {first_page, curation}) {
        const std::string warm = generic_plan(pg, query, options, wallet::api::RememberedAccount{7, generation});
        const std::string line = name_lookup_line(warm);
        ASSERT_FALSE(line.empty()) << warm;
        EXPECT_NE(line.find("never executed"), std::string::npos) << warm;
        // The state row is read once per page.
        const auto state = warm.find("Scan on wallet_store_state");
        EXPECT_NE(state, std::string::npos) << warm;
        EXPECT_EQ(warm.find("Scan on wallet_store_state", state + 1), std::string::npos) << warm;
        const std::string other_store =
            generic_plan(pg, query, options, wallet::api::RememberedAccount{7, generation + 1});
        EXPECT_EQ(name_lookup_line(other_store).find("never executed"), std::string::npos) << other_store;
        const std::string cold = generic_plan(pg, query, options);
        EXPECT_EQ(name_lookup_line(cold).find("never executed"), std::string::npos) << cold;
    }
}
