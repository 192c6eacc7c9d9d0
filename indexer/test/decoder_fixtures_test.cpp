// Structural checks of every wallet operation in t/fixtures/hive (mainnet,
// testnet and Steem-era files; envelopes of get_ops_in_block, get_account_history,
// enum_virtual_ops and HAfAH REST, and the bare operations of blocks and
// transactions), block-level derivations on every full block list, and the
// paired fixtures: both asset forms of one operation give identical events.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "decoder_test_support.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_scan.hpp"

namespace wallet {
namespace {

using test::hive_fixture_files;
using test::hive_fixtures_dir;
using test::json_string_of;
using test::load_json_file;

// The test's own statement of decisions.md section 2 and docs/operations.md,
// independent of the decoder's tables: who gets an event, in which role,
// with which counterparty, and where its amount and vesting amount come from.
struct Party {
    const char* account_field;       // "=name": an account the protocol names, not the op
    Role role;
    const char* counterparty_field;  // nullptr: no counterparty
    // Candidate fields, '|'-separated: several compete (the first non-zero
    // liquid one wins), a single one is taken as it is. A list field gives
    // its first non-zero liquid element, or its VESTS element. "" = none.
    const char* amount_fields;
    const char* vesting_fields;      // the first candidate present that is VESTS
};

struct OpExpectation {
    std::vector<Party> parties;
    bool is_virtual;
    std::vector<std::vector<std::string>> asset_order;  // protocol order, alternative names per slot
    bool has_memo;
    bool reward_ref;         // carries author and permlink
};

const char* const kHiveElseHbd = "hive_amount|steem_amount|hbd_amount|sbd_amount";
const char* const kTransferredHiveElseHbd = "hive_transferred|steem_transferred|hbd_transferred|sbd_transferred";

const std::map<std::string, OpExpectation>& expectations() {
    using Slots = std::vector<std::vector<std::string>>;
    const Slots payouts{{"hbd_payout", "sbd_payout"}, {"hive_payout", "steem_payout"}, {"vesting_payout"}};
    const Slots escrow{{"hbd_amount", "sbd_amount"}, {"hive_amount", "steem_amount"}, {"fee"}};
    const Slots transferred{{"hbd_transferred", "sbd_transferred"}, {"hive_transferred", "steem_transferred"}};
    static const std::map<std::string, OpExpectation> table{
        // The spec's 15.
        {"transfer", {{{"from", Role::Sender, "to", "amount", ""}, {"to", Role::Receiver, "from", "amount", ""}}, false, {{"amount"}}, true, false}},
        {"transfer_to_savings",
         {{{"from", Role::Sender, "to", "amount", ""}, {"to", Role::Receiver, "from", "amount", ""}}, false, {{"amount"}}, true, false}},
        {"transfer_from_savings",
         {{{"from", Role::Sender, "to", "amount", ""}, {"to", Role::Receiver, "from", "amount", ""}}, false, {{"amount"}}, true, false}},
        {"cancel_transfer_from_savings", {{{"from", Role::Sender, nullptr, "", ""}}, false, {}, false, false}},
        {"fill_transfer_from_savings", {{{"to", Role::Receiver, "from", "amount", ""}}, true, {{"amount"}}, true, false}},
        {"transfer_to_vesting",
         {{{"from", Role::Sender, "to", "amount", ""}, {"to", Role::Receiver, "from", "amount", ""}}, false, {{"amount"}}, false, false}},
        {"withdraw_vesting", {{{"account", Role::Owner, nullptr, "", "vesting_shares"}}, false, {{"vesting_shares"}}, false, false}},
        {"fill_vesting_withdraw",
         {{{"to_account", Role::Receiver, "from_account", "deposited", "deposited|withdrawn"}}, true, {{"withdrawn"}, {"deposited"}}, false, false}},
        {"delegate_vesting_shares",
         {{{"delegator", Role::Delegator, "delegatee", "", "vesting_shares"}, {"delegatee", Role::Delegatee, "delegator", "", "vesting_shares"}},
          false, {{"vesting_shares"}}, false, false}},
        {"return_vesting_delegation", {{{"account", Role::Owner, nullptr, "", "vesting_shares"}}, true, {{"vesting_shares"}}, false, false}},
        {"claim_reward_balance",
         {{{"account", Role::Owner, nullptr, "reward_hive|reward_steem|reward_hbd|reward_sbd", "reward_vests"}}, false,
          {{"reward_hive", "reward_steem"}, {"reward_hbd", "reward_sbd"}, {"reward_vests"}}, false, false}},
        {"interest", {{{"owner", Role::Owner, nullptr, "interest", ""}}, true, {{"interest"}}, false, false}},
        {"author_reward",
         {{{"author", Role::Author, nullptr, "", "vesting_payout"}}, true,
          {{"hbd_payout", "sbd_payout"}, {"hive_payout", "steem_payout"}, {"vesting_payout"}, {"curators_vesting_payout"}}, false, true}},
        {"curation_reward", {{{"curator", Role::Curator, nullptr, "", "reward"}}, true, {{"reward"}}, false, true}},
        {"comment_benefactor_reward",
         {{{"benefactor", Role::Beneficiary, nullptr, "hive_payout|steem_payout|hbd_payout|sbd_payout", "vesting_payout|reward"}}, true,
          {{"hbd_payout", "sbd_payout"}, {"hive_payout", "steem_payout"}, {"vesting_payout"}, {"reward"}}, false, true}},
        // Every other balance-moving operation (docs/operations.md).
        {"limit_order_create",
         {{{"owner", Role::Owner, nullptr, "amount_to_sell", ""}}, false, {{"amount_to_sell"}, {"min_to_receive"}}, false, false}},
        {"limit_order_create2", {{{"owner", Role::Owner, nullptr, "amount_to_sell", ""}}, false, {{"amount_to_sell"}}, false, false}},
        {"limit_order_cancelled", {{{"seller", Role::Owner, nullptr, "amount_back", ""}}, true, {{"amount_back"}}, false, false}},
        {"fill_order",
         {{{"current_owner", Role::Taker, "open_owner", "open_pays", ""}, {"open_owner", Role::Maker, "current_owner", "current_pays", ""}},
          true, {{"current_pays"}, {"open_pays"}}, false, false}},
        {"convert", {{{"owner", Role::Owner, nullptr, "amount", ""}}, false, {{"amount"}}, false, false}},
        {"collateralized_convert", {{{"owner", Role::Owner, nullptr, "amount", ""}}, false, {{"amount"}}, false, false}},
        {"collateralized_convert_immediate_conversion",
         {{{"owner", Role::Owner, nullptr, "hbd_out", ""}}, true, {{"hbd_out"}}, false, false}},
        {"fill_convert_request",
         {{{"owner", Role::Owner, nullptr, "amount_out", ""}}, true, {{"amount_in"}, {"amount_out"}}, false, false}},
        {"fill_collateralized_convert_request",
         {{{"owner", Role::Owner, nullptr, "amount_out", ""}}, true, {{"amount_in"}, {"amount_out"}, {"excess_collateral"}}, false, false}},
        {"account_create", {{{"creator", Role::Sender, "new_account_name", "fee", ""}}, false, {{"fee"}}, false, false}},
        {"account_create_with_delegation",
         {{{"creator", Role::Sender, "new_account_name", "fee", "delegation"}}, false, {{"fee"}, {"delegation"}}, false, false}},
        {"claim_account", {{{"creator", Role::Owner, nullptr, "fee", ""}}, false, {{"fee"}}, false, false}},
        {"account_created",
         {{{"new_account_name", Role::Receiver, "creator", "", "initial_vesting_shares"}}, true,
          {{"initial_vesting_shares"}, {"initial_delegation"}}, false, false}},
        {"transfer_to_vesting_completed",
         {{{"from_account", Role::Sender, "to_account", "hive_vested", "vesting_shares_received"},
           {"to_account", Role::Receiver, "from_account", "hive_vested", "vesting_shares_received"}},
          true, {{"hive_vested"}, {"vesting_shares_received"}}, false, false}},
        {"fill_recurrent_transfer",
         {{{"from", Role::Sender, "to", "amount", ""}, {"to", Role::Receiver, "from", "amount", ""}}, true, {{"amount"}}, true, false}},
        {"escrow_transfer",
         {{{"from", Role::Sender, "to", kHiveElseHbd, ""}, {"to", Role::Receiver, "from", kHiveElseHbd, ""}}, false, escrow, false, false}},
        {"escrow_release",
         {{{"from", Role::Sender, "receiver", kHiveElseHbd, ""}, {"receiver", Role::Receiver, "from", kHiveElseHbd, ""}},
          false, {escrow[0], escrow[1]}, false, false}},
        {"escrow_approved",
         {{{"from", Role::Sender, "agent", "fee", ""}, {"agent", Role::Receiver, "from", "fee", ""}}, true, {{"fee"}}, false, false}},
        {"escrow_rejected", {{{"from", Role::Owner, nullptr, kHiveElseHbd, ""}}, true, escrow, false, false}},
        {"producer_reward",
         {{{"producer", Role::Owner, nullptr, "vesting_shares", "vesting_shares"}}, true, {{"vesting_shares"}}, false, false}},
        {"pow_reward", {{{"worker", Role::Owner, nullptr, "reward", "reward"}}, true, {{"reward"}}, false, false}},
        {"liquidity_reward", {{{"owner", Role::Owner, nullptr, "payout", ""}}, true, {{"payout"}}, false, false}},
        {"vesting_shares_split",
         {{{"owner", Role::Owner, nullptr, "", "vesting_shares_after_split"}}, true,
          {{"vesting_shares_before_split"}, {"vesting_shares_after_split"}}, false, false}},
        {"proposal_pay",
         {{{"payer", Role::Sender, "receiver", "payment", ""}, {"receiver", Role::Receiver, "payer", "payment", ""}}, true, {{"payment"}},
          false, false}},
        {"proposal_fee",
         {{{"creator", Role::Sender, "treasury", "fee", ""}, {"treasury", Role::Receiver, "creator", "fee", ""}}, true, {{"fee"}}, false,
          false}},
        {"dhf_funding", {{{"treasury", Role::Owner, nullptr, "additional_funds", ""}}, true, {{"additional_funds"}}, false, false}},
        {"dhf_conversion",
         {{{"treasury", Role::Owner, nullptr, "hbd_amount_out", ""}}, true, {{"hive_amount_in"}, {"hbd_amount_out"}}, false, false}},
        {"hardfork_hive",
         {{{"account", Role::Sender, "treasury", kTransferredHiveElseHbd, "vests_converted"},
           {"treasury", Role::Receiver, "account", kTransferredHiveElseHbd, "vests_converted"}},
          true, {transferred[0], transferred[1], {"vests_converted"}, {"total_hive_from_vests", "total_steem_from_vests"}}, false, false}},
        {"hardfork_hive_restore",
         {{{"treasury", Role::Sender, "account", kTransferredHiveElseHbd, ""}, {"account", Role::Receiver, "treasury", kTransferredHiveElseHbd, ""}},
          true, transferred, false, false}},
        {"clear_null_account_balance",
         {{{"=null", Role::Owner, nullptr, "total_cleared", "total_cleared"}}, true, {{"total_cleared"}}, false, false}},
        {"consolidate_treasury_balance",
         {{{"=steem.dao", Role::Sender, "=hive.fund", "total_moved", "total_moved"},
           {"=hive.fund", Role::Receiver, "=steem.dao", "total_moved", "total_moved"}},
          true, {{"total_moved"}}, false, false}},
    };
    return table;
}

std::string op_type_of(const json_t* op) {
    if (json_is_array(op)) return json_string_of(json_array_get(op, 0));
    std::string type = json_string_of(json_object_get(op, "type"));
    const std::string suffix = "_operation";
    if (type.size() > suffix.size() && type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0) {
        type.resize(type.size() - suffix.size());
    }
    return type;
}

const json_t* op_body_of(const json_t* op) {
    return json_is_array(op) ? json_array_get(op, 1) : json_object_get(op, "value");
}

std::vector<std::string> split_fields(const char* fields) {
    std::vector<std::string> names;
    std::string text = fields;
    std::size_t from = 0;
    while (from < text.size()) {
        const auto bar = text.find('|', from);
        names.push_back(text.substr(from, bar == std::string::npos ? std::string::npos : bar - from));
        if (bar == std::string::npos) break;
        from = bar + 1;
    }
    return names;
}

std::optional<std::string> body_text(const json_t* body, const char* field) {
    if (field[0] == '=') return std::string(field + 1);  // an account the protocol names
    const json_t* value = json_object_get(body, field);
    if (!json_is_string(value)) return std::nullopt;
    return json_string_of(value);
}

int expected_decimals(const std::string& symbol) { return symbol == "VESTS" ? 6 : 3; }

std::size_t decimals_of(const std::string& amount) {
    const auto point = amount.find('.');
    return point == std::string::npos ? 0 : amount.size() - point - 1;
}

// Where a wallet op was met, and the envelope values the test expects.
struct Sighting {
    std::string where;
    std::string type;
    const json_t* body;
    std::int64_t block_num;
    std::int64_t trx_in_block;
    std::int64_t op_in_trx;
    std::optional<std::string> trx_id;
    std::optional<std::string> timestamp;  // node form; nullopt for a bare op without block time
};

void check_structure(const Sighting& s, const std::vector<WalletEvent>& events, const AssetTable& table) {
    SCOPED_TRACE(s.where + " " + s.type + " block " + std::to_string(s.block_num));
    const OpExpectation& expected = expectations().at(s.type);
    ASSERT_EQ(events.size(), expected.parties.size());

    // Asset-shaped fields of the body (each element of a list of amounts
    // under the list's name), and the protocol order they must follow.
    std::map<std::string, std::vector<const json_t*>> asset_fields;
    const char* key = nullptr;
    json_t* value = nullptr;
    json_object_foreach(const_cast<json_t*>(s.body), key, value) {
        if (is_asset_json(value)) asset_fields[key].push_back(value);
        if (json_is_array(value) && json_array_size(value) > 0 && is_asset_json(json_array_get(value, 0))) {
            for (std::size_t k = 0; k < json_array_size(value); ++k) asset_fields[key].push_back(json_array_get(value, k));
        }
    }
    std::vector<std::string> ordered_names;
    for (const auto& slot : expected.asset_order) {
        for (const auto& name : slot) {
            if (asset_fields.count(name) != 0) ordered_names.push_back(name);
        }
    }
    for (const auto& [name, values] : asset_fields) {
        if (std::find(ordered_names.begin(), ordered_names.end(), name) == ordered_names.end()) {
            ordered_names.push_back(name);  // unknown: sorted after
        }
    }
    std::vector<std::pair<std::string, const json_t*>> ordered;
    for (const auto& name : ordered_names) {
        for (const json_t* amount : asset_fields[name]) ordered.emplace_back(name, amount);
    }
    auto parsed_assets = [&](const std::string& name) {
        std::vector<Asset> amounts;
        for (const json_t* amount : asset_fields[name]) amounts.push_back(parse_asset(amount, table).value());
        return amounts;
    };
    // The event's amount and vesting amount by the party's candidate fields.
    auto expected_amount = [&](const char* fields) -> std::optional<Asset> {
        const auto names = split_fields(fields);
        std::vector<Asset> liquid;
        for (const auto& name : names) {
            for (auto& amount : parsed_assets(name)) {
                if (amount.symbol != "VESTS") liquid.push_back(amount);
            }
        }
        // A list of amounts always competes (its first non-zero liquid element).
        const bool listed_amounts = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
            return json_is_array(json_object_get(s.body, name.c_str()));
        });
        const bool competing = liquid.size() > 1 || listed_amounts;
        for (const auto& amount : liquid) {
            if (!competing || !amount.amount.is_zero()) return amount;
        }
        return std::nullopt;
    };
    auto expected_vesting = [&](const char* fields) -> std::optional<Asset> {
        for (const auto& name : split_fields(fields)) {
            for (auto& amount : parsed_assets(name)) {
                if (amount.symbol == "VESTS") return amount;
            }
        }
        return std::nullopt;
    };

