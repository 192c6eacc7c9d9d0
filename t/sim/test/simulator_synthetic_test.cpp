// The synthetic chain: deterministic per block, mainnet-like, every wallet
// operation type present, both node namings.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "json_writer.hpp"
#include "served_ops.hpp"
#include "synthetic_chain.hpp"
#include "wallet/decoder.hpp"

namespace {

sim::SyntheticChain chain_with(std::uint64_t seed, sim::Naming naming = sim::Naming::current,
                               std::uint32_t pathological_every = 100000) {
    sim::SyntheticOptions options;
    options.seed = seed;
    options.naming = naming;
    options.pathological_every = pathological_every;
    return sim::SyntheticChain(options);
}

using sim::test::serve;

wallet::JsonPtr parse(const std::string& text) {
    json_error_t error;
    wallet::JsonPtr value = wallet::json_own(json_loadb(text.data(), text.size(), 0, &error));
    if (!value) throw std::runtime_error(text.substr(0, 300) + ": " + error.text);
    return value;
}

}  // namespace

TEST(SimulatorSynthetic, SameSeedSameBlocksAndEachBlockStandsAlone) {
    auto a = chain_with(7);
    auto b = chain_with(7);
    // Block 90,000,000 first on one chain, last on the other: no state carries over.
    EXPECT_EQ(serve(a, 90000000, sim::Form::nai), serve(b, 90000000, sim::Form::nai));
    for (std::uint32_t num = 1; num < 50; ++num) serve(b, num, sim::Form::nai);
    EXPECT_EQ(serve(a, 90000000, sim::Form::nai), serve(b, 90000000, sim::Form::nai));
    EXPECT_EQ(serve(a, 12345, sim::Form::legacy), serve(b, 12345, sim::Form::legacy));
    EXPECT_EQ(a.block_id(12345, 0), b.block_id(12345, 0));

    auto other = chain_with(8);
    EXPECT_NE(serve(a, 12345, sim::Form::nai), serve(other, 12345, sim::Form::nai));
    // A fork salt gives the same block number different content and id.
    EXPECT_NE(serve(a, 12345, sim::Form::nai, 99), serve(a, 12345, sim::Form::nai));
    EXPECT_NE(a.block_id(12345, 99), a.block_id(12345, 0));
    EXPECT_EQ(a.block_id(12345, 99).substr(0, 8), "00003039");
}

TEST(SimulatorSynthetic, MainnetLikeDensityAndMix) {
    auto chain = chain_with(3);
    std::map<std::string, std::size_t> counts;
    std::size_t ops = 0;
    const std::uint32_t blocks = 2000;
    for (std::uint32_t num = 1000; num < 1000 + blocks; ++num) {
        auto served = serve(chain, num, sim::Form::nai);
        ops += served.size();
        bool producer_reward = false;
        for (const auto& text : served) {
            wallet::JsonPtr op = parse(text);
            std::string type = json_string_value(json_object_get(json_object_get(op.get(), "op"), "type"));
            ++counts[type.substr(0, type.size() - 10)];
            producer_reward = producer_reward || type == "producer_reward_operation";
        }
        ASSERT_TRUE(producer_reward) << num;
    }
    double per_block = static_cast<double>(ops) / blocks;
    EXPECT_GT(per_block, 30.0);
    EXPECT_LT(per_block, 150.0);
    // Votes, custom_json and comments are most of the real operations.
    EXPECT_GT(counts["vote"] + counts["custom_json"] + counts["comment"], 20 * blocks);
    EXPECT_GT(counts["vote"], counts["transfer"] * 3);
    // The spec's 15 types, and every other balance-moving type the generator
    // knows (producer_reward, market orders and fills, conversions, ...).
    for (const std::string_view type : wallet::spec_wallet_operation_types()) {
        EXPECT_GT(counts[std::string(type)], 0u) << type << " never appears";
    }
    std::size_t beyond_spec = 0;
    for (const std::string_view type : sim::kind_names()) {
        if (!wallet::is_wallet_operation(type) || wallet::is_spec_wallet_operation(type)) continue;
        EXPECT_GT(counts[std::string(type)], 0u) << type << " never appears";
        ++beyond_spec;
    }
    EXPECT_GE(beyond_spec, 9u);
    // Mainnet shares: a producer reward per block, market operations ahead of conversions.
    EXPECT_EQ(counts["producer_reward"], blocks);
    EXPECT_GT(counts["limit_order_create"], counts["convert"]);
    EXPECT_GT(counts["fill_order"], counts["fill_convert_request"]);
}

TEST(SimulatorSynthetic, PathologicalBlocksHoldThousandsOfVirtualOps) {
    auto chain = chain_with(5, sim::Naming::current, 1000);
    EXPECT_TRUE(chain.is_pathological(500));
    EXPECT_TRUE(chain.is_pathological(1500));
    EXPECT_FALSE(chain.is_pathological(501));
    sim::SynBlock block;
    chain.generate(1500, 0, block);
    std::size_t virtual_ops = 0;
    for (const auto& op : block.ops) virtual_ops += op.is_virtual ? 1 : 0;
    EXPECT_GT(virtual_ops, 3000u);
    chain.generate(1501, 0, block);
    EXPECT_LT(block.ops.size(), 1000u);
}

