#include "synthetic_chain.hpp"

#include <algorithm>
#include <unordered_set>

#include "ledger.hpp"
#include "splitmix.hpp"
#include "wallet/operation_types.hpp"

namespace sim {

namespace {

constexpr std::int64_t kGenesisTime = 1458835200;  // 2016-03-24T16:00:00, as mainnet
constexpr std::uint32_t kWitnesses = 21;
// VESTS per HIVE of current mainnet, as micro-VESTS per milli-HIVE (1607.283 VESTS per HIVE).
constexpr std::int64_t kMicroVestsPerMilliHive = 1607283;
constexpr int kHive = 0, kHbd = 1, kVests = 2;

std::uint64_t hash_of(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0, std::uint64_t d = 0) {
    return splitmix64(splitmix64(splitmix64(splitmix64(a) ^ b) ^ c) ^ d);
}

// splitmix64 stream: each block has its own, seeded from (seed, block, salt).
class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        const std::uint64_t out = splitmix64(state_);
        state_ += kSplitmixIncrement;
        return out;
    }
    std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>((next() >> 32) * n >> 32); }
    bool chance(std::uint32_t per_ten_thousand) { return below(10000) < per_ten_thousand; }

private:
    std::uint64_t state_;
};

void append_hex(std::string& out, std::uint64_t value, int digits) {
    std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(digits));
    write_hex(out.data() + at, value, digits);
}

// hived's name (without "_operation") of each Kind, in Kind order.
constexpr std::string_view kKindNames[] = {"vote",
                                           "comment",
                                           "comment_options",
                                           "custom_json",
                                           "transfer",
                                           "transfer_to_vesting",
                                           "withdraw_vesting",
                                           "limit_order_create",
                                           "feed_publish",
                                           "transfer_to_savings",
                                           "transfer_from_savings",
                                           "cancel_transfer_from_savings",
                                           "claim_reward_balance",
                                           "delegate_vesting_shares",
                                           "limit_order_cancel",
                                           "convert",
                                           "claim_account",
                                           "create_claimed_account",
                                           "recurrent_transfer",
                                           "effective_comment_vote",
                                           "transfer_to_vesting_completed",
                                           "interest",
                                           "fill_order",
                                           "producer_reward",
                                           "curation_reward",
                                           "comment_benefactor_reward",
                                           "author_reward",
                                           "comment_reward",
                                           "comment_payout_update",
                                           "fill_vesting_withdraw",
                                           "fill_transfer_from_savings",
                                           "return_vesting_delegation",
                                           "limit_order_cancelled",
                                           "fill_convert_request",
                                           "account_created",
                                           "fill_recurrent_transfer",
                                           "proposal_pay"};
static_assert(std::size(kKindNames) == static_cast<std::size_t>(Kind::proposal_pay) + 1);

}  // namespace

std::span<const std::string_view> kind_names() noexcept { return kKindNames; }

namespace {

// Their op_type_id, from the one list of hived's operation types.
constexpr auto kKindTypeIds = [] {
    std::array<int, std::size(kKindNames)> ids{};
    for (std::size_t kind = 0; kind < ids.size(); ++kind) ids[kind] = wallet::operation_type_id(kKindNames[kind]);
    return ids;
}();
static_assert(std::find(kKindTypeIds.begin(), kKindTypeIds.end(), -1) == kKindTypeIds.end(), "a Kind hived does not know");

constexpr std::string_view kWords[] = {
    "hive",    "daily",   "update",  "photo",   "travel",   "crypto", "market",   "life",    "music",    "art",
    "food",    "recipe",  "garden",  "weekend", "story",    "poem",   "review",   "game",    "splinter", "leo",
    "trading", "journal", "nature",  "walk",    "sunset",   "city",   "report",   "week",    "news",     "design",
    "coffee",  "morning", "project", "ideas",   "thoughts", "build",  "learn",    "guide",   "tips",     "first",
    "my",      "new",     "best",    "how",     "why",      "what",   "today",    "family",  "friends",  "work",
    "bitcoin", "defi",    "nft",     "token",   "stake",    "power",  "curation", "contest", "winner",   "results"};
constexpr std::size_t kWordCount = std::size(kWords);

constexpr std::string_view kMemos[] = {"",
                                       "",
                                       "",
                                       "thanks",
                                       "for the coffee",
                                       "rent",
                                       "payment for design work",
                                       "tip for your post",
                                       "#4b7x9e2f0c1a8d3b6e5f7a9c0d2e4f6a8b1c3e5d7f9a0b2c4d6e8f0a1b3c5d7e9f",
                                       "swap",
                                       "deposit",
                                       "withdrawal 2931",
                                       "monthly support",
                                       "giveaway prize"};

constexpr std::string_view kBodies[] = {
    "Good morning Hive! Today I want to share a few pictures from my walk along the river.",
    "Thanks for reading and for all the support, see you in the next post.",
    "Here is my weekly report with the numbers of the last seven days.\n\n| day | count |\n|---|---|\n| mon | 12 |",
    "Great post, I fully agree with the point about curation.",
    "![image](https://images.hive.blog/DQmExample/photo.jpg)\nA quiet evening at the lake.",
    "Congratulations, your post has been selected for the daily highlights!",
    "I tried this recipe yesterday: flour, water, salt and a lot of patience. \"Delicious\" is the word."};

constexpr std::string_view kTitles[] = {"My weekly update",      "A walk by the river", "Daily market notes",
                                        "How I started on Hive", "Photo contest entry", "Thoughts on staking"};

constexpr std::string_view kCustomIds[] = {"follow",        "community", "notify",  "ssc-mainnet-hive",
                                           "sm_find_match", "reblog",    "podping", "actifit"};

std::string make_account_name(Rng& rng) {
    static constexpr char kConsonants[] = "bcdfghjklmnprstvwz";
    static constexpr char kVowels[] = "aeiou";
    std::string name;
    std::uint32_t syllables = 2 + rng.below(3);
    for (std::uint32_t i = 0; i < syllables; ++i) {
        name.push_back(kConsonants[rng.below(sizeof kConsonants - 1)]);
        name.push_back(kVowels[rng.below(sizeof kVowels - 1)]);
    }
    std::uint32_t style = rng.below(100);
    if (style < 25) {
        name += std::to_string(rng.below(1000));
    } else if (style < 35) {
        name.push_back('-');
        for (std::uint32_t i = 0, n = 2 + rng.below(3); i < n; ++i)
            name.push_back(kConsonants[rng.below(sizeof kConsonants - 1)]);
        name.push_back(kVowels[rng.below(sizeof kVowels - 1)]);
    } else if (style < 40) {
        name.push_back('.');
        name.push_back(kConsonants[rng.below(sizeof kConsonants - 1)]);
        name.push_back(kVowels[rng.below(sizeof kVowels - 1)]);
        name.push_back(kConsonants[rng.below(sizeof kConsonants - 1)]);
    }
    if (name.size() > 16) name.resize(16);
    while (name.back() == '-' || name.back() == '.') name.pop_back();
    return name;
}

}  // namespace