    for (std::size_t i = 0; i < events.size(); ++i) {
        const WalletEvent& e = events[i];
        const Party& party = expected.parties[i];
        SCOPED_TRACE("event " + std::to_string(i));
        std::string account = body_text(s.body, party.account_field).value_or("");
        if (s.type == "transfer_to_vesting" && account.empty()) account = body_text(s.body, "from").value_or("");
        EXPECT_EQ(e.account, account);
        EXPECT_EQ(e.role, party.role);
        if (party.counterparty_field != nullptr) {
            std::string other = body_text(s.body, party.counterparty_field).value_or("");
            if (s.type == "transfer_to_vesting" && other.empty()) other = body_text(s.body, "from").value_or("");
            EXPECT_EQ(e.counterparty, other);
        } else {
            EXPECT_FALSE(e.counterparty);
        }
        EXPECT_EQ(e.op_type, s.type);
        EXPECT_EQ(e.block_num, s.block_num);
        EXPECT_EQ(e.trx_in_block, s.trx_in_block);
        EXPECT_EQ(e.op_in_trx, s.op_in_trx);
        if (s.timestamp) {
            EXPECT_EQ(e.timestamp.to_node_form(), *s.timestamp);
        }
        if (expected.is_virtual) {
            EXPECT_FALSE(e.trx_id);
        } else {
            EXPECT_EQ(e.trx_id, s.trx_id);
            EXPECT_EQ(e.virtual_op, 0);
        }
        EXPECT_FALSE(e.block_seq);
        EXPECT_EQ(e.memo, expected.has_memo ? body_text(s.body, "memo") : std::nullopt);
        if (expected.reward_ref) {
            EXPECT_EQ(e.author, body_text(s.body, "author") ? body_text(s.body, "author") : body_text(s.body, "comment_author"));
            EXPECT_EQ(e.permlink,
                      body_text(s.body, "permlink") ? body_text(s.body, "permlink") : body_text(s.body, "comment_permlink"));
            EXPECT_TRUE(e.author && e.permlink);
        } else {
            EXPECT_FALSE(e.author);
            EXPECT_FALSE(e.permlink);
        }

        // assets: every asset field once, in protocol order, exact, at precision.
        ASSERT_EQ(e.assets.size(), ordered.size());
        for (std::size_t a = 0; a < ordered.size(); ++a) {
            EXPECT_EQ(e.assets[a].field, ordered[a].first);
            auto parsed = parse_asset(ordered[a].second, table);
            ASSERT_TRUE(parsed);
            EXPECT_EQ(e.assets[a].asset, *parsed);
            const std::string printed = e.assets[a].asset.amount_string().value();
            EXPECT_EQ(decimals_of(printed), static_cast<std::size_t>(expected_decimals(e.assets[a].asset.symbol))) << printed;
        }
        auto listed = [&](const Asset& asset) {
            return std::any_of(e.assets.begin(), e.assets.end(), [&](const AssetField& f) { return f.asset == asset; });
        };
        EXPECT_EQ(e.amount, expected_amount(party.amount_fields));
        EXPECT_EQ(e.vesting, expected_vesting(party.vesting_fields));
        if (e.amount) {
            EXPECT_TRUE(listed(*e.amount));
            EXPECT_NE(e.amount->symbol, "VESTS");
        }
        if (e.vesting) {
            EXPECT_TRUE(listed(*e.vesting));
            EXPECT_EQ(e.vesting->symbol, "VESTS");
        }
    }
}

