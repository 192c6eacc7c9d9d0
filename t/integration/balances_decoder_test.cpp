// The balance changes the decoder gives (docs/operations.md, "Balance
// changes"), against the test's own statement of hived's evaluators: every
// balance-moving operation of the real fixtures (mainnet, testnet and
// Steem-era files, every envelope form), both asset forms of one operation,
// both field namings, and the rules that need state or a hardfork.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "hive_fixtures.hpp"
#include "wallet/balance_change.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"

namespace wallet {
namespace {

using test::hive_fixture_files;
using test::hive_fixtures_dir;
using test::json_string_of;
using test::load_json_file;

using C = BalanceComponent;

// ---- The test's statement of which components each operation moves ----

// One amount moving into (+1) or out of (-1) a place of an account, carried
// by the event of `carrier`. Places: "liquid", "savings", "savings_pending",
// "rewards", "orders", "escrow", "payout" (rewards or liquid by
// payout_must_be_claimed, else HF17), "interest" (liquid or savings by
// is_saved_into_hbd_balance), or "=component" for one fixed component.
// `amount`: field names, '|'-separated alternatives (the first present), a
// list field's every element with "*name", a count with "#1" / "#-1".
struct Move {
    Role carrier;
    const char* account;  // a field of the op, or "=name" for a fixed account
    const char* place;
    int sign;
    const char* amount;
};

const std::map<std::string, std::vector<Move>>& moves() {
    const Role S = Role::Sender, R = Role::Receiver, O = Role::Owner;
    static const std::map<std::string, std::vector<Move>> table{
        {"transfer", {{S, "from", "liquid", -1, "amount"}, {R, "to", "liquid", 1, "amount"}}},
        {"fill_recurrent_transfer", {{S, "from", "liquid", -1, "amount"}, {R, "to", "liquid", 1, "amount"}}},
        {"transfer_to_savings", {{S, "from", "liquid", -1, "amount"}, {R, "to", "savings", 1, "amount"}}},
        {"transfer_from_savings",
         {{S, "from", "savings", -1, "amount"}, {S, "from", "savings_pending", 1, "amount"},
          {S, "from", "=savings_withdraw_requests", 1, "#1"}}},
        {"fill_transfer_from_savings",
         {{R, "to", "liquid", 1, "amount"}, {R, "from", "savings_pending", -1, "amount"},
          {R, "from", "=savings_withdraw_requests", 1, "#-1"}}},
        {"cancel_transfer_from_savings", {}},  // stateful: below
        {"transfer_to_vesting", {{S, "from", "liquid", -1, "amount"}}},
        {"transfer_to_vesting_completed", {{R, "to_account", "liquid", 1, "vesting_shares_received"}}},
        {"withdraw_vesting", {}},  // sets: below
        {"fill_vesting_withdraw",
         {{R, "to_account", "liquid", 1, "deposited"}, {R, "from_account", "liquid", -1, "withdrawn"},
          {R, "from_account", "=withdrawn", 1, "withdrawn"}}},
        {"delegate_vesting_shares", {}},  // stateful: below
        {"return_vesting_delegation", {{O, "account", "=delegated_vests", -1, "vesting_shares"}}},
        {"account_create", {{S, "creator", "liquid", -1, "fee"}}},
        {"claim_account", {{O, "creator", "liquid", -1, "fee"}}},
        {"account_create_with_delegation", {{S, "creator", "liquid", -1, "fee"}}},
        {"account_created",
         {{R, "new_account_name", "liquid", 1, "initial_vesting_shares"},
          {R, "new_account_name", "=received_vests", 1, "initial_delegation"}}},
        {"claim_reward_balance",
         {{O, "account", "rewards", -1, "reward_hive|reward_steem"}, {O, "account", "liquid", 1, "reward_hive|reward_steem"},
          {O, "account", "rewards", -1, "reward_hbd|reward_sbd"}, {O, "account", "liquid", 1, "reward_hbd|reward_sbd"},
          {O, "account", "rewards", -1, "reward_vests"}, {O, "account", "liquid", 1, "reward_vests"}}},
        {"author_reward",
         {{Role::Author, "author", "payout", 1, "hbd_payout|sbd_payout"},
          {Role::Author, "author", "payout", 1, "hive_payout|steem_payout"},
          {Role::Author, "author", "payout", 1, "vesting_payout"}}},
        {"curation_reward", {{Role::Curator, "curator", "payout", 1, "reward"}}},
        {"comment_benefactor_reward",
         {{Role::Beneficiary, "benefactor", "payout", 1, "hbd_payout|sbd_payout"},
          {Role::Beneficiary, "benefactor", "payout", 1, "hive_payout|steem_payout"},
          {Role::Beneficiary, "benefactor", "payout", 1, "vesting_payout|reward"}}},
        {"interest", {{O, "owner", "interest", 1, "interest"}}},
        {"limit_order_create", {{O, "owner", "liquid", -1, "amount_to_sell"}, {O, "owner", "orders", 1, "amount_to_sell"}}},
        {"limit_order_create2", {{O, "owner", "liquid", -1, "amount_to_sell"}, {O, "owner", "orders", 1, "amount_to_sell"}}},
        {"limit_order_cancelled", {{O, "seller", "orders", -1, "amount_back"}, {O, "seller", "liquid", 1, "amount_back"}}},
        {"fill_order",
         {{Role::Taker, "current_owner", "orders", -1, "current_pays"}, {Role::Taker, "current_owner", "liquid", 1, "open_pays"},
          {Role::Maker, "open_owner", "orders", -1, "open_pays"}, {Role::Maker, "open_owner", "liquid", 1, "current_pays"}}},
        {"convert",
         {{O, "owner", "liquid", -1, "amount"}, {O, "owner", "=conversion_pending_amount_hbd", 1, "amount"},
          {O, "owner", "=conversion_pending_count_hbd", 1, "#1"}}},
        {"fill_convert_request",
         {{O, "owner", "=conversion_pending_amount_hbd", -1, "amount_in"}, {O, "owner", "=conversion_pending_count_hbd", 1, "#-1"},
          {O, "owner", "liquid", 1, "amount_out"}}},
        {"collateralized_convert",
         {{O, "owner", "liquid", -1, "amount"}, {O, "owner", "=conversion_pending_amount_hive", 1, "amount"},
          {O, "owner", "=conversion_pending_count_hive", 1, "#1"}}},
        {"collateralized_convert_immediate_conversion", {{O, "owner", "liquid", 1, "hbd_out"}}},
        {"fill_collateralized_convert_request",
         {{O, "owner", "=conversion_pending_amount_hive", -1, "amount_in"},
          {O, "owner", "=conversion_pending_amount_hive", -1, "excess_collateral"},
          {O, "owner", "=conversion_pending_count_hive", 1, "#-1"}, {O, "owner", "liquid", 1, "excess_collateral"}}},
        {"escrow_transfer",
         {{S, "from", "liquid", -1, "hbd_amount|sbd_amount"}, {S, "from", "escrow", 1, "hbd_amount|sbd_amount"},
          {S, "from", "liquid", -1, "hive_amount|steem_amount"}, {S, "from", "escrow", 1, "hive_amount|steem_amount"},
          {S, "from", "liquid", -1, "fee"}, {S, "from", "escrow", 1, "fee"}}},
        {"escrow_release",
         {{S, "from", "escrow", -1, "hbd_amount|sbd_amount"}, {R, "receiver", "liquid", 1, "hbd_amount|sbd_amount"},
          {S, "from", "escrow", -1, "hive_amount|steem_amount"}, {R, "receiver", "liquid", 1, "hive_amount|steem_amount"}}},
        {"escrow_approved", {{S, "from", "escrow", -1, "fee"}, {R, "agent", "liquid", 1, "fee"}}},
        {"escrow_rejected",
         {{O, "from", "escrow", -1, "hbd_amount|sbd_amount"}, {O, "from", "liquid", 1, "hbd_amount|sbd_amount"},
          {O, "from", "escrow", -1, "hive_amount|steem_amount"}, {O, "from", "liquid", 1, "hive_amount|steem_amount"},
          {O, "from", "escrow", -1, "fee"}, {O, "from", "liquid", 1, "fee"}}},
        {"producer_reward", {{O, "producer", "liquid", 1, "vesting_shares"}}},
        {"pow_reward", {{O, "worker", "liquid", 1, "reward"}}},
        {"liquidity_reward", {{O, "owner", "liquid", 1, "payout"}}},
        {"vesting_shares_split",
         {{O, "owner", "liquid", -1, "vesting_shares_before_split"}, {O, "owner", "liquid", 1, "vesting_shares_after_split"}}},
        {"proposal_pay", {{S, "payer", "liquid", -1, "payment"}, {R, "receiver", "liquid", 1, "payment"}}},
        {"proposal_fee", {{S, "creator", "liquid", -1, "fee"}, {R, "treasury", "liquid", 1, "fee"}}},
        {"dhf_funding", {{O, "treasury", "liquid", 1, "additional_funds"}}},
        {"dhf_conversion", {{O, "treasury", "liquid", -1, "hive_amount_in"}, {O, "treasury", "liquid", 1, "hbd_amount_out"}}},
        {"hardfork_hive",
         {{R, "treasury", "liquid", 1, "hbd_transferred|sbd_transferred"},
          {R, "treasury", "liquid", 1, "hive_transferred|steem_transferred"},
          {R, "treasury", "liquid", 1, "total_hive_from_vests|total_steem_from_vests"}}},
        {"hardfork_hive_restore",
         {{S, "treasury", "liquid", -1, "hbd_transferred|sbd_transferred"},
          {R, "account", "liquid", 1, "hbd_transferred|sbd_transferred"},
          {S, "treasury", "liquid", -1, "hive_transferred|steem_transferred"},
          {R, "account", "liquid", 1, "hive_transferred|steem_transferred"}}},
        {"consolidate_treasury_balance",
         {{S, "=steem.dao", "liquid", -1, "*total_moved"}, {R, "=hive.fund", "liquid", 1, "*total_moved"}}},
        {"clear_null_account_balance", {}},  // the `null` account is not tracked
    };
    return table;
}

enum class Kind { hive, hbd, vests };

Kind kind_of(const Asset& asset) {
    if (asset.symbol == "VESTS") return Kind::vests;
    if (asset.symbol == "HBD" || asset.symbol == "SBD" || asset.symbol == "TBD") return Kind::hbd;
    EXPECT_TRUE(asset.symbol == "HIVE" || asset.symbol == "STEEM" || asset.symbol == "TESTS") << asset.symbol;
    return Kind::hive;
}

C component_in(std::string_view place, Kind kind) {
    const bool hive = kind == Kind::hive;
    if (kind == Kind::vests) {
        if (place == "rewards") return C::vests_rewards;
        EXPECT_EQ(place, "liquid") << "VESTS in " << place;
        return C::vesting_shares;
    }
    if (place == "liquid") return hive ? C::hive_balance : C::hbd_balance;
    if (place == "savings") return hive ? C::hive_savings : C::hbd_savings;
    if (place == "savings_pending") return hive ? C::savings_pending_amount_hive : C::savings_pending_amount_hbd;
    if (place == "rewards") return hive ? C::hive_rewards : C::hbd_rewards;
    if (place == "orders") return hive ? C::open_orders_hive_amount : C::open_orders_hbd_amount;
    if (place == "escrow") return hive ? C::escrow_pending_amount_hive : C::escrow_pending_amount_hbd;
    ADD_FAILURE() << "place " << place;
    return C::hive_balance;
}

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t pos = 0; pos <= text.size(); ++pos) {
        if (pos == text.size() || text[pos] == separator) {
            parts.emplace_back(text.substr(start, pos - start));
            start = pos + 1;
        }
    }
    return parts;
}

