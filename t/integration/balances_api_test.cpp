// wallet_history.get_balances reconciled with the node (issue 28). The
// simulator's synthetic chain with its ledger (--ledger) is loaded by
// wallet-backfill (parallel shards, stored out of order) and then the live
// indexer; for every account of the store, every component the node's
// database_api.find_accounts shows equals get_balances at the head (the
// chain's genesis balances, which no operation carries, stored as snapshots
// at block 0: mainnet has none), and at a middle block equals the
// ledger at that block. Also: the completeness errors (a history not from
// block 1, a range of an older decoder: read from the row the writers keep,
// so these also show that the row follows the shards), the bad-input errors, and an event whose
// balance changes the decoder cannot read makes that account's balances an
// error naming the block.
//
// Sizes: 2,000 blocks of 1,000 accounts, snapshots every 500 blocks (the
// backfill's pass to 1,000, the indexer's to 2,000; reads at the head and at
// 1,600 replay the events after a snapshot); one PostgreSQL, one simulator,
// one nginx. Also prints the cost of a get_balances call beside get_status's
// and the balance tables' bytes per event (measurements, not asserted).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <chrono>
#include <cstdio>
#include <thread>

#include "backfill_support.hpp"
#include "ledger.hpp"
#include "support/api_support.hpp"
#include "support/balances_support.hpp"
#include "synthetic_chain.hpp"
#include "wallet/balance_change.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;
using C = wallet::BalanceComponent;

namespace {

constexpr std::uint32_t kHead = 2001;
constexpr std::uint32_t kAccounts = 1000;
constexpr std::uint32_t kBackfillEnd = 1250;
constexpr std::uint32_t kMiddle = 1600;
constexpr std::uint32_t kPeriod = 500;  // CHAIN_BALANCE_SNAPSHOT_BLOCKS: snapshots at 500, 1000, ... 2000
constexpr std::uint64_t kSeed = 28;

const sim::SyntheticChain& chain() {
    static const sim::SyntheticChain instance = [] {
        sim::SyntheticOptions options;
        options.seed = kSeed;
        options.accounts = kAccounts;
        options.ledger = true;
        return sim::SyntheticChain(options);
    }();
    return instance;
}

using balances_test::components_of;

// "1.234" / "12" -> units of the text's own precision.
std::int64_t units_of(const std::string& text) {
    std::string digits;
    for (const char c : text) {
        if (c != '.') digits += c;
    }
    return std::stoll(digits);
}

std::int64_t json_units(json_t* value) {
    if (json_is_integer(value)) return json_integer_value(value);
    if (json_is_string(value)) return units_of(json_string_value(value));
    // A NAI asset {"amount","precision","nai"}: the amount in units.
    return std::stoll(json_string_value(json_object_get(value, "amount")));
}

// The node's find_accounts members of each component.
const std::map<C, const char*>& node_members() {
    static const std::map<C, const char*> members = {
        {C::hive_balance, "balance"},
        {C::hbd_balance, "hbd_balance"},
        {C::hive_savings, "savings_balance"},
        {C::hbd_savings, "savings_hbd_balance"},
        {C::vesting_shares, "vesting_shares"},
        {C::delegated_vests, "delegated_vesting_shares"},
        {C::received_vests, "received_vesting_shares"},
        {C::hive_rewards, "reward_hive_balance"},
        {C::hbd_rewards, "reward_hbd_balance"},
        {C::vests_rewards, "reward_vesting_balance"},
        {C::savings_withdraw_requests, "savings_withdraw_requests"},
        {C::vesting_withdraw_rate, "vesting_withdraw_rate"},
        {C::to_withdraw, "to_withdraw"},
        {C::withdrawn, "withdrawn"},
    };
    return members;
}

class BalancesApi : public ::testing::Test {
protected:
    api_test::ApiStack stack;
    NodeSimulator node{chain_args(kHead, {"--ledger", "--seed", std::to_string(kSeed), "--accounts", std::to_string(kAccounts)})};
    TempDir dir{"wallet-balances-api"};

    std::map<std::string, std::string> chain_env() {
        return {{"CHAIN_RPC_URL", node.url()}, {"CHAIN_HARDFORKS", "genesis"}};
    }