bool is_testnet_file(const std::filesystem::path& path) {
    return path.string().find("hived-testnet-unit-expected") != std::string::npos;
}

const AssetTable& table_for(const std::filesystem::path& path) {
    static const AssetTable mainnet = AssetTable::mainnet();
    static const AssetTable testnet = AssetTable::testnet();
    return is_testnet_file(path) ? testnet : mainnet;
}

std::int64_t integer_of(const json_t* value) {
    auto number = json::to_int64(value);
    return number ? *number : -1;
}

struct Tally {
    std::map<std::string, int> seen;     // wallet ops found by the walk, per type
    std::map<std::string, int> decoded;  // of them, decoded and checked
};

// A bare operation (of a block's or a transaction's list) at a known position.
void visit_bare_op(const std::string& where, json_t* bare, const OpEnvelope& envelope, const std::optional<std::string>& time,
                   const AssetTable& table, Tally& tally) {
    const std::string type = op_type_of(bare);
    if (expectations().count(type) == 0) return;
    ++tally.seen[type];
    auto events = decode_bare_operation(bare, envelope, std::nullopt, std::make_shared<const std::string>(json::dump_compact(bare)), table);
    ASSERT_TRUE(events) << where << ": " << events.error();
    check_structure(Sighting{where, type, op_body_of(bare), envelope.block_num, envelope.trx_in_block, envelope.op_in_trx,
                             envelope.trx_id, time},
                    *events, table);
    ++tally.decoded[type];
}