Decimal units(long long count, int scale) { return Decimal::from_units(count, scale).value(); }

BalanceChange change(std::string account, C component, Decimal amount, ChangeKind kind = ChangeKind::add) {
    BalanceChange c;
    c.account = std::move(account);
    c.component = component;
    c.kind = kind;
    c.amount = amount.rescaled(component_precision(component)).value();
    return c;
}

// An operation's body (either form) and its type.
struct Body {
    std::string type;
    const json_t* value = nullptr;
};

Body body_of(const json_t* op) {
    if (json_is_array(op)) return {json_string_of(json_array_get(op, 0)), json_array_get(op, 1)};
    std::string type = json_string_of(json_object_get(op, "type"));
    if (type.size() > 10 && type.substr(type.size() - 10) == "_operation") type.resize(type.size() - 10);
    return {type, json_object_get(op, "value")};
}

// The changes the test expects of one operation, each with its carrier role.
std::vector<std::pair<Role, BalanceChange>> expected_changes(const Body& op, std::int64_t block, const AssetTable& table,
                                                             const HardforkSchedule& forks) {
    std::vector<std::pair<Role, BalanceChange>> out;
    const json_t* v = op.value;
    auto text = [&](const char* field) { return json_string_of(json_object_get(v, field)); };
    auto asset = [&](const json_t* value) { return parse_asset(value, table).value(); };
    auto boolean = [&](const char* field, bool absent) {
        const json_t* value = json_object_get(v, field);
        return value == nullptr ? absent : json_is_true(value);
    };
    auto request_id = [&] { return json::to_int64(json_object_get(v, "request_id")).value(); };

    for (const Move& move : moves().at(op.type)) {
        const std::string account = move.account[0] == '=' ? std::string(move.account + 1) : text(move.account);
        std::vector<Asset> amounts;
        std::optional<Decimal> count;
        const std::string_view spec = move.amount;
        if (spec[0] == '#') {
            count = units(std::stoll(std::string(spec.substr(1))), 0);
        } else if (spec[0] == '*') {
            const json_t* list = json_object_get(v, std::string(spec.substr(1)).c_str());
            std::size_t index = 0;
            json_t* element = nullptr;
            json_array_foreach(list, index, element) { amounts.push_back(asset(element)); }
        } else {
            for (const auto& name : split(spec, '|')) {
                if (const json_t* value = json_object_get(v, name.c_str())) {
                    amounts.push_back(asset(value));
                    break;
                }
            }
        }
        std::string place = move.place;
        if (place == "payout") place = boolean("payout_must_be_claimed", block >= forks.hf17_block) ? "rewards" : "liquid";
        if (place == "interest") place = boolean("is_saved_into_hbd_balance", true) ? "liquid" : "savings";
        if (count) {
            out.push_back({move.carrier, change(account, parse_component(place.substr(1)).value(), *count)});
        }
        for (const Asset& amount : amounts) {
            const C component = place[0] == '=' ? parse_component(place.substr(1)).value() : component_in(place, kind_of(amount));
            out.push_back({move.carrier, change(account, component, move.sign > 0 ? amount.amount : -amount.amount)});
        }
    }
    // Requests keep their id; the stateful and set rules.
    if (op.type == "transfer_from_savings" || op.type == "fill_transfer_from_savings") {
        for (auto& [role, c] : out) {
            if (c.account == text("from") && c.component != C::hbd_balance && c.component != C::hive_balance &&
                c.component != C::hive_savings && c.component != C::hbd_savings) {
                c.request_id = request_id();
            }
        }
    } else if (op.type == "cancel_transfer_from_savings") {
        auto c = change(text("from"), C::savings_withdraw_requests, units(-1, 0), ChangeKind::savings_withdrawal_cancelled);
        c.request_id = request_id();
        out.push_back({Role::Sender, c});
    } else if (op.type == "withdraw_vesting") {
        const Asset shares = asset(json_object_get(v, "vesting_shares"));
        const auto intervals = block >= forks.hf16_block ? 13 : 104;
        auto rate = shares.amount.units() / intervals;
        if (rate == 0) rate = 1;
        if (block >= forks.hf21_block && rate * intervals < shares.amount.units()) ++rate;
        if (shares.amount.is_zero()) rate = 0;
        out.push_back({Role::Owner, change(text("account"), C::vesting_withdraw_rate, units(static_cast<long long>(rate), 6), ChangeKind::set)});
        out.push_back({Role::Owner, change(text("account"), C::to_withdraw, shares.amount, ChangeKind::set)});
        out.push_back({Role::Owner, change(text("account"), C::withdrawn, units(0, 6), ChangeKind::set)});
    } else if (op.type == "fill_vesting_withdraw") {
        out.push_back({Role::Receiver, change(text("from_account"), C::vesting_withdraw_rate, units(0, 6), ChangeKind::power_down_step)});
    } else if (op.type == "delegate_vesting_shares" || op.type == "account_create_with_delegation") {
        const bool create = op.type == "account_create_with_delegation";
        const std::string delegator = text(create ? "creator" : "delegator");
        const std::string delegatee = text(create ? "new_account_name" : "delegatee");
        const Asset shares = asset(json_object_get(v, create ? "delegation" : "vesting_shares"));
        auto out_side = change(delegator, C::delegated_vests, shares.amount, ChangeKind::delegation);
        out_side.other = delegatee;
        out.push_back({create ? Role::Sender : Role::Delegator, out_side});
        if (!create) {
            auto in_side = change(delegatee, C::received_vests, shares.amount, ChangeKind::delegation);
            in_side.other = delegator;
            out.push_back({Role::Delegatee, in_side});
        }
    } else if (op.type == "hardfork_hive") {
        for (std::size_t index = 0; index < kBalanceComponentCount; ++index) {
            const auto component = static_cast<C>(index);
            out.push_back({Role::Sender, change(text("account"), component, units(0, component_precision(component)), ChangeKind::set)});
        }
    }
    // Zero sums and the `null` account are left out.
    std::erase_if(out, [](const auto& carried) {
        const BalanceChange& c = carried.second;
        return c.account == "null" || (c.kind == ChangeKind::add && c.amount.is_zero());
    });
    return out;
}