SyntheticChain::SyntheticChain(SyntheticOptions options)
    : options_(options),
      ledger_(options.ledger ? std::make_shared<SyntheticLedger>() : nullptr),
      symbols_(options.naming == Naming::legacy ? SymbolTable::steem() : SymbolTable::mainnet()) {
    Rng rng(hash_of(options_.seed, 0xacc0u));
    std::unordered_set<std::string> taken;
    accounts_.reserve(options_.accounts);
    while (accounts_.size() < options_.accounts) {
        std::string name = make_account_name(rng);
        if (name.size() >= 3 && taken.insert(name).second) accounts_.push_back(std::move(name));
    }
    for (const auto& name : accounts_) {
        quoted_accounts_.push_back(JsonWriter::make_slot('"' + name + '"'));
        plain_accounts_.push_back(JsonWriter::make_slot(name));
    }
    symbol_slots_[kHive] = JsonWriter::make_slot(" " + symbols_.hive + "\"");
    symbol_slots_[kHbd] = JsonWriter::make_slot(" " + symbols_.hbd + "\"");
    symbol_slots_[kVests] = JsonWriter::make_slot(" " + symbols_.vests + "\"");
    for (auto word : kWords) words_.push_back(JsonWriter::make_slot(word));
    for (auto text : kBodies) escaped_bodies_.push_back(escaped(text));
    for (auto text : kMemos) escaped_memos_.push_back(escaped(text));
    for (auto text : kTitles) escaped_titles_.push_back(escaped(text));
}

bool SyntheticChain::is_pathological(std::uint32_t num) const {
    return options_.pathological_every != 0 && num % options_.pathological_every == options_.pathological_every / 2;
}

bool SyntheticChain::emitted(const SynOp& op) const {
    if (options_.naming == Naming::current) return true;
    switch (op.kind) {
        case Kind::effective_comment_vote:
        case Kind::transfer_to_vesting_completed:
        case Kind::limit_order_cancelled:
        case Kind::account_created:
        case Kind::recurrent_transfer:
        case Kind::fill_recurrent_transfer: return false;
        default: return true;
    }
}

std::uint32_t SyntheticChain::witness_index(std::uint32_t num) const {
    // A shuffled round of the top witnesses every 21 blocks.
    return static_cast<std::uint32_t>((hash_of(options_.seed, num / kWitnesses, 0x5c4ed) + num) % kWitnesses);
}