// Visits every op of a fixture document: envelopes ({..., "op": ...}), the
// transactions of blocks, and get_transaction results.
void visit_fixture(const std::filesystem::path& path, json_t* value, Tally& tally) {
    const AssetTable& table = table_for(path);
    const std::string where = path.lexically_relative(hive_fixtures_dir()).string();
    if (json_is_object(value)) {
        json_t* op = json_object_get(value, "op");
        if (op != nullptr && json_object_get(value, "block") != nullptr) {
            const std::string type = op_type_of(op);
            if (expectations().count(type) == 0) return;
            ++tally.seen[type];
            auto events = decode_entry(value, table);
            ASSERT_TRUE(events) << where << ": " << events.error();
            std::int64_t trx_in_block = integer_of(json_object_get(value, "trx_in_block"));
            if (trx_in_block == -1) trx_in_block = kBlockLevelTrxInBlock;
            const json_t* op_in_trx = json_object_get(value, "op_in_trx");
            if (op_in_trx == nullptr) op_in_trx = json_object_get(value, "op_pos");
            const json_t* trx_id = json_object_get(value, "trx_id");
            check_structure(Sighting{where, type, op_body_of(op), integer_of(json_object_get(value, "block")), trx_in_block,
                                     integer_of(op_in_trx),
                                     json_is_string(trx_id) ? std::optional<std::string>(json_string_of(trx_id)) : std::nullopt,
                                     json_string_of(json_object_get(value, "timestamp"))},
                            *events, table);
            ++tally.decoded[type];
            return;
        }
        // A block (block_api / HAfAH REST) or a get_transaction result.
        json_t* transactions = json_object_get(value, "transactions");
        json_t* operations = json_object_get(value, "operations");
        if (json_is_array(transactions) && json_is_string(json_object_get(value, "previous"))) {
            const std::string previous = json_string_of(json_object_get(value, "previous"));
            const std::int64_t block_num = std::stoll(previous.substr(0, 8), nullptr, 16) + 1;
            std::size_t trx_index = 0;
            json_t* trx = nullptr;
            json_array_foreach(transactions, trx_index, trx) {
                json_t* ids = json_object_get(value, "transaction_ids");
                std::optional<std::string> trx_id;
                if (json_is_array(ids)) trx_id = json_string_of(json_array_get(ids, trx_index));
                const std::string time = json_string_of(json_object_get(value, "timestamp"));
                std::size_t op_index = 0;
                json_t* bare = nullptr;
                json_array_foreach(json_object_get(trx, "operations"), op_index, bare) {
                    OpEnvelope envelope;
                    envelope.block_num = block_num;
                    envelope.trx_in_block = static_cast<std::int64_t>(trx_index);
                    envelope.op_in_trx = static_cast<std::int64_t>(op_index);
                    envelope.trx_id = trx_id;
                    envelope.timestamp = Timestamp::parse(time).value();
                    visit_bare_op(where, bare, envelope, time, table, tally);
                }
            }
            return;
        }
        if (json_is_array(operations) && json_object_get(value, "transaction_num") != nullptr) {
            const std::int64_t block_num = integer_of(json_object_get(value, "block_num"));
            const std::int64_t trx_index = integer_of(json_object_get(value, "transaction_num"));
            const std::string trx_id = json_string_of(json_object_get(value, "transaction_id"));
            std::size_t op_index = 0;
            json_t* bare = nullptr;
            json_array_foreach(operations, op_index, bare) {
                OpEnvelope envelope;  // the transaction has no block time: the envelope's epoch stands in
                envelope.block_num = block_num;
                envelope.trx_in_block = trx_index;
                envelope.op_in_trx = static_cast<std::int64_t>(op_index);
                envelope.trx_id = trx_id;
                visit_bare_op(where, bare, envelope, std::nullopt, table, tally);
            }
            return;
        }
        const char* key = nullptr;
        json_t* child = nullptr;
        json_object_foreach(value, key, child) { visit_fixture(path, child, tally); }
    } else if (json_is_array(value)) {
        std::size_t index = 0;
        json_t* child = nullptr;
        json_array_foreach(value, index, child) { visit_fixture(path, child, tally); }
    }
}