std::string describe(const BalanceChange& c) {
    return c.account + " " + std::string(component_name(c.component)) + " " + std::string(change_kind_name(c.kind)) + " " +
           c.amount.to_string() + (c.other ? " other=" + *c.other : "") +
           (c.request_id ? " request=" + std::to_string(*c.request_id) : "");
}

std::multiset<std::string> described(const std::vector<BalanceChange>& changes) {
    std::multiset<std::string> out;
    for (const auto& c : changes) out.insert(describe(c));
    return out;
}

bool is_testnet_file(const std::filesystem::path& path) {
    return path.string().find("hived-testnet-unit-expected") != std::string::npos;
}

// The changes of every event of one decoded entry, checked to sit on the
// event of their account (or of its counterparty, where the operation gives
// that account no event of its own).
std::vector<BalanceChange> changes_of_events(const std::vector<WalletEvent>& events, const AssetTable& table,
                                             const HardforkSchedule& forks, const std::string& where) {
    std::vector<BalanceChange> all;
    for (const auto& event : events) {
        auto changes = balance_changes(event, table, forks);
        EXPECT_TRUE(changes) << where << ": " << (changes ? "" : changes.error());
        if (!changes) continue;
        for (auto& c : *changes) {
            const bool own = c.account == event.account;
            const bool counterparty_side = event.counterparty && c.account == *event.counterparty &&
                                           (event.op_type == "fill_vesting_withdraw" || event.op_type == "fill_transfer_from_savings");
            EXPECT_TRUE(own || counterparty_side) << where << ": " << describe(c) << " on the event of " << event.account;
            EXPECT_EQ(c.amount.scale(), component_precision(c.component)) << where << ": " << describe(c);
            all.push_back(std::move(c));
        }
    }
    return all;
}