std::string SyntheticChain::signing_key(std::uint32_t witness) const {
    static constexpr char kBase58[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    std::string key = "STM";
    std::uint64_t state = hash_of(options_.seed, witness, 0x5e7);
    for (int i = 0; i < 50; ++i) {
        state = splitmix64(state);
        key.push_back(kBase58[state % 58]);
    }
    return key;
}

std::int64_t SyntheticChain::time_of(std::uint32_t num) { return kGenesisTime + 3 * static_cast<std::int64_t>(num); }

std::string SyntheticChain::block_id(std::uint32_t num, std::uint64_t salt) const {
    std::string id;
    id.reserve(40);
    append_hex(id, num, 8);
    for (std::uint64_t part = 0; part < 2; ++part) append_hex(id, hash_of(options_.seed, num, salt, 0x1d0 + part), 16);
    return id;
}

void SyntheticChain::trx_id(std::uint32_t num, std::uint64_t salt, std::uint32_t trx, char* out) const {
    std::uint64_t base = hash_of(options_.seed, num, salt, 0x7000000000ULL + trx);
    write_hex(out, base, 16);
    write_hex(out + 16, splitmix64(base), 16);
    write_hex(out + 32, splitmix64(base + 1), 8);
}

std::string SyntheticChain::trx_id(std::uint32_t num, std::uint64_t salt, std::uint32_t trx) const {
    std::string id(40, '0');
    trx_id(num, salt, trx, id.data());
    return id;
}

void SyntheticChain::envelope_prefix(const SynBlock& block, std::uint32_t trx_in_block, EnvelopePrefix& out) const {
    char* at = out.text.data();
    auto copy = [&](std::string_view text) {
        std::memcpy(at, text.data(), text.size());
        at += text.size();
    };
    copy("{\"trx_id\":\"");
    if (trx_in_block == kBlockLevel) {
        std::memset(at, '0', 40);
    } else {
        trx_id(block.num, block.salt, trx_in_block, at);
    }
    at += 40;
    copy("\",\"block\":");
    at = std::to_chars(at, at + 10, block.num).ptr;
    copy(",\"trx_in_block\":");
    at = std::to_chars(at, at + 10, trx_in_block).ptr;
    copy(",\"op_in_trx\":");
    out.length = static_cast<std::size_t>(at - out.text.data());
}

std::string SyntheticChain::transaction_merkle_root(std::uint32_t num, std::uint64_t salt) const {
    std::string root;
    std::uint64_t base = hash_of(options_.seed, num, salt, 0x3e2c1e);
    append_hex(root, base, 16);
    append_hex(root, splitmix64(base), 16);
    append_hex(root, splitmix64(base + 1), 8);
    return root;
}

std::string SyntheticChain::witness_signature(std::uint32_t num, std::uint64_t salt) const {
    std::string signature = "1f";
    std::uint64_t base = hash_of(options_.seed, num, salt, 0x5197);
    for (std::uint64_t i = 0; i < 8; ++i) append_hex(signature, splitmix64(base + i), 16);
    return signature;
}

int SyntheticChain::type_id(Kind kind) const { return kKindTypeIds[static_cast<std::size_t>(kind)]; }

void SyntheticChain::generate(std::uint32_t num, std::uint64_t salt, SynBlock& block) const {
    if (ledger_) {
        ledger_->block(*this, num, salt, block);
    } else {
        derive(num, salt, block);
    }
}

void SyntheticChain::derive(std::uint32_t num, std::uint64_t salt, SynBlock& block) const {
    Rng rng(hash_of(options_.seed, num, salt, 0xb10c));
    block.num = num;
    block.salt = salt;
    block.ops.clear();
    format_time(time_of(num), block.timestamp.data());
    block.witness = witness_index(num);

    const std::uint32_t pool = account_count();
    // Activity is skewed: a few accounts do much, most do little.
    auto someone = [&]() -> std::uint32_t {
        std::uint64_t u = rng.next() >> 44;  // 20 bits
        std::uint64_t skewed = (((u * u) >> 20) * u) >> 20;
        return static_cast<std::uint32_t>(kWitnesses + (skewed * (pool - kWitnesses) >> 20));
    };
    auto someone_else = [&](std::uint32_t not_this) {
        std::uint32_t other = someone();
        return other == not_this ? (other + 1 < pool ? other + 1 : kWitnesses) : other;
    };
    auto liquid = [&]() -> std::int64_t {  // milli-units, 0.001 .. 9999.999
        static constexpr std::int64_t kScale[] = {1, 10, 100, 1000};
        return static_cast<std::int64_t>(1 + rng.below(9999)) * kScale[rng.below(4)];
    };
    auto vests = [&]() -> std::int64_t {  // micro-VESTS, up to ~ 16M VESTS
        return static_cast<std::int64_t>(liquid()) * kMicroVestsPerMilliHive / 1000 *
               static_cast<std::int64_t>(1 + rng.below(1000));
    };

    std::uint32_t trx = 0;
    std::uint32_t op_in_trx = 0;
    std::uint32_t legacy_vops = 0;
    auto emit = [&](SynOp op) -> SynOp& {
        op.trx_in_block = trx;
        op.op_in_trx = op_in_trx++;
        if (op.is_virtual && emitted(op)) op.legacy_vop_counter = ++legacy_vops;
        block.ops.push_back(op);
        return block.ops.back();
    };
    auto real = [](Kind kind) {
        SynOp op{};
        op.kind = kind;
        return op;
    };
    auto vop = [&](Kind kind) {
        SynOp op = real(kind);
        op.is_virtual = true;
        return op;
    };
    // Games, follows, communities, second layer tokens.
    auto custom_json = [&](std::uint32_t actor) {
        SynOp op = real(Kind::custom_json);
        op.a = actor;
        op.b = someone_else(actor);
        op.r = rng.next();
        op.x = rng.below(std::size(kCustomIds));
        return op;
    };
    // The virtual op hived emits after a vote, about the same comment.
    auto effective_vote_of = [&](const SynOp& vote) {
        SynOp effective = vop(Kind::effective_comment_vote);
        effective.a = vote.a;
        effective.b = vote.b;
        effective.r = vote.r;
        return effective;
    };
    // Savings moves: mostly to oneself, mostly HBD; withdrawals carry a request_id.
    auto savings_move = [&](SynOp op, std::uint32_t owner) {
        op.a = owner;
        op.b = rng.chance(8000) ? owner : someone_else(owner);
        op.hbd = rng.chance(8000);
        op.x = liquid();
        if (op.kind != Kind::transfer_to_savings) op.y = rng.below(1000000);
        op.r = rng.below(std::size(kMemos));
        return op;
    };
    // A liquid transfer of HBD now and then pays the sender's interest first.
    auto maybe_interest = [&](std::uint32_t owner, bool hbd) {
        if (!hbd || !rng.chance(1200)) return;
        SynOp op = vop(Kind::interest);
        op.a = owner;
        op.hbd = true;
        op.x = 1 + rng.below(5000);
        emit(op);
    };

    const bool light = options_.full_block_every > 1 && num % options_.full_block_every != 0;
    const std::uint32_t transactions = light ? 0 : 15 + rng.below(31);
    for (trx = 0; trx < transactions; ++trx) {
        op_in_trx = 0;
        std::uint32_t pick = rng.below(10000);
        std::uint32_t actor = someone();
        if (pick < 4400) {
            SynOp op = custom_json(actor);
            emit(op);
            if (rng.chance(800)) {
                op.r = rng.next();
                emit(op);
            }
        } else if (pick < 7400) {
            SynOp op = real(Kind::vote);
            op.a = actor;
            op.b = someone_else(actor);
            op.r = rng.next();
            op.x = rng.chance(300) ? -static_cast<std::int64_t>(1 + rng.below(10000)) : 100 * (1 + rng.below(100));
            emit(op);
            SynOp effective = effective_vote_of(op);
            effective.x = static_cast<std::int64_t>(rng.below(5000));                         // pending payout, HBD
            effective.y = static_cast<std::int64_t>(rng.next() >> 12);                        // weight
            effective.z = static_cast<std::int64_t>(rng.next() >> 24) * (op.x < 0 ? -1 : 1);  // rshares
            effective.w = static_cast<std::int64_t>(rng.next() >> 2);                         // total_vote_weight
            emit(effective);
        } else if (pick < 8100) {
            SynOp op = real(Kind::comment);
            op.a = actor;
            bool reply = rng.chance(7000);
            op.b = reply ? someone_else(actor) : 0;
            op.hbd = reply;  // marks a reply
            op.r = rng.next();
            op.r2 = rng.next();
            emit(op);
            if (!reply && rng.chance(3000)) {
                SynOp options = real(Kind::comment_options);
                options.a = actor;
                options.r = op.r;
                options.x = rng.chance(5000) ? 0 : 1 + rng.below(3);  // beneficiaries
                options.b = someone_else(actor);
                options.c = someone_else(actor);
                emit(options);
            }
            if (rng.chance(3000)) {  // the author votes the new post at once
                SynOp self = real(Kind::vote);
                self.a = actor;
                self.b = actor;
                self.r = op.r;
                self.x = 10000;
                emit(self);
                SynOp effective = effective_vote_of(self);
                effective.y = static_cast<std::int64_t>(rng.next() >> 12);
                effective.z = static_cast<std::int64_t>(rng.next() >> 24);
                effective.w = effective.y;
                emit(effective);
            }
        } else if (pick < 8600) {
            SynOp op = real(Kind::claim_reward_balance);
            op.a = actor;
            op.x = rng.chance(1500) ? liquid() / 10 : 0;  // HIVE
            op.y = rng.chance(4000) ? liquid() / 10 : 0;  // HBD
            op.z = vests() / 100;                         // VESTS
            emit(op);
        } else if (pick < 9100) {
            SynOp op = real(Kind::transfer);
            op.a = actor;
            op.b = someone_else(actor);
            op.hbd = rng.chance(3500);
            op.x = liquid();
            op.r = rng.below(std::size(kMemos));
            emit(op);
            maybe_interest(actor, op.hbd);
        } else if (pick < 9250) {
            SynOp op = real(Kind::limit_order_create);
            op.a = actor;
            op.hbd = rng.chance(5000);  // selling HBD (else HIVE)
            op.x = liquid();
            op.y = op.x * (op.hbd ? 4 : 1) / (op.hbd ? 1 : 4) + 1;
            op.r = rng.next() & 0xffffffff;  // orderid
            emit(op);
            if (rng.chance(3000)) {
                SynOp fill = vop(Kind::fill_order);
                fill.a = actor;
                fill.b = someone_else(actor);
                fill.hbd = op.hbd;
                fill.x = op.x;
                fill.y = op.y;
                fill.r = op.r;
                fill.r2 = rng.next() & 0xffffffff;
                emit(fill);
            }
        } else if (pick < 9370) {
            SynOp op = real(Kind::transfer_to_vesting);
            op.a = actor;
            op.b = rng.chance(7000) ? actor : someone_else(actor);
            op.x = liquid();
            emit(op);
            SynOp completed = vop(Kind::transfer_to_vesting_completed);
            completed.a = op.a;
            completed.b = op.b;
            completed.x = op.x;
            completed.y = op.x * kMicroVestsPerMilliHive;
            emit(completed);
        } else if (pick < 9450) {
            SynOp op = real(Kind::delegate_vesting_shares);
            op.a = actor;
            op.b = someone_else(actor);
            op.x = rng.chance(2000) ? 0 : vests();
            emit(op);
        } else if (pick < 9510) {
            SynOp op = real(Kind::withdraw_vesting);
            op.a = actor;
            op.x = rng.chance(1000) ? 0 : vests();
            emit(op);
        } else if (pick < 9570) {
            const bool hbd = emit(savings_move(real(Kind::transfer_to_savings), actor)).hbd;
            maybe_interest(actor, hbd);
        } else if (pick < 9610) {
            const bool hbd = emit(savings_move(real(Kind::transfer_from_savings), actor)).hbd;
            maybe_interest(actor, hbd);
        } else if (pick < 9625) {
            SynOp op = real(Kind::cancel_transfer_from_savings);
            op.a = actor;
            op.y = rng.below(1000000);
            emit(op);
        } else if (pick < 9725) {
            SynOp op = real(Kind::feed_publish);
            op.a = rng.below(kWitnesses);
            op.x = 200 + rng.below(100);  // HBD per 1.000 HIVE, milli
            emit(op);
        } else if (pick < 9775) {
            // A cancel, and the refund hived records in the same transaction.
            SynOp op = real(Kind::limit_order_cancel);
            op.a = actor;
            op.r = rng.next() & 0xffffffff;  // orderid
            emit(op);
            SynOp cancelled = vop(Kind::limit_order_cancelled);
            cancelled.a = actor;
            cancelled.r = op.r;
            cancelled.hbd = rng.chance(5000);
            cancelled.x = liquid();
            emit(cancelled);
        } else if (pick < 9790) {
            SynOp op = real(Kind::convert);
            op.a = actor;
            op.x = liquid();
            op.r = rng.next() & 0xffffffff;  // requestid
            emit(op);
        } else if (pick < 9815) {
            SynOp op = real(Kind::claim_account);  // mostly paid with resource credits: fee 0
            op.a = actor;
            op.x = rng.chance(1000) ? 3000 : 0;
            emit(op);
        } else if (pick < 9830) {
            SynOp op = real(Kind::create_claimed_account);
            op.a = actor;
            op.b = someone_else(actor);
            emit(op);
            SynOp created = vop(Kind::account_created);
            created.a = op.b;
            created.b = actor;
            created.x = rng.chance(2000) ? vests() : 0;  // initial delegation
            emit(created);
        } else if (pick < 9850) {
            SynOp op = real(Kind::recurrent_transfer);
            op.a = actor;
            op.b = someone_else(actor);
            op.hbd = rng.chance(5000);
            op.x = liquid();
            op.y = 24 * (1 + rng.below(30));  // recurrence, hours
            op.z = 2 + rng.below(50);         // executions
            op.r = rng.below(std::size(kMemos));
            emit(op);
        } else {
            emit(custom_json(actor));
        }
    }
    block.transactions = transactions;

    // Block-level virtual operations, numbered from 1 in emission order.
    trx = kBlockLevel;
    op_in_trx = 1;
    {
        SynOp op = vop(Kind::producer_reward);
        op.a = block.witness;
        op.x = 470000000 + rng.below(20000000);
        emit(op);
    }
    if (light) return;
    const std::uint32_t payouts = is_pathological(num) ? 600 + rng.below(200) : rng.below(4);
    std::vector<std::pair<std::uint32_t, std::uint64_t>> paid_out;  // comment_payout_update order
    for (std::uint32_t p = 0; p < payouts; ++p) {
        std::uint32_t author = someone();
        std::uint64_t permlink = rng.next();
        paid_out.emplace_back(author, permlink);
        if (rng.chance(2000)) continue;  // no payout: only the payout update
        std::uint32_t curators = 1 + rng.below(20);
        std::int64_t curators_total = 0;
        for (std::uint32_t c = 0; c < curators; ++c) {
            SynOp op = vop(Kind::curation_reward);
            op.a = someone_else(author);
            op.b = author;
            op.r = permlink;
            op.x = 1 + vests() / 1000;
            curators_total += op.x;
            emit(op);
        }
        std::int64_t beneficiary_hbd = 0;
        if (rng.chance(2500)) {
            for (std::uint32_t k = 0, n = 1 + rng.below(2); k < n; ++k) {
                SynOp op = vop(Kind::comment_benefactor_reward);
                op.a = someone_else(author);
                op.b = author;
                op.r = permlink;
                op.x = rng.chance(8000) ? 0 : rng.below(500);  // HIVE
                op.y = rng.below(2000);                        // HBD
                op.z = 1 + vests() / 1000;                     // VESTS
                beneficiary_hbd += op.y;
                emit(op);
            }
        }
        SynOp reward = vop(Kind::author_reward);
        reward.a = author;
        reward.r = permlink;
        reward.x = rng.below(20000);                       // HBD
        reward.y = rng.chance(9500) ? 0 : rng.below(100);  // HIVE
        reward.z = 1 + vests() / 500;                      // VESTS
        reward.w = curators_total;
        emit(reward);
        SynOp summary = vop(Kind::comment_reward);
        summary.a = author;
        summary.r = permlink;
        summary.x = reward.x * 2 + beneficiary_hbd + 1;  // payout
        summary.y = reward.x;                            // author_rewards
        summary.z = reward.x / 2 + 1;                    // curator_payout_value
        summary.w = beneficiary_hbd;                     // beneficiary_payout_value
        emit(summary);
    }
    for (const auto& [author, permlink] : paid_out) {
        SynOp op = vop(Kind::comment_payout_update);
        op.a = author;
        op.r = permlink;
        emit(op);
    }
    if (rng.chance(4000)) {
        for (std::uint32_t k = 0, n = rng.chance(2500) ? 2 : 1; k < n; ++k) {
            SynOp op = vop(Kind::fill_vesting_withdraw);
            op.a = someone();
            bool route = rng.chance(1500);
            op.b = route ? someone_else(op.a) : op.a;
            op.x = vests() / 13;
            op.hbd = route && rng.chance(5000);  // auto-vested route: deposited in VESTS
            op.y = op.hbd ? op.x : op.x / kMicroVestsPerMilliHive;
            emit(op);
        }
    }
    if (rng.chance(400)) emit(savings_move(vop(Kind::fill_transfer_from_savings), someone()));
    if (rng.chance(800)) {
        SynOp op = vop(Kind::return_vesting_delegation);
        op.a = someone();
        op.x = vests();
        emit(op);
    }
    // Conversions requested 3.5 days before, recurrent transfers due.
    if (rng.chance(450)) {
        SynOp op = vop(Kind::fill_convert_request);
        op.a = someone();
        op.r = rng.next() & 0xffffffff;
        op.x = liquid();                            // HBD in
        op.y = op.x * 1000 / (200 + rng.below(100));  // HIVE out at the feed
        emit(op);
    }
    if (rng.chance(3000)) {
        for (std::uint32_t k = 0, n = 1 + rng.below(3); k < n; ++k) {
            SynOp op = vop(Kind::fill_recurrent_transfer);
            op.a = someone();
            op.b = someone_else(op.a);
            op.hbd = rng.chance(5000);
            op.x = liquid();
            op.z = rng.below(50);  // remaining executions
            op.r = rng.below(std::size(kMemos));
            emit(op);
        }
    }
    // The treasury pays the funded proposals once an hour.
    if (num % 1200 == 0) {
        for (std::uint32_t k = 0, n = 10 + rng.below(10); k < n; ++k) {
            SynOp op = vop(Kind::proposal_pay);
            op.a = someone();
            op.b = kWitnesses;  // the treasury's stand-in in the account pool
            op.r = k;           // proposal_id
            op.x = liquid();
            emit(op);
        }
    }
}

int SyntheticChain::impacted(const SynOp& op, std::array<std::uint32_t, 3>& out) const {
    int n = 0;
    auto add = [&](std::uint32_t account) {
        for (int i = 0; i < n; ++i)
            if (out[static_cast<std::size_t>(i)] == account) return;
        out[static_cast<std::size_t>(n++)] = account;
    };
    switch (op.kind) {
        case Kind::comment:
            add(op.a);
            if (op.hbd) add(op.b);
            break;
        case Kind::vote:
        case Kind::effective_comment_vote:
        case Kind::transfer:
        case Kind::transfer_to_vesting:
        case Kind::transfer_to_vesting_completed:
        case Kind::fill_order:
        case Kind::transfer_to_savings:
        case Kind::transfer_from_savings:
        case Kind::fill_transfer_from_savings:
        case Kind::delegate_vesting_shares:
        case Kind::comment_benefactor_reward:
        case Kind::fill_vesting_withdraw:
        case Kind::create_claimed_account:
        case Kind::account_created:
        case Kind::recurrent_transfer:
        case Kind::fill_recurrent_transfer:
        case Kind::proposal_pay:
            add(op.a);
            add(op.b);
            break;
        default: add(op.a);
    }
    return n;
}

namespace {

// Room an operation's JSON never exceeds (bodies come from bounded pools).
constexpr std::size_t kMaxOpBytes = 4096;

template <std::size_t N>
SIM_INLINE char* lit(char* p, const char (&text)[N]) {
    std::memcpy(p, text, N - 1);
    return p + (N - 1);
}
SIM_INLINE char* put(char* p, std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    return p + text.size();
}
SIM_INLINE char* put(char* p, const JsonWriter::Slot& piece) {
    std::memcpy(p, piece.text, sizeof piece.text);
    return p + piece.length;
}
SIM_INLINE char* put_uint(char* p, std::uint64_t value) { return std::to_chars(p, p + 20, value).ptr; }
SIM_INLINE char* put_int(char* p, std::int64_t value) { return std::to_chars(p, p + 21, value).ptr; }

// amount as a decimal with `precision` places (amount >= 0 here).
char* put_decimal(char* p, std::int64_t amount, int precision) {
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof digits, amount).ptr;
    auto length = static_cast<std::size_t>(end - digits);
    auto places = static_cast<std::size_t>(precision);
    if (length <= places) {
        *p++ = '0';
        *p++ = '.';
        std::memset(p, '0', places - length);
        p += places - length;
        return put(p, std::string_view(digits, length));
    }
    p = put(p, std::string_view(digits, length - places));
    *p++ = '.';
    return put(p, std::string_view(digits + length - places, places));
}

// Integers beyond 2^53 are printed as strings by hived.
char* put_big(char* p, std::int64_t value) {
    bool quoted = value > (std::int64_t{1} << 53) || value < -(std::int64_t{1} << 53);
    if (quoted) *p++ = '"';
    p = put_int(p, value);
    if (quoted) *p++ = '"';
    return p;
}

}  // namespace