TEST(DecoderFixtures, EveryWalletOperationDecodesWithTheRightShape) {
    Tally tally;
    for (const auto& path : hive_fixture_files()) {
        JsonPtr document = load_json_file(path);
        ASSERT_TRUE(document) << path;
        visit_fixture(path, document.get(), tally);
        if (HasFatalFailure()) return;
    }
    EXPECT_EQ(tally.seen, tally.decoded);
    int total = 0;
    for (const auto& [type, expectation] : expectations()) {
        EXPECT_GT(tally.seen[type], 0) << type << " never met in the fixtures";
        total += tally.seen[type];
    }
    // The fixtures hold a few thousand wallet operations (curation rewards
    // of the big payout block 2,889,020 above all).
    EXPECT_GT(total, 2000);
}

// The get_ops_in_block(only_virtual=false) answers of the fixtures, by path.
std::vector<std::filesystem::path> full_block_lists() {
    // The manifest echoes requests with uint64 filters beyond jansson's int64.
    json_error_t error;
    JsonPtr manifest = json_own(json_load_file((hive_fixtures_dir() / "manifest.json").c_str(), JSON_DECODE_INT_AS_REAL, &error));
    EXPECT_TRUE(manifest) << error.text;
    std::vector<std::filesystem::path> files;
    std::size_t index = 0;
    json_t* entry = nullptr;
    json_array_foreach(manifest.get(), index, entry) {
        const std::string method = json_string_of(json_object_get(entry, "request_method"));
        const json_t* params = json_object_get(entry, "request_params");
        bool only_virtual = true;
        if (method == "condenser_api.get_ops_in_block" && json_is_array(params)) {
            only_virtual = json_array_size(params) > 1 && json_is_true(json_array_get(params, 1));
        } else if (method == "account_history_api.get_ops_in_block" && json_is_object(params)) {
            only_virtual = json_is_true(json_object_get(params, "only_virtual"));
        } else {
            continue;
        }
        const std::string path = json_string_of(json_object_get(entry, "file"));
        // Negative tests and the unknown block answer errors or empty lists.
        if (path.find("_negative/") != std::string::npos || path.find("unknown_block") != std::string::npos) continue;
        if (!only_virtual) files.push_back(hive_fixtures_dir() / json_string_of(json_object_get(entry, "file")));
    }
    return files;
}