struct Sweep {
    std::map<std::string, int> checked;  // operations per type
    int changes = 0;
    int read_by_the_decoder = 0;  // operations whose changes came from the decoder's parse
};

std::multiset<std::string> described(const Result<std::vector<CarriedBalanceChange>>& changes) {
    if (!changes) return {"error: " + changes.error()};
    std::multiset<std::string> out;
    for (const auto& [carrier, change] : *changes) out.insert(std::string(role_name(carrier)) + " " + describe(change));
    return out;
}

// The loader's path (decode_block_entries with the hardfork schedule): each
// event carries its operation's changes read from the decoder's own parse,
// the same as read again from its payload; a writer with another schedule
// reads them again.
void expect_decoder_read_the_changes(const json_t* entry, const AssetTable& table, const HardforkSchedule& forks,
                                     const std::string& where, Sweep& tally) {
    const std::string text = json::dump_compact(entry);
    auto located = scan_entry(text);
    ASSERT_TRUE(located) << where << ": " << located.error();
    auto events = decode_block_entries({*located}, table, &forks);
    ASSERT_TRUE(events) << where << ": " << events.error();
    const HardforkSchedule other = forks == HardforkSchedule::mainnet() ? HardforkSchedule::from_genesis() : HardforkSchedule::mainnet();
    for (const auto& event : *events) {
        ASSERT_TRUE(event.balance_changes) << where;
        EXPECT_EQ(event.balance_changes.get(), events->front().balance_changes.get()) << where << ": read once per operation";
        EXPECT_EQ(described(event_balance_changes(event, table, forks)),
                  described(operation_balance_changes(event, table, forks)))
            << where;
        EXPECT_EQ(described(event_balance_changes(event, table, other)),
                  described(operation_balance_changes(event, table, other)))
            << where;
    }
    ++tally.read_by_the_decoder;
}

