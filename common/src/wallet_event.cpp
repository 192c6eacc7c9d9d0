#include "wallet/wallet_event.hpp"

#include <array>
#include <utility>

namespace wallet {
namespace {

struct RoleEntry {
    Role role;
    std::string_view name;
    int code;  // the store's code (migration 0004, wallet_role_code)
};

constexpr std::array<RoleEntry, 10> kRoleNames{{
    {Role::Sender, "sender", 80},
    {Role::Receiver, "receiver", 70},
    {Role::Delegator, "delegator", 50},
    {Role::Delegatee, "delegatee", 40},
    {Role::Author, "author", 10},
    {Role::Curator, "curator", 30},
    {Role::Owner, "owner", 60},
    {Role::Beneficiary, "beneficiary", 20},
    {Role::Taker, "taker", 90},
    {Role::Maker, "maker", 55},
}};

json_t* optional_string_json(const std::optional<std::string>& text) {
    return text ? json_stringn(text->data(), text->size()) : json_null();
}

json_t* optional_int_json(const std::optional<std::int64_t>& number) {
    return number ? json_integer(*number) : json_null();
}

// Amounts of decoded assets always print: the decoder refuses an amount that
// does not fit its precision.
json_t* amount_json(const Asset& asset) {
    auto printed = asset.amount_string();
    return printed ? json_string(printed->c_str()) : json_null();
}

void set_asset_pair(json_t* object, const char* amount_key, const char* symbol_key, const std::optional<Asset>& asset) {
    json_object_set_new(object, amount_key, asset ? amount_json(*asset) : json_null());
    json_object_set_new(object, symbol_key, asset ? json_string(asset->symbol.c_str()) : json_null());
}

}  // namespace

std::string_view role_name(Role role) noexcept {
    for (const auto& entry : kRoleNames) {
        if (entry.role == role) return entry.name;
    }
    return "unknown";
}

std::optional<Role> parse_role(std::string_view name) noexcept {
    for (const auto& entry : kRoleNames) {
        if (entry.name == name) return entry.role;
    }
    return std::nullopt;
}

int role_code(Role role) noexcept {
    for (const auto& entry : kRoleNames) {
        if (entry.role == role) return entry.code;
    }
    return 0;
}

std::optional<Role> role_of_code(int code) noexcept {
    for (const auto& entry : kRoleNames) {
        if (entry.code == code) return entry.role;
    }
    return std::nullopt;
}

bool same_event_fields(const WalletEvent& a, const WalletEvent& b, bool compare_block_position) {
    if (compare_block_position && (a.block_seq != b.block_seq || a.virtual_op != b.virtual_op)) return false;
    return a.block_num == b.block_num && a.trx_in_block == b.trx_in_block && a.op_in_trx == b.op_in_trx &&
           a.account == b.account && a.role == b.role && a.op_type == b.op_type && a.trx_id == b.trx_id &&
           a.timestamp == b.timestamp && a.amount == b.amount && a.vesting == b.vesting &&
           a.counterparty == b.counterparty && a.memo == b.memo && a.author == b.author && a.permlink == b.permlink &&
           a.assets == b.assets;
}

JsonPtr event_to_json(const WalletEvent& event) {
    JsonPtr object = json_own(json_object());
    json_t* o = object.get();
    json_object_set_new(o, "account", json_stringn(event.account.data(), event.account.size()));
    json_object_set_new(o, "role", json_string(std::string(role_name(event.role)).c_str()));
    json_object_set_new(o, "op_type", json_stringn(event.op_type.data(), event.op_type.size()));
    json_object_set_new(o, "block_num", json_integer(event.block_num));
    json_object_set_new(o, "block_seq", optional_int_json(event.block_seq));
    json_object_set_new(o, "trx_id", optional_string_json(event.trx_id));
    json_object_set_new(o, "trx_in_block", json_integer(event.trx_in_block));
    json_object_set_new(o, "op_in_trx", json_integer(event.op_in_trx));
    json_object_set_new(o, "virtual_op", optional_int_json(event.virtual_op));
    json_object_set_new(o, "timestamp", json_string(event.timestamp.to_iso_z().c_str()));
    set_asset_pair(o, "amount", "symbol", event.amount);
    set_asset_pair(o, "vesting_amount", "vesting_symbol", event.vesting);
    json_object_set_new(o, "counterparty", optional_string_json(event.counterparty));
    json_object_set_new(o, "memo", optional_string_json(event.memo));
    json_object_set_new(o, "author", optional_string_json(event.author));
    json_object_set_new(o, "permlink", optional_string_json(event.permlink));
    json_object_set_new(o, "assets", assets_to_json(event.assets).release());
    return object;
}

JsonPtr assets_to_json(const std::vector<AssetField>& assets) {
    JsonPtr list = json_own(json_array());
    for (const auto& field : assets) {
        json_t* item = json_object();
        json_object_set_new(item, "field", json_stringn(field.field.data(), field.field.size()));
        json_object_set_new(item, "amount", amount_json(field.asset));
        json_object_set_new(item, "symbol", json_string(field.asset.symbol.c_str()));
        json_array_append_new(list.get(), item);
    }
    return list;
}

}  // namespace wallet