json_t* ops_list_of(json_t* document) { return json_is_array(document) ? document : json_object_get(document, "ops"); }

TEST(DecoderFixtures, BlockPositionsComeFromTheWholeBlockList) {
    const auto files = full_block_lists();
    ASSERT_GE(files.size(), 20u);
    int wallet_events = 0;
    for (const auto& path : files) {
        SCOPED_TRACE(path.string());
        JsonPtr document = load_json_file(path);
        json_t* ops = ops_list_of(document.get());
        ASSERT_TRUE(json_is_array(ops));
        auto block_events = decode_block(ops, AssetTable::mainnet());
        ASSERT_TRUE(block_events) << block_events.error();
        // Expected positions counted here from the node's own flags (these
        // files come from hived >= 1.26, whose virtual_op bool is reliable).
        std::vector<WalletEvent> per_entry;
        std::vector<std::pair<std::int64_t, std::int64_t>> positions;  // block_seq, virtual ordinal
        std::int64_t ordinal = 0;
        for (std::size_t i = 0; i < json_array_size(ops); ++i) {
            json_t* entry = json_array_get(ops, i);
            const bool node_virtual = json_is_true(json_object_get(entry, "virtual_op"));
            if (node_virtual) ++ordinal;
            auto events = decode_entry(entry, AssetTable::mainnet());
            ASSERT_TRUE(events) << events.error();
            for (auto& event : *events) {
                per_entry.push_back(std::move(event));
                positions.emplace_back(static_cast<std::int64_t>(i), node_virtual ? ordinal : 0);
            }
        }
        ASSERT_EQ(block_events->size(), per_entry.size());
        for (std::size_t i = 0; i < per_entry.size(); ++i) {
            const WalletEvent& e = (*block_events)[i];
            EXPECT_TRUE(same_event_fields(e, per_entry[i], false)) << i;
            EXPECT_EQ(e.block_seq, positions[i].first);
            EXPECT_EQ(e.virtual_op, positions[i].second);
            ++wallet_events;
        }
    }
    EXPECT_GT(wallet_events, 0);
}

