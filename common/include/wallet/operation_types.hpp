// hived's operation types in protocol order: the index is the op_type_id
// (HAfAH's op_type_id, the bit of account-history filters); ids from 50 on
// are virtual operations.
#pragma once

#include <array>
#include <string_view>

namespace wallet {

inline constexpr int kFirstVirtualOperationId = 50;

inline constexpr std::array<std::string_view, 93> kOperationTypes = {
    "vote", "comment", "transfer", "transfer_to_vesting", "withdraw_vesting", "limit_order_create",
    "limit_order_cancel", "feed_publish", "convert", "account_create", "account_update", "witness_update",
    "account_witness_vote", "account_witness_proxy", "pow", "custom", "report_over_production", "delete_comment",
    "custom_json", "comment_options", "set_withdraw_vesting_route", "limit_order_create2", "claim_account",
    "create_claimed_account", "request_account_recovery", "recover_account", "change_recovery_account",
    "escrow_transfer", "escrow_dispute", "escrow_release", "pow2", "escrow_approve", "transfer_to_savings",
    "transfer_from_savings", "cancel_transfer_from_savings", "custom_binary", "decline_voting_rights",
    "reset_account", "set_reset_account", "claim_reward_balance", "delegate_vesting_shares",
    "account_create_with_delegation", "witness_set_properties", "account_update2", "create_proposal",
    "update_proposal_votes", "remove_proposal", "update_proposal", "collateralized_convert", "recurrent_transfer",
    // virtual operations from here on (id 50)
    "fill_convert_request", "author_reward", "curation_reward", "comment_reward", "liquidity_reward", "interest",
    "fill_vesting_withdraw", "fill_order", "shutdown_witness", "fill_transfer_from_savings", "hardfork",
    "comment_payout_update", "return_vesting_delegation", "comment_benefactor_reward", "producer_reward",
    "clear_null_account_balance", "proposal_pay", "dhf_funding", "hardfork_hive", "hardfork_hive_restore",
    "delayed_voting", "consolidate_treasury_balance", "effective_comment_vote", "ineffective_delete_comment",
    "dhf_conversion", "expired_account_notification", "changed_recovery_account", "transfer_to_vesting_completed",
    "pow_reward", "vesting_shares_split", "account_created", "fill_collateralized_convert_request",
    "system_warning", "fill_recurrent_transfer", "failed_recurrent_transfer", "limit_order_cancelled",
    "producer_missed", "proposal_fee", "collateralized_convert_immediate_conversion", "escrow_approved",
    "escrow_rejected", "proxy_cleared", "declined_voting_rights"};

// The id of a type name (without "_operation"); the Steem-era names of
// renamed types are accepted (sps_fund, sps_convert). -1 when unknown.
constexpr int operation_type_id(std::string_view name) noexcept {
    if (name == "sps_fund") name = "dhf_funding";
    if (name == "sps_convert") name = "dhf_conversion";
    for (std::size_t id = 0; id < kOperationTypes.size(); ++id) {
        if (kOperationTypes[id] == name) return static_cast<int>(id);
    }
    return -1;
}

}  // namespace wallet