// Every operation entry ({..., "block", "op"}) of one fixture document.
void sweep(const std::filesystem::path& path, const json_t* document, Sweep& tally) {
    static const AssetTable mainnet = AssetTable::mainnet();
    static const AssetTable testnet = AssetTable::testnet();
    const bool on_testnet = is_testnet_file(path);
    const AssetTable& table = on_testnet ? testnet : mainnet;
    const HardforkSchedule forks = on_testnet ? HardforkSchedule::from_genesis() : HardforkSchedule::mainnet();
    test::walk_json(document, [&](const test::JsonVisit& visit) {
        const json_t* op = json_object_get(visit.value, "op");
        if (!json_is_object(visit.value) || op == nullptr || json_object_get(visit.value, "block") == nullptr) return;
        const Body body = body_of(op);
        if (moves().count(body.type) == 0) return;
        const std::string where = path.lexically_relative(hive_fixtures_dir()).string() + " " + body.type;
        auto events = decode_entry(const_cast<json_t*>(visit.value), table);
        ASSERT_TRUE(events) << where << ": " << events.error();
        const std::int64_t block = json::to_int64(json_object_get(visit.value, "block")).value();
        const auto actual = changes_of_events(*events, table, forks, where);
        std::vector<BalanceChange> expected;
        for (auto& [role, c] : expected_changes(body, block, table, forks)) {
            // Each change is on the event of its carrier's role.
            const bool carried = std::any_of(events->begin(), events->end(), [&, r = role](const WalletEvent& e) { return e.role == r; });
            EXPECT_TRUE(carried) << where << ": no " << role_name(role) << " event for " << describe(c);
            expected.push_back(c);
        }
        EXPECT_EQ(described(actual), described(expected)) << where << " block " << block;
        expect_decoder_read_the_changes(visit.value, table, forks, where, tally);
        ++tally.checked[body.type];
        tally.changes += static_cast<int>(actual.size());
    });
}

