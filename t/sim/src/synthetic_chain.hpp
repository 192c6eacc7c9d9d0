// The synthetic chain: every block derived from (seed, block number, fork
// salt) alone, with an operation mix and density like current mainnet.
#pragma once

#include <array>
#include <memory>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "json_writer.hpp"
#include "protocol.hpp"

namespace sim {

inline constexpr std::uint32_t kBlockLevel = 0xffffffffu;  // trx_in_block of block-level virtual ops

// The operations the generator produces (a subset of hived's).
enum class Kind : std::uint8_t {
    vote,
    comment,
    comment_options,
    custom_json,
    transfer,
    transfer_to_vesting,
    withdraw_vesting,
    limit_order_create,
    feed_publish,
    transfer_to_savings,
    transfer_from_savings,
    cancel_transfer_from_savings,
    claim_reward_balance,
    delegate_vesting_shares,
    limit_order_cancel,
    convert,
    claim_account,
    create_claimed_account,
    recurrent_transfer,
    // virtual
    effective_comment_vote,
    transfer_to_vesting_completed,
    interest,
    fill_order,
    producer_reward,
    curation_reward,
    comment_benefactor_reward,
    author_reward,
    comment_reward,
    comment_payout_update,
    fill_vesting_withdraw,
    fill_transfer_from_savings,
    return_vesting_delegation,
    limit_order_cancelled,
    fill_convert_request,
    account_created,
    fill_recurrent_transfer,
    proposal_pay,
};

// hived's names (without "_operation") of the operations the generator
// produces, in Kind order.
std::span<const std::string_view> kind_names() noexcept;

// One generated operation. Accounts are indexes into the account pool; the
// meaning of a, b, c and x, y, z, w depends on the kind (see the serializer).
struct SynOp {
    Kind kind;
    bool is_virtual = false;
    bool hbd = false;  // the liquid amount is HBD (else HIVE)
    std::uint32_t trx_in_block = 0;
    std::uint32_t op_in_trx = 0;
    std::uint32_t legacy_vop_counter = 0;  // virtual_op of a Steem-era node (1-based, 0 for real ops)
    std::uint32_t a = 0, b = 0, c = 0;
    std::int64_t x = 0, y = 0, z = 0, w = 0;
    std::uint64_t r = 0, r2 = 0;  // permlinks, memos, texts
};

struct SynBlock {
    std::uint32_t num = 0;
    std::uint64_t salt = 0;
    std::uint32_t witness = 0;
    std::uint32_t transactions = 0;
    std::array<char, kTimeLength> timestamp{};
    std::vector<SynOp> ops;  // in block order

    std::string_view time() const { return {timestamp.data(), timestamp.size()}; }
};

// The start of an op envelope, shared by the ops of one transaction:
// {"trx_id":"...","block":N,"trx_in_block":T,"op_in_trx":
struct EnvelopePrefix {
    std::array<char, 128> text{};
    std::size_t length = 0;
    std::string_view view() const { return {text.data(), length}; }
};

struct SyntheticOptions {
    std::uint64_t seed = 1;
    Naming naming = Naming::current;
    // Block N is pathological (thousands of reward payouts) when N % every == every / 2; 0: never.
    std::uint32_t pathological_every = 100000;
    // Only block N with N % every == 0 carries transactions and payouts; the
    // others carry their producer_reward alone, as many real blocks are light
    // (tests that need long ranges, not the density). 1: every block is full.
    std::uint32_t full_block_every = 1;
    std::uint32_t accounts = 20000;
    // Ledger mode (`--ledger`): operations made payable by the chain's ledger
    // (ledger.hpp), which serves every account's balances at the head.
    bool ledger = false;
};

class SyntheticLedger;

class SyntheticChain {
public:
    explicit SyntheticChain(SyntheticOptions options);

    const SyntheticOptions& options() const { return options_; }

    // Block `num` as served: derive()'s, made payable by the ledger in ledger mode.
    void generate(std::uint32_t num, std::uint64_t salt, SynBlock& out) const;
    // Block `num` from (seed, number, salt) alone.
    void derive(std::uint32_t num, std::uint64_t salt, SynBlock& out) const;
    // The ledger of ledger mode (nullptr otherwise).
    SyntheticLedger* ledger() const { return ledger_.get(); }
    bool is_pathological(std::uint32_t num) const;

    // Ops present on a node of this naming (Steem-era nodes lack newer virtual ops).
    bool emitted(const SynOp& op) const;
    int type_id(Kind kind) const;

    // The whole envelope, as in get_ops_in_block / get_account_history.
    void envelope_prefix(const SynBlock& block, std::uint32_t trx_in_block, EnvelopePrefix& out) const;
    void write_envelope(JsonWriter& out, const SynBlock& block, const SynOp& op, Form form,
                        const EnvelopePrefix& prefix) const;
    // {"type": "..._operation", "value": {...}} or ["...", {...}].
    void write_op(JsonWriter& out, const SynBlock& block, const SynOp& op, Form form) const;

    std::string block_id(std::uint32_t num, std::uint64_t salt) const;
    std::string trx_id(std::uint32_t num, std::uint64_t salt, std::uint32_t trx) const;
    void trx_id(std::uint32_t num, std::uint64_t salt, std::uint32_t trx, char* out) const;  // 40 chars
    std::string transaction_merkle_root(std::uint32_t num, std::uint64_t salt) const;
    std::string witness_signature(std::uint32_t num, std::uint64_t salt) const;
    static std::int64_t time_of(std::uint32_t num);
    // Index (into the account pool) of the witness producing the block.
    std::uint32_t witness_index(std::uint32_t num) const;
    std::string signing_key(std::uint32_t witness) const;
    std::string_view account(std::uint32_t index) const { return accounts_[index]; }
    std::uint32_t account_count() const { return static_cast<std::uint32_t>(accounts_.size()); }

    // The accounts whose history the op enters (at most 3, returns the count).
    int impacted(const SynOp& op, std::array<std::uint32_t, 3>& out) const;

private:
    // Serialization through a raw cursor into room reserved beforehand
    // (kMaxOpBytes per operation): the hot path of the simulator.
    char* write_op_at(char* p, const SynBlock& block, const SynOp& op, Form form) const;
    char* write_body_at(char* p, const SynBlock& block, const SynOp& op, Form form) const;
    char* write_asset_at(char* p, std::int64_t amount, int which, Form form) const;  // 0 HIVE, 1 HBD, 2 VESTS
    char* write_permlink_at(char* p, std::uint64_t r) const;

    SyntheticOptions options_;
    std::shared_ptr<SyntheticLedger> ledger_;
    SymbolTable symbols_;
    std::vector<std::string> accounts_;
    std::vector<JsonWriter::Slot> quoted_accounts_;  // "name", ready to copy
    std::vector<JsonWriter::Slot> words_;            // permlink words
    std::vector<JsonWriter::Slot> plain_accounts_;   // name without quotes
    JsonWriter::Slot symbol_slots_[3];               // " HIVE\"", " HBD\"", " VESTS\""

    std::vector<std::string> escaped_bodies_, escaped_memos_, escaped_titles_;
};

}  // namespace sim
