#include "wallet/decoder.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "wallet/json_scan.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/json_util.hpp"

namespace wallet {
namespace {

// Inside the decoder a bad field ends the operation's decoding at once; the
// public functions turn it into an Error. Messages name op type and field,
// never a memo or other payload text.
class DecodeFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

constexpr std::int64_t kMaxStoredInteger = std::numeric_limits<std::int32_t>::max();

// The asset fields of a wallet operation in protocol (FC_REFLECT) order; each
// slot lists the names node versions print for it (decisions.md section 1).
using AssetSlot = std::initializer_list<std::string_view>;

struct WalletOpRule {
    std::string_view type;
    bool is_virtual;
    std::initializer_list<AssetSlot> asset_slots;
};

// The 15 types of spec 000's Events table come first; the rest are the other
// operations that move a balance (docs/operations.md gives the reason for
// each choice, and for the types left out).
constexpr std::size_t kSpecWalletOpCount = 15;

// A C array of static storage: the slot lists' backing arrays live as long
// as it does (a vector would copy the rules and leave them dangling).
std::span<const WalletOpRule> wallet_op_rules() {
    static const WalletOpRule rules[] = {
        {"transfer", false, {{"amount"}}},
        {"transfer_to_vesting", false, {{"amount"}}},
        {"withdraw_vesting", false, {{"vesting_shares"}}},
        {"transfer_to_savings", false, {{"amount"}}},
        {"transfer_from_savings", false, {{"amount"}}},
        {"cancel_transfer_from_savings", false, {}},
        {"claim_reward_balance", false, {{"reward_hive", "reward_steem"}, {"reward_hbd", "reward_sbd"}, {"reward_vests"}}},
        {"delegate_vesting_shares", false, {{"vesting_shares"}}},
        {"author_reward", true,
         {{"hbd_payout", "sbd_payout"}, {"hive_payout", "steem_payout"}, {"vesting_payout"}, {"curators_vesting_payout"}}},
        {"curation_reward", true, {{"reward"}}},
        {"interest", true, {{"interest"}}},
        {"fill_vesting_withdraw", true, {{"withdrawn"}, {"deposited"}}},
        {"fill_transfer_from_savings", true, {{"amount"}}},
        {"return_vesting_delegation", true, {{"vesting_shares"}}},
        // Before Steem 0.20 the op had a single `reward` (VESTS).
        {"comment_benefactor_reward", true, {{"hbd_payout", "sbd_payout"}, {"hive_payout", "steem_payout"}, {"vesting_payout"}, {"reward"}}},
        // Beyond the spec: every other balance-moving operation, real ones first.
        {"limit_order_create", false, {{"amount_to_sell"}, {"min_to_receive"}}},
        {"convert", false, {{"amount"}}},
        {"account_create", false, {{"fee"}}},
        {"escrow_transfer", false, {{"hbd_amount", "sbd_amount"}, {"hive_amount", "steem_amount"}, {"fee"}}},
        {"escrow_release", false, {{"hbd_amount", "sbd_amount"}, {"hive_amount", "steem_amount"}}},
        {"limit_order_create2", false, {{"amount_to_sell"}}},
        {"claim_account", false, {{"fee"}}},
        {"account_create_with_delegation", false, {{"fee"}, {"delegation"}}},
        {"collateralized_convert", false, {{"amount"}}},
        {"fill_convert_request", true, {{"amount_in"}, {"amount_out"}}},
        {"liquidity_reward", true, {{"payout"}}},
        {"fill_order", true, {{"current_pays"}, {"open_pays"}}},
        {"producer_reward", true, {{"vesting_shares"}}},
        {"clear_null_account_balance", true, {{"total_cleared"}}},
        {"proposal_pay", true, {{"payment"}}},
        {"dhf_funding", true, {{"additional_funds"}}},
        {"hardfork_hive", true,
         {{"hbd_transferred", "sbd_transferred"}, {"hive_transferred", "steem_transferred"}, {"vests_converted"},
          {"total_hive_from_vests", "total_steem_from_vests"}}},
        {"hardfork_hive_restore", true, {{"hbd_transferred", "sbd_transferred"}, {"hive_transferred", "steem_transferred"}}},
        {"consolidate_treasury_balance", true, {{"total_moved"}}},
        {"dhf_conversion", true, {{"hive_amount_in"}, {"hbd_amount_out"}}},
        {"transfer_to_vesting_completed", true, {{"hive_vested"}, {"vesting_shares_received"}}},
        {"pow_reward", true, {{"reward"}}},
        {"vesting_shares_split", true, {{"vesting_shares_before_split"}, {"vesting_shares_after_split"}}},
        {"account_created", true, {{"initial_vesting_shares"}, {"initial_delegation"}}},
        {"fill_collateralized_convert_request", true, {{"amount_in"}, {"amount_out"}, {"excess_collateral"}}},
        {"fill_recurrent_transfer", true, {{"amount"}}},
        {"limit_order_cancelled", true, {{"amount_back"}}},
        {"proposal_fee", true, {{"fee"}}},
        {"collateralized_convert_immediate_conversion", true, {{"hbd_out"}}},
        {"escrow_approved", true, {{"fee"}}},
        {"escrow_rejected", true, {{"hbd_amount", "sbd_amount"}, {"hive_amount", "steem_amount"}, {"fee"}}},
    };
    return rules;
}

// Looked up for every operation of every block: a hash table.
const WalletOpRule* find_rule(std::string_view type) noexcept {
    static const std::unordered_map<std::string_view, const WalletOpRule*> by_type = [] {
        std::unordered_map<std::string_view, const WalletOpRule*> table;
        for (const auto& rule : wallet_op_rules()) table.emplace(rule.type, &rule);
        return table;
    }();
    const auto found = by_type.find(type);
    return found != by_type.end() ? found->second : nullptr;
}

std::string_view strip_operation_suffix(std::string_view type) noexcept {
    constexpr std::string_view kSuffix = "_operation";
    if (type.size() > kSuffix.size() && type.substr(type.size() - kSuffix.size()) == kSuffix) {
        type.remove_suffix(kSuffix.size());
    }
    return type;
}

using json::View;

// One operation of a node answer: its type (without "_operation") and body.
struct NodeOperation {
    std::string type;
    View value;
};

// An integer the node may print as a JSON number or, above 2^53, as a
// string of decimal digits (node-api.md section 2).
Result<std::int64_t> integer_of(View value) {
    if (value.is_integer()) return value.integer();
    if (!value.is_string()) return make_error("expected an integer");
    return json::parse_int64(value.string());
}

std::int64_t int_field(View entry, const char* name, std::int64_t min, std::int64_t max) {
    const View value = entry.member(name);
    if (!value) throw DecodeFailure(std::string("missing '") + name + "'");
    auto number = integer_of(value);
    if (!number) throw DecodeFailure(std::string("'") + name + "': " + number.error());
    if (*number < min || *number > max) {
        throw DecodeFailure(std::string("'") + name + "' out of range: " + std::to_string(*number));
    }
    return *number;
}

// virtual_op: a bool (hived >= 1.26), a counter (older), 0 (steemd 0.19).
void read_node_virtual_op(View entry, OpEnvelope& envelope) {
    const View value = entry.member("virtual_op");
    if (!value || value.is_null()) return;
    if (value.is_boolean()) {
        envelope.node_virtual_flag = value.kind() == json::Kind::True;
        return;
    }
    auto number = integer_of(value);
    if (!number || *number < 0 || *number > kMaxStoredInteger) throw DecodeFailure("'virtual_op' is not a bool or a counter");
    if (*number > 0) {
        envelope.node_virtual_flag = true;
        envelope.node_virtual_number = *number;
    }
}

OpEnvelope read_envelope(View entry) {
    if (!entry.is_object()) throw DecodeFailure("operation entry is not an object");
    OpEnvelope envelope;
    envelope.block_num = int_field(entry, "block", 1, kMaxStoredInteger);
    envelope.trx_in_block = int_field(entry, "trx_in_block", -1, kBlockLevelTrxInBlock);
    if (envelope.trx_in_block == -1) envelope.trx_in_block = kBlockLevelTrxInBlock;  // HAfAH REST
    // HAfAH REST names the operation's index `op_pos`.
    const bool rest_form = !entry.member("op_in_trx") && entry.member("op_pos");
    envelope.op_in_trx = int_field(entry, rest_form ? "op_pos" : "op_in_trx", 0, kMaxStoredInteger);
    read_node_virtual_op(entry, envelope);
    const View trx_id = entry.member("trx_id");
    if (trx_id && !trx_id.is_null()) {
        if (!trx_id.is_string()) throw DecodeFailure("'trx_id' is not a string");
        envelope.trx_id = trx_id.string();
    }
    const View time_text = entry.member("timestamp");
    if (!time_text.is_string()) throw DecodeFailure("missing 'timestamp'");
    auto time = Timestamp::parse(time_text.string());
    if (!time) throw DecodeFailure("'timestamp': " + time.error());
    envelope.timestamp = *time;
    return envelope;
}

NodeOperation read_operation(View op) {
    NodeOperation result;
    if (op.is_array()) {
        const View name = op.element(0);
        if (op.size() != 2 || !name.is_string()) throw DecodeFailure("operation is not [name, body]");
        result.type = name.string();
        result.value = op.element(1);
    } else if (op.is_object()) {
        const View name = op.member("type");
        if (!name.is_string()) throw DecodeFailure("operation has no 'type'");
        result.type = std::string(strip_operation_suffix(name.string()));
        result.value = op.member("value");
    } else {
        throw DecodeFailure("operation is neither [name, body] nor {type, value}");
    }
    if (!result.value.is_object()) throw DecodeFailure(result.type + ": operation body is not an object");
    return result;
}

View entry_operation(View entry) {
    const View op = entry.member("op");
    if (!op) throw DecodeFailure("operation entry has no 'op'");
    return op;
}

// A NAI object's members read from the tape; `storage` keeps decoded strings.
struct NaiStrings {
    std::string amount;
    std::string nai;
};

NaiMembers nai_members_of(View object, NaiStrings& storage) {
    NaiMembers members;
    const View amount = object.member("amount");
    if (amount.is_string()) {
        storage.amount = amount.string();
        members.amount_kind = NaiMembers::Amount::String;
        members.amount_text = storage.amount;
    } else if (amount.is_integer()) {
        members.amount_kind = NaiMembers::Amount::Integer;
        members.amount_integer = amount.integer();
    }
    const View precision = object.member("precision");
    if (precision.is_integer()) members.precision = precision.integer();
    const View nai = object.member("nai");
    if (nai.is_string()) {
        storage.nai = nai.string();
        members.nai = storage.nai;
    }
    return members;
}

// parse_asset and is_asset_json of a tape value.
Result<Asset> asset_of_value(View value, const AssetTable& table) {
    if (value.is_string()) return parse_legacy_asset(value.string());
    if (!value.is_object()) return make_error("asset: expected a string or an object");
    NaiStrings storage;
    return parse_nai_members(nai_members_of(value, storage), table);
}

bool is_asset_value(View value) {
    if (value.is_string()) return parse_legacy_asset(value.string()).ok();
    NaiStrings storage;
    return value.is_object() && is_nai_shaped(nai_members_of(value, storage));
}

// Typed access to one operation body's fields.
class OpFields {
public:
    OpFields(const NodeOperation& op, const AssetTable& table) : op_(op), table_(table) {}