TEST(BalanceChanges, EveryBalanceMovingOperationOfTheFixtures) {
    Sweep tally;
    for (const auto& path : hive_fixture_files()) {
        JsonPtr document = load_json_file(path);
        ASSERT_TRUE(document) << path;
        sweep(path, document.get(), tally);
        if (HasFatalFailure()) return;
    }
    // Every wallet operation type but the one the fixtures lack
    // (limit_order_create2 is there; hardfork_hive_restore too).
    for (const auto type : wallet_operation_types()) {
        EXPECT_GT(tally.checked[std::string(type)], 0) << type << " never met in the fixtures";
        EXPECT_EQ(moves().count(std::string(type)), 1U) << type << " has no statement in the test";
    }
    EXPECT_GT(tally.changes, 5000);
    EXPECT_EQ(tally.read_by_the_decoder, std::accumulate(tally.checked.begin(), tally.checked.end(), 0,
                                                         [](int sum, const auto& type) { return sum + type.second; }));
}

// Both asset forms of one operation: identical changes (testnet pairs of
// current hived, and the mainnet get_ops_in_block answers of both APIs).
TEST(BalanceChanges, BothAssetFormsGiveTheSameChanges) {
    const AssetTable testnet = AssetTable::testnet();
    int compared = 0;
    for (const char* file : {"hived-testnet-unit-expected/get_ops_in_block_pairs.json",
                             "hived-testnet-unit-expected/get_account_history_pairs.json"}) {
        JsonPtr document = load_json_file(hive_fixtures_dir() / file);
        ASSERT_TRUE(document);
        std::size_t index = 0;
        json_t* pair = nullptr;
        json_array_foreach(json_object_get(document.get(), "pairs"), index, pair) {
            std::vector<BalanceChange> sides[2];
            int side = 0;
            for (const char* form : {"account_history_api", "condenser_api"}) {
                json_t* item = json_object_get(pair, form);
                json_t* entry = json_is_array(item) ? json_array_get(item, 1) : item;
                auto events = decode_entry(entry, testnet);
                ASSERT_TRUE(events) << events.error();
                sides[side++] = changes_of_events(*events, testnet, HardforkSchedule::from_genesis(), file);
            }
            EXPECT_EQ(described(sides[0]), described(sides[1])) << file << " pair " << index;
            if (!sides[0].empty()) ++compared;
        }
    }
    const AssetTable mainnet = AssetTable::mainnet();
    const auto dir_nai = hive_fixtures_dir() / "hived-mainnet-5m/account_history_api_patterns/get_ops_in_block";
    const auto dir_legacy = hive_fixtures_dir() / "hived-mainnet-5m/condenser_api_patterns/get_ops_in_block";
    for (const auto& file : std::filesystem::directory_iterator(dir_nai)) {
        const auto twin = dir_legacy / file.path().filename();
        if (!std::filesystem::exists(twin)) continue;
        JsonPtr nai = load_json_file(file.path());
        JsonPtr legacy = load_json_file(twin);
        json_t* nai_ops = json_object_get(nai.get(), "ops");
        if (!json_is_array(nai_ops) || !json_is_array(legacy.get())) continue;
        ASSERT_EQ(json_array_size(nai_ops), json_array_size(legacy.get())) << file.path();
        for (std::size_t i = 0; i < json_array_size(nai_ops); ++i) {
            auto a = decode_entry(json_array_get(nai_ops, i), mainnet);
            auto b = decode_entry(json_array_get(legacy.get(), i), mainnet);
            ASSERT_TRUE(a && b);
            const auto changes_a = changes_of_events(*a, mainnet, HardforkSchedule::mainnet(), file.path().string());
            EXPECT_EQ(described(changes_a), described(changes_of_events(*b, mainnet, HardforkSchedule::mainnet(), twin.string())))
                << file.path() << " op " << i;
            if (!changes_a.empty()) ++compared;
        }
    }
    EXPECT_GT(compared, 150);
}

