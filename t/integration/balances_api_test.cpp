// wallet_history.get_balances reconciled with the node (issue 28). The
// simulator's synthetic chain with its ledger (--ledger) is loaded by
// wallet-backfill (parallel shards, stored out of order) and then the live
// indexer; for every account of the store, every component the node's
// database_api.find_accounts shows equals get_balances at the head (the
// chain's genesis balances, which no operation carries, stored as change
// runs without events at block 0: mainnet has none), and at a middle block equals the
// ledger at that block. Also: the completeness errors (a history not from
// block 1, a range of an older decoder: read from the row the writers keep,
// so these also show that the row follows the shards), the bad-input errors, and an event whose
// balance changes the decoder cannot read makes that account's balances an
// error naming the block.
//
// Sizes: 2,000 blocks of 1,000 accounts, the balance pass's period 500 blocks
// (the backfill's pass to 1,000, the indexer's to 2,000; reads at 1,600 take
// one change run, at the head the events after the last run replayed); one PostgreSQL, one simulator,
// one nginx. Also prints the cost of a get_balances call beside get_status's
// and the balance tables' bytes per event (measurements, not asserted).
#include <gtest/gtest.h>

#include <algorithm>
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
#include "wallet/balance_runs.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;
using C = wallet::BalanceComponent;

namespace {

constexpr std::uint32_t kHead = 2001;
constexpr std::uint32_t kAccounts = 1000;
constexpr std::uint32_t kBackfillEnd = 1250;
constexpr std::uint32_t kMiddle = 1600;
constexpr std::uint32_t kPeriod = 500;  // CHAIN_BALANCE_SNAPSHOT_BLOCKS: runs end at 500, 1000, ... 2000
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