// The fixture's text, and the span of its block list in it.
std::string file_text(const std::filesystem::path& path) {
    std::string text;
    if (std::FILE* file = std::fopen(path.c_str(), "rb")) {
        char buffer[65536];
        std::size_t n = 0;
        while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
        std::fclose(file);
    }
    return text;
}

TEST(DecoderFixtures, LocatedEntriesDecodeLikeParsedLists) {
    int compared = 0;
    for (const auto& path : full_block_lists()) {
        SCOPED_TRACE(path.string());
        const std::string text = file_text(path);
        std::string_view list = text;
        if (text.find_first_not_of(" \n") != std::string::npos && text[text.find_first_not_of(" \n")] == '{') {
            ASSERT_TRUE(json::for_each_member(text, [&](std::string_view key, std::string_view value) {
                if (key == "ops") list = value;
                return true;
            }));
        }
        std::vector<RawEntry> entries;
        ASSERT_TRUE(json::for_each_element(list, [&](std::string_view entry_text) {
            auto entry = scan_entry(entry_text);
            EXPECT_TRUE(entry) << entry.error();
            if (entry) entries.push_back(*entry);
            return entry.ok();
        }));
        JsonPtr document = load_json_file(path);
        auto parsed = decode_block(ops_list_of(document.get()), AssetTable::mainnet());
        auto located = decode_block_entries(entries, AssetTable::mainnet());
        ASSERT_TRUE(parsed && located) << (located ? parsed.error() : located.error());
        ASSERT_EQ(parsed->size(), located->size());
        for (std::size_t i = 0; i < parsed->size(); ++i) {
            EXPECT_TRUE(same_event_fields((*parsed)[i], (*located)[i]));
            // The payload is the entry's own text: the same JSON.
            JsonPtr a = test::parse_json((*parsed)[i].payload->c_str());
            JsonPtr b = test::parse_json((*located)[i].payload->c_str());
            EXPECT_TRUE(json_equal(a.get(), b.get()));
            ++compared;
        }
    }
    EXPECT_GT(compared, 0);
}

TEST(DecoderErrors, ScanEntryRefusesBrokenEntries) {
    for (const char* text : {R"({"block":5,"op":["transfer",{}])", R"({"op":["transfer",{}]})", R"({"block":5})",
                             R"({"block":"x","op":["transfer",{}]})", R"({"block":5,"op":[{}]})", R"({"block":5,"op":{"value":{}}})",
                             R"([1,2])"}) {
        EXPECT_FALSE(scan_entry(text)) << text;
    }
    auto entry = scan_entry(R"({"virtual_op":3,"block":"9","op":{"type":"author_reward_operation","value":{}}})");
    ASSERT_TRUE(entry) << entry.error();
    EXPECT_EQ(entry->block, 9);
    EXPECT_EQ(entry->type, "author_reward");
    EXPECT_TRUE(entry->node_virtual_flag);
}

void expect_same_events(json_t* nai_entry, json_t* legacy_entry, const AssetTable& table, std::map<std::string, int>& compared) {
    auto nai = decode_entry(nai_entry, table);
    auto legacy = decode_entry(legacy_entry, table);
    ASSERT_TRUE(nai) << nai.error();
    ASSERT_TRUE(legacy) << legacy.error();
    ASSERT_EQ(nai->size(), legacy->size());
    for (std::size_t i = 0; i < nai->size(); ++i) {
        EXPECT_TRUE(same_event_fields((*nai)[i], (*legacy)[i]))
            << json::dump_compact(event_to_json((*nai)[i]).get()) << "\n" << json::dump_compact(event_to_json((*legacy)[i]).get());
        ++compared[(*nai)[i].op_type];
    }
}