// ---- Hand-written operations: namings, hardfork rules, stateful kinds ----

std::vector<BalanceChange> changes_of(const char* entry_json, const HardforkSchedule& forks = HardforkSchedule::from_genesis()) {
    auto entry = json::parse(entry_json);
    EXPECT_TRUE(entry) << entry_json;
    if (!entry) return {};
    auto events = decode_entry(entry->get(), AssetTable::mainnet());
    EXPECT_TRUE(events) << (events ? "" : events.error());
    if (!events) return {};
    return changes_of_events(*events, AssetTable::mainnet(), forks, entry_json);
}

#define ENVELOPE(block) "{\"trx_id\":null,\"block\":" #block ",\"trx_in_block\":1,\"op_in_trx\":0,\"virtual_op\":false,\"timestamp\":\"2024-01-01T00:00:00\",\"op\":"

TEST(BalanceChanges, SteemNamingMovesTheSameComponents) {
    const auto current = changes_of(ENVELOPE(80000000) R"(["author_reward",{"author":"alice","permlink":"p","hbd_payout":"1.000 HBD","hive_payout":"2.000 HIVE","vesting_payout":"3.000000 VESTS","curators_vesting_payout":"4.000000 VESTS","payout_must_be_claimed":true}]})");
    const auto steem = changes_of(ENVELOPE(80000000) R"(["author_reward",{"author":"alice","permlink":"p","sbd_payout":"1.000 SBD","steem_payout":"2.000 STEEM","vesting_payout":"3.000000 VESTS"}]})",
                                  HardforkSchedule::mainnet());
    EXPECT_EQ(described(current), (std::multiset<std::string>{"alice hbd_rewards add 1.000", "alice hive_rewards add 2.000",
                                                              "alice vests_rewards add 3.000000"}));
    EXPECT_EQ(described(current), described(steem));
    const auto claim = changes_of(ENVELOPE(80000000) R"(["claim_reward_balance",{"account":"alice","reward_steem":"0.000 STEEM","reward_sbd":"1.000 SBD","reward_vests":"3.000000 VESTS"}]})");
    EXPECT_EQ(described(claim), (std::multiset<std::string>{"alice hbd_rewards add -1.000", "alice hbd_balance add 1.000",
                                                            "alice vests_rewards add -3.000000", "alice vesting_shares add 3.000000"}));
}

TEST(BalanceChanges, RewardsWentStraightToTheBalancesBeforeHf17) {
    const char* payout = ENVELOPE(5000000) R"(["curation_reward",{"curator":"bob","reward":"5.000000 VESTS","comment_author":"a","comment_permlink":"p"}]})";
    EXPECT_EQ(described(changes_of(payout, HardforkSchedule::mainnet())), (std::multiset<std::string>{"bob vesting_shares add 5.000000"}));
    EXPECT_EQ(described(changes_of(payout, HardforkSchedule::from_genesis())), (std::multiset<std::string>{"bob vests_rewards add 5.000000"}));
}

TEST(BalanceChanges, PowerDownRateFollowsTheHardforkOfItsBlock) {
    const char* op = R"(["withdraw_vesting",{"account":"carol","vesting_shares":"100.000001 VESTS"}]})";
    const std::string before_hf16 = std::string(ENVELOPE(7000000)) + op;
    const std::string before_hf21 = std::string(ENVELOPE(20000000)) + op;
    const std::string since_hf21 = std::string(ENVELOPE(40000000)) + op;
    const auto forks = HardforkSchedule::mainnet();
    // 100000001 / 104 = 961538; / 13 = 7692307 (rounded up since HF21: 7692308).
    EXPECT_EQ(described(changes_of(before_hf16.c_str(), forks)),
              (std::multiset<std::string>{"carol vesting_withdraw_rate set 0.961538", "carol to_withdraw set 100.000001",
                                          "carol withdrawn set 0.000000"}));
    EXPECT_TRUE(described(changes_of(before_hf21.c_str(), forks)).count("carol vesting_withdraw_rate set 7.692307"));
    EXPECT_TRUE(described(changes_of(since_hf21.c_str(), forks)).count("carol vesting_withdraw_rate set 7.692308"));
    const auto stop = changes_of(ENVELOPE(40000000) R"(["withdraw_vesting",{"account":"carol","vesting_shares":"0.000000 VESTS"}]})", forks);
    EXPECT_EQ(described(stop), (std::multiset<std::string>{"carol vesting_withdraw_rate set 0.000000", "carol to_withdraw set 0.000000",
                                                           "carol withdrawn set 0.000000"}));
}