    // get_balances: the balances (component -> units), or the error's message.
    std::map<C, std::int64_t> balances(const std::string& account, std::optional<std::uint32_t> block,
                                       std::string* error = nullptr) {
        std::string params = R"({"account":")" + account + "\"";
        if (block) params += ",\"block\":" + std::to_string(*block);
        auto response = stack.call("wallet_history.get_balances", params + "}");
        std::map<C, std::int64_t> out;
        json_t* result = json_object_get(response.get(), "result");
        if (result == nullptr) {
            json_t* message = json_object_get(json_object_get(response.get(), "error"), "message");
            if (error) *error = message ? json_string_value(message) : api_test::dump(response.get());
            return out;
        }
        EXPECT_EQ(json_integer_value(json_object_get(result, "block")), block ? *block : kHead);
        const char* key = nullptr;
        json_t* value = nullptr;
        json_object_foreach(json_object_get(result, "balances"), key, value) {
            const auto component = wallet::parse_component(key);
            EXPECT_TRUE(component) << key;
            if (component) out[*component] = json_units(value);
        }
        EXPECT_EQ(out.size(), wallet::kBalanceComponentCount);
        return out;
    }

    std::string error_of(const std::string& account, std::optional<std::uint32_t> block = std::nullopt) {
        std::string error;
        const auto answered = balances(account, block, &error);
        EXPECT_TRUE(answered.empty()) << account << " answered balances where an error was expected";
        return error;
    }

    void load() {
        // Parallel shards store out of order; the indexer follows above them.
        std::map<std::string, std::string> env{{"BACKFILL_RPC_URLS", node.url()}, {"BACKFILL_START_BLOCK", "1"},
                                               {"BACKFILL_END_BLOCK", std::to_string(kBackfillEnd)},
                                               {"BACKFILL_SHARD_SIZE", "250"},    {"BACKFILL_BATCH_SIZE", "50"},
                                               {"BACKFILL_WORKERS", "4"},         {"CHAIN_HARDFORKS", "genesis"},
                                               {"CHAIN_BALANCE_SNAPSHOT_BLOCKS", std::to_string(kPeriod)}};
        const auto backfill = run_command({backfill_binary().string()}, daemon_env(stack.pg(), env), 180s);
        ASSERT_EQ(backfill.exit_code, 0) << backfill.output;
        // The pass at the end of backfill: every period of the loaded range.
        EXPECT_EQ(snapshots_through(), kBackfillEnd / kPeriod * kPeriod) << backfill.output;
        Process indexer = Process::start(
            {indexer_binary().string()},
            ProcessOptions{daemon_env(stack.pg(), {{"CHAIN_RPC_URL", node.url()},
                                                   {"CHAIN_HARDFORKS", "genesis"},
                                                   {"CHAIN_BALANCE_SNAPSHOT_BLOCKS", std::to_string(kPeriod)},
                                                   {"INDEXER_START_BLOCK", std::to_string(kBackfillEnd + 1)},
                                                   {"INDEXER_TRAIL_BLOCKS", "0"},
                                                   // To the node's head, where find_accounts answers.
                                                   {"INDEXER_TARGET_IRREVERSIBLE", "false"},
                                                   {"INDEXER_HEALTH_ADDR", ""},
                                                   {"INDEXER_POLL_INTERVAL_MS", "100"},
                                                   {"INDEXER_MAX_BATCH_BLOCKS", "500"}}),
                           {},
                           dir.path() / "indexer.log",
                           {},
                           false});
        const bool indexed = wait_until(
            [&] {
                // The pass follows up to the node's last irreversible block (head - 1).
                const auto rows = stack.pg().query("SELECT coalesce(indexed_block, 0) FROM wallet_store_state");
                return std::stoll(rows.at(0)) >= kHead && snapshots_through() >= (kHead - 1) / kPeriod * kPeriod;
            },
            120s, 50ms);
        indexer.stop(SIGTERM);
        ASSERT_TRUE(indexed) << indexer.log();
    }

    std::uint32_t snapshots_through() {
        return static_cast<std::uint32_t>(std::stoul(stack.pg().query("SELECT through_block FROM wallet_balance_snapshot_state").at(0)));
    }

    std::vector<std::string> stored_accounts() {
        return stack.pg().query("SELECT name FROM wallet_accounts ORDER BY name");
    }
};