TEST(DecoderFixtures, TestnetPairsGiveIdenticalEventsInBothForms) {
    std::map<std::string, int> compared;
    for (const char* file : {"get_ops_in_block_pairs.json", "get_account_history_pairs.json"}) {
        JsonPtr document = test::load_fixture(std::string("hived-testnet-unit-expected/") + file);
        json_t* pairs = json_object_get(document.get(), "pairs");
        ASSERT_GT(json_array_size(pairs), 100u);
        for (std::size_t i = 0; i < json_array_size(pairs); ++i) {
            SCOPED_TRACE(std::string(file) + " pair " + std::to_string(i));
            expect_same_events(test::testnet_pair(document.get(), i, "account_history_api"),
                               test::testnet_pair(document.get(), i, "condenser_api"), AssetTable::testnet(), compared);
        }
    }
    // Every wallet op type hived's unit tests produce is among the pairs.
    for (const std::string_view type : wallet_operation_types()) EXPECT_GT(compared[std::string(type)], 0) << type;
}

// Mainnet files answered by both APIs for the same request (the pattern
// tests ask both with the same parameters): entry lists diff 1:1.
std::vector<json_t*> entries_of(json_t* document) {
    json_t* list = document;
    if (json_is_object(document)) {
        list = json_object_get(document, "ops");
        if (list == nullptr) list = json_object_get(document, "history");
    }
    std::vector<json_t*> entries;
    if (json_is_array(list)) {
        for (std::size_t i = 0; i < json_array_size(list); ++i) entries.push_back(test::unwrap_history_item(json_array_get(list, i)));
    } else if (json_is_object(document) && json_object_get(document, "operations") != nullptr) {
        entries.push_back(document);  // a get_transaction result
    }
    return entries;
}

TEST(DecoderFixtures, MainnetAnswersOfBothApisGiveIdenticalEvents) {
    const auto base = hive_fixtures_dir() / "hived-mainnet-5m";
    std::map<std::string, int> compared;
    int files = 0;
    for (const char* method : {"get_ops_in_block", "get_account_history", "get_transaction"}) {
        for (const auto& entry : std::filesystem::directory_iterator(base / "condenser_api_patterns" / method)) {
            const auto twin = base / "account_history_api_patterns" / method / entry.path().filename();
            if (!std::filesystem::exists(twin)) continue;
            SCOPED_TRACE(entry.path().string());
            JsonPtr legacy = load_json_file(entry.path());
            JsonPtr nai = load_json_file(twin);
            if (json_object_get(nai.get(), "operations") != nullptr) {
                // get_transaction: bare ops with the transaction's position.
                auto legacy_ops = json_object_get(legacy.get(), "operations");
                auto nai_ops = json_object_get(nai.get(), "operations");
                ASSERT_EQ(json_array_size(legacy_ops), json_array_size(nai_ops));
                for (std::size_t i = 0; i < json_array_size(nai_ops); ++i) {
                    OpEnvelope envelope;
                    envelope.block_num = integer_of(json_object_get(nai.get(), "block_num"));
                    envelope.op_in_trx = static_cast<std::int64_t>(i);
                    auto a = decode_bare_operation(json_array_get(nai_ops, i), envelope, std::nullopt, nullptr, AssetTable::mainnet());
                    auto b = decode_bare_operation(json_array_get(legacy_ops, i), envelope, std::nullopt, nullptr, AssetTable::mainnet());
                    ASSERT_TRUE(a && b);
                    ASSERT_EQ(a->size(), b->size());
                    for (std::size_t k = 0; k < a->size(); ++k) {
                        EXPECT_TRUE(same_event_fields((*a)[k], (*b)[k]));
                        ++compared[(*a)[k].op_type];
                    }
                }
                ++files;
                continue;
            }
            const auto legacy_entries = entries_of(legacy.get());
            const auto nai_entries = entries_of(nai.get());
            ASSERT_EQ(legacy_entries.size(), nai_entries.size());
            for (std::size_t i = 0; i < nai_entries.size(); ++i) {
                expect_same_events(nai_entries[i], legacy_entries[i], AssetTable::mainnet(), compared);
            }
            if (std::string(method) == "get_ops_in_block") {
                auto a = decode_block(ops_list_of(nai.get()), AssetTable::mainnet());
                auto b = decode_block(ops_list_of(legacy.get()), AssetTable::mainnet());
                ASSERT_TRUE(a && b);
                ASSERT_EQ(a->size(), b->size());
                for (std::size_t k = 0; k < a->size(); ++k) EXPECT_TRUE(same_event_fields((*a)[k], (*b)[k], true));
            }
            ++files;
        }
    }
    EXPECT_GE(files, 40);
    for (const char* type : {"transfer", "transfer_to_vesting", "withdraw_vesting", "author_reward", "curation_reward"}) {
        EXPECT_GT(compared[type], 0) << type;
    }
}

}  // namespace
}  // namespace wallet