char* SyntheticChain::write_asset_at(char* p, std::int64_t amount, int which, Form form) const {
    if (form == Form::nai) {
        p = lit(p, "{\"amount\":\"");
        p = put_int(p, amount);
        switch (which) {
            case kHive: return lit(p, "\",\"precision\":3,\"nai\":\"@@000000021\"}");
            case kHbd: return lit(p, "\",\"precision\":3,\"nai\":\"@@000000013\"}");
            default: return lit(p, "\",\"precision\":6,\"nai\":\"@@000000037\"}");
        }
    }
    *p++ = '"';
    p = put_decimal(p, amount, which == kVests ? 6 : 3);
    return put(p, symbol_slots_[which]);
}

char* SyntheticChain::write_permlink_at(char* p, std::uint64_t r) const {
    *p++ = '"';
    p = put(p, words_[r % kWordCount]);
    *p++ = '-';
    p = put(p, words_[(r >> 8) % kWordCount]);
    *p++ = '-';
    p = put(p, words_[(r >> 16) % kWordCount]);
    *p++ = '-';
    write_hex(p, r >> 40, 6);
    p += 6;
    *p++ = '"';
    return p;
}

char* SyntheticChain::write_op_at(char* p, const SynBlock& block, const SynOp& op, Form form) const {
    static const auto kNames = [] {
        std::array<JsonWriter::Slot, std::size(kKindNames)> names;
        for (std::size_t kind = 0; kind < names.size(); ++kind) names[kind] = JsonWriter::make_slot(kKindNames[kind]);
        return names;
    }();
    const JsonWriter::Slot& name = kNames[static_cast<std::size_t>(op.kind)];
    if (form == Form::nai) {
        p = lit(p, "{\"type\":\"");
        p = put(p, name);
        p = lit(p, "_operation\",\"value\":");
        p = write_body_at(p, block, op, form);
        *p++ = '}';
    } else {
        p = lit(p, "[\"");
        p = put(p, name);
        p = lit(p, "\",");
        p = write_body_at(p, block, op, form);
        *p++ = ']';
    }
    return p;
}