TEST_F(BalancesApi, EveryComponentOfEveryAccountEqualsTheNodeAtHeadAndTheLedgerAtAMiddleBlock) {
    stack.start_nginx({{"CHAIN_HARDFORKS", "genesis"}});
    // Nothing indexed yet: an error, never a number.
    EXPECT_EQ(error_of(std::string(chain().account(1))), "nothing is indexed yet");
    // The chain's genesis balances, which no operation carries, as the
    // operator of such a chain stores them: snapshots at block 0 (mainnet has none).
    stack.pg().query(balances_test::genesis_snapshots_sql(chain()));
    load();
    if (HasFatalFailure()) return;

    std::map<std::string, std::uint32_t> index_of;
    for (std::uint32_t index = 0; index < chain().account_count(); ++index) index_of[std::string(chain().account(index))] = index;
    const auto accounts = stored_accounts();
    ASSERT_GT(accounts.size(), 100u);
    // The node's accounts at head, asked in batches.
    std::map<std::string, json_t*> node_accounts;
    std::vector<wallet::JsonPtr> answers;
    for (std::size_t first = 0; first < accounts.size(); first += 1000) {
        std::string names = "[";
        for (std::size_t i = first; i < std::min(accounts.size(), first + 1000); ++i) {
            names += (i > first ? ",\"" : "\"") + accounts[i] + "\"";
        }
        answers.push_back(node.call("database_api.find_accounts", "{\"accounts\":" + names + "]}"));
        json_t* list = json_object_get(json_object_get(answers.back().get(), "result"), "accounts");
        ASSERT_TRUE(json_is_array(list)) << json_text(answers.back().get()).substr(0, 500);
        std::size_t i = 0;
        json_t* account = nullptr;
        json_array_foreach(list, i, account) node_accounts[json_string_value(json_object_get(account, "name"))] = account;
    }

    int compared = 0, differences = 0;
    std::map<C, int> differing;
    for (const auto& name : accounts) {
        const auto found = index_of.find(name);
        ASSERT_NE(found, index_of.end()) << name;
        std::string error;
        const auto answered = balances(name, std::nullopt, &error);
        if (answered.empty() && std::getenv("BALANCES_DEBUG")) std::this_thread::sleep_for(150s);
        ASSERT_FALSE(answered.empty()) << name << ": " << error;
        json_t* node_account = node_accounts.at(name);
        for (const auto& [component, member] : node_members()) {
            const std::int64_t expected = json_units(json_object_get(node_account, member));
            const std::int64_t got = answered.at(component);
            ++compared;
            if (got != expected) {
                ++differing[component];
                if (differences == 0 && std::getenv("BALANCES_DEBUG")) {
                    for (const auto& row : stack.pg().query(
                             "SELECT block_num || ' ' || block_seq || ' ' || op_type || ' ' || role || ' ' || coalesce(counterparty, '-') || ' ' ||"
                             " coalesce(amount::text, '-') || ' ' || coalesce(symbol, '-') || ' ' || coalesce(vesting_amount::text, '-')"
                             " FROM wallet_operation_events WHERE account = '" + name + "' ORDER BY block_num, block_seq")) {
                        std::printf("  %s\n", row.c_str());
                    }
                }
                if (++differences <= 20) {
                    ADD_FAILURE() << name << " " << wallet::component_name(component) << ": node " << expected
                                  << ", get_balances " << got;
                }
            }
        }
        // Every component, those the node does not show too: never below zero.
        for (const auto& [component, value] : answered) EXPECT_GE(value, 0) << name << " " << wallet::component_name(component);
    }
    std::string summary;
    for (const auto& [component, count] : differing) {
        summary += std::string(wallet::component_name(component)) + "=" + std::to_string(count) + " ";
    }
    EXPECT_EQ(differences, 0) << "of " << compared << " compared; by component: " << summary;
    std::printf("reconciled at head: %d components of %zu accounts, %d differences %s\n", compared, accounts.size(),
                differences, summary.c_str());

    // A middle block: the ledger folded to it (the same chain in this process).
    const auto no_fork = [](std::uint32_t) -> std::uint64_t { return 0; };
    const auto at_middle = chain().ledger()->balances_at(chain(), kMiddle, no_fork);
    int middle_differences = 0;
    for (std::size_t i = 0; i < accounts.size(); i += 7) {
        const auto index = index_of.at(accounts[i]);
        const auto answered = balances(accounts[i], kMiddle);
        for (const auto& [component, expected] : components_of(at_middle[index])) {
            if (answered.at(component) != expected && ++middle_differences <= 10) {
                ADD_FAILURE() << accounts[i] << " at " << kMiddle << " " << wallet::component_name(component) << ": ledger "
                              << expected << ", get_balances " << answered.at(component);
            }
        }
    }
    EXPECT_EQ(middle_differences, 0);

    // Measured, not asserted: wall time per call, get_balances at the head
    // beside get_status (the HTTP and JSON-RPC floor) in the same run, and
    // the balance tables' bytes per stored event.
    const auto per_call_us = [&](const auto& call, int count) {
        const auto started = std::chrono::steady_clock::now();
        for (int i = 0; i < count; ++i) call(i);
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count() / count;
    };
    const double status_us = per_call_us([&](int) { stack.call("wallet_history.get_status"); }, 300);
    const double balances_us = per_call_us(
        [&](int i) { stack.call("wallet_history.get_balances", R"({"account":")" + accounts[static_cast<std::size_t>(i * 3) % accounts.size()] + "\"}"); },
        300);
    const double middle_us = per_call_us(
        [&](int i) {
            stack.call("wallet_history.get_balances", R"({"account":")" + accounts[static_cast<std::size_t>(i * 3) % accounts.size()] +
                                                          "\",\"block\":" + std::to_string(kMiddle) + "}");
        },
        300);
    if (std::getenv("BALANCES_PROFILE")) {
        std::string body = stack.pg().query("SELECT prosrc FROM pg_proc WHERE proname = 'wallet_balance_rows'").at(0);
        const auto replace = [&](const std::string& from, const std::string& to) {
            for (auto at = body.find(from); at != std::string::npos; at = body.find(from, at + to.size())) body.replace(at, from.size(), to);
        };
        replace("$1", "'" + accounts[3] + "'");
        replace("$2", std::to_string(kMiddle));
        replace("$3", "32767::smallint");
        for (const auto& line : stack.pg().query("SET jit = off; EXPLAIN (ANALYZE, BUFFERS) " + body)) std::printf("%s\n", line.c_str());
    }
    const auto bytes = stack.pg().query(
        "SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relname IN"
        " ('wallet_balance_snapshots', 'wallet_balance_carried', 'wallet_balance_undecodable', 'wallet_balance_snapshot_state'))::numeric"
        " / (SELECT count(*) FROM wallet_events), (SELECT count(*) FROM wallet_balance_snapshots), (SELECT count(*) FROM wallet_events)");
    std::printf("measured: get_status %.0f us/call, get_balances at head %.0f us/call, at %u %.0f us/call; balance tables %s"
                " (bytes per event, snapshots, events)\n",
                status_us, balances_us, kMiddle, middle_us, bytes.at(0).c_str());

    // Bad input and what the store cannot answer: errors, never a number.
    const std::string someone = accounts.front();
    EXPECT_EQ(error_of(someone, kHead + 5), "block above indexed_block " + std::to_string(kHead));
    EXPECT_EQ(error_of("nobody.here"), "unknown account");
    // An event whose changes the decoder could not read (as the writers list it).
    stack.pg().query("INSERT INTO wallet_balance_undecodable SELECT a.id, 1200, 3, 0, 2, 1, 'test'"
                     " FROM wallet_accounts a WHERE a.name = '" + someone + "'");
    EXPECT_EQ(error_of(someone), "the balance changes of block 1200 (transfer) of " + someone +
                                     " cannot be read by this decoder version: a decoder that reads them must re-run the range");
    EXPECT_FALSE(balances(someone, 1199).empty()) << "below the block, the balances hold";
    stack.pg().query("DELETE FROM wallet_balance_undecodable");
    // A history that does not start at block 1.
    stack.pg().query("UPDATE backfill_shards SET start_block = 2 WHERE start_block = 1");
    EXPECT_EQ(error_of(someone), "the store's history starts at block 2, not 1: a balance needs every block from 1");
    stack.pg().query("UPDATE backfill_shards SET start_block = 1 WHERE start_block = 2");
    EXPECT_FALSE(balances(someone, std::nullopt).empty()) << "the history from block 1 again";
    // A range loaded by an older decoder: refused at and above it, answered below.
    stack.pg().query("UPDATE backfill_shards SET decoder_version = decoder_version - 1 WHERE start_block = 251");
    EXPECT_EQ(error_of(someone), "blocks 251..500 were loaded by an older decoder version: run wallet-backfill over them");
    EXPECT_EQ(error_of(someone, 251), "blocks 251..500 were loaded by an older decoder version: run wallet-backfill over them");
    EXPECT_FALSE(balances(someone, 250).empty()) << "below the outdated range, the balances hold";
    stack.pg().query("UPDATE backfill_shards SET decoder_version = decoder_version + 1 WHERE start_block = 251");
    EXPECT_FALSE(balances(someone, std::nullopt).empty()) << "the range current again";
}

}  // namespace
