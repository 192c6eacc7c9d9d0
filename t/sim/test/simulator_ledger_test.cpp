// The synthetic chain's ledger (--ledger): no account ever below zero, the
// balances it serves equal the genesis balances plus every balance change the
// wallet decoder reads from the served operations (both forms), a fork is
// folded again, and the accounts come out in hived's find_accounts shape.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "hive_fixtures.hpp"
#include "json_writer.hpp"
#include "ledger.hpp"
#include "served_ops.hpp"
#include "support/balances_support.hpp"
#include "synthetic_chain.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"

namespace {

using wallet::BalanceComponent;
using C = wallet::BalanceComponent;

sim::SyntheticChain ledger_chain(std::uint64_t seed, std::uint32_t accounts = 2000) {
    sim::SyntheticOptions options;
    options.seed = seed;
    options.accounts = accounts;
    options.pathological_every = 0;
    options.ledger = true;
    return sim::SyntheticChain(options);
}

using balances_test::components_of;

// The test's own consumer of the decoder's balance changes: the state the
// stateful kinds need (docs/operations.md, "Balance changes").
class ChangeReplay {
public:
    // Every account from its genesis balances.
    explicit ChangeReplay(const sim::SyntheticChain& chain) {
        for (std::uint32_t index = 0; index < chain.account_count(); ++index) {
            balances[std::string(chain.account(index))] = components_of(sim::genesis_balances(chain, index));
        }
    }

    std::map<std::string, std::map<C, std::int64_t>> balances;