TEST(BalanceChanges, RoutedPowerDownAndSavingsToAnotherAccountCarryTheSendersSide) {
    const auto routed = changes_of(ENVELOPE(40000000) R"(["fill_vesting_withdraw",{"from_account":"dave","to_account":"erin","withdrawn":"2.000000 VESTS","deposited":"1.000 HIVE"}]})");
    EXPECT_EQ(described(routed), (std::multiset<std::string>{"erin hive_balance add 1.000", "dave vesting_shares add -2.000000",
                                                             "dave withdrawn add 2.000000", "dave vesting_withdraw_rate power_down_step 0.000000"}));
    const auto fill = changes_of(ENVELOPE(40000000) R"(["fill_transfer_from_savings",{"from":"dave","to":"erin","amount":"3.000 HBD","request_id":7,"memo":""}]})");
    EXPECT_EQ(described(fill), (std::multiset<std::string>{"erin hbd_balance add 3.000", "dave savings_pending_amount_hbd add -3.000 request=7",
                                                           "dave savings_withdraw_requests add -1 request=7"}));
}

TEST(BalanceChanges, DelegationsAndCancelledSavingsNeedThePairOrTheRequest) {
    const auto delegation = changes_of(ENVELOPE(40000000) R"(["delegate_vesting_shares",{"delegator":"fay","delegatee":"gus","vesting_shares":"10.000000 VESTS"}]})");
    EXPECT_EQ(described(delegation), (std::multiset<std::string>{"fay delegated_vests delegation 10.000000 other=gus",
                                                                 "gus received_vests delegation 10.000000 other=fay"}));
    const auto cancel = changes_of(ENVELOPE(40000000) R"(["cancel_transfer_from_savings",{"from":"fay","request_id":3}]})");
    EXPECT_EQ(described(cancel), (std::multiset<std::string>{"fay savings_withdraw_requests savings_withdrawal_cancelled -1 request=3"}));
    const auto returned = changes_of(ENVELOPE(40000000) R"(["return_vesting_delegation",{"account":"fay","vesting_shares":"4.000000 VESTS"}]})");
    EXPECT_EQ(described(returned), (std::multiset<std::string>{"fay delegated_vests add -4.000000"}));
}

TEST(BalanceChanges, InterestLandsWhereTheNodeSays) {
    const auto savings = changes_of(ENVELOPE(80000000) R"(["interest",{"owner":"hal","interest":"0.100 HBD","is_saved_into_hbd_balance":false}]})");
    EXPECT_EQ(described(savings), (std::multiset<std::string>{"hal hbd_savings add 0.100"}));
    const auto liquid = changes_of(ENVELOPE(8000000) R"(["interest",{"owner":"hal","interest":"0.100 SBD"}]})");
    EXPECT_EQ(described(liquid), (std::multiset<std::string>{"hal hbd_balance add 0.100"}));
}

TEST(BalanceChanges, TheNullAccountIsNotTracked) {
    EXPECT_TRUE(changes_of(ENVELOPE(80000000) R"(["transfer",{"from":"ivy","to":"null","amount":"1.000 HIVE","memo":""}]})").size() == 1);
    EXPECT_TRUE(changes_of(ENVELOPE(80000000) R"(["clear_null_account_balance",{"total_cleared":["1.000 HIVE"]}]})").empty());
}

TEST(BalanceChanges, ComponentNamesFollowBalanceTracker) {
    // Every component that balance_tracker's get_account_balances names the same way.
    JsonPtr balances = load_json_file(hive_fixtures_dir() / "balance-tracker-rest-mainnet-5m/get_account_balances/blocktrades.pat.json");
    ASSERT_TRUE(balances);
    for (std::size_t index = 0; index < kBalanceComponentCount; ++index) {
        const auto name = component_name(static_cast<C>(index));
        EXPECT_EQ(parse_component(name), static_cast<C>(index));
        EXPECT_NE(json_object_get(balances.get(), std::string(name).c_str()), nullptr) << name << " is not balance_tracker's";
    }
    EXPECT_FALSE(parse_component("hive"));
}

}  // namespace
}  // namespace wallet