TEST(SimulatorSynthetic, ASparseChainKeepsItsFullBlocksAndRewardsEveryOther) {
    auto dense = chain_with(9);
    sim::SyntheticOptions options;
    options.seed = 9;
    options.full_block_every = 100;
    sim::SyntheticChain sparse(options);
    // Every 100th block as on the dense chain; the others hold their producer_reward alone.
    EXPECT_EQ(serve(sparse, 4200, sim::Form::nai), serve(dense, 4200, sim::Form::nai));
    sim::SynBlock block;
    sparse.generate(4201, 0, block);
    ASSERT_EQ(block.ops.size(), 1u);
    EXPECT_EQ(block.ops[0].kind, sim::Kind::producer_reward);
    EXPECT_EQ(block.transactions, 0u);
    dense.generate(4201, 0, block);
    EXPECT_GT(block.ops.size(), 10u);
}

TEST(SimulatorSynthetic, LegacyNamingIsSteemEra) {
    auto current = chain_with(11);
    auto legacy = chain_with(11, sim::Naming::legacy);
    std::string current_text, legacy_text;
    for (std::uint32_t num = 100; num < 400; ++num) {
        for (const auto& text : serve(current, num, sim::Form::legacy)) current_text += text;
        for (const auto& text : serve(legacy, num, sim::Form::legacy)) legacy_text += text;
    }
    for (const char* name : {"\"comment_author\":", "\"comment_permlink\":", "\"sbd_payout\":", "\"steem_payout\":",
                             "\"reward_steem\":", "\"reward_sbd\":", " STEEM\"", " SBD\"", "\"virtual_op\":1,"}) {
        EXPECT_NE(legacy_text.find(name), std::string::npos) << name;
        EXPECT_EQ(current_text.find(name), std::string::npos) << name;
    }
    for (const char* name : {"\"hbd_payout\":", "\"hive_payout\":", "\"reward_hive\":", " HIVE\"", " HBD\"",
                             "\"virtual_op\":true", "\"payout_must_be_claimed\":", "effective_comment_vote"}) {
        EXPECT_NE(current_text.find(name), std::string::npos) << name;
        EXPECT_EQ(legacy_text.find(name), std::string::npos) << name;
    }
    // Integer virtual_op counters run 1, 2, 3 ... over the block's virtual ops.
    std::vector<json_int_t> counters;
    for (const auto& text : serve(legacy, 200, sim::Form::nai)) {
        wallet::JsonPtr op = parse(text);
        json_int_t counter = json_integer_value(json_object_get(op.get(), "virtual_op"));
        if (counter != 0) counters.push_back(counter);
    }
    ASSERT_FALSE(counters.empty());
    for (std::size_t i = 0; i < counters.size(); ++i) EXPECT_EQ(counters[i], static_cast<json_int_t>(i + 1));
}

TEST(SimulatorSynthetic, AccountNamesAreValidHiveNames) {
    auto chain = chain_with(1);
    // 3-16 characters; dot-separated segments of 3+ characters that start with a
    // letter, end with a letter or digit, and hold letters, digits and hyphens.
    std::regex segment("[a-z][a-z0-9-]*[a-z0-9]");
    std::set<std::string> seen;
    for (std::uint32_t i = 0; i < chain.account_count(); ++i) {
        std::string name(chain.account(i));
        ASSERT_GE(name.size(), 3u) << name;
        ASSERT_LE(name.size(), 16u) << name;
        ASSERT_TRUE(seen.insert(name).second) << name;
        std::size_t start = 0;
        while (start <= name.size()) {
            std::size_t dot = name.find('.', start);
            std::string part = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            ASSERT_GE(part.size(), 3u) << name;
            ASSERT_TRUE(std::regex_match(part, segment)) << name;
            ASSERT_EQ(part.find("--"), std::string::npos) << name;
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
    }
}

TEST(SimulatorSynthetic, AmountsAreExactInBothForms) {
    auto chain = chain_with(21);
    std::regex legacy_amount(R"re("(\d+)\.(\d{3}) (HIVE|HBD)"|"(\d+)\.(\d{6}) VESTS")re");
    std::regex nai_amount(R"re(\{"amount":"\d+","precision":(3|6),"nai":"@@0000000(21|13|37)"\})re");
    for (std::uint32_t num = 5000; num < 5050; ++num) {
        auto legacy = serve(chain, num, sim::Form::legacy);
        auto nai = serve(chain, num, sim::Form::nai);
        ASSERT_EQ(legacy.size(), nai.size());
        for (std::size_t i = 0; i < legacy.size(); ++i) {
            auto legacy_count = std::distance(std::sregex_iterator(legacy[i].begin(), legacy[i].end(), legacy_amount),
                                              std::sregex_iterator());
            auto nai_count =
                std::distance(std::sregex_iterator(nai[i].begin(), nai[i].end(), nai_amount), std::sregex_iterator());
            EXPECT_EQ(legacy_count, nai_count) << legacy[i] << "\n" << nai[i];
        }
    }
}

TEST(SimulatorSynthetic, ImpactedAccountsFollowHived) {
    auto chain = chain_with(2);
    sim::SynBlock block;
    std::array<std::uint32_t, 3> accounts{};
    std::size_t transfers = 0;
    for (std::uint32_t num = 1; num < 300; ++num) {
        chain.generate(num, 0, block);
        for (const auto& op : block.ops) {
            int n = chain.impacted(op, accounts);
            ASSERT_GE(n, 1);
            if (op.kind == sim::Kind::transfer) {
                ++transfers;
                EXPECT_EQ(n, op.a == op.b ? 1 : 2);
                EXPECT_EQ(accounts[0], op.a);
            }
            if (op.kind == sim::Kind::curation_reward) {
                EXPECT_EQ(n, 1);  // the curator only, not the author
                EXPECT_EQ(accounts[0], op.a);
            }
        }
    }
    EXPECT_GT(transfers, 0u);
}
