// The synthetic chain's ledger (`--ledger`): every account's balances, kept
// by applying each operation the chain emits as hived applies it, from the
// genesis balances on. In ledger mode the generator's operations are first
// made payable: amounts are cut to what the account has, and operations that
// need something the account lacks (an open order to cancel, a savings
// withdrawal in flight, a power-down, a delegation to return ...) take an
// existing one, or are left out. Blocks stay derivable by number: the ledger
// folds the chain block by block up to the highest one asked for and keeps,
// per block, only what it changed.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "synthetic_chain.hpp"

namespace sim {

// One account's balances as hived's account object holds them, in units of
// the asset's precision (milli-HIVE/HBD, micro-VESTS).
struct AccountBalances {
    std::int64_t hive = 0, hbd = 0;
    std::int64_t hive_savings = 0, hbd_savings = 0;
    std::int64_t vests = 0, delegated = 0, received = 0;
    std::int64_t reward_hive = 0, reward_hbd = 0, reward_vests = 0;
    std::int64_t withdraw_rate = 0, to_withdraw = 0, withdrawn = 0;
    std::int64_t savings_withdraw_requests = 0;
    friend bool operator==(const AccountBalances&, const AccountBalances&) = default;
};

// What the chain gives every account at block 0, without any operation
// (hived's genesis state; on this chain every account exists from the start).
AccountBalances genesis_balances(const SyntheticChain& chain, std::uint32_t account);

// One account object of database_api.find_accounts (`Form::nai`) or
// condenser_api.get_accounts (`Form::legacy`, the same members with legacy
// asset strings), in hived's shape, with the account's balances.
void write_account(JsonWriter& out, const SyntheticChain& chain, std::uint32_t index, const AccountBalances& balances,
                   Form form);

class SyntheticLedger {
public:
    using SaltOf = std::function<std::uint64_t(std::uint32_t)>;

    // The payable block `num` of fork salt `salt` (folding the blocks below it
    // first, with `salt_of` when set, else with `salt`). The chain is passed
    // to every call: the ledger belongs to it and moves with it.
    void block(const SyntheticChain& chain, std::uint32_t num, std::uint64_t salt, SynBlock& out);
    // The salts of the blocks the node serves (its forks).
    void set_salt_source(SaltOf salt_of);

    // Every account's balances after block `head` (folding up to it).
    std::vector<AccountBalances> balances_at(const SyntheticChain& chain, std::uint32_t head, const SaltOf& salt_of);
    // The open delegations after block `head`: (delegator, delegatee) -> VESTS.
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> delegations_at(const SyntheticChain& chain,
                                                                                  std::uint32_t head, const SaltOf& salt_of);

private:
    // What the ledger changed in a derived block: operations rewritten
    // (amounts cut, a pending item taken, a real one turned into a
    // custom_json) and virtual operations left out.
    struct Patch {
        std::uint64_t salt = 0;
        std::vector<std::pair<std::uint32_t, SynOp>> replaced;  // by index in the derived block
        std::vector<std::uint32_t> dropped;
    };

    // Folds (or rewinds and refolds) the ledger to block `head`; the mutex held.
    void position_at(const SyntheticChain& chain, std::uint32_t head, const SaltOf& salt_of);
    void fold_to(std::uint32_t num, const SaltOf& salt_of);
    void rewind_to(std::uint32_t num);
    void fold_next(std::uint64_t salt);
    // Rewrites the derived block into a payable one (recording the patch) and applies it.
    void make_payable_and_apply(SynBlock& block, Patch& patch);
    void apply(const SynOp& op);
    static void apply_patch(const Patch& patch, SynBlock& block);

    const SyntheticChain* chain_ = nullptr;  // of the current call
    std::mutex mutex_;
    SaltOf salt_of_;
    std::vector<Patch> patches_;  // index = block number - 1
    std::vector<AccountBalances> accounts_;

    // What hived keeps beside the balances.
    struct Order {
        std::int64_t amount = 0;
        bool hbd = false;
    };
    struct SavingsRequest {
        std::uint32_t from = 0, to = 0;
        std::int64_t amount = 0;
        bool hbd = false;
    };
    std::map<std::pair<std::uint32_t, std::uint64_t>, Order> orders_;              // (owner, orderid)
    std::map<std::pair<std::uint32_t, std::int64_t>, SavingsRequest> savings_;     // (from, request_id)
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::int64_t> conversions_;  // (owner, requestid) -> HBD
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> delegations_;  // (delegator, delegatee)
    std::deque<std::pair<std::uint32_t, std::int64_t>> expiring_delegations_;      // (delegator, VESTS)
};

}  // namespace sim
