#include "ledger.hpp"

#include <algorithm>

namespace sim {

namespace {

constexpr std::uint32_t kWitnessCount = 21;  // the pool's first accounts produce blocks
// micro-VESTS per milli-HIVE, the synthetic chain's constant price (1607.283 VESTS per HIVE).
constexpr std::int64_t kMicroVestsPerMilliHive = 1607283;
constexpr std::int64_t kPowerDownWeeks = 13;

// A real operation the account cannot pay for becomes a harmless custom_json
// of the same transaction (the transaction keeps its place and its signature).
void neutralize(SynOp& op) {
    const std::uint32_t actor = op.a;
    const std::uint32_t trx = op.trx_in_block;
    const std::uint32_t op_in_trx = op.op_in_trx;
    op = SynOp{};
    op.kind = Kind::custom_json;
    op.a = actor;
    op.b = actor;
    op.trx_in_block = trx;
    op.op_in_trx = op_in_trx;
}

// op_in_trx from 0 in each transaction (block-level ones from 1), the
// Steem-era virtual_op counters over the block: as the generator numbers them.
void renumber(SynBlock& block, const SyntheticChain& chain) {
    std::uint32_t trx = kBlockLevel - 1;
    std::uint32_t next = 0;
    std::uint32_t legacy = 0;
    for (SynOp& op : block.ops) {
        if (op.trx_in_block != trx) {
            trx = op.trx_in_block;
            next = trx == kBlockLevel ? 1 : 0;
        }
        op.op_in_trx = next++;
        op.legacy_vop_counter = op.is_virtual && chain.emitted(op) ? ++legacy : 0;
    }
}

bool same_op(const SynOp& a, const SynOp& b) {
    return a.kind == b.kind && a.is_virtual == b.is_virtual && a.hbd == b.hbd && a.trx_in_block == b.trx_in_block &&
           a.op_in_trx == b.op_in_trx && a.a == b.a && a.b == b.b && a.c == b.c && a.x == b.x && a.y == b.y && a.z == b.z &&
           a.w == b.w && a.r == b.r && a.r2 == b.r2;
}

void write_asset(JsonWriter& out, const SyntheticChain& chain, std::int64_t amount, int which, Form form) {
    static constexpr std::string_view kNais[] = {kHiveNai, kHbdNai, kVestsNai};
    const int precision = which == 2 ? 6 : 3;
    if (form == Form::nai) {
        out.raw("{\"amount\":\"");
        out.integer(amount);
        out.raw("\",\"nai\":\"");
        out.raw(kNais[which]);
        out.raw("\",\"precision\":");
        out.integer(precision);
        out.put('}');
        return;
    }
    const bool steem = chain.options().naming == Naming::legacy;
    static constexpr std::string_view kSymbols[] = {"HIVE", "HBD", "VESTS"};
    static constexpr std::string_view kSteemSymbols[] = {"STEEM", "SBD", "VESTS"};
    out.put('"');
    out.decimal(amount, precision);
    out.put(' ');
    out.raw((steem ? kSteemSymbols : kSymbols)[which]);
    out.put('"');
}

}  // namespace

void write_account(JsonWriter& out, const SyntheticChain& chain, std::uint32_t index, const AccountBalances& b, Form form) {
    constexpr int kHive = 0, kHbd = 1, kVests = 2;
    const std::string key = chain.signing_key(index);
    char genesis[kTimeLength];
    format_time(SyntheticChain::time_of(0), genesis);
    const std::string_view created(genesis, kTimeLength);
    auto member = [&](std::string_view name) {
        out.put('"');
        out.raw(name);
        out.raw("\":");
    };
    auto asset = [&](std::string_view name, std::int64_t amount, int which) {
        member(name);
        write_asset(out, chain, amount, which, form);
        out.put(',');
    };
    auto text = [&](std::string_view name, std::string_view value) {
        member(name);
        out.string(value);
        out.put(',');
    };
    auto number = [&](std::string_view name, std::int64_t value) {
        member(name);
        out.integer(value);
        out.put(',');
    };
    auto authority = [&](std::string_view name) {
        member(name);
        out.raw("{\"account_auths\":[],\"key_auths\":[[");
        out.string(key);
        out.raw(",1]],\"weight_threshold\":1},");
    };
    const std::int64_t voting_power = b.vests - b.delegated + b.received;
    out.put('{');
    authority("active");
    asset("balance", b.hive, kHive);
    out.raw("\"can_vote\":true,");
    number("comment_count", 0);
    text("created", created);
    number("curation_rewards", 0);
    out.raw("\"delayed_votes\":[],");
    asset("delegated_vesting_shares", b.delegated, kVests);
    out.raw("\"downvote_manabar\":{\"current_mana\":0,\"last_update_time\":");
    out.integer(SyntheticChain::time_of(0));
    out.raw("},");
    text("governance_vote_expiration_ts", "1969-12-31T23:59:59");
    asset("hbd_balance", b.hbd, kHbd);
    text("hbd_last_interest_payment", created);
    text("hbd_seconds", "0");
    text("hbd_seconds_last_update", created);
    number("id", index);
    out.raw("\"is_smt\":false,");
    text("json_metadata", "");
    for (const auto name : {"last_account_recovery", "last_account_update", "last_owner_update", "last_post",
                            "last_post_edit", "last_root_post", "last_vote_time"}) {
        text(name, created);
    }
    number("lifetime_vote_count", 0);
    text("memo_key", key);
    out.raw("\"mined\":false,");
    text("name", chain.account(index));
    text("next_vesting_withdrawal", b.withdraw_rate != 0 ? created : std::string_view("1969-12-31T23:59:59"));
    number("open_recurrent_transfers", 0);
    authority("owner");
    number("pending_claimed_accounts", 0);
    number("pending_transfers", 0);
    number("post_bandwidth", 0);
    number("post_count", 0);
    asset("post_voting_power", voting_power, kVests);
    authority("posting");
    text("posting_json_metadata", "");
    number("posting_rewards", 0);
    out.raw("\"proxied_vsf_votes\":[0,0,0,0],");
    text("proxy", "");
    asset("received_vesting_shares", b.received, kVests);
    text("recovery_account", "");
    text("reset_account", "null");
    asset("reward_hbd_balance", b.reward_hbd, kHbd);
    asset("reward_hive_balance", b.reward_hive, kHive);
    asset("reward_vesting_balance", b.reward_vests, kVests);
    // The HIVE the reward VESTS were bought with, at the chain's one price.
    asset("reward_vesting_hive", b.reward_vests / kMicroVestsPerMilliHive, kHive);
    asset("savings_balance", b.hive_savings, kHive);
    asset("savings_hbd_balance", b.hbd_savings, kHbd);
    text("savings_hbd_last_interest_payment", created);
    text("savings_hbd_seconds", "0");
    text("savings_hbd_seconds_last_update", created);
    number("savings_withdraw_requests", b.savings_withdraw_requests);
    number("to_withdraw", b.to_withdraw);
    asset("vesting_shares", b.vests, kVests);
    asset("vesting_withdraw_rate", b.withdraw_rate, kVests);
    out.raw("\"voting_manabar\":{\"current_mana\":");
    out.integer(voting_power);
    out.raw(",\"last_update_time\":");
    out.integer(SyntheticChain::time_of(0));
    out.raw("},");
    number("withdraw_routes", 0);
    number("withdrawn", b.withdrawn);
    number("witnesses_voted_for", 0);
    out.truncate(out.size() - 1);  // the last comma
    out.put('}');
}

AccountBalances genesis_balances(const SyntheticChain& chain, std::uint32_t account) {
    AccountBalances genesis;
    if (account == kWitnessCount) {
        genesis.hbd = 100'000'000'000;  // the treasury's stand-in pays the proposals: 100,000,000.000 HBD
        return genesis;
    }
    // Every account starts with 1,000.000 HIVE, 100.000 HBD and 10,000 VESTS
    // (an amount of the seed's choosing would do as well: these are named).
    (void)chain;
    genesis.hive = 1'000'000;
    genesis.hbd = 100'000;
    genesis.vests = 10'000'000'000;
    return genesis;
}

void SyntheticLedger::set_salt_source(SaltOf salt_of) {
    std::lock_guard lock(mutex_);
    salt_of_ = std::move(salt_of);
}

void SyntheticLedger::apply_patch(const Patch& patch, SynBlock& block) {
    for (const auto& [index, op] : patch.replaced) block.ops[index] = op;
    for (auto it = patch.dropped.rbegin(); it != patch.dropped.rend(); ++it) {
        block.ops.erase(block.ops.begin() + static_cast<std::ptrdiff_t>(*it));
    }
}

void SyntheticLedger::block(const SyntheticChain& chain, std::uint32_t num, std::uint64_t salt, SynBlock& out) {
    std::lock_guard lock(mutex_);
    chain_ = &chain;
    if (accounts_.empty()) rewind_to(0);
    const SaltOf salt_of = salt_of_ ? salt_of_ : SaltOf([salt](std::uint32_t) { return salt; });
    if (num <= patches_.size() && patches_[num - 1].salt != salt) rewind_to(num - 1);  // a fork
    fold_to(num, salt_of);
    chain_->derive(num, salt, out);
    apply_patch(patches_[num - 1], out);
    renumber(out, *chain_);
}

std::vector<AccountBalances> SyntheticLedger::balances_at(const SyntheticChain& chain, std::uint32_t head,
                                                         const SaltOf& salt_of) {
    std::lock_guard lock(mutex_);
    position_at(chain, head, salt_of);
    return accounts_;
}

std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> SyntheticLedger::delegations_at(
    const SyntheticChain& chain, std::uint32_t head, const SaltOf& salt_of) {
    std::lock_guard lock(mutex_);
    position_at(chain, head, salt_of);
    return delegations_;
}

void SyntheticLedger::position_at(const SyntheticChain& chain, std::uint32_t head, const SaltOf& salt_of) {
    chain_ = &chain;
    if (accounts_.empty()) rewind_to(0);
    // A block folded with another salt than the node now serves: a fork since.
    for (std::uint32_t num = 1; num <= std::min<std::size_t>(head, patches_.size()); ++num) {
        if (patches_[num - 1].salt != salt_of(num)) {
            rewind_to(num - 1);
            break;
        }
    }
    if (patches_.size() > head) rewind_to(head);
    fold_to(head, salt_of);
}

void SyntheticLedger::fold_to(std::uint32_t num, const SaltOf& salt_of) {
    while (patches_.size() < num) fold_next(salt_of(static_cast<std::uint32_t>(patches_.size() + 1)));
}

void SyntheticLedger::rewind_to(std::uint32_t num) {
    // From genesis again: the kept patches replay the payable blocks exactly.
    std::vector<Patch> kept = std::move(patches_);
    kept.resize(std::min<std::size_t>(num, kept.size()));
    patches_.clear();
    orders_.clear();
    savings_.clear();
    conversions_.clear();
    delegations_.clear();
    expiring_delegations_.clear();
    accounts_.resize(chain_->account_count());
    for (std::uint32_t account = 0; account < chain_->account_count(); ++account) {
        accounts_[account] = genesis_balances(*chain_, account);
    }
    SynBlock block;
    for (Patch& patch : kept) {
        chain_->derive(static_cast<std::uint32_t>(patches_.size() + 1), patch.salt, block);
        apply_patch(patch, block);
        for (const SynOp& op : block.ops) apply(op);
        patches_.push_back(std::move(patch));
    }
}

void SyntheticLedger::fold_next(std::uint64_t salt) {
    SynBlock block;
    const auto num = static_cast<std::uint32_t>(patches_.size() + 1);
    chain_->derive(num, salt, block);
    Patch patch;
    patch.salt = salt;
    make_payable_and_apply(block, patch);
    patches_.push_back(std::move(patch));
}

void SyntheticLedger::make_payable_and_apply(SynBlock& block, Patch& patch) {
    bool drop_next_completion = false;  // the virtual op that follows a real one turned into custom_json
    for (std::uint32_t index = 0; index < block.ops.size(); ++index) {
        SynOp op = block.ops[index];
        const SynOp derived = op;
        AccountBalances& a = accounts_[op.a];
        auto liquid = [](AccountBalances& account, bool hbd) -> std::int64_t& { return hbd ? account.hbd : account.hive; };
        bool drop = false;
        if (drop_next_completion && op.is_virtual && op.trx_in_block == derived.trx_in_block &&
            (op.kind == Kind::transfer_to_vesting_completed || op.kind == Kind::fill_order ||
             op.kind == Kind::limit_order_cancelled || op.kind == Kind::account_created || op.kind == Kind::interest)) {
            drop = true;
        }
        drop_next_completion = false;
        if (!drop) switch (op.kind) {
            case Kind::transfer:
            case Kind::transfer_to_savings:
            case Kind::fill_recurrent_transfer:
                op.x = std::min(op.x, liquid(a, op.hbd));
                if (op.x == 0) op.is_virtual ? void(drop = true) : neutralize(op);
                break;
            case Kind::transfer_from_savings: {
                op.x = std::min(op.x, op.hbd ? a.hbd_savings : a.hive_savings);
                if (op.x == 0 || savings_.count({op.a, op.y}) != 0) neutralize(op);
                break;
            }
            case Kind::cancel_transfer_from_savings: {
                const auto first = savings_.lower_bound({op.a, 0});
                if (first == savings_.end() || first->first.first != op.a) {
                    neutralize(op);
                } else {
                    op.y = first->first.second;
                }
                break;
            }
            case Kind::fill_transfer_from_savings: {
                if (savings_.empty()) {
                    drop = true;
                } else {
                    const auto& [key, request] = *savings_.begin();
                    op.a = key.first;
                    op.y = key.second;
                    op.b = request.to;
                    op.x = request.amount;
                    op.hbd = request.hbd;
                }
                break;
            }
            case Kind::transfer_to_vesting:
                op.x = std::min(op.x, a.hive);
                if (op.x == 0) {
                    neutralize(op);
                    drop_next_completion = true;
                }
                break;
            case Kind::transfer_to_vesting_completed:
                // Follows its transfer_to_vesting, whose amount it repeats.
                op.x = block.ops[index - 1].x;
                op.y = op.x * kMicroVestsPerMilliHive;
                break;
            case Kind::withdraw_vesting: {
                const std::int64_t available = a.vests - a.delegated;
                op.x = std::min(op.x, std::max<std::int64_t>(available, 0));
                // hived refuses a stop without a power-down and a rate that does not change.
                const std::int64_t rate = (op.x + kPowerDownWeeks - 1) / kPowerDownWeeks;
                if ((op.x == 0 && a.withdraw_rate == 0) || (op.x != 0 && rate == a.withdraw_rate)) neutralize(op);
                break;
            }
            case Kind::fill_vesting_withdraw: {
                // The next account with a power-down in progress.
                std::uint32_t from = op.a;
                while (from < accounts_.size() && accounts_[from].withdraw_rate == 0) ++from;
                if (from == accounts_.size()) {
                    from = 0;
                    while (from < op.a && accounts_[from].withdraw_rate == 0) ++from;
                    if (from == op.a) {
                        drop = true;
                        break;
                    }
                }
                const AccountBalances& f = accounts_[from];
                const bool route = op.b != op.a;
                op.a = from;
                if (!route) op.b = from;
                op.x = std::min({f.withdraw_rate, f.to_withdraw - f.withdrawn, f.vests});
                op.y = op.hbd ? op.x : op.x / kMicroVestsPerMilliHive;
                if (op.x <= 0) drop = true;
                break;
            }
            case Kind::delegate_vesting_shares: {
                const auto found = delegations_.find({op.a, op.b});
                const std::int64_t current = found == delegations_.end() ? 0 : found->second;
                const std::int64_t available = a.vests - a.delegated - (a.to_withdraw - a.withdrawn);
                if (op.x > current) op.x = current + std::min(op.x - current, std::max<std::int64_t>(available, 0));
                if (op.x == current || op.a == op.b) neutralize(op);
                break;
            }
            case Kind::return_vesting_delegation:
                if (expiring_delegations_.empty()) {
                    drop = true;
                } else {
                    op.a = expiring_delegations_.front().first;
                    op.x = expiring_delegations_.front().second;
                }
                break;
            case Kind::claim_reward_balance:
                op.x = std::min(op.x, a.reward_hive);
                op.y = std::min(op.y, a.reward_hbd);
                op.z = std::min(op.z, a.reward_vests);
                if (op.x == 0 && op.y == 0 && op.z == 0) neutralize(op);
                break;
            case Kind::limit_order_create:
                op.x = std::min(op.x, liquid(a, op.hbd));
                if (op.x == 0 || orders_.count({op.a, op.r}) != 0) {
                    neutralize(op);
                    drop_next_completion = true;
                }
                break;
            case Kind::fill_order: {
                // The new order fills at once against an open order of the other side.
                const SynOp& created = block.ops[index - 1];
                auto maker = std::find_if(orders_.begin(), orders_.end(), [&](const auto& entry) {
                    return entry.second.hbd != created.hbd && entry.first.first != created.a;
                });
                if (maker == orders_.end()) {
                    drop = true;
                    break;
                }
                op.x = created.x;
                op.b = maker->first.first;
                op.r2 = maker->first.second;
                op.y = std::min(op.y, maker->second.amount);
                break;
            }
            case Kind::limit_order_cancel: {
                const auto first = orders_.lower_bound({op.a, 0});
                if (first == orders_.end() || first->first.first != op.a) {
                    neutralize(op);
                    drop_next_completion = true;
                } else {
                    op.r = first->first.second;
                }
                break;
            }
            case Kind::limit_order_cancelled: {
                const SynOp& cancel = block.ops[index - 1];
                const Order& order = orders_.at({cancel.a, cancel.r});
                op.r = cancel.r;
                op.x = order.amount;
                op.hbd = order.hbd;
                break;
            }
            case Kind::convert:
                op.x = std::min(op.x, a.hbd);
                if (op.x == 0 || conversions_.count({op.a, op.r}) != 0) neutralize(op);
                break;
            case Kind::fill_convert_request:
                if (conversions_.empty()) {
                    drop = true;
                } else {
                    const auto& [key, amount] = *conversions_.begin();
                    op.a = key.first;
                    op.r = key.second;
                    op.x = amount;
                    op.y = amount * 1000 / 250;  // HIVE at the feed
                }
                break;
            case Kind::claim_account:
                if (op.x > a.hive) op.x = 0;  // paid with resource credits instead
                break;
            case Kind::account_created:
                op.x = 0;  // create_claimed_account delegates nothing (hived's account_created: 0, 0)
                break;
            case Kind::proposal_pay:
                op.x = std::min(op.x, accounts_[op.b].hbd);
                if (op.x == 0) drop = true;
                break;
            default:
                break;  // moves nothing, or pays out new funds
        }
        if (drop) {
            patch.dropped.push_back(index);
            continue;
        }
        if (!same_op(op, derived)) {
            patch.replaced.emplace_back(index, op);
            block.ops[index] = op;
        }
        apply(op);
    }
}

void SyntheticLedger::apply(const SynOp& op) {
    AccountBalances& a = accounts_[op.a];
    auto liquid = [](AccountBalances& account, bool hbd) -> std::int64_t& { return hbd ? account.hbd : account.hive; };
    switch (op.kind) {
        case Kind::transfer:
        case Kind::fill_recurrent_transfer:
            liquid(a, op.hbd) -= op.x;
            liquid(accounts_[op.b], op.hbd) += op.x;
            break;
        case Kind::transfer_to_savings:
            liquid(a, op.hbd) -= op.x;
            (op.hbd ? accounts_[op.b].hbd_savings : accounts_[op.b].hive_savings) += op.x;
            break;
        case Kind::transfer_from_savings:
            (op.hbd ? a.hbd_savings : a.hive_savings) -= op.x;
            ++a.savings_withdraw_requests;
            savings_[{op.a, op.y}] = SavingsRequest{op.a, op.b, op.x, op.hbd};
            break;
        case Kind::cancel_transfer_from_savings: {
            const auto found = savings_.find({op.a, op.y});
            (found->second.hbd ? a.hbd_savings : a.hive_savings) += found->second.amount;
            --a.savings_withdraw_requests;
            savings_.erase(found);
            break;
        }
        case Kind::fill_transfer_from_savings:
            liquid(accounts_[op.b], op.hbd) += op.x;
            --a.savings_withdraw_requests;
            savings_.erase({op.a, op.y});
            break;
        case Kind::transfer_to_vesting:
            a.hive -= op.x;
            break;
        case Kind::transfer_to_vesting_completed:
            accounts_[op.b].vests += op.y;
            break;
        case Kind::withdraw_vesting:
            a.withdraw_rate = op.x == 0 ? 0 : (op.x + kPowerDownWeeks - 1) / kPowerDownWeeks;
            a.to_withdraw = op.x;
            a.withdrawn = 0;
            break;
        case Kind::fill_vesting_withdraw:
            a.vests -= op.x;
            a.withdrawn += op.x;
            (op.hbd ? accounts_[op.b].vests : accounts_[op.b].hive) += op.y;
            if (a.withdrawn >= a.to_withdraw || a.vests == 0) a.withdraw_rate = a.to_withdraw = a.withdrawn = 0;
            break;
        case Kind::delegate_vesting_shares: {
            std::int64_t& current = delegations_[{op.a, op.b}];
            const std::int64_t delta = op.x - current;
            accounts_[op.b].received += delta;
            if (delta > 0) {
                a.delegated += delta;
            } else {
                expiring_delegations_.emplace_back(op.a, -delta);  // back to the delegator at return_vesting_delegation
            }
            current = op.x;
            if (current == 0) delegations_.erase({op.a, op.b});
            break;
        }
        case Kind::return_vesting_delegation:
            a.delegated -= op.x;
            expiring_delegations_.pop_front();
            break;
        case Kind::claim_reward_balance:
            a.reward_hive -= op.x;
            a.reward_hbd -= op.y;
            a.reward_vests -= op.z;
            a.hive += op.x;
            a.hbd += op.y;
            a.vests += op.z;
            break;
        case Kind::interest:
            a.hbd_savings += op.x;  // served with is_saved_into_hbd_balance false: savings interest
            break;
        case Kind::limit_order_create:
            liquid(a, op.hbd) -= op.x;
            orders_[{op.a, op.r}] = Order{op.x, op.hbd};
            break;
        case Kind::fill_order: {
            // current_pays (x) leaves the new order, open_pays (y) the open one.
            Order& taker = orders_.at({op.a, op.r});
            Order& maker = orders_.at({op.b, op.r2});
            taker.amount -= op.x;
            maker.amount -= op.y;
            liquid(a, !taker.hbd) += op.y;
            liquid(accounts_[op.b], !maker.hbd) += op.x;
            if (taker.amount == 0) orders_.erase({op.a, op.r});
            if (maker.amount == 0) orders_.erase({op.b, op.r2});
            break;
        }
        case Kind::limit_order_cancelled:
            liquid(a, op.hbd) += op.x;
            orders_.erase({op.a, op.r});
            break;
        case Kind::convert:
            a.hbd -= op.x;
            conversions_[{op.a, op.r}] = op.x;
            break;
        case Kind::fill_convert_request:
            a.hive += op.y;
            conversions_.erase({op.a, op.r});
            break;
        case Kind::claim_account:
            a.hive -= op.x;
            break;
        case Kind::producer_reward:
            a.vests += op.x;
            break;
        case Kind::curation_reward:
            a.reward_vests += op.x;
            break;
        case Kind::comment_benefactor_reward:
            a.reward_hive += op.x;
            a.reward_hbd += op.y;
            a.reward_vests += op.z;
            break;
        case Kind::author_reward:
            a.reward_hbd += op.x;
            a.reward_hive += op.y;
            a.reward_vests += op.z;
            break;
        case Kind::proposal_pay:
            accounts_[op.b].hbd -= op.x;
            a.hbd += op.x;
            break;
        default:
            break;
    }
}

}  // namespace sim