void SyntheticChain::write_op(JsonWriter& out, const SynBlock& block, const SynOp& op, Form form) const {
    out.commit(write_op_at(out.cursor(kMaxOpBytes), block, op, form));
}

void SyntheticChain::write_envelope(JsonWriter& out, const SynBlock& block, const SynOp& op, Form form,
                                    const EnvelopePrefix& prefix) const {
    char* p = out.cursor(kMaxOpBytes + 256);
    p = put(p, prefix.view());
    p = put_uint(p, op.op_in_trx);
    if (options_.naming == Naming::legacy) {
        p = lit(p, ",\"virtual_op\":");
        p = put_uint(p, op.is_virtual ? op.legacy_vop_counter : 0);
        p = lit(p, ",\"timestamp\":\"");
    } else if (op.is_virtual) {
        p = lit(p, ",\"virtual_op\":true,\"timestamp\":\"");
    } else {
        p = lit(p, ",\"virtual_op\":false,\"timestamp\":\"");
    }
    p = put(p, block.time());
    p = lit(p, "\",\"op\":");
    p = write_op_at(p, block, op, form);
    if (form == Form::nai)
        p = lit(p, ",\"operation_id\":0}");
    else
        *p++ = '}';
    out.commit(p);
}

char* SyntheticChain::write_body_at(char* p, const SynBlock& block, const SynOp& op, Form form) const {
    const bool current = options_.naming == Naming::current;
    auto name = [&](std::uint32_t index) { p = put(p, quoted_accounts_[index]); };
    auto asset = [&](std::int64_t amount, int which) { p = write_asset_at(p, amount, which, form); };
    auto permlink = [&](std::uint64_t r) { p = write_permlink_at(p, r); };
    // A member: its key text ("{\"key\":" or ",\"key\":", a literal) then its value.
    auto account_field = [&]<std::size_t N>(const char (&key)[N], std::uint32_t index) {
        p = lit(p, key);
        name(index);
    };
    auto asset_field = [&]<std::size_t N>(const char (&key)[N], std::int64_t amount, int which) {
        p = lit(p, key);
        asset(amount, which);
    };
    // A key current hived and a Steem-era node name differently.
    auto key_by_naming = [&]<std::size_t N, std::size_t M>(const char (&current_key)[N], const char (&steem_key)[M]) {
        p = current ? lit(p, current_key) : lit(p, steem_key);
    };
    auto close = [&] {
        *p++ = '}';
        return p;
    };
    // Reward ops of current hived end with payout_must_be_claimed.
    auto close_claimable = [&] {
        p = current ? lit(p, ",\"payout_must_be_claimed\":true}") : lit(p, "}");
        return p;
    };
    // author,"permlink":...  (the comment a vote, reward or update is about)
    auto on_comment = [&](std::uint32_t author) {
        name(author);
        p = lit(p, ",\"permlink\":");
        permlink(op.r);
    };
    // {"voter":...,"author":...,"permlink":...,"weight":
    auto vote_on_comment = [&] {
        account_field("{\"voter\":", op.a);
        p = lit(p, ",\"author\":");
        on_comment(op.b);
        p = lit(p, ",\"weight\":");
    };
    auto payouts = [&](std::int64_t hbd, std::int64_t hive, std::int64_t vests) {
        key_by_naming(",\"hbd_payout\":", ",\"sbd_payout\":");
        asset(hbd, kHbd);
        key_by_naming(",\"hive_payout\":", ",\"steem_payout\":");
        asset(hive, kHive);
        asset_field(",\"vesting_payout\":", vests, kVests);
    };
    // "from":...,"to":...,"amount":...
    auto from_to_amount = [&](int symbol) {
        account_field("{\"from\":", op.a);
        account_field(",\"to\":", op.b);
        asset_field(",\"amount\":", op.x, symbol);
    };
    // {"from_account":...,"to_account":...
    auto between_accounts = [&] {
        account_field("{\"from_account\":", op.a);
        account_field(",\"to_account\":", op.b);
    };
    // ,"orderid": / ,"requestid": ... (an order's or a request's number)
    auto number_field = [&]<std::size_t N>(const char (&key)[N], std::uint64_t number) {
        p = lit(p, key);
        p = put_uint(p, number);
    };
    auto request_id = [&] {
        p = lit(p, ",\"request_id\":");
        p = put_int(p, op.y);
    };
    auto memo_and_close = [&] {
        p = lit(p, ",\"memo\":");
        p = put(p, escaped_memos_[op.r % escaped_memos_.size()]);
        return close();
    };
    auto vesting_shares_and_close = [&] {
        asset_field(",\"vesting_shares\":", op.x, kVests);
        return close();
    };
    // The liquid asset of the op, and for orders the one on the other side.
    const int liquid = op.hbd ? kHbd : kHive;
    const int other_liquid = op.hbd ? kHive : kHbd;
    switch (op.kind) {
        case Kind::vote:
            vote_on_comment();
            p = put_int(p, op.x);
            return close();
        case Kind::effective_comment_vote:
            vote_on_comment();
            p = put_big(p, op.y);
            p = lit(p, ",\"rshares\":");
            p = put_big(p, op.z);
            p = lit(p, ",\"total_vote_weight\":");
            p = put_big(p, op.w);
            asset_field(",\"pending_payout\":", op.x, kHbd);
            return close();
        case Kind::comment: {
            bool reply = op.hbd;
            p = lit(p, "{\"parent_author\":");
            if (reply)
                name(op.b);
            else
                p = lit(p, "\"\"");
            p = lit(p, ",\"parent_permlink\":");
            if (reply) {
                permlink(op.r2);
            } else {
                *p++ = '"';
                p = put(p, words_[op.r2 % kWordCount]);
                *p++ = '"';
            }
            account_field(",\"author\":", op.a);
            p = lit(p, ",\"permlink\":");
            permlink(op.r);
            p = lit(p, ",\"title\":");
            p = reply ? lit(p, "\"\"") : put(p, escaped_titles_[(op.r >> 24) % escaped_titles_.size()]);
            p = lit(p, ",\"body\":");
            p = put(p, escaped_bodies_[(op.r >> 32) % escaped_bodies_.size()]);
            p = lit(p, ",\"json_metadata\":\"{\\\"tags\\\":[\\\"");
            p = put(p, words_[op.r2 % kWordCount]);
            p = lit(p, "\\\",\\\"");
            p = put(p, words_[(op.r2 >> 8) % kWordCount]);
            p = lit(p, "\\\"],\\\"app\\\":\\\"peakd/2024.6.1\\\",\\\"format\\\":\\\"markdown\\\"}\"}");
            return p;
        }
        case Kind::comment_options:
            p = lit(p, "{\"author\":");
            on_comment(op.a);
            asset_field(",\"max_accepted_payout\":", 1000000000, kHbd);
            key_by_naming(",\"percent_hbd\":10000", ",\"percent_steem_dollars\":10000");
            p = lit(p, ",\"allow_votes\":true,\"allow_curation_rewards\":true,\"extensions\":[");
            if (op.x > 0) {
                p = form == Form::nai ? lit(p, "{\"type\":\"comment_payout_beneficiaries\",\"value\":") : lit(p, "[0,");
                // beneficiaries are sorted by name, as the chain requires
                bool b_first = accounts_[op.b] < accounts_[op.c] || op.x == 1;
                account_field("{\"beneficiaries\":[{\"account\":", b_first ? op.b : op.c);
                p = lit(p, ",\"weight\":500}");
                if (op.x > 1 && op.b != op.c) {
                    account_field(",{\"account\":", b_first ? op.c : op.b);
                    p = lit(p, ",\"weight\":1000}");
                }
                p = form == Form::nai ? lit(p, "]}}") : lit(p, "]}]");
            }
            p = lit(p, "]}");
            return p;
        case Kind::custom_json: {
            account_field("{\"required_auths\":[],\"required_posting_auths\":[", op.a);
            p = lit(p, "],\"id\":\"");
            std::string_view id = kCustomIds[static_cast<std::size_t>(op.x)];
            p = put(p, id);
            // The payload is a JSON document inside a string: written escaped.
            p = lit(p, "\",\"json\":\"");
            const JsonWriter::Slot& who = plain_accounts_[op.a];
            const JsonWriter::Slot& other = plain_accounts_[op.b];
            switch (op.x) {
                case 0:  // follow
                case 5:  // reblog
                    p = lit(p, "[\\\"follow\\\",{\\\"follower\\\":\\\"");
                    p = put(p, who);
                    p = lit(p, "\\\",\\\"following\\\":\\\"");
                    p = put(p, other);
                    p = lit(p, "\\\",\\\"what\\\":[\\\"blog\\\"]}]");
                    break;
                case 1:  // community
                    p = lit(p, "[\\\"subscribe\\\",{\\\"community\\\":\\\"hive-");
                    p = put_uint(p, 100000 + op.r % 900000);
                    p = lit(p, "\\\"}]");
                    break;
                case 2:  // notify
                    p = lit(p, "[\\\"setLastRead\\\",{\\\"date\\\":\\\"");
                    p = put(p, block.time());
                    p = lit(p, "\\\"}]");
                    break;
                case 3:  // ssc-mainnet-hive
                    p = lit(p, "{\\\"contractName\\\":\\\"tokens\\\",\\\"contractAction\\\":\\\"transfer\\\",");
                    p = lit(p, "\\\"contractPayload\\\":{\\\"symbol\\\":\\\"");
                    p = (op.r & 1) != 0 ? lit(p, "LEO") : lit(p, "BEE");
                    p = lit(p, "\\\",\\\"to\\\":\\\"");
                    p = put(p, other);
                    p = lit(p, "\\\",\\\"quantity\\\":\\\"");
                    p = put_decimal(p, static_cast<std::int64_t>(op.r % 100000), 3);
                    p = lit(p, "\\\",\\\"memo\\\":\\\"\\\"}}");
                    break;
                default:
                    p = lit(p, "{\\\"app\\\":\\\"");
                    p = put(p, id);
                    p = lit(p, "\\\",\\\"n\\\":\\\"");
                    write_hex(p, op.r, 16);
                    p += 16;
                    p = lit(p, "\\\",\\\"player\\\":\\\"");
                    p = put(p, who);
                    p = lit(p, "\\\"}");
            }
            p = lit(p, "\"}");
            return p;
        }
        case Kind::transfer:
        case Kind::transfer_to_savings:
            from_to_amount(liquid);
            return memo_and_close();
        case Kind::transfer_from_savings:
            account_field("{\"from\":", op.a);
            request_id();
            account_field(",\"to\":", op.b);
            asset_field(",\"amount\":", op.x, liquid);
            return memo_and_close();
        case Kind::fill_transfer_from_savings:
            from_to_amount(liquid);
            request_id();
            return memo_and_close();
        case Kind::cancel_transfer_from_savings:
            account_field("{\"from\":", op.a);
            request_id();
            return close();
        case Kind::transfer_to_vesting:
            from_to_amount(kHive);
            return close();
        case Kind::transfer_to_vesting_completed:
            between_accounts();
            asset_field(",\"hive_vested\":", op.x, kHive);
            asset_field(",\"vesting_shares_received\":", op.y, kVests);
            return close();
        case Kind::withdraw_vesting:
        case Kind::return_vesting_delegation:  // the same fields
            account_field("{\"account\":", op.a);
            return vesting_shares_and_close();
        case Kind::producer_reward:
            account_field("{\"producer\":", op.a);
            return vesting_shares_and_close();
        case Kind::delegate_vesting_shares:
            account_field("{\"delegator\":", op.a);
            account_field(",\"delegatee\":", op.b);
            return vesting_shares_and_close();
        case Kind::limit_order_create:
            account_field("{\"owner\":", op.a);
            number_field(",\"orderid\":", op.r);
            asset_field(",\"amount_to_sell\":", op.x, liquid);
            asset_field(",\"min_to_receive\":", op.y, other_liquid);
            p = lit(p, ",\"fill_or_kill\":false,\"expiration\":\"");
            format_time(time_of(block.num) + 28 * 24 * 3600, p);
            p += kTimeLength;
            p = lit(p, "\"}");
            return p;
        case Kind::fill_order:
            account_field("{\"current_owner\":", op.a);
            number_field(",\"current_orderid\":", op.r);
            asset_field(",\"current_pays\":", op.x, liquid);
            account_field(",\"open_owner\":", op.b);
            number_field(",\"open_orderid\":", op.r2);
            asset_field(",\"open_pays\":", op.y, other_liquid);
            return close();
        case Kind::feed_publish:
            account_field("{\"publisher\":", op.a);
            asset_field(",\"exchange_rate\":{\"base\":", op.x, kHbd);
            asset_field(",\"quote\":", 1000, kHive);
            p = lit(p, "}}");
            return p;
        case Kind::claim_reward_balance:
            account_field("{\"account\":", op.a);
            key_by_naming(",\"reward_hive\":", ",\"reward_steem\":");
            asset(op.x, kHive);
            key_by_naming(",\"reward_hbd\":", ",\"reward_sbd\":");
            asset(op.y, kHbd);
            asset_field(",\"reward_vests\":", op.z, kVests);
            return close();
        case Kind::interest:
            account_field("{\"owner\":", op.a);
            asset_field(",\"interest\":", op.x, kHbd);
            p = current ? lit(p, ",\"is_saved_into_hbd_balance\":false}") : lit(p, "}");
            return p;
        case Kind::curation_reward:
            account_field("{\"curator\":", op.a);
            asset_field(",\"reward\":", op.x, kVests);
            key_by_naming(",\"author\":", ",\"comment_author\":");
            name(op.b);
            key_by_naming(",\"permlink\":", ",\"comment_permlink\":");
            permlink(op.r);
            return close_claimable();
        case Kind::comment_benefactor_reward:
            account_field("{\"benefactor\":", op.a);
            p = lit(p, ",\"author\":");
            on_comment(op.b);
            payouts(op.y, op.x, op.z);
            return close_claimable();
        case Kind::author_reward:
            p = lit(p, "{\"author\":");
            on_comment(op.a);
            payouts(op.x, op.y, op.z);
            if (current) asset_field(",\"curators_vesting_payout\":", op.w, kVests);
            return close_claimable();
        case Kind::comment_reward:
            p = lit(p, "{\"author\":");
            on_comment(op.a);
            asset_field(",\"payout\":", op.x, kHbd);
            p = lit(p, ",\"author_rewards\":");
            p = put_int(p, op.y);
            asset_field(",\"total_payout_value\":", op.y, kHbd);
            asset_field(",\"curator_payout_value\":", op.z, kHbd);
            asset_field(",\"beneficiary_payout_value\":", op.w, kHbd);
            return close();
        case Kind::comment_payout_update:
            p = lit(p, "{\"author\":");
            on_comment(op.a);
            return close();
        case Kind::fill_vesting_withdraw:
            between_accounts();
            asset_field(",\"withdrawn\":", op.x, kVests);
            asset_field(",\"deposited\":", op.y, op.hbd ? kVests : kHive);
            return close();
        case Kind::limit_order_cancel:
            account_field("{\"owner\":", op.a);
            number_field(",\"orderid\":", op.r);
            return close();
        case Kind::limit_order_cancelled:
            account_field("{\"seller\":", op.a);
            number_field(",\"orderid\":", op.r);
            asset_field(",\"amount_back\":", op.x, liquid);
            return close();
        case Kind::convert:
            account_field("{\"owner\":", op.a);
            number_field(",\"requestid\":", op.r);
            asset_field(",\"amount\":", op.x, kHbd);
            return close();
        case Kind::fill_convert_request:
            account_field("{\"owner\":", op.a);
            number_field(",\"requestid\":", op.r);
            asset_field(",\"amount_in\":", op.x, kHbd);
            asset_field(",\"amount_out\":", op.y, kHive);
            return close();
        case Kind::claim_account:
            account_field("{\"creator\":", op.a);
            asset_field(",\"fee\":", op.x, kHive);
            p = lit(p, ",\"extensions\":[]}");
            return p;
        case Kind::create_claimed_account: {
            // One key for every authority (a rare op: the string is built here).
            const std::string key = signing_key(op.b);
            auto authority = [&]<std::size_t N>(const char (&key_text)[N]) {
                p = lit(p, key_text);
                p = lit(p, "{\"weight_threshold\":1,\"account_auths\":[],\"key_auths\":[[\"");
                p = put(p, key);
                p = lit(p, "\",1]]}");
            };
            account_field("{\"creator\":", op.a);
            account_field(",\"new_account_name\":", op.b);
            authority(",\"owner\":");
            authority(",\"active\":");
            authority(",\"posting\":");
            p = lit(p, ",\"memo_key\":\"");
            p = put(p, key);
            p = lit(p, "\",\"json_metadata\":\"\",\"extensions\":[]}");
            return p;
        }
        case Kind::account_created:
            account_field("{\"new_account_name\":", op.a);
            account_field(",\"creator\":", op.b);
            asset_field(",\"initial_vesting_shares\":", 0, kVests);
            asset_field(",\"initial_delegation\":", op.x, kVests);
            return close();
        case Kind::recurrent_transfer:
        case Kind::fill_recurrent_transfer:
            from_to_amount(liquid);
            p = lit(p, ",\"memo\":");
            p = put(p, escaped_memos_[op.r % escaped_memos_.size()]);
            if (op.kind == Kind::recurrent_transfer) {
                number_field(",\"recurrence\":", static_cast<std::uint64_t>(op.y));
                number_field(",\"executions\":", static_cast<std::uint64_t>(op.z));
            } else {
                number_field(",\"remaining_executions\":", static_cast<std::uint64_t>(op.z));
            }
            p = lit(p, ",\"extensions\":[]}");
            return p;
        case Kind::proposal_pay:
            number_field("{\"proposal_id\":", op.r);
            account_field(",\"receiver\":", op.a);
            account_field(",\"payer\":", op.b);
            asset_field(",\"payment\":", op.x, kHbd);
            return close();
    }
    return p;
}

}  // namespace sim