    // get_balance_history: one component's changes, oldest first (every page
    // of `limit`, as the cursors lead), each as its JSON text too.
    struct Change {
        std::int64_t block = 0, prev = 0, balance = 0, change = 0;
        std::string text, timestamp, event_account;
    };
    std::vector<Change> history(const std::string& account, C component, int limit, const std::string& window = "") {
        std::vector<Change> out;
        std::string cursor;
        for (int page = 0; page < 100000; ++page) {
            std::string params = R"({"account":")" + account + R"(","component":")" +
                                 std::string(wallet::component_name(component)) + R"(","limit":)" + std::to_string(limit) + window;
            if (!cursor.empty()) params += R"(,"cursor":")" + cursor + "\"";
            auto response = stack.call("wallet_history.get_balance_history", params + "}");
            json_t* result = json_object_get(response.get(), "result");
            if (result == nullptr) {
                ADD_FAILURE() << api_test::dump(response.get());
                break;
            }
            std::size_t i = 0;
            json_t* item = nullptr;
            json_array_foreach(json_object_get(result, "items"), i, item) {
                out.push_back({json_integer_value(json_object_get(item, "block_num")),
                               json_units(json_object_get(item, "prev_balance")), json_units(json_object_get(item, "balance")),
                               json_units(json_object_get(item, "balance_change")), api_test::dump(item),
                               api_test::str(item, "timestamp"),
                               std::to_string(json_integer_value(json_object_get(item, "block_seq"))) + " " +
                                   api_test::str(item, "event_account")});
            }
            json_t* next = json_object_get(result, "next_cursor");
            if (!json_is_string(next)) break;
            cursor = json_string_value(next);
        }
        std::reverse(out.begin(), out.end());
        return out;
    }

    // A method's error message (empty when it answered).
    std::string method_error(const std::string& method, const std::string& params) {
        auto response = stack.call(method, params);
        json_t* message = json_object_get(json_object_get(response.get(), "error"), "message");
        return message ? json_string_value(message) : std::string();
    }

    // The stored time of a block (and `seconds` after it), as a request names it.
    std::string block_time(std::uint32_t block, int seconds = 0) {
        return stack.pg()
            .query("SELECT to_char((ts + " + std::to_string(seconds) +
                   " * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM wallet_blocks"
                   " WHERE block_num = " + std::to_string(block))
            .at(0);
    }

    // get_balances at a time: the result's block, timestamp and balances
    // (as JSON text), or the error's message.
    struct AtTime {
        std::int64_t block = 0;
        std::string timestamp, balances, error;
    };
    AtTime at_time(const std::string& account, const std::string& time) {
        auto response = stack.call("wallet_history.get_balances",
                                   R"({"account":")" + account + R"(","time":")" + time + "\"}");
        json_t* result = json_object_get(response.get(), "result");
        if (result == nullptr) return {0, "", "", api_test::str(json_object_get(response.get(), "error"), "message")};
        return {json_integer_value(json_object_get(result, "block")), api_test::str(result, "timestamp"),
                api_test::dump(json_object_get(result, "balances")), ""};
    }
    std::string balances_text(const std::string& account, std::uint32_t block) {
        auto result = stack.result("wallet_history.get_balances",
                                   R"({"account":")" + account + R"(","block":)" + std::to_string(block) + "}");
        return api_test::dump(json_object_get(result.get(), "balances"));
    }

    // get_balances at a time equals get_balances at the block it names: the
    // last block at or before the time (on this chain every block holds an
    // event, 3 s apart), at a block's time and between two blocks, in the
    // request forms `from` accepts; and the bad times' errors.
    void check_balances_at_time(const std::vector<std::string>& accounts) {
        int compared = 0;
        for (const std::uint32_t block : {1u, 250u, 1000u, kMiddle, kHead}) {
            for (const int seconds : {0, 1, 2}) {
                if (block == kHead && seconds > 0) continue;  // after indexed_time: below
                const std::string time = block_time(block, seconds), stored = block_time(block);
                for (std::size_t a = 0; a < accounts.size(); a += 211) {
                    SCOPED_TRACE(accounts[a] + " at " + time);
                    const auto got = at_time(accounts[a], time);
                    EXPECT_EQ(got.error, "");
                    EXPECT_EQ(got.block, block);
                    EXPECT_EQ(got.timestamp, stored);
                    EXPECT_EQ(got.balances, balances_text(accounts[a], block));
                    ++compared;
                }
            }
        }
        std::printf("get_balances at a time: %d answers equal to those at their block\n", compared);
        const std::string someone = accounts.front();
        std::string node_form = block_time(kMiddle, 1);
        node_form.pop_back();
        EXPECT_EQ(at_time(someone, node_form).block, kMiddle) << "the node's form, without Z";
        EXPECT_EQ(at_time(someone, node_form + ".000Z").block, kMiddle) << "JavaScript's toISOString";
        const std::string of = R"({"account":")" + someone + "\"";
        const auto error = [&](const std::string& params) { return method_error("wallet_history.get_balances", of + params + "}"); };
        EXPECT_EQ(error(R"(,"block":5,"time":")" + block_time(5) + "\""), "block and time together: give one");
        EXPECT_EQ(error(R"(,"time":"yesterday")"), "invalid time");
        EXPECT_EQ(error(R"(,"time":"2016-03-24 16:05:00")"), "invalid time");
        EXPECT_EQ(error(R"(,"time":1458835500)"), "invalid time");
        EXPECT_EQ(at_time(someone, block_time(kHead, 1)).error, "time after indexed_time " + block_time(kHead));
        EXPECT_EQ(at_time(someone, block_time(1, -1)).error, "time before the store's first block 1 (" + block_time(1) + ")");
        EXPECT_EQ(at_time("nobody.here", block_time(kMiddle)).error, "unknown account");
        EXPECT_EQ(method_error("wallet_history.get_delegations", of + R"(,"time":")" + block_time(5) + "\"}"),
                  "unknown parameter");
    }

    // get_balance_history of every component of a sample of accounts: each
    // change starts where the previous one ended, and the history replayed
    // from the first change equals get_balances at every 250th block; pages
    // of 37 give the rows of pages of 200; the bad inputs' errors.
    void check_balance_history(const std::vector<std::string>& accounts) {
        std::vector<std::uint32_t> blocks;
        for (std::uint32_t block = 250; block < kHead; block += 250) blocks.push_back(block);
        blocks.push_back(kHead);
        std::string busiest;
        std::size_t busiest_changes = 0;
        int compared = 0;
        for (std::size_t a = 0; a < accounts.size(); a += 170) {
            const std::string& name = accounts[a];
            std::map<std::uint32_t, std::map<C, std::int64_t>> at;
            for (const auto block : blocks) at[block] = balances(name, block);
            for (std::size_t index = 0; index < wallet::kBalanceComponentCount; ++index) {
                const auto component = static_cast<C>(index);
                SCOPED_TRACE(name + " " + std::string(wallet::component_name(component)));
                const auto changes = history(name, component, 200);
                for (std::size_t i = 0; i < changes.size(); ++i) {
                    EXPECT_EQ(changes[i].balance - changes[i].prev, changes[i].change) << changes[i].text;
                    EXPECT_NE(changes[i].change, 0) << changes[i].text;
                    if (i > 0) {
                        EXPECT_EQ(changes[i].prev, changes[i - 1].balance) << changes[i].text;
                        EXPECT_GE(changes[i].block, changes[i - 1].block) << changes[i].text;
                    }
                }
                for (const auto block : blocks) {
                    // The last change at or below the block, else the value before the first.
                    std::int64_t replayed = changes.empty() ? at.at(kHead).at(component) : changes.front().prev;
                    for (const auto& change : changes) {
                        if (change.block <= block) replayed = change.balance;
                    }
                    EXPECT_EQ(replayed, at.at(block).at(component)) << "at block " << block;
                    ++compared;
                }
            }
        }
        // The account with the most events: its pages.
        busiest = stack.pg()
                      .query("SELECT a.name FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                             " GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT 1")
                      .at(0);
        busiest_changes = history(busiest, C::hive_balance, 200).size();
        ASSERT_GT(busiest_changes, 10u);
        std::printf("balance history: %d values replayed and compared\n", compared);
        // Paging forward with the cursor gives the rows of one big page.
        for (const C component : {C::hive_balance, C::vesting_shares}) {
            const auto big = history(busiest, component, 200);
            const auto small = history(busiest, component, 37);
            ASSERT_EQ(big.size(), small.size()) << wallet::component_name(component);
            for (std::size_t i = 0; i < big.size(); ++i) EXPECT_EQ(big[i].text, small[i].text);
        }

        // Pages from the change runs (migration 0029): pages of the wallet page's 25 (cursors inside closed
        // runs) give the rows of pages of 200 too, and every row's timestamp is its block's
        // (wallet_block_times below the pass's checkpoint, the events' own above it).
        {
            std::map<std::int64_t, std::string> time_of;
            for (const auto& row : stack.pg().query("SELECT block_num || ' ' || to_char(ts AT TIME ZONE 'UTC',"
                                                    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM wallet_blocks")) {
                time_of[std::stoll(row.substr(0, row.find(' ')))] = row.substr(row.find(' ') + 1);
            }
            const auto big = history(busiest, C::hive_balance, 200);
            const auto pages = history(busiest, C::hive_balance, 25);
            ASSERT_EQ(big.size(), pages.size());
            for (std::size_t i = 0; i < big.size(); ++i) {
                EXPECT_EQ(big[i].text, pages[i].text);
                EXPECT_EQ(pages[i].timestamp, time_of[pages[i].block]) << pages[i].text;
            }
            // The first page's rows: every event of the account above the checkpoint (its own and those
            // carrying a change of it) from wallet_events, and below it the open run and closed ones.
            const std::string account_id = "(SELECT id FROM wallet_accounts WHERE name = '" + busiest + "')";
            const std::string above = "(SELECT through_block FROM wallet_balance_snapshot_state)";
            EXPECT_EQ(stack.pg().query("SELECT count(*) FILTER (WHERE kind = 1) >= 2, count(*) FILTER (WHERE kind = 2)"
                                       " FROM wallet_balance_history_page_rows('" + busiest +
                                       "', 2147483647, 0, NULL, NULL, 100, 32767::smallint)")
                          .at(0),
                      "t\t" + stack.pg().query("SELECT (SELECT count(*) FROM wallet_events WHERE account_id = " + account_id +
                                              " AND block_num > " + above + ") + (SELECT count(*) FROM wallet_balance_carried"
                                              " WHERE account_id = " + account_id + " AND block_num > " + above + ")")
                                  .at(0));
        }

        check_carried_changes();
        check_a_gap_after_converted_snapshots(busiest);

        // Bad input: each its error.
        const std::string of = R"({"account":")" + busiest + "\"";
        const auto error = [&](const std::string& params) { return method_error("wallet_history.get_balance_history", of + params + "}"); };
        EXPECT_EQ(error(""), "missing component");
        EXPECT_EQ(error(R"(,"component":"savings_balance")"), "unknown component");
        EXPECT_EQ(error(R"(,"component":7)"), "unknown component");
        EXPECT_EQ(error(R"(,"component":"hive_balance","limit":201)"), "limit above 200");
        EXPECT_EQ(error(R"(,"component":"hive_balance","limit":0)"), "invalid limit");
        EXPECT_EQ(error(R"(,"component":"hive_balance","from":"2016-03-25T00:00:00Z","to":"2016-03-24T00:00:00Z")"),
                  "invalid date range");
        EXPECT_EQ(error(R"(,"component":"hive_balance","from":"yesterday")"), "invalid from");
        EXPECT_EQ(error(R"(,"component":"hive_balance","block":5)"), "unknown parameter");
        // A cursor is bound to its component and window.
        auto first = stack.result("wallet_history.get_balance_history", of + R"(,"component":"hive_balance","limit":1})");
        const std::string cursor = json_string_value(json_object_get(first.get(), "next_cursor"));
        EXPECT_EQ(error(R"(,"component":"hbd_balance","cursor":")" + cursor + "\""), "invalid cursor");
        EXPECT_EQ(error(R"(,"component":"hive_balance","to":"2016-03-25T00:00:00Z","cursor":")" + cursor + "\""),
                  "invalid cursor");
        EXPECT_EQ(error(R"(,"component":"hive_balance","cursor":")" + cursor + "\""), "");
        // A window: exactly the changes of its blocks.
        const auto all = history(busiest, C::hive_balance, 200);
        const std::uint32_t from = 700, to = 1500;
        std::vector<std::string> expected, got;
        for (const auto& change : all) {
            if (change.block >= from && change.block < to) expected.push_back(change.text);
        }
        for (const auto& change : history(busiest, C::hive_balance, 200,
                                          R"(,"from":")" + block_time(from) + R"(","to":")" + block_time(to) + "\"")) {
            got.push_back(change.text);
        }
        EXPECT_EQ(got, expected);
        EXPECT_FALSE(expected.empty());
    }

    // A change carried by another account's event (wallet_balance_carried: the
    // sender's side of a routed power-down payment) is a row naming that
    // account (`event_account`), read from the change runs below the pass's
    // checkpoint and from the events above it: of the account with the most
    // carried changes, its rows with an event_account (of every component)
    // are exactly its carried rows (block, block_seq, the carrying account).
    void check_carried_changes() {
        const auto carrier = stack.pg().query(
            "SELECT a.name FROM wallet_balance_carried c JOIN wallet_accounts a ON a.id = c.account_id"
            " GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT 1");
        ASSERT_EQ(carrier.size(), 1u) << "the chain has carried changes";
        const std::string name = carrier.at(0);
        const auto through = snapshots_through();
        std::set<std::string> expected, below, above;
        for (const auto& row : stack.pg().query(
                 "SELECT c.block_num || ' ' || c.block_seq || ' ' || e.name FROM wallet_balance_carried c"
                 " JOIN wallet_accounts a ON a.id = c.account_id JOIN wallet_accounts e ON e.id = c.event_account_id"
                 " WHERE a.name = '" + name + "'")) {
            expected.insert(row);
            (std::stoul(row.substr(0, row.find(' '))) <= through ? below : above).insert(row);
        }
        // A carried event changes one component or more (a power-down payment's VESTS and withdrawn, a
        // savings withdrawal's pending amount and count): their rows together name each carried row.
        for (const int limit : {25, 200}) {
            std::set<std::string> rows;
            for (std::size_t index = 0; index < wallet::kBalanceComponentCount; ++index) {
                for (const auto& change : history(name, static_cast<C>(index), limit)) {
                    if (change.event_account.ends_with("<absent>")) continue;
                    rows.insert(std::to_string(change.block) + " " + change.event_account);
                }
            }
            EXPECT_EQ(rows, expected) << name << ", pages of " << limit;
        }
        EXPECT_FALSE(below.empty()) << "carried changes in the runs";
        std::printf("carried changes of %s: %zu below the pass's checkpoint (runs), %zu above it (events)\n", name.c_str(),
                    below.size(), above.size());
    }

    // A store upgraded from the snapshots of before 0024: each snapshot a run
    // without events at its block (0024's conversion), the events after it
    // up to the next run read from wallet_events. Made so for one account
    // (its closed runs up to the middle one, each turned into its state
    // without events: gaps of exactly those runs' events), its pages of every
    // component (of 25 and of 200 rows, following the cursors) and its
    // balances at every 250th block are those of its runs; then its runs back.
    void check_a_gap_after_converted_snapshots(const std::string& name) {
        std::vector<std::uint32_t> blocks;
        for (std::uint32_t block = 250; block < kHead; block += 250) blocks.push_back(block);
        blocks.push_back(kHead);
        const auto answers = [&] {
            std::vector<std::string> out;
            for (std::size_t index = 0; index < wallet::kBalanceComponentCount; ++index) {
                for (const int limit : {25, 200}) {
                    std::string rows;
                    for (const auto& change : history(name, static_cast<C>(index), limit)) rows += change.text + "\n";
                    out.push_back(rows);
                }
            }
            for (const auto block : blocks) out.push_back(balances_text(name, block));
            return out;
        };
        const auto from_runs = answers();
        const std::string account = "(SELECT id FROM wallet_accounts WHERE name = '" + name + "')";
        const std::string middle = stack.pg().query(
            "SELECT after_block FROM wallet_balance_runs WHERE account_id = " + account + " AND after_block > 0"
            " ORDER BY after_block OFFSET (SELECT count(*) / 2 FROM wallet_balance_runs WHERE account_id = " + account +
            " AND after_block > 0) LIMIT 1").at(0);
        stack.pg().query("CREATE TABLE runs_before_gap AS SELECT * FROM wallet_balance_runs WHERE account_id = " + account);
        const auto converted = stack.pg().query(
            "UPDATE wallet_balance_runs SET through_block = after_block, changes = '\\x00'::bytea WHERE account_id = " + account +
            " AND after_block > 0 AND after_block <= " + middle + " AND changes <> '\\x00'::bytea RETURNING after_block");
        ASSERT_GE(converted.size(), 2u);
        const auto from_gaps = answers();
        ASSERT_EQ(from_gaps.size(), from_runs.size());
        for (std::size_t i = 0; i < from_runs.size(); ++i) EXPECT_EQ(from_gaps[i], from_runs[i]) << name << ", answer " << i;
        stack.pg().query("DELETE FROM wallet_balance_runs WHERE account_id = " + account +
                         "; INSERT INTO wallet_balance_runs SELECT * FROM runs_before_gap; DROP TABLE runs_before_gap");
        std::printf("gaps after converted snapshots: %zu runs of %s without their events, %zu answers equal\n", converted.size(),
                    name.c_str(), from_runs.size());
    }

    // get_delegations of every 10th account equals the ledger's open
    // delegations at the head, both sides.
    void check_delegations(const std::vector<std::string>& accounts, const std::map<std::string, std::uint32_t>& index_of) {
        const auto no_fork = [](std::uint32_t) -> std::uint64_t { return 0; };
        std::map<std::string, std::map<std::string, std::int64_t>> outgoing, incoming;
        for (const auto& [pair, vests] : chain().ledger()->delegations_at(chain(), kHead, no_fork)) {
            if (vests == 0) continue;
            const std::string delegator(chain().account(pair.first)), delegatee(chain().account(pair.second));
            outgoing[delegator][delegatee] = vests;
            incoming[delegatee][delegator] = vests;
        }
        ASSERT_FALSE(outgoing.empty()) << "the chain has delegations to compare";
        int differences = 0, delegations = 0;
        for (std::size_t a = 0; a < accounts.size(); a += 10) {
            const std::string& name = accounts[a];
            ASSERT_TRUE(index_of.count(name));
            auto result = stack.result("wallet_history.get_delegations", R"({"account":")" + name + "\"}");
            const auto read = [&](const char* list, const char* other) {
                std::map<std::string, std::int64_t> out;
                std::size_t i = 0;
                json_t* item = nullptr;
                json_array_foreach(json_object_get(result.get(), list), i, item) {
                    out[json_string_value(json_object_get(item, other))] = json_units(json_object_get(item, "amount"));
                }
                return out;
            };
            const auto got_out = read("outgoing_delegations", "delegatee");
            const auto got_in = read("incoming_delegations", "delegator");
            delegations += static_cast<int>(got_out.size());
            const auto expected_out = outgoing.count(name) ? outgoing.at(name) : std::map<std::string, std::int64_t>{};
            const auto expected_in = incoming.count(name) ? incoming.at(name) : std::map<std::string, std::int64_t>{};
            if ((got_out != expected_out || got_in != expected_in) && ++differences <= 5) {
                ADD_FAILURE() << name << ": " << api_test::dump(result.get());
            }
        }
        EXPECT_EQ(differences, 0);
        EXPECT_GT(delegations, 5);
        std::printf("delegations: %d open, of every 10th account, equal to the ledger's\n", delegations);
    }

    // get_balance_aggregation of a few accounts: on a store whose blocks are
    // spread 30 minutes apart (so that 2,000 blocks make 42 days and 3
    // months), each period's balance equals get_balances at its last block,
    // its change the sum of the history's changes of its blocks, and it
    // starts where the previous one ended.
    void check_aggregation(const std::vector<std::string>& accounts) {
        stack.pg().query("UPDATE wallet_blocks SET ts = timestamptz '2016-03-24 00:00:00+00' + block_num * interval '30 minutes'");
        const std::string from = "2016-03-24T00:00:00Z", to = block_time(kHead);
        int periods_compared = 0;
        for (std::size_t a = 5; a < accounts.size(); a += 500) {
            const std::string& name = accounts[a];
            for (const char* granularity : {"day", "month"}) {
                auto result = stack.result("wallet_history.get_balance_aggregation",
                                           R"({"account":")" + name + R"(","component":"hive_balance","granularity":")" +
                                               granularity + R"(","from":")" + from + R"(","to":")" + to + "\"}");
                json_t* periods = json_object_get(result.get(), "periods");
                ASSERT_EQ(json_array_size(periods), std::string(granularity) == "day" ? 42u : 3u) << api_test::dump(result.get());
                const auto changes = history(name, C::hive_balance, 200);
                std::int64_t later_prev = 0;
                std::int64_t end_block = 0;
                for (std::size_t i = 0; i < json_array_size(periods); ++i) {  // newest first
                    json_t* period = json_array_get(periods, i);
                    const std::int64_t block = json_integer_value(json_object_get(period, "block"));
                    const std::int64_t balance = json_units(json_object_get(period, "balance"));
                    const std::int64_t prev = json_units(json_object_get(period, "prev_balance"));
                    const std::int64_t change = json_units(json_object_get(period, "balance_change"));
                    EXPECT_EQ(balance, balances(name, static_cast<std::uint32_t>(std::max<std::int64_t>(block, 1))).at(C::hive_balance))
                        << api_test::dump(period);
                    if (i > 0) {
                        EXPECT_EQ(balance, later_prev) << api_test::dump(period);
                    }
                    // The next (older) period ends at the block before this one's first.
                    const std::int64_t older_end =
                        i + 1 < json_array_size(periods)
                            ? json_integer_value(json_object_get(json_array_get(periods, i + 1), "block"))
                            : 0;
                    std::int64_t sum = 0;
                    for (const auto& c : changes) {
                        if (c.block > older_end && c.block <= block) sum += c.change;
                    }
                    EXPECT_EQ(change, sum) << api_test::dump(period);
                    EXPECT_EQ(change, balance - prev);
                    later_prev = prev;
                    if (i == 0) end_block = block;
                    ++periods_compared;
                }
                EXPECT_EQ(end_block, kHead);
            }
        }
        std::printf("aggregation: %d periods compared\n", periods_compared);
        const std::string of = R"({"account":")" + accounts.front() + R"(","component":"hive_balance")";
        const auto error = [&](const std::string& params) {
            return method_error("wallet_history.get_balance_aggregation", of + params + "}");
        };
        EXPECT_EQ(error(""), "missing granularity");
        EXPECT_EQ(error(R"(,"granularity":"week")"), "invalid granularity");
        EXPECT_EQ(error(R"(,"granularity":"day","from":"2015-01-01T00:00:00Z")"), "too many periods (at most 366)");
        EXPECT_EQ(error(R"(,"granularity":"day","limit":5)"), "unknown parameter");
        // Without `from`: the newest 366 days at most, from the account's first event.
        EXPECT_EQ(error(R"(,"granularity":"day")"), "");
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
    EXPECT_EQ(at_time(std::string(chain().account(1)), "2016-03-24T16:05:00Z").error, "nothing is indexed yet");
    // The chain's genesis balances, which no operation carries, as the
    // operator of such a chain stores them: runs without events at block 0 (mainnet has none).
    stack.pg().query(balances_test::genesis_runs_sql(chain()));
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

    check_balances_at_time(accounts);
    const auto methods_started = std::chrono::steady_clock::now();
    check_balance_history(accounts);
    if (HasFatalFailure()) return;
    check_delegations(accounts, index_of);
    check_aggregation(accounts);
    std::printf("balance history, delegations and aggregation checked in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - methods_started).count());

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
        std::string body = stack.pg().query("SELECT prosrc FROM pg_proc WHERE proname = 'wallet_balance_run_rows'").at(0);
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
        " ('wallet_balance_runs', 'wallet_balance_open_runs', 'wallet_balance_carried', 'wallet_balance_undecodable',"
        " 'wallet_balance_snapshot_state'))::numeric / (SELECT count(*) FROM wallet_events),"
        " (SELECT count(*) FROM wallet_balance_all_runs), (SELECT count(*) FROM wallet_events)");
    std::printf("measured: get_status %.0f us/call, get_balances at head %.0f us/call, at %u %.0f us/call; balance tables %s"
                " (bytes per event, change runs, events)\n",
                status_us, balances_us, kMiddle, middle_us, bytes.at(0).c_str());

    // Bad input and what the store cannot answer: errors, never a number.
    const std::string someone = accounts.front();
    EXPECT_EQ(error_of(someone, kHead + 5), "block above indexed_block " + std::to_string(kHead));
    EXPECT_EQ(error_of("nobody.here"), "unknown account");
    const std::string history_of = R"({"component":"hive_balance","account":")";
    EXPECT_EQ(method_error("wallet_history.get_balance_history", history_of + "nobody.here\"}"), "unknown account");
    EXPECT_EQ(method_error("wallet_history.get_delegations", R"({"account":"nobody.here"})"), "unknown account");
    // An event whose changes the decoder could not read (as the writers list it).
    stack.pg().query("INSERT INTO wallet_balance_undecodable SELECT a.id, 1200, 3, 0, 2, 1, 'test'"
                     " FROM wallet_accounts a WHERE a.name = '" + someone + "'");
    EXPECT_EQ(error_of(someone), "the balance changes of block 1200 (transfer) of " + someone +
                                     " cannot be read by this decoder version: a decoder that reads them must re-run the range");
    EXPECT_FALSE(balances(someone, 1199).empty()) << "below the block, the balances hold";
    // The other balance methods refuse it alike; a history page below it answers.
    EXPECT_EQ(method_error("wallet_history.get_balance_history", history_of + someone + "\"}"), error_of(someone));
    EXPECT_EQ(method_error("wallet_history.get_delegations", R"({"account":")" + someone + "\"}"), error_of(someone));
    EXPECT_EQ(method_error("wallet_history.get_balance_aggregation",
                           history_of + someone + R"(","granularity":"year"})"), error_of(someone));
    EXPECT_EQ(method_error("wallet_history.get_balance_history",
                           history_of + someone + R"(","to":")" + block_time(1200) + "\"}"), "");
    stack.pg().query("DELETE FROM wallet_balance_undecodable");
    // A history that does not start at block 1.
    stack.pg().query("UPDATE backfill_shards SET start_block = 2 WHERE start_block = 1");
    EXPECT_EQ(error_of(someone), "the store's history starts at block 2, not 1: a balance needs every block from 1");
    EXPECT_EQ(method_error("wallet_history.get_balance_history", history_of + someone + "\"}"), error_of(someone));
    stack.pg().query("UPDATE backfill_shards SET start_block = 1 WHERE start_block = 2");
    EXPECT_FALSE(balances(someone, std::nullopt).empty()) << "the history from block 1 again";
    // A range loaded by an older decoder: refused at and above it, answered below.
    stack.pg().query("UPDATE backfill_shards SET decoder_version = decoder_version - 1 WHERE start_block = 251");
    EXPECT_EQ(error_of(someone), "blocks 251..500 were loaded by an older decoder version: run wallet-backfill over them");
    EXPECT_EQ(error_of(someone, 251), "blocks 251..500 were loaded by an older decoder version: run wallet-backfill over them");
    EXPECT_FALSE(balances(someone, 250).empty()) << "below the outdated range, the balances hold";
    stack.pg().query("UPDATE backfill_shards SET decoder_version = decoder_version + 1 WHERE start_block = 251");
    EXPECT_FALSE(balances(someone, std::nullopt).empty()) << "the range current again";

    // The read cost (migration 0021): each balance function is inlined into
    // the statement that calls it, so the API's prepared statement keeps its
    // plan (a function planned again on every call spent most of a read's
    // time and half its buffers in the planner), and the API's role never
    // JIT-compiles those plans.
    for (const std::string& call : {"wallet_balance_run_rows('" + someone + "', NULL, 2::smallint)",
                                   "wallet_balance_history_run_rows('" + someone + "', 2147483647, 0, NULL, NULL, 100, 2::smallint)",
                                   "wallet_balance_period_run_rows('" + someone + "', 'month', NULL, NULL, 12, 2::smallint)"}) {
        const std::string scanned = "Function Scan on " + call.substr(0, call.find('(')) + " ";
        for (const auto& line : stack.pg().query("EXPLAIN SELECT * FROM " + call)) {
            EXPECT_EQ(line.find(scanned), std::string::npos) << call << ": " << line;
        }
    }
    EXPECT_EQ(stack.pg().query("SELECT 'jit=off' = ANY (s.setconfig) FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole"
                               " WHERE r.rolname = 'wallet_api_reader' AND s.setdatabase = 0"),
              std::vector<std::string>{"t"});

    // Last (it changes the store): blocks without events, which the store
    // keeps no time of. Blocks 1701..1703 made so (their events, and the
    // changes in runs and carried rows they would have, removed), with the block
    // times check_aggregation spread 30 minutes apart: a time between 1700's
    // and 1704's is answered at 1700, with the balances of every block up to
    // 1703, and only where the store holds every block up to 1703.
    stack.pg().query("UPDATE indexer_checkpoint SET block_time = (SELECT ts FROM wallet_blocks WHERE block_num = " +
                     std::to_string(kHead) + ")");
    for (const char* table : {"wallet_balance_carried", "wallet_balance_undecodable", "wallet_events", "wallet_blocks"}) {
        stack.pg().query(std::string("DELETE FROM ") + table + " WHERE block_num BETWEEN 1701 AND 1703");
    }
    // The change runs across them without those blocks' events (one
    // statement: a commit per run cost the test about 25 s).
    std::string cut_runs;
    // The closed runs across them, and the open ones (each account's last, up to the pass's checkpoint).
    for (const auto& [table, across] : {std::pair{"wallet_balance_runs", " AND through_block > 1700"},
                                        std::pair{"wallet_balance_open_runs", ""}}) {
        for (const auto& row : stack.pg().query(std::string("SELECT account_id || ' ' || after_block || ' ' || encode(changes, 'hex')"
                                                            " FROM ") + table + " WHERE after_block < 1703" + across)) {
            const auto first = row.find(' '), second = row.find(' ', first + 1);
            const std::string after = row.substr(first + 1, second - first - 1);
            const auto changes = wallet::bytes_of_hex(row.substr(second + 1));
            ASSERT_TRUE(changes) << row;
            auto events = wallet::decode_run(*changes, std::stoll(after));
            ASSERT_TRUE(events) << row << ": " << events.error();
            std::erase_if(events.value(), [](const wallet::RunEvent& event) { return event.block_num >= 1701 && event.block_num <= 1703; });
            const auto kept = wallet::encode_run(*events, std::stoll(after));
            ASSERT_TRUE(kept) << kept.error();
            cut_runs += std::string("UPDATE ") + table + " SET changes = decode('" + wallet::hex_of(*kept) +
                        "', 'hex') WHERE account_id = " + row.substr(0, first) + " AND after_block = " + after + ";";
        }
    }
    ASSERT_FALSE(cut_runs.empty());
    stack.pg().query(cut_runs);
    const std::string in_the_gap = block_time(1700, 45 * 60), at_1700 = block_time(1700);
    for (std::size_t a = 0; a < accounts.size(); a += 211) {
        const auto got = at_time(accounts[a], in_the_gap);
        EXPECT_EQ(got.error, "") << accounts[a];
        EXPECT_EQ(got.block, 1700) << accounts[a];
        EXPECT_EQ(got.timestamp, at_1700);
        EXPECT_EQ(got.balances, balances_text(accounts[a], 1700)) << accounts[a];
        EXPECT_EQ(got.balances, balances_text(accounts[a], 1703)) << accounts[a];
    }
    stack.pg().query("UPDATE wallet_store_state SET loading_from = 1703");
    EXPECT_EQ(at_time(someone, in_the_gap).error, "blocks from 1703 are still loading");
    EXPECT_EQ(at_time(someone, block_time(1699, 1)).block, 1699) << "the next stored block is 1700: every block up to it is held";
    stack.pg().query("UPDATE wallet_store_state SET loading_from = NULL");
    // An account that did not exist yet (no genesis balances: its first
    // event is its start) at the time: an error; from its first event on, answered.
    const auto late = stack.pg().query(
        "SELECT a.name || ' ' || min(e.block_num) FROM wallet_accounts a JOIN wallet_events e ON e.account_id = a.id"
        " WHERE e.block_num > 1703 GROUP BY a.name ORDER BY min(e.block_num) DESC, a.name LIMIT 1");
    ASSERT_FALSE(late.empty());
    const std::string late_name = late.at(0).substr(0, late.at(0).find(' '));
    const auto late_first = static_cast<std::uint32_t>(std::stoul(late.at(0).substr(late.at(0).find(' ') + 1)));
    for (const char* table : {"wallet_balance_runs", "wallet_balance_open_runs"}) {
        stack.pg().query(std::string("DELETE FROM ") + table + " r USING wallet_accounts a WHERE r.account_id = a.id AND"
                         " r.after_block < " + std::to_string(late_first) + " AND a.name = '" + late_name + "'");
    }
    for (const char* table : {"wallet_events", "wallet_balance_carried"}) {
        stack.pg().query(std::string("DELETE FROM ") + table + " e USING wallet_accounts a WHERE e.account_id = a.id AND"
                         " e.block_num < " + std::to_string(late_first) + " AND a.name = '" + late_name + "'");
    }
    EXPECT_EQ(at_time(late_name, block_time(late_first, -1)).error, "time before the account's first event") << late_name;
    EXPECT_EQ(at_time(late_name, block_time(late_first)).block, late_first) << late_name;
}

}  // namespace