    bool has(std::string_view name) const { return static_cast<bool>(field(name)); }

    // An account name the operation must carry.
    std::string account(std::string_view name) const {
        auto text = optional_text(name);
        if (!text || text->empty()) fail(name, "missing or empty account");
        return std::move(*text);
    }

    // A string field that may be absent (or null).
    std::optional<std::string> optional_text(std::string_view name) const {
        const View value = field(name);
        if (!value || value.is_null()) return std::nullopt;
        if (!value.is_string()) fail(name, "not a string");
        return value.string();
    }

    std::string text(std::string_view name) const {
        auto value = optional_text(name);
        if (!value) fail(name, "missing");
        return std::move(*value);
    }

    // The first of the slot's names present (nullopt if none).
    std::optional<std::string_view> present_name(AssetSlot names) const {
        for (const auto name : names) {
            if (has(name)) return name;
        }
        return std::nullopt;
    }

    Asset asset(std::string_view name) const {
        const View value = field(name);
        if (!value) fail(name, "missing amount");
        return checked(name, asset_of_value(value, table_));
    }

    // A field holding a list of amounts.
    std::vector<Asset> asset_list(std::string_view name) const {
        const View list = field(name);
        if (!list.is_array()) fail(name, "missing list of amounts");
        std::vector<Asset> amounts;
        list.for_each_element([&](View element) { amounts.push_back(checked(name, asset_of_value(element, table_))); });
        return amounts;
    }

    // The asset under whichever of the slot's names the node printed.
    Asset asset_of(AssetSlot names) const {
        const auto name = present_name(names);
        if (!name) fail(*names.begin(), "missing amount");
        return asset(*name);
    }

    std::optional<Asset> optional_asset_of(AssetSlot names) const {
        const auto name = present_name(names);
        if (!name) return std::nullopt;
        return asset(*name);
    }

    // Every asset of the op: protocol slots in order, then any other
    // asset-shaped field sorted by name (decisions.md section 1).
    std::vector<AssetField> all_assets(const WalletOpRule& rule) const {
        std::vector<AssetField> fields;
        std::vector<std::string_view> known;
        for (const auto& slot : rule.asset_slots) {
            known.insert(known.end(), slot.begin(), slot.end());
            const auto name = present_name(slot);
            if (!name) continue;
            if (field(*name).is_array()) {
                // A list of amounts (total_cleared, total_moved): each under the list's name.
                for (auto& element : asset_list(*name)) fields.push_back({std::string(*name), std::move(element)});
            } else {
                fields.push_back({std::string(*name), asset(*name)});
            }
        }
        std::vector<std::string> extra;
        op_.value.for_each_member([&](View key, View) {
            std::string name = key.string();
            // A repeated name counts once, with its last value (as the member lookup reads it).
            if (std::find(known.begin(), known.end(), name) == known.end() && is_asset_value(field(name))) {
                extra.push_back(std::move(name));
            }
        });
        std::sort(extra.begin(), extra.end());
        extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
        for (const auto& name : extra) fields.push_back({name, asset(name)});
        return fields;
    }

    // A boolean field that may be absent (older nodes print fewer fields).
    std::optional<bool> optional_bool(std::string_view name) const {
        const View value = field(name);
        if (!value || value.is_null()) return std::nullopt;
        if (!value.is_boolean()) fail(name, "not a boolean");
        return value.kind() == json::Kind::True;
    }

    std::int64_t integer(std::string_view name) const {
        const View value = field(name);
        if (!value) fail(name, "missing");
        auto number = integer_of(value);
        if (!number) fail(name, number.error());
        return *number;
    }