    void apply(const wallet::BalanceChange& change) {
        auto& account = balances[change.account];
        const auto amount = static_cast<std::int64_t>(change.amount.units());
        switch (change.kind) {
            case wallet::ChangeKind::add:
                account[change.component] += amount;
                if (change.component == C::savings_pending_amount_hive || change.component == C::savings_pending_amount_hbd) {
                    if (amount > 0) requests_[{change.account, *change.request_id}] = {change.component, amount};
                    if (amount < 0) requests_.erase({change.account, *change.request_id});
                }
                break;
            case wallet::ChangeKind::set: account[change.component] = amount; break;
            case wallet::ChangeKind::delegation: {
                const bool out = change.component == C::delegated_vests;
                const std::pair<std::string, std::string> pair =
                    out ? std::pair(change.account, *change.other) : std::pair(*change.other, change.account);
                const std::int64_t previous = out ? delegations_[pair] : delegations_seen_by_delegatee_[pair];
                const std::int64_t delta = amount - previous;
                if (!out || delta > 0) account[change.component] += delta;
                (out ? delegations_[pair] : delegations_seen_by_delegatee_[pair]) = amount;
                break;
            }
            case wallet::ChangeKind::savings_withdrawal_cancelled: {
                const auto request = requests_.at({change.account, *change.request_id});
                account[C::savings_withdraw_requests] += amount;
                account[request.first] -= request.second;
                account[request.first == C::savings_pending_amount_hive ? C::hive_savings : C::hbd_savings] += request.second;
                requests_.erase({change.account, *change.request_id});
                break;
            }
            case wallet::ChangeKind::power_down_step:
                if (account[C::withdrawn] >= account[C::to_withdraw] || account[C::vesting_shares] == 0) {
                    account[C::vesting_withdraw_rate] = account[C::to_withdraw] = account[C::withdrawn] = 0;
                }
                break;
        }
    }

private:
    std::map<std::pair<std::string, std::int64_t>, std::pair<C, std::int64_t>> requests_;
    std::map<std::pair<std::string, std::string>, std::int64_t> delegations_;
    std::map<std::pair<std::string, std::string>, std::int64_t> delegations_seen_by_delegatee_;
};

void replay_blocks(const sim::SyntheticChain& chain, std::uint32_t from, std::uint32_t to, sim::Form form,
                   const std::function<std::uint64_t(std::uint32_t)>& salt_of, ChangeReplay& replay) {
    const wallet::AssetTable table = wallet::AssetTable::mainnet();
    for (std::uint32_t num = from; num <= to; ++num) {
        // The loader's path: entries located, wallet operations decoded.
        const auto texts = sim::test::serve(chain, num, form, salt_of(num));
        std::vector<wallet::RawEntry> entries;
        for (const auto& text : texts) {
            auto entry = wallet::scan_entry(text);
            ASSERT_TRUE(entry) << entry.error();
            entries.push_back(*entry);
        }
        auto events = wallet::decode_block_entries(entries, table);
        ASSERT_TRUE(events) << "block " << num << ": " << events.error();
        for (const auto& event : *events) {
            auto changes = wallet::balance_changes(event, table, wallet::HardforkSchedule::from_genesis());
            ASSERT_TRUE(changes) << changes.error();
            for (const auto& change : *changes) replay.apply(change);
        }
    }
}

void expect_same_balances(const sim::SyntheticChain& chain, const std::vector<sim::AccountBalances>& ledger,
                          const ChangeReplay& replay) {
    int differences = 0;
    for (std::uint32_t index = 0; index < chain.account_count(); ++index) {
        const auto& replayed = replay.balances.at(std::string(chain.account(index)));
        for (const auto& [component, served] : components_of(ledger[index])) {
            const auto found = replayed.find(component);
            const std::int64_t decoded = found == replayed.end() ? 0 : found->second;
            if (served != decoded && ++differences <= 10) {
                ADD_FAILURE() << chain.account(index) << " " << wallet::component_name(component) << ": ledger " << served
                              << ", genesis and decoded changes " << decoded;
            }
        }
    }
    EXPECT_EQ(differences, 0);
}

TEST(SimulatorLedger, NoAccountBelowZeroAndTheDecodedChangesGiveTheLedgersBalances) {
    const auto chain = ledger_chain(11);
    const std::uint32_t head = 2000;
    const auto no_fork = [](std::uint32_t) -> std::uint64_t { return 0; };
    ChangeReplay replay(chain);
    replay_blocks(chain, 1, head, sim::Form::nai, no_fork, replay);
    const auto balances = chain.ledger()->balances_at(chain, head, no_fork);
    for (std::uint32_t index = 0; index < chain.account_count(); ++index) {
        for (const auto& [component, value] : components_of(balances[index])) {
            EXPECT_GE(value, 0) << chain.account(index) << " " << wallet::component_name(component);
        }
    }
    expect_same_balances(chain, balances, replay);
    // The ledger kept a real mix: every stateful kind happened.
    int power_downs = 0, delegations = 0, requests = 0;
    for (const auto& b : balances) {
        power_downs += b.withdraw_rate != 0;
        delegations += b.delegated != 0;
        requests += b.savings_withdraw_requests != 0;
    }
    EXPECT_GT(power_downs, 0);
    EXPECT_GT(delegations, 0);
    EXPECT_GT(requests, 0);
}

TEST(SimulatorLedger, LegacyFormAndAForkFoldAgain) {
    const auto chain = ledger_chain(12, 500);
    const std::uint32_t head = 800;
    // Blocks from 700 on forked (another salt), asked after the ledger folded the old ones.
    const auto no_fork = [](std::uint32_t) -> std::uint64_t { return 0; };
    const auto forked = [](std::uint32_t block) -> std::uint64_t { return block >= 700 ? 99 : 0; };
    (void)chain.ledger()->balances_at(chain, head, no_fork);
    ChangeReplay replay(chain);
    replay_blocks(chain, 1, head, sim::Form::legacy, forked, replay);
    expect_same_balances(chain, chain.ledger()->balances_at(chain, head, forked), replay);
    // The same block twice: byte-identical.
    EXPECT_EQ(sim::test::serve(chain, 750, sim::Form::nai, 99), sim::test::serve(chain, 750, sim::Form::nai, 99));
}

TEST(SimulatorLedger, AccountsInHivedsFindAccountsShape) {
    const auto chain = ledger_chain(13, 300);
    const auto balances = chain.ledger()->balances_at(chain, 200, [](std::uint32_t) -> std::uint64_t { return 0; });
    wallet::JsonPtr pattern = wallet::test::load_json_file(wallet::test::hive_fixtures_dir() /
                                                           "hived-mainnet-5m/database_api_patterns/find_accounts/find.pat.json");
    ASSERT_TRUE(pattern);
    const json_t* real = json_array_get(json_object_get(pattern.get(), "accounts"), 0);
    for (const sim::Form form : {sim::Form::nai, sim::Form::legacy}) {
        sim::OutputBuffer buffer;
        sim::JsonWriter writer(buffer);
        sim::write_account(writer, chain, 42, balances[42], form);
        auto served = wallet::json::parse(buffer.str());
        ASSERT_TRUE(served) << buffer.str();
        std::set<std::string> real_keys, served_keys;
        const char* key = nullptr;
        json_t* value = nullptr;
        json_object_foreach(const_cast<json_t*>(real), key, value) { real_keys.insert(key); }
        json_object_foreach(served->get(), key, value) {
            served_keys.insert(key);
            const json_t* twin = json_object_get(real, key);
            // The same JSON types as hived's, assets in the asked form.
            if (json_is_boolean(twin)) {
                EXPECT_TRUE(json_is_boolean(value)) << key;
            } else if (form == sim::Form::nai || !json_is_object(twin) || json_object_get(twin, "nai") == nullptr) {
                EXPECT_EQ(json_typeof(value), json_typeof(twin)) << key;
            } else {
                EXPECT_TRUE(json_is_string(value)) << key;
            }
        }
        EXPECT_EQ(served_keys, real_keys);
        const json_t* vesting = json_object_get(served->get(), "vesting_shares");
        const std::string expected_vests = std::to_string(balances[42].vests);
        if (form == sim::Form::nai) {
            EXPECT_EQ(wallet::test::json_string_of(json_object_get(vesting, "amount")), expected_vests);
        } else {
            EXPECT_EQ(wallet::test::json_string_of(vesting).find(" VESTS") != std::string::npos, true);
        }
    }
}

}  // namespace
