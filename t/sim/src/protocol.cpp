#include "protocol.hpp"

#include <array>
#include <charconv>
#include <ctime>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "wallet/operation_types.hpp"

namespace sim {

namespace {

// hived's operation names in protocol order: the common table.
constexpr const auto& kOpNames = wallet::kOperationTypes;

// Index of a static variant alternative in the legacy form.
int variant_index(std::string_view type) {
    static constexpr std::pair<std::string_view, int> kIndexes[] = {{"comment_payout_beneficiaries", 0},
                                                                    {"allowed_vote_assets", 1},
                                                                    {"void_t", 0},
                                                                    {"update_proposal_end_date", 1},
                                                                    {"recurrent_transfer_pair_id", 0},
                                                                    {"pow2", 0},
                                                                    {"equihash_pow", 1}};
    for (const auto& [name, index] : kIndexes)
        if (name == type) return index;
    return 0;
}

std::string_view variant_name(std::string_view op_name, std::string_view field, json_int_t index) {
    if (field == "work") return index == 1 ? "equihash_pow" : "pow2";
    if (op_name == "comment_options") return index == 1 ? "allowed_vote_assets" : "comment_payout_beneficiaries";
    if (op_name == "update_proposal") return index == 1 ? "update_proposal_end_date" : "void_t";
    if (op_name == "recurrent_transfer") return "recurrent_transfer_pair_id";
    return "void_t";
}

bool is_nai_asset(const json_t* value) {
    return json_is_object(value) && json_object_size(value) == 3 && json_is_string(json_object_get(value, "amount")) &&
           json_is_integer(json_object_get(value, "precision")) && json_is_string(json_object_get(value, "nai"));
}

bool is_static_variant(const json_t* value) {
    return json_is_object(value) && json_object_size(value) == 2 && json_is_string(json_object_get(value, "type")) &&
           json_object_get(value, "value") != nullptr;
}

// Free text fields never hold assets, whatever they look like.
bool is_text_field(std::string_view key) {
    for (std::string_view text : {"memo", "body", "title", "json", "json_metadata", "posting_json_metadata", "url"})
        if (key == text) return true;
    return false;
}

// "0.750 HIVE" -> {"amount":"750","precision":3,"nai":"@@000000021"}; nullptr if it is no asset.
wallet::JsonPtr parse_legacy_asset(std::string_view text) {
    std::size_t space = text.find(' ');
    if (space == std::string_view::npos) return nullptr;
    auto asset = nai_of_symbol(text.substr(space + 1));
    if (!asset) return nullptr;
    std::string_view number = text.substr(0, space);
    bool negative = !number.empty() && number.front() == '-';
    if (negative) number.remove_prefix(1);
    std::size_t dot = number.find('.');
    std::string_view whole = number.substr(0, dot);
    std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
    if (whole.empty() || fraction.size() != static_cast<std::size_t>(asset->precision)) return nullptr;
    std::string digits;
    for (char c : std::string(whole) + std::string(fraction)) {
        if (c < '0' || c > '9') return nullptr;
        if (digits.empty() && c == '0') continue;
        digits.push_back(c);
    }
    if (digits.empty()) digits.push_back('0');  // not = "0": GCC 12 -Wrestrict false positive at -O3 (bug 105329)
    if (negative && digits != "0") digits.insert(digits.begin(), '-');
    return wallet::json_own(json_pack("{s:s%, s:i, s:s%}", "amount", digits.data(), digits.size(), "precision",
                                      asset->precision, "nai", asset->nai.data(), asset->nai.size()));
}

wallet::JsonPtr convert_legacy(std::string_view op_name, std::string_view key, const json_t* value) {
    if (json_is_string(value)) {
        if (!is_text_field(key))
            if (auto asset = parse_legacy_asset(json_string_value(value))) return asset;
        return wallet::json_ref(const_cast<json_t*>(value));
    }
    if (json_is_object(value)) {
        wallet::JsonPtr out = wallet::json_own(json_object());
        const char* member_key;
        json_t* member;
        json_object_foreach(const_cast<json_t*>(value), member_key, member) {
            json_object_set_new(out.get(), member_key, convert_legacy(op_name, member_key, member).release());
        }
        return out;
    }
    if (json_is_array(value)) {
        // [index, {...}] in a variant field: a static variant alternative.
        bool variant_field = key == "work" || key == "extensions";
        auto is_indexed = [](const json_t* item) {
            return json_is_array(item) && json_array_size(item) == 2 && json_is_integer(json_array_get(item, 0));
        };
        if (key == "work" && is_indexed(value)) {
            json_int_t index = json_integer_value(json_array_get(value, 0));
            std::string_view name = variant_name(op_name, key, index);
            return wallet::json_own(json_pack("{s:s%, s:o}", "type", name.data(), name.size(), "value",
                                              convert_legacy(op_name, "", json_array_get(value, 1)).release()));
        }
        wallet::JsonPtr out = wallet::json_own(json_array());
        for (std::size_t i = 0; i < json_array_size(value); ++i) {
            const json_t* item = json_array_get(value, i);
            if (variant_field && key == "extensions" && is_indexed(item)) {
                json_int_t index = json_integer_value(json_array_get(item, 0));
                std::string_view name = variant_name(op_name, key, index);
                json_array_append_new(out.get(),
                                      json_pack("{s:s%, s:o}", "type", name.data(), name.size(), "value",
                                                convert_legacy(op_name, "", json_array_get(item, 1)).release()));
            } else {
                json_array_append_new(out.get(), convert_legacy(op_name, key, item).release());
            }
        }
        return out;
    }
    return wallet::json_ref(const_cast<json_t*>(value));
}

}  // namespace

std::string_view SymbolTable::symbol_of(std::string_view nai) const {
    if (nai == kHiveNai) return hive;
    if (nai == kHbdNai) return hbd;
    if (nai == kVestsNai) return vests;
    return "UNKN";
}

std::optional<NaiAsset> nai_of_symbol(std::string_view symbol) {
    if (symbol == "HIVE" || symbol == "STEEM" || symbol == "TESTS") return NaiAsset{kHiveNai, 3};
    if (symbol == "HBD" || symbol == "SBD" || symbol == "TBD") return NaiAsset{kHbdNai, 3};
    if (symbol == "VESTS") return NaiAsset{kVestsNai, 6};
    return std::nullopt;
}

int op_type_id(std::string_view name) {
    for (std::size_t i = 0; i < kOpNames.size(); ++i)
        if (kOpNames[i] == name) return static_cast<int>(i);
    return -1;
}

std::string_view op_type_name(int id) {
    if (id < 0 || id >= kOpTypeCount) return "unknown";
    return kOpNames[static_cast<std::size_t>(id)];
}

void write_legacy_value(JsonWriter& out, const json_t* value, const SymbolTable& symbols) {
    if (is_nai_asset(value)) {
        out.put('"');
        out.decimal(json_string_value(json_object_get(value, "amount")),
                    static_cast<int>(json_integer_value(json_object_get(value, "precision"))));
        out.put(' ');
        out.raw(symbols.symbol_of(json_string_value(json_object_get(value, "nai"))));
        out.put('"');
        return;
    }
    if (is_static_variant(value)) {
        // An operation is [name, body]; other variants are [index, value].
        std::string_view type = json_string_value(json_object_get(value, "type"));
        out.put('[');
        if (type.ends_with("_operation")) {
            out.put('"');
            out.raw(type.substr(0, type.size() - std::string_view("_operation").size()));
            out.put('"');
        } else {
            out.integer(variant_index(type));
        }
        out.put(',');
        write_legacy_value(out, json_object_get(value, "value"), symbols);
        out.put(']');
        return;
    }
    if (json_is_object(value)) {
        out.put('{');
        const char* key;
        json_t* member;
        bool first = true;
        json_object_foreach(const_cast<json_t*>(value), key, member) {
            if (!first) out.put(',');
            first = false;
            out.string(key);
            out.put(':');
            write_legacy_value(out, member, symbols);
        }
        out.put('}');
        return;
    }
    if (json_is_array(value)) {
        out.put('[');
        for (std::size_t i = 0; i < json_array_size(value); ++i) {
            if (i > 0) out.put(',');
            write_legacy_value(out, json_array_get(value, i), symbols);
        }
        out.put(']');
        return;
    }
    out.json(value);
}

wallet::JsonPtr legacy_to_nai(std::string_view op_name, const json_t* legacy_value) {
    return convert_legacy(op_name, "", legacy_value);
}

std::vector<std::string> impacted_accounts(std::string_view op, const json_t* value) {
    std::vector<std::string> out;
    auto add = [&](std::string_view name) {
        if (name.empty()) return;
        for (const auto& existing : out)
            if (existing == name) return;
        out.emplace_back(name);
    };
    auto field = [&](const char* key) -> std::string_view {
        const json_t* member = json_object_get(value, key);
        return json_is_string(member) ? json_string_value(member) : "";
    };
    auto fields = [&](std::initializer_list<const char*> keys) {
        for (const char* key : keys) {
            const json_t* member = json_object_get(value, key);
            if (json_is_string(member)) {
                add(json_string_value(member));
            } else if (json_is_array(member)) {
                for (std::size_t i = 0; i < json_array_size(member); ++i)
                    if (json_is_string(json_array_get(member, i))) add(json_string_value(json_array_get(member, i)));
            }
        }
    };

    // Operations with their own rule in hived; every other operation impacts
    // the accounts whose authority it requires.
    if (op == "comment") {
        fields({"author", "parent_author"});
    } else if (op == "transfer_to_vesting") {
        add(field("from"));
        if (field("to") != field("from")) add(field("to"));
    } else if (op == "account_witness_proxy") {
        fields({"account", "proxy"});
    } else if (op == "pow2") {
        const json_t* work = json_object_get(value, "work");
        const json_t* body = json_is_object(work) ? json_object_get(work, "value") : json_array_get(work, 1);
        const json_t* input = json_object_get(body, "input");
        if (json_is_string(json_object_get(input, "worker_account")))
            add(json_string_value(json_object_get(input, "worker_account")));
    } else if (op == "hardfork" || op == "system_warning") {
        add("initminer");
    } else if (op == "clear_null_account_balance") {
        add("null");
    } else if (op == "consolidate_treasury_balance") {
        add("hive.fund");
        add("steem.dao");
    } else {
        struct Rule {
            std::string_view op;
            std::array<const char*, 3> keys;
        };
        static constexpr Rule kFields[] = {
            {"account_create", {"new_account_name", "creator"}},
            {"account_create_with_delegation", {"new_account_name", "creator"}},
            {"account_created", {"creator", "new_account_name"}},
            {"create_claimed_account", {"creator", "new_account_name"}},
            {"vote", {"voter", "author"}},
            {"effective_comment_vote", {"author", "voter"}},
            {"transfer", {"from", "to"}},
            {"transfer_to_savings", {"from", "to"}},
            {"transfer_from_savings", {"from", "to"}},
            {"fill_transfer_from_savings", {"from", "to"}},
            {"recurrent_transfer", {"from", "to"}},
            {"fill_recurrent_transfer", {"from", "to"}},
            {"failed_recurrent_transfer", {"from", "to"}},
            {"escrow_transfer", {"from", "to", "agent"}},
            {"escrow_approve", {"from", "to", "agent"}},
            {"escrow_dispute", {"from", "to", "agent"}},
            {"escrow_release", {"from", "to", "agent"}},
            {"escrow_approved", {"from", "to", "agent"}},
            {"escrow_rejected", {"from", "to", "agent"}},
            {"set_withdraw_vesting_route", {"from_account", "to_account"}},
            {"fill_vesting_withdraw", {"from_account", "to_account"}},
            {"transfer_to_vesting_completed", {"from_account", "to_account"}},
            {"account_witness_vote", {"account", "witness"}},
            {"feed_publish", {"publisher"}},
            {"pow", {"worker_account"}},
            {"pow_reward", {"worker"}},
            {"request_account_recovery", {"account_to_recover", "recovery_account"}},
            {"recover_account", {"account_to_recover"}},
            {"change_recovery_account", {"account_to_recover"}},
            {"changed_recovery_account", {"account", "old_recovery_account", "new_recovery_account"}},
            {"delegate_vesting_shares", {"delegator", "delegatee"}},
            {"witness_set_properties", {"owner"}},
            {"author_reward", {"author"}},
            {"curation_reward", {"curator"}},
            {"comment_benefactor_reward", {"benefactor", "author"}},
            {"comment_reward", {"author"}},
            {"comment_payout_update", {"author"}},
            {"ineffective_delete_comment", {"author"}},
            {"liquidity_reward", {"owner"}},
            {"interest", {"owner"}},
            {"fill_convert_request", {"owner"}},
            {"fill_collateralized_convert_request", {"owner"}},
            {"vesting_shares_split", {"owner"}},
            {"shutdown_witness", {"owner"}},
            {"fill_order", {"current_owner", "open_owner"}},
            {"return_vesting_delegation", {"account"}},
            {"producer_reward", {"producer"}},
            {"producer_missed", {"producer"}},
            {"proposal_pay", {"receiver", "payer"}},
            {"create_proposal", {"creator", "receiver"}},
            {"update_proposal", {"creator"}},
            {"update_proposal_votes", {"voter"}},
            {"remove_proposal", {"proposal_owner"}},
            {"dhf_funding", {"fund_account"}},
            {"dhf_conversion", {"fund_account"}},
            {"delayed_voting", {"voter"}},
            {"hardfork_hive", {"treasury", "account"}},
            {"hardfork_hive_restore", {"treasury", "account"}},
            {"expired_account_notification", {"account"}},
            // required authorities
            {"account_update", {"account"}},
            {"account_update2", {"account"}},
            {"witness_update", {"owner"}},
            {"custom", {"required_auths"}},
            {"custom_json", {"required_auths", "required_posting_auths"}},
            {"custom_binary", {"required_owner_auths", "required_active_auths", "required_posting_auths"}},
            {"limit_order_create", {"owner"}},
            {"limit_order_create2", {"owner"}},
            {"limit_order_cancel", {"owner"}},
            {"limit_order_cancelled", {"seller"}},
            {"convert", {"owner"}},
            {"collateralized_convert", {"owner"}},
            {"withdraw_vesting", {"account"}},
            {"claim_reward_balance", {"account"}},
            {"claim_account", {"creator"}},
            {"decline_voting_rights", {"account"}},
            {"declined_voting_rights", {"account"}},
            {"proxy_cleared", {"account"}},
            {"reset_account", {"reset_account"}},
            {"set_reset_account", {"account"}},
            {"delete_comment", {"author"}},
            {"comment_options", {"author"}},
            {"cancel_transfer_from_savings", {"from"}},
            {"report_over_production", {"reporter"}},
        };
        for (const Rule& rule : kFields) {
            if (rule.op != op) continue;
            for (const char* key : rule.keys)
                if (key != nullptr) fields({key});
            break;
        }
    }
    return out;
}

void format_time(std::int64_t epoch_seconds, char* out) {
    // Days to civil date in the proleptic Gregorian calendar (eras of 400 years).
    std::int64_t days = epoch_seconds >= 0 ? epoch_seconds / 86400 : (epoch_seconds - 86399) / 86400;
    std::int64_t seconds = epoch_seconds - days * 86400;
    days += 719468;
    std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    std::int64_t day_of_era = days - era * 146097;
    std::int64_t year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    std::int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    std::int64_t shifted_month = (5 * day_of_year + 2) / 153;
    std::int64_t day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    std::int64_t month = shifted_month < 10 ? shifted_month + 3 : shifted_month - 9;
    std::int64_t year = year_of_era + era * 400 + (month <= 2 ? 1 : 0);
    auto two = [&](std::int64_t value, char* at) {
        at[0] = static_cast<char>('0' + value / 10);
        at[1] = static_cast<char>('0' + value % 10);
    };
    two(year / 100, out);
    two(year % 100, out + 2);
    out[4] = '-';
    two(month, out + 5);
    out[7] = '-';
    two(day, out + 8);
    out[10] = 'T';
    two(seconds / 3600, out + 11);
    out[13] = ':';
    two(seconds / 60 % 60, out + 14);
    out[16] = ':';
    two(seconds % 60, out + 17);
}

std::string format_time(std::int64_t epoch_seconds) {
    std::string text(kTimeLength, '0');
    format_time(epoch_seconds, text.data());
    return text;
}

std::optional<std::int64_t> parse_time(std::string_view text) {
    std::tm parts{};
    std::string copy(text);
    const char* end = strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &parts);
    if (end == nullptr || *end != '\0') return std::nullopt;
    return static_cast<std::int64_t>(timegm(&parts));
}

}  // namespace sim