    std::string_view type() const { return op_.type; }

private:
    View field(std::string_view name) const { return op_.value.member(name); }
    Asset checked(std::string_view name, Result<Asset> parsed) const {
        if (!parsed) fail(name, parsed.error());
        if (!parsed->amount_string()) fail(name, "amount does not fit its precision");
        return std::move(parsed).value();
    }
    [[noreturn]] void fail(std::string_view name, const std::string& why) const {
        throw DecodeFailure(op_.type + "." + std::string(name) + ": " + why);
    }

    const NodeOperation& op_;
    const AssetTable& table_;
};

bool is_vesting_asset(const Asset& asset) { return asset.symbol == "VESTS"; }

// Accounts the protocol names without the operation naming them (hived's
// HIVE_NULL_ACCOUNT, the pre-HF24 treasury and the treasury since).
constexpr std::string_view kNullAccount = "null";
constexpr std::string_view kObsoleteTreasury = "steem.dao";
constexpr std::string_view kTreasury = "hive.fund";

// A payout that is VESTS on most of the chain but liquid HIVE on its first
// days (producer_reward, pow_reward) goes where its symbol says.
void set_liquid_or_vesting(WalletEvent& event, Asset asset) {
    if (is_vesting_asset(asset)) {
        event.vesting = std::move(asset);
    } else {
        event.amount = std::move(asset);
    }
}

// The first non-zero of two competing liquid amounts (decisions.md section 2).
std::optional<Asset> first_non_zero(const std::optional<Asset>& first, const std::optional<Asset>& second) {
    if (first && !first->amount.is_zero()) return first;
    if (second && !second->amount.is_zero()) return second;
    return std::nullopt;
}

// The operations beyond spec 000's 15 (docs/operations.md, one row each).
// `add` and `add_both` are decode_wallet_op's.
template <typename Add, typename AddBoth>
void decode_beyond_spec(std::string_view type, const OpFields& f, const Add& add, const AddBoth& add_both) {
    // Two competing liquid amounts: HIVE if non-zero, else HBD if non-zero.
    auto hive_else_hbd = [&](AssetSlot hive, AssetSlot hbd) {
        return first_non_zero(f.optional_asset_of(hive), f.optional_asset_of(hbd));
    };
    // A list of amounts: the first non-zero liquid one, and the VESTS one.
    auto from_list = [&](std::string_view name, WalletEvent& event) {
        for (auto& asset : f.asset_list(name)) {
            if (is_vesting_asset(asset)) {
                if (!event.vesting) event.vesting = asset;
            } else if (!event.amount && !asset.amount.is_zero()) {
                event.amount = asset;
            }
        }
    };

    if (type == "limit_order_create" || type == "limit_order_create2") {
        add(f.account("owner"), Role::Owner).amount = f.asset("amount_to_sell");
    } else if (type == "limit_order_cancelled") {
        add(f.account("seller"), Role::Owner).amount = f.asset("amount_back");
    } else if (type == "fill_order") {
        // Each side gets what it received; what it paid left its balance
        // when its order was created.
        const Asset current_pays = f.asset("current_pays");
        const Asset open_pays = f.asset("open_pays");
        const std::string open_owner = f.account("open_owner");
        WalletEvent& taker = add(f.account("current_owner"), Role::Taker);
        taker.amount = open_pays;
        taker.counterparty = open_owner;
        const std::string current_owner = taker.account;
        WalletEvent& maker = add(open_owner, Role::Maker);
        maker.amount = current_pays;
        maker.counterparty = current_owner;
    } else if (type == "convert" || type == "collateralized_convert") {
        add(f.account("owner"), Role::Owner).amount = f.asset("amount");
    } else if (type == "collateralized_convert_immediate_conversion") {
        add(f.account("owner"), Role::Owner).amount = f.asset("hbd_out");
    } else if (type == "fill_convert_request" || type == "fill_collateralized_convert_request") {
        add(f.account("owner"), Role::Owner).amount = f.asset("amount_out");
    } else if (type == "account_create" || type == "account_create_with_delegation") {
        WalletEvent& creator = add(f.account("creator"), Role::Sender);
        creator.counterparty = f.account("new_account_name");
        creator.amount = f.asset("fee");
        if (f.has("delegation")) creator.vesting = f.asset("delegation");
    } else if (type == "claim_account") {
        add(f.account("creator"), Role::Owner).amount = f.asset("fee");
    } else if (type == "account_created") {
        WalletEvent& created = add(f.account("new_account_name"), Role::Receiver);
        created.counterparty = f.account("creator");
        created.vesting = f.asset("initial_vesting_shares");
    } else if (type == "transfer_to_vesting_completed") {
        const Asset hive = f.asset("hive_vested");
        const Asset vests = f.asset("vesting_shares_received");
        add_both(f.account("from_account"), Role::Sender, f.account("to_account"), Role::Receiver, [&](WalletEvent& e) {
            e.amount = hive;
            e.vesting = vests;
        });
    } else if (type == "escrow_transfer" || type == "escrow_release") {
        // Into escrow from `from` (naming `to`, as transfer_from_savings
        // names its receiver), or out of it to `receiver`.
        const auto amount = hive_else_hbd({"hive_amount", "steem_amount"}, {"hbd_amount", "sbd_amount"});
        const std::string to = f.account(type == "escrow_transfer" ? "to" : "receiver");
        add_both(f.account("from"), Role::Sender, to, Role::Receiver, [&](WalletEvent& e) { e.amount = amount; });
    } else if (type == "escrow_approved") {
        const Asset fee = f.asset("fee");
        add_both(f.account("from"), Role::Sender, f.account("agent"), Role::Receiver, [&](WalletEvent& e) { e.amount = fee; });
    } else if (type == "escrow_rejected") {
        add(f.account("from"), Role::Owner).amount = hive_else_hbd({"hive_amount", "steem_amount"}, {"hbd_amount", "sbd_amount"});
    } else if (type == "producer_reward") {
        set_liquid_or_vesting(add(f.account("producer"), Role::Owner), f.asset("vesting_shares"));
    } else if (type == "pow_reward") {
        set_liquid_or_vesting(add(f.account("worker"), Role::Owner), f.asset("reward"));
    } else if (type == "liquidity_reward") {
        add(f.account("owner"), Role::Owner).amount = f.asset("payout");
    } else if (type == "vesting_shares_split") {
        add(f.account("owner"), Role::Owner).vesting = f.asset("vesting_shares_after_split");
    } else if (type == "proposal_pay") {
        const Asset payment = f.asset("payment");
        add_both(f.account("payer"), Role::Sender, f.account("receiver"), Role::Receiver,
                 [&](WalletEvent& e) { e.amount = payment; });
    } else if (type == "proposal_fee") {
        const Asset fee = f.asset("fee");
        add_both(f.account("creator"), Role::Sender, f.account("treasury"), Role::Receiver, [&](WalletEvent& e) { e.amount = fee; });
    } else if (type == "dhf_funding") {
        add(f.account("treasury"), Role::Owner).amount = f.asset("additional_funds");
    } else if (type == "dhf_conversion") {
        add(f.account("treasury"), Role::Owner).amount = f.asset("hbd_amount_out");
    } else if (type == "hardfork_hive" || type == "hardfork_hive_restore") {
        // HF23's airdrop exclusion moves the account's balances to the
        // treasury; the restore moves them back.
        const auto amount = hive_else_hbd({"hive_transferred", "steem_transferred"}, {"hbd_transferred", "sbd_transferred"});
        const auto vests = f.optional_asset_of({"vests_converted"});
        const bool restore = type == "hardfork_hive_restore";
        const std::string account = f.account("account");
        const std::string treasury = f.account("treasury");
        add_both(restore ? treasury : account, Role::Sender, restore ? account : treasury, Role::Receiver, [&](WalletEvent& e) {
            e.amount = amount;
            e.vesting = vests;
        });
    } else if (type == "clear_null_account_balance") {
        from_list("total_cleared", add(std::string(kNullAccount), Role::Owner));
    } else if (type == "consolidate_treasury_balance") {
        add_both(std::string(kObsoleteTreasury), Role::Sender, std::string(kTreasury), Role::Receiver,
                 [&](WalletEvent& e) { from_list("total_moved", e); });
    }
}

// ---- Balance changes (docs/operations.md, "Balance changes") ----

enum class AssetKind { hive, hbd, vests };

// Which chain asset an amount is, in any naming (HIVE/STEEM/TESTS, HBD/SBD/TBD)
// or by the NAI its symbol has in the network's table.
AssetKind asset_kind(const Asset& asset, const AssetTable& table) {
    const std::string_view symbol = asset.symbol;
    if (symbol == "VESTS") return AssetKind::vests;
    if (symbol == "HIVE" || symbol == "STEEM" || symbol == "TESTS") return AssetKind::hive;
    if (symbol == "HBD" || symbol == "SBD" || symbol == "TBD") return AssetKind::hbd;
    if (const AssetDefinition* known = table.find_symbol(symbol)) {
        if (known->nai == "@@000000021") return AssetKind::hive;
        if (known->nai == "@@000000013") return AssetKind::hbd;
        if (known->nai == "@@000000037") return AssetKind::vests;
    }
    throw DecodeFailure("balance change of an unknown asset '" + asset.symbol + "'");
}

using Component = BalanceComponent;

// The component an amount of each asset lands in, per place.
struct Place {
    Component hive, hbd, vests;
};
constexpr Place kLiquid{Component::hive_balance, Component::hbd_balance, Component::vesting_shares};
constexpr Place kRewards{Component::hive_rewards, Component::hbd_rewards, Component::vests_rewards};
constexpr Place kSavings{Component::hive_savings, Component::hbd_savings, Component::vesting_shares};
constexpr Place kSavingsPending{Component::savings_pending_amount_hive, Component::savings_pending_amount_hbd,
                                Component::vesting_shares};
constexpr Place kOpenOrders{Component::open_orders_hive_amount, Component::open_orders_hbd_amount, Component::vesting_shares};
constexpr Place kEscrow{Component::escrow_pending_amount_hive, Component::escrow_pending_amount_hbd, Component::vesting_shares};

// Every component, for the accounts HF23 emptied.
constexpr std::array<Component, kBalanceComponentCount> all_components() {
    std::array<Component, kBalanceComponentCount> components{};
    for (std::size_t index = 0; index < components.size(); ++index) components[index] = static_cast<Component>(index);
    return components;
}

// The changes of one operation, each with the role of the event that carries it.
class BalanceChangeBuilder {
public:
    BalanceChangeBuilder(const OpFields& f, const AssetTable& table) : f_(f), table_(table) {}

    using Carried = CarriedBalanceChange;

    std::vector<Carried> take() { return std::move(changes_); }

    void add(Role carrier, const std::string& account, Component component, const Decimal& amount,
             ChangeKind kind = ChangeKind::add) {
        auto at_precision = amount.rescaled(component_precision(component));
        if (!at_precision) throw DecodeFailure(std::string(f_.type()) + ": " + std::string(component_name(component)) + ": " + at_precision.error());
        BalanceChange change;
        change.account = account;
        change.component = component;
        change.kind = kind;
        change.amount = *at_precision;
        changes_.push_back({carrier, std::move(change)});
    }
    void count(Role carrier, const std::string& account, Component component, int delta) {
        add(carrier, account, component, *Decimal::from_units(delta, 0));
    }
    // An amount into (sign +1) or out of (-1) the place its asset has there.
    void move(Role carrier, const std::string& account, const Place& place, const Asset& asset, int sign) {
        const AssetKind kind = asset_kind(asset, table_);
        if (kind == AssetKind::vests && &place != &kLiquid && &place != &kRewards) {
            throw DecodeFailure(std::string(f_.type()) + ": VESTS where only HIVE or HBD can be");
        }
        const Component component = kind == AssetKind::hive ? place.hive : kind == AssetKind::hbd ? place.hbd : place.vests;
        add(carrier, account, component, sign > 0 ? asset.amount : -asset.amount);
    }
    // The last change added.
    BalanceChange& last() { return changes_.back().change; }

private:
    const OpFields& f_;
    const AssetTable& table_;
    std::vector<Carried> changes_;
};

// hived's power-down rate for a withdraw_vesting of `shares` (withdraw_vesting_evaluator).
Decimal power_down_rate(const Asset& shares, std::int64_t block, const HardforkSchedule& forks) {
    const Decimal::Units intervals = block >= forks.hf16_block ? 13 : 104;
    const Decimal::Units units = shares.amount.units();
    Decimal::Units rate = units / intervals;
    if (rate == 0) rate = 1;
    if (block >= forks.hf21_block && rate * intervals < units) rate += 1;
    return *Decimal::from_units(rate, shares.amount.scale());
}

// Where a reward payout goes: the reward balances (to be claimed) since
// HF17, the liquid and vesting balances before. The node says so in
// payout_must_be_claimed; Steem-era nodes did not print it, then the block decides.
const Place& reward_place(const OpFields& f, std::int64_t block, const HardforkSchedule& forks) {
    const bool claimed = f.optional_bool("payout_must_be_claimed").value_or(block >= forks.hf17_block);
    return claimed ? kRewards : kLiquid;
}

std::vector<BalanceChangeBuilder::Carried> operation_balance_changes(const OpFields& f, std::int64_t block,
                                                                     const HardforkSchedule& forks,
                                                                     const AssetTable& table) {
    BalanceChangeBuilder b(f, table);
    const std::string_view type = f.type();
    constexpr int in = 1;
    constexpr int out = -1;
    auto each_asset = [&](std::string_view list, const auto& apply) {
        for (const auto& asset : f.asset_list(list)) apply(asset);
    };
    // Each slot's amount from one place of the account to another.
    auto move_each = [&](Role carrier, const std::string& account, std::initializer_list<AssetSlot> slots, const Place& from,
                         const Place& to) {
        for (const AssetSlot slot : slots) {
            const Asset amount = f.asset_of(slot);
            b.move(carrier, account, from, amount, out);
            b.move(carrier, account, to, amount, in);
        }
    };
    const std::initializer_list<AssetSlot> escrow_slots = {AssetSlot{"hbd_amount", "sbd_amount"},
                                                           AssetSlot{"hive_amount", "steem_amount"}, AssetSlot{"fee"}};

    if (type == "transfer" || type == "fill_recurrent_transfer") {
        const Asset amount = f.asset("amount");
        b.move(Role::Sender, f.account("from"), kLiquid, amount, out);
        b.move(Role::Receiver, f.account("to"), kLiquid, amount, in);
    } else if (type == "transfer_to_savings") {
        const Asset amount = f.asset("amount");
        b.move(Role::Sender, f.account("from"), kLiquid, amount, out);
        b.move(Role::Receiver, f.account("to"), kSavings, amount, in);
    } else if (type == "transfer_from_savings") {
        // Leaves savings now, arrives at fill_transfer_from_savings.
        const Asset amount = f.asset("amount");
        const std::string from = f.account("from");
        const std::int64_t request = f.integer("request_id");
        b.move(Role::Sender, from, kSavings, amount, out);
        b.move(Role::Sender, from, kSavingsPending, amount, in);
        b.last().request_id = request;
        b.count(Role::Sender, from, Component::savings_withdraw_requests, 1);
        b.last().request_id = request;
    } else if (type == "cancel_transfer_from_savings") {
        const std::string from = f.account("from");
        b.add(Role::Sender, from, Component::savings_withdraw_requests, *Decimal::from_units(-1, 0),
              ChangeKind::savings_withdrawal_cancelled);
        b.last().request_id = f.integer("request_id");
    } else if (type == "fill_transfer_from_savings") {
        // `from` has no event of its own: the receiver's event carries its side.
        const Asset amount = f.asset("amount");
        const std::string from = f.account("from");
        const std::int64_t request = f.integer("request_id");
        b.move(Role::Receiver, f.account("to"), kLiquid, amount, in);
        b.move(Role::Receiver, from, kSavingsPending, amount, out);
        b.last().request_id = request;
        b.count(Role::Receiver, from, Component::savings_withdraw_requests, -1);
        b.last().request_id = request;
    } else if (type == "transfer_to_vesting") {
        // The VESTS arrive with transfer_to_vesting_completed.
        b.move(Role::Sender, f.account("from"), kLiquid, f.asset("amount"), out);
    } else if (type == "transfer_to_vesting_completed") {
        b.move(Role::Receiver, f.account("to_account"), kLiquid, f.asset("vesting_shares_received"), in);
    } else if (type == "withdraw_vesting") {
        const Asset shares = f.asset("vesting_shares");
        const std::string account = f.account("account");
        if (shares.amount.is_negative()) {
            // Ignored by hived before HF20 (refused since).
            if (block >= forks.hf20_block) throw DecodeFailure("withdraw_vesting: negative vesting_shares");
        } else {
            const Decimal zero = *Decimal::from_units(0, 6);
            const bool stop = shares.amount.is_zero();
            b.add(Role::Owner, account, Component::vesting_withdraw_rate,
                  stop ? zero : power_down_rate(shares, block, forks), ChangeKind::set);
            b.add(Role::Owner, account, Component::to_withdraw, stop ? zero : shares.amount, ChangeKind::set);
            b.add(Role::Owner, account, Component::withdrawn, zero, ChangeKind::set);
        }
    } else if (type == "fill_vesting_withdraw") {
        // One per route, then the account's own remainder; the event is the
        // receiver's, and carries the withdrawing account's side too.
        const std::string from = f.account("from_account");
        const Asset withdrawn = f.asset("withdrawn");
        b.move(Role::Receiver, f.account("to_account"), kLiquid, f.asset("deposited"), in);
        b.move(Role::Receiver, from, kLiquid, withdrawn, out);
        b.add(Role::Receiver, from, Component::withdrawn, withdrawn.amount);
        b.add(Role::Receiver, from, Component::vesting_withdraw_rate, *Decimal::from_units(0, 6), ChangeKind::power_down_step);
    } else if (type == "delegate_vesting_shares") {
        const std::string delegator = f.account("delegator");
        const std::string delegatee = f.account("delegatee");
        const Asset shares = f.asset("vesting_shares");
        b.add(Role::Delegator, delegator, Component::delegated_vests, shares.amount, ChangeKind::delegation);
        b.last().other = delegatee;
        b.add(Role::Delegatee, delegatee, Component::received_vests, shares.amount, ChangeKind::delegation);
        b.last().other = delegator;
    } else if (type == "return_vesting_delegation") {
        b.add(Role::Owner, f.account("account"), Component::delegated_vests, -f.asset("vesting_shares").amount);
    } else if (type == "account_create_with_delegation") {
        const std::string creator = f.account("creator");
        b.move(Role::Sender, creator, kLiquid, f.asset("fee"), out);
        b.add(Role::Sender, creator, Component::delegated_vests, f.asset("delegation").amount, ChangeKind::delegation);
        b.last().other = f.account("new_account_name");
    } else if (type == "account_create" || type == "claim_account") {
        // The fee is vested to the new account (account_created) or burnt.
        b.move(type == "claim_account" ? Role::Owner : Role::Sender, f.account("creator"), kLiquid, f.asset("fee"), out);
    } else if (type == "account_created") {
        const std::string account = f.account("new_account_name");
        b.move(Role::Receiver, account, kLiquid, f.asset("initial_vesting_shares"), in);
        b.add(Role::Receiver, account, Component::received_vests, f.asset("initial_delegation").amount);
    } else if (type == "claim_reward_balance") {
        move_each(Role::Owner, f.account("account"),
                  {AssetSlot{"reward_hive", "reward_steem"}, AssetSlot{"reward_hbd", "reward_sbd"}, AssetSlot{"reward_vests"}},
                  kRewards, kLiquid);
    } else if (type == "author_reward" || type == "comment_benefactor_reward") {
        const bool author = type == "author_reward";
        const Role role = author ? Role::Author : Role::Beneficiary;
        const std::string account = f.account(author ? "author" : "benefactor");
        const Place& place = reward_place(f, block, forks);
        for (const AssetSlot slot : {AssetSlot{"hbd_payout", "sbd_payout"}, AssetSlot{"hive_payout", "steem_payout"},
                                     AssetSlot{"vesting_payout"}, AssetSlot{"reward"}}) {
            if (auto payout = f.optional_asset_of(slot)) b.move(role, account, place, *payout, in);
        }
    } else if (type == "curation_reward") {
        b.move(Role::Curator, f.account("curator"), reward_place(f, block, forks), f.asset("reward"), in);
    } else if (type == "interest") {
        // Paid into savings, or (before HF25, flagged) into the liquid HBD.
        const bool liquid = f.optional_bool("is_saved_into_hbd_balance").value_or(true);
        b.move(Role::Owner, f.account("owner"), liquid ? kLiquid : kSavings, f.asset("interest"), in);
    } else if (type == "limit_order_create" || type == "limit_order_create2") {
        const Asset sold = f.asset("amount_to_sell");
        const std::string owner = f.account("owner");
        b.move(Role::Owner, owner, kLiquid, sold, out);
        b.move(Role::Owner, owner, kOpenOrders, sold, in);
    } else if (type == "limit_order_cancelled") {
        const Asset back = f.asset("amount_back");
        const std::string seller = f.account("seller");
        b.move(Role::Owner, seller, kOpenOrders, back, out);
        b.move(Role::Owner, seller, kLiquid, back, in);
    } else if (type == "fill_order") {
        // Each side pays out of its order and receives what the other paid.
        const Asset current_pays = f.asset("current_pays");
        const Asset open_pays = f.asset("open_pays");
        const std::string taker = f.account("current_owner");
        const std::string maker = f.account("open_owner");
        b.move(Role::Taker, taker, kOpenOrders, current_pays, out);
        b.move(Role::Taker, taker, kLiquid, open_pays, in);
        b.move(Role::Maker, maker, kOpenOrders, open_pays, out);
        b.move(Role::Maker, maker, kLiquid, current_pays, in);
    } else if (type == "convert") {
        const Asset amount = f.asset("amount");
        const std::string owner = f.account("owner");
        b.move(Role::Owner, owner, kLiquid, amount, out);
        b.add(Role::Owner, owner, Component::conversion_pending_amount_hbd, amount.amount);
        b.count(Role::Owner, owner, Component::conversion_pending_count_hbd, 1);
    } else if (type == "fill_convert_request") {
        const std::string owner = f.account("owner");
        b.add(Role::Owner, owner, Component::conversion_pending_amount_hbd, -f.asset("amount_in").amount);
        b.count(Role::Owner, owner, Component::conversion_pending_count_hbd, -1);
        b.move(Role::Owner, owner, kLiquid, f.asset("amount_out"), in);
    } else if (type == "collateralized_convert") {
        const Asset collateral = f.asset("amount");
        const std::string owner = f.account("owner");
        b.move(Role::Owner, owner, kLiquid, collateral, out);
        b.add(Role::Owner, owner, Component::conversion_pending_amount_hive, collateral.amount);
        b.count(Role::Owner, owner, Component::conversion_pending_count_hive, 1);
    } else if (type == "collateralized_convert_immediate_conversion") {
        b.move(Role::Owner, f.account("owner"), kLiquid, f.asset("hbd_out"), in);
    } else if (type == "fill_collateralized_convert_request") {
        // The collateral used (amount_in) and the excess returned leave the
        // request; amount_out was paid at once (the immediate conversion).
        const std::string owner = f.account("owner");
        const Asset used = f.asset("amount_in");
        const Asset excess = f.asset("excess_collateral");
        b.add(Role::Owner, owner, Component::conversion_pending_amount_hive, -used.amount);
        b.add(Role::Owner, owner, Component::conversion_pending_amount_hive, -excess.amount);
        b.count(Role::Owner, owner, Component::conversion_pending_count_hive, -1);
        b.move(Role::Owner, owner, kLiquid, excess, in);
    } else if (type == "escrow_transfer") {
        move_each(Role::Sender, f.account("from"), escrow_slots, kLiquid, kEscrow);
    } else if (type == "escrow_release") {
        const std::string from = f.account("from");
        const std::string receiver = f.account("receiver");
        for (const AssetSlot slot : {AssetSlot{"hbd_amount", "sbd_amount"}, AssetSlot{"hive_amount", "steem_amount"}}) {
            const Asset amount = f.asset_of(slot);
            b.move(Role::Sender, from, kEscrow, amount, out);
            b.move(Role::Receiver, receiver, kLiquid, amount, in);
        }
    } else if (type == "escrow_approved") {
        const Asset fee = f.asset("fee");
        b.move(Role::Sender, f.account("from"), kEscrow, fee, out);
        b.move(Role::Receiver, f.account("agent"), kLiquid, fee, in);
    } else if (type == "escrow_rejected") {
        move_each(Role::Owner, f.account("from"), escrow_slots, kEscrow, kLiquid);
    } else if (type == "producer_reward") {
        b.move(Role::Owner, f.account("producer"), kLiquid, f.asset("vesting_shares"), in);
    } else if (type == "pow_reward") {
        b.move(Role::Owner, f.account("worker"), kLiquid, f.asset("reward"), in);
    } else if (type == "liquidity_reward") {
        b.move(Role::Owner, f.account("owner"), kLiquid, f.asset("payout"), in);
    } else if (type == "vesting_shares_split") {
        const std::string owner = f.account("owner");
        b.move(Role::Owner, owner, kLiquid, f.asset("vesting_shares_before_split"), out);
        b.move(Role::Owner, owner, kLiquid, f.asset("vesting_shares_after_split"), in);
    } else if (type == "proposal_pay") {
        const Asset payment = f.asset("payment");
        b.move(Role::Sender, f.account("payer"), kLiquid, payment, out);
        b.move(Role::Receiver, f.account("receiver"), kLiquid, payment, in);
    } else if (type == "proposal_fee") {
        const Asset fee = f.asset("fee");
        b.move(Role::Sender, f.account("creator"), kLiquid, fee, out);
        b.move(Role::Receiver, f.account("treasury"), kLiquid, fee, in);
    } else if (type == "dhf_funding") {
        b.move(Role::Owner, f.account("treasury"), kLiquid, f.asset("additional_funds"), in);
    } else if (type == "dhf_conversion") {
        const std::string treasury = f.account("treasury");
        b.move(Role::Owner, treasury, kLiquid, f.asset("hive_amount_in"), out);
        b.move(Role::Owner, treasury, kLiquid, f.asset("hbd_amount_out"), in);
    } else if (type == "hardfork_hive") {
        // HF23 empties the account (balances, savings, rewards, VESTS as
        // HIVE, delegations, power-down, pending requests) into the treasury.
        const std::string account = f.account("account");
        const std::string treasury = f.account("treasury");
        for (const Component component : all_components()) {
            b.add(Role::Sender, account, component, *Decimal::from_units(0, component_precision(component)), ChangeKind::set);
        }
        for (const AssetSlot slot : {AssetSlot{"hbd_transferred", "sbd_transferred"},
                                     AssetSlot{"hive_transferred", "steem_transferred"},
                                     AssetSlot{"total_hive_from_vests", "total_steem_from_vests"}}) {
            b.move(Role::Receiver, treasury, kLiquid, f.asset_of(slot), in);
        }
    } else if (type == "hardfork_hive_restore") {
        const std::string account = f.account("account");
        const std::string treasury = f.account("treasury");
        for (const AssetSlot slot : {AssetSlot{"hbd_transferred", "sbd_transferred"}, AssetSlot{"hive_transferred", "steem_transferred"}}) {
            const Asset amount = f.asset_of(slot);
            b.move(Role::Sender, treasury, kLiquid, amount, out);
            b.move(Role::Receiver, account, kLiquid, amount, in);
        }
    } else if (type == "consolidate_treasury_balance") {
        each_asset("total_moved", [&](const Asset& amount) {
            b.move(Role::Sender, std::string(kObsoleteTreasury), kLiquid, amount, out);
            b.move(Role::Receiver, std::string(kTreasury), kLiquid, amount, in);
        });
    }
    // clear_null_account_balance: the `null` account is not tracked (see balance_changes).
    return b.take();
}

std::vector<WalletEvent> decode_wallet_op(const WalletOpRule& rule, const NodeOperation& op, const OpEnvelope& envelope,
                                          const std::optional<BlockPosition>& position, PayloadText payload,
                                          const AssetTable& table) {
    const OpFields f(op, table);
    WalletEvent base;
    base.block_num = envelope.block_num;
    base.trx_in_block = envelope.trx_in_block;
    base.op_in_trx = envelope.op_in_trx;
    if (!rule.is_virtual) {
        base.virtual_op = 0;
    } else if (envelope.node_virtual_number) {
        base.virtual_op = envelope.node_virtual_number;
    } else if (position) {
        base.virtual_op = position->virtual_ordinal;
    }
    if (position) base.block_seq = position->block_seq;
    base.op_type = std::string(rule.type);
    if (!rule.is_virtual) base.trx_id = envelope.trx_id;
    base.timestamp = envelope.timestamp;
    base.assets = f.all_assets(rule);
    base.payload = std::move(payload);

    std::vector<WalletEvent> events;
    auto add = [&](std::string account, Role role) -> WalletEvent& {
        WalletEvent& event = events.emplace_back(base);
        event.account = std::move(account);
        event.role = role;
        return event;
    };
    // An operation between two accounts: one event each, naming the other.
    auto add_both = [&](const std::string& first, Role first_role, const std::string& second, Role second_role,
                        const auto& fill) {
        WalletEvent& one = add(first, first_role);
        one.counterparty = second;
        fill(one);
        WalletEvent& other = add(second, second_role);
        other.counterparty = first;
        fill(other);
    };
    const std::string_view type = rule.type;

    // A recurrent transfer's execution is a transfer (beyond the spec's 15).
    if (type == "transfer" || type == "transfer_to_savings" || type == "transfer_from_savings" ||
        type == "fill_recurrent_transfer") {
        const Asset amount = f.asset("amount");
        const auto memo = f.optional_text("memo");
        add_both(f.account("from"), Role::Sender, f.account("to"), Role::Receiver, [&](WalletEvent& e) {
            e.amount = amount;
            e.memo = memo;
        });
    } else if (type == "cancel_transfer_from_savings") {
        add(f.account("from"), Role::Sender);
    } else if (type == "fill_transfer_from_savings") {
        const std::string from = f.account("from");
        WalletEvent& received = add(f.account("to"), Role::Receiver);
        received.amount = f.asset("amount");
        received.counterparty = from;
        received.memo = f.optional_text("memo");
    } else if (type == "transfer_to_vesting") {
        const std::string from = f.account("from");
        std::string to = f.optional_text("to").value_or("");
        if (to.empty()) to = from;  // an empty `to` vests to the sender
        const Asset amount = f.asset("amount");
        add_both(from, Role::Sender, to, Role::Receiver, [&](WalletEvent& e) { e.amount = amount; });
    } else if (type == "withdraw_vesting") {
        add(f.account("account"), Role::Owner).vesting = f.asset("vesting_shares");
    } else if (type == "fill_vesting_withdraw") {
        const std::string from = f.account("from_account");
        const Asset withdrawn = f.asset("withdrawn");
        const Asset deposited = f.asset("deposited");
        WalletEvent& received = add(f.account("to_account"), Role::Receiver);
        received.counterparty = from;
        if (is_vesting_asset(deposited)) {
            received.vesting = deposited;
        } else {
            received.amount = deposited;
            received.vesting = withdrawn;
        }
    } else if (type == "delegate_vesting_shares") {
        const Asset shares = f.asset("vesting_shares");
        add_both(f.account("delegator"), Role::Delegator, f.account("delegatee"), Role::Delegatee,
                 [&](WalletEvent& e) { e.vesting = shares; });
    } else if (type == "return_vesting_delegation") {
        add(f.account("account"), Role::Owner).vesting = f.asset("vesting_shares");
    } else if (type == "claim_reward_balance") {
        WalletEvent& claimed = add(f.account("account"), Role::Owner);
        claimed.amount = first_non_zero(f.asset_of({"reward_hive", "reward_steem"}), f.asset_of({"reward_hbd", "reward_sbd"}));
        claimed.vesting = f.asset("reward_vests");
    } else if (type == "interest") {
        add(f.account("owner"), Role::Owner).amount = f.asset("interest");
    } else if (type == "author_reward") {
        // Spec rule 5: the author's event carries the VESTS payout only; the
        // liquid payouts and the curators' share are in `assets`.
        WalletEvent& reward = add(f.account("author"), Role::Author);
        reward.vesting = f.asset("vesting_payout");
        reward.author = f.account("author");
        reward.permlink = f.text("permlink");
    } else if (type == "curation_reward") {
        WalletEvent& reward = add(f.account("curator"), Role::Curator);
        reward.vesting = f.asset("reward");
        reward.author = f.account(f.has("author") ? "author" : "comment_author");
        reward.permlink = f.text(f.has("permlink") ? "permlink" : "comment_permlink");
    } else if (type == "comment_benefactor_reward") {
        WalletEvent& reward = add(f.account("benefactor"), Role::Beneficiary);
        reward.author = f.account("author");
        reward.permlink = f.text("permlink");
        if (!f.has("vesting_payout") && f.has("reward")) {
            reward.vesting = f.asset("reward");  // pre-Steem-0.20 form
        } else {
            reward.amount = first_non_zero(f.optional_asset_of({"hive_payout", "steem_payout"}),
                                           f.optional_asset_of({"hbd_payout", "sbd_payout"}));
            reward.vesting = f.asset("vesting_payout");
        }
    } else {
        decode_beyond_spec(type, f, add, add_both);
    }
    return events;
}

std::string where(const OpEnvelope& envelope) {
    return "block " + std::to_string(envelope.block_num) + " trx " + std::to_string(envelope.trx_in_block) + " op " +
           std::to_string(envelope.op_in_trx);
}

Result<std::vector<WalletEvent>> decode_body(const NodeOperation& op, const OpEnvelope& envelope,
                                             const std::optional<BlockPosition>& position, PayloadText payload,
                                             const AssetTable& assets) {
    const WalletOpRule* rule = find_rule(op.type);
    if (rule == nullptr) return std::vector<WalletEvent>{};
    try {
        return decode_wallet_op(*rule, op, envelope, position, std::move(payload), assets);
    } catch (const DecodeFailure& failure) {
        return make_error(where(envelope) + ": " + failure.what());
    }
}

json::Tape tape_of(std::string_view text) {
    auto tape = json::Tape::parse(text);
    if (!tape) throw DecodeFailure(tape.error());
    return std::move(tape).value();
}

// block_seq and virtual ordinals over a block's list, in node order.
class BlockWalker {
public:
    BlockPosition next(std::string_view type, bool node_virtual_flag, std::int64_t block) {
        if (block_num_ && *block_num_ != block) {
            throw DecodeFailure("operations of blocks " + std::to_string(*block_num_) + " and " + std::to_string(block) +
                                " in one block list");
        }
        block_num_ = block;
        const bool is_virtual = is_virtual_operation(type, node_virtual_flag);
        if (is_virtual) ++virtual_ordinal_;
        return BlockPosition{next_seq_++, is_virtual ? virtual_ordinal_ : 0};
    }

private:
    std::optional<std::int64_t> block_num_;
    std::int64_t next_seq_ = 0;
    std::int64_t virtual_ordinal_ = 0;
};

// The operation type of an entry's "op" text: ["name", {...}] or {"type": "name_operation", ...}.
Result<std::string_view> scan_operation_type(std::string_view op_text) {
    std::string_view type;
    bool found = false;
    Result<bool> scanned = false;
    if (!op_text.empty() && op_text.front() == '[') {
        scanned = json::for_each_element(op_text, [&](std::string_view element) {
            found = json::plain_string(element, type);
            return false;  // the name is the first element
        });
    } else {
        scanned = json::for_each_member(op_text, [&](std::string_view key, std::string_view value) {
            if (key == "type") found = json::plain_string(value, type);
            return true;
        });
    }
    if (!scanned) return make_error(scanned.error());
    if (!found || type.empty()) return make_error("operation without a type name");
    return strip_operation_suffix(type);
}

}  // namespace

bool is_wallet_operation(std::string_view op_type) noexcept { return find_rule(op_type) != nullptr; }

std::optional<std::string_view> sole_asset_field(std::string_view op_type) noexcept {
    const WalletOpRule* rule = find_rule(op_type);
    if (rule == nullptr || rule->asset_slots.size() != 1 || rule->asset_slots.begin()->size() != 1) return std::nullopt;
    return *rule->asset_slots.begin()->begin();
}

std::span<const std::string_view> wallet_operation_types() noexcept {
    static const std::vector<std::string_view> types = [] {
        std::vector<std::string_view> names;
        for (const auto& rule : wallet_op_rules()) names.push_back(rule.type);
        return names;
    }();
    return types;
}

std::span<const std::string_view> spec_wallet_operation_types() noexcept {
    return wallet_operation_types().first(kSpecWalletOpCount);
}

bool is_spec_wallet_operation(std::string_view op_type) noexcept {
    const auto spec = spec_wallet_operation_types();
    return std::find(spec.begin(), spec.end(), op_type) != spec.end();
}

bool is_virtual_operation(std::string_view op_type, bool node_says_virtual) noexcept {
    // Looked up for every operation of every block: a hash table of the ids.
    static const std::unordered_map<std::string_view, bool> kVirtualByType = [] {
        std::unordered_map<std::string_view, bool> table;
        for (const auto name : kOperationTypes) table.emplace(name, operation_type_id(name) >= kFirstVirtualOperationId);
        for (const std::string_view renamed : {"sps_fund", "sps_convert"}) table.emplace(renamed, true);
        return table;
    }();
    const auto found = kVirtualByType.find(op_type);
    return found != kVirtualByType.end() ? found->second : node_says_virtual;
}

Result<std::vector<WalletEvent>> decode_bare_operation(const json_t* op, const OpEnvelope& envelope,
                                                       const std::optional<BlockPosition>& position, PayloadText payload,
                                                       const AssetTable& assets) {
    try {
        const std::string text = json::dump_compact(op);
        const json::Tape tape = tape_of(text);
        return decode_body(read_operation(tape.root()), envelope, position, std::move(payload), assets);
    } catch (const DecodeFailure& failure) {
        return make_error(failure.what());
    }
}

Result<std::vector<WalletEvent>> decode_entry(json_t* entry, const AssetTable& assets) {
    try {
        auto text = std::make_shared<const std::string>(json::dump_compact(entry));
        const json::Tape tape = tape_of(*text);
        const View root = tape.root();
        const NodeOperation op = read_operation(entry_operation(root));
        if (!is_wallet_operation(op.type)) return std::vector<WalletEvent>{};
        return decode_body(op, read_envelope(root), std::nullopt, std::move(text), assets);
    } catch (const DecodeFailure& failure) {
        return make_error(failure.what());
    }
}

Result<std::vector<WalletEvent>> decode_block(json_t* ops, const AssetTable& assets) {
    if (!json_is_array(ops)) return make_error("block operations are not an array");
    std::vector<std::string> texts;
    for (std::size_t index = 0; index < json_array_size(ops); ++index) texts.push_back(json::dump_compact(json_array_get(ops, index)));
    std::vector<RawEntry> entries;
    for (std::size_t index = 0; index < texts.size(); ++index) {
        auto entry = scan_entry(texts[index]);
        if (!entry) return make_error("operation " + std::to_string(index) + " of the block list: " + entry.error());
        entries.push_back(*entry);
    }
    return decode_block_entries(entries, assets);
}

Result<RawEntry> scan_entry(std::string_view entry_text) {
    RawEntry entry;
    entry.text = entry_text;
    bool has_block = false;
    bool has_op = false;
    std::string problem;
    auto scanned = json::for_each_member(entry_text, [&](std::string_view key, std::string_view value) {
        if (key == "block") {
            auto block = json::integer_value(value);
            if (!block) {
                problem = "'block': " + block.error();
                return false;
            }
            entry.block = *block;
            has_block = true;
        } else if (key == "virtual_op") {
            if (value == "true" || value == "false") {
                entry.node_virtual_flag = value == "true";
            } else if (auto number = json::integer_value(value)) {
                entry.node_virtual_flag = *number > 0;
            }
        } else if (key == "op") {
            auto type = scan_operation_type(value);
            if (!type) {
                problem = type.error();
                return false;
            }
            entry.type = *type;
            has_op = true;
        }
        return true;
    });
    if (!scanned) return make_error(scanned.error());
    if (!problem.empty()) return make_error(problem);
    if (!has_block || !has_op) return make_error("operation entry lacks 'block' or 'op'");
    return entry;
}

namespace {

// The balance changes of a read operation (operation_balance_changes):
// those of the null account and zero sums left out. Throws DecodeFailure.
std::vector<CarriedBalanceChange> read_balance_changes(const NodeOperation& op, std::int64_t block,
                                                       const AssetTable& assets, const HardforkSchedule& forks) {
    const OpFields f(op, assets);
    std::vector<CarriedBalanceChange> changes;
    for (auto& carried : operation_balance_changes(f, block, forks, assets)) {
        const BalanceChange& change = carried.change;
        if (change.account == kNullAccount) continue;
        if (change.kind == ChangeKind::add && change.amount.is_zero()) continue;
        changes.push_back(std::move(carried));
    }
    return changes;
}

std::string balance_failure(std::int64_t block, std::string_view op_type, const DecodeFailure& failure) {
    return "block " + std::to_string(block) + " " + std::string(op_type) + ": " + failure.what();
}

}  // namespace

Result<std::vector<WalletEvent>> decode_block_entries(const std::vector<RawEntry>& entries, const AssetTable& assets,
                                                      const HardforkSchedule* forks) {
    std::vector<WalletEvent> events;
    BlockWalker walker;
    for (std::size_t index = 0; index < entries.size(); ++index) {
        const RawEntry& raw = entries[index];
        try {
            const BlockPosition position = walker.next(raw.type, raw.node_virtual_flag, raw.block);
            if (!is_wallet_operation(raw.type)) continue;
            const json::Tape tape = tape_of(raw.text);
            const View entry = tape.root();
            const NodeOperation op = read_operation(entry_operation(entry));
            const OpEnvelope envelope = read_envelope(entry);
            if (op.type != raw.type || envelope.block_num != raw.block) throw DecodeFailure("entry changed between scan and parse");
            auto decoded = decode_body(op, envelope, position, std::make_shared<const std::string>(raw.text), assets);
            if (!decoded) return make_error(decoded.error());
            if (forks != nullptr && !decoded->empty()) {
                // From the tape the events were read from: the payload is not parsed again.
                auto read = std::make_shared<OperationBalanceChanges>(OperationBalanceChanges{*forks, make_error("")});
                try {
                    read->changes = read_balance_changes(op, envelope.block_num, assets, *forks);
                } catch (const DecodeFailure& failure) {
                    read->changes = make_error(balance_failure(envelope.block_num, op.type, failure));
                }
                for (auto& event : decoded.value()) event.balance_changes = read;
            }
            for (auto& event : decoded.value()) events.push_back(std::move(event));
        } catch (const DecodeFailure& failure) {
            return make_error("operation " + std::to_string(index) + " of the block list: " + failure.what());
        }
    }
    return events;
}

Result<std::vector<CarriedBalanceChange>> operation_balance_changes(const WalletEvent& event, const AssetTable& assets,
                                                                    const HardforkSchedule& forks) {
    if (!event.payload) return make_error("balance changes: the event has no payload");
    try {
        const json::Tape tape = tape_of(*event.payload);
        const View root = tape.root();
        // The payload is an entry with its envelope, or a bare operation.
        const View op_value = root.is_object() && root.member("op") ? root.member("op") : root;
        const NodeOperation op = read_operation(op_value);
        if (op.type != event.op_type) return make_error("balance changes: the payload is not a " + event.op_type);
        return read_balance_changes(op, event.block_num, assets, forks);
    } catch (const DecodeFailure& failure) {
        return make_error(balance_failure(event.block_num, event.op_type, failure));
    }
}

Result<std::vector<CarriedBalanceChange>> event_balance_changes(const WalletEvent& event, const AssetTable& assets,
                                                                const HardforkSchedule& forks) {
    if (event.balance_changes && event.balance_changes->forks == forks) return event.balance_changes->changes;
    return operation_balance_changes(event, assets, forks);
}

Result<std::vector<BalanceChange>> balance_changes(const WalletEvent& event, const AssetTable& assets,
                                                   const HardforkSchedule& forks) {
    auto carried = operation_balance_changes(event, assets, forks);
    if (!carried) return make_error(carried.error());
    std::vector<BalanceChange> changes;
    for (auto& [carrier, change] : *carried) {
        if (carrier == event.role) changes.push_back(std::move(change));
    }
    return changes;
}

}  // namespace wallet
