#include "wallet/balance_runs.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace wallet {
namespace {

using C = BalanceComponent;

RunChange change(C component, ChangeKind kind, BalanceState::Units amount) { return {component, kind, amount, {}, {}}; }

std::vector<RunEvent> sample_run() {
    std::vector<RunEvent> events;
    // A producer reward, then two events of one block, a carried change with a
    // request id, a delegation with its pair, an undecodable event, extremes.
    events.push_back({101, 0, Role::Owner, 64, {}, false, {change(C::vesting_shares, ChangeKind::add, 1'234'567)}});
    events.push_back({205, 3, Role::Sender, 2, {}, false,
                      {change(C::hive_balance, ChangeKind::add, -1000), change(C::hbd_balance, ChangeKind::add, 0)}});
    events.push_back({205, 3, Role::Receiver, 2, {}, false, {}});
    RunEvent carried{205, 9, Role::Receiver, 57, 4711, false, {change(C::savings_pending_amount_hbd, ChangeKind::add, -250)}};
    carried.changes.front().request_id = -7;
    carried.changes.push_back(change(C::savings_withdraw_requests, ChangeKind::add, -1));
    carried.changes.back().request_id = 123'456'789'012;
    events.push_back(carried);
    RunEvent delegation{90'000, 1, Role::Delegator, 40, {}, false, {change(C::delegated_vests, ChangeKind::delegation, 5'000'000)}};
    delegation.changes.front().other = "some-delegatee";
    events.push_back(delegation);
    events.push_back({90'001, 7, Role::Sender, 2, {}, true, {}});
    events.push_back({std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::max(), Role::Maker, 300,
                      std::numeric_limits<std::int32_t>::min(), false,
                      {change(C::withdrawn, ChangeKind::power_down_step, 0),
                       change(C::to_withdraw, ChangeKind::set, std::numeric_limits<std::int64_t>::max()),
                       change(C::vesting_withdraw_rate, ChangeKind::set, std::numeric_limits<std::int64_t>::min())}});
    events.back().changes.front().other = "";
    return events;
}

TEST(BalanceRuns, RoundTrip) {
    const auto events = sample_run();
    const auto bytes = encode_run(events, 100);
    ASSERT_TRUE(bytes) << bytes.error();
    const auto decoded = decode_run(*bytes, 100);
    ASSERT_TRUE(decoded) << decoded.error();
    EXPECT_EQ(*decoded, events);
    // Relative to the state's block: the same bytes from another start give other blocks.
    EXPECT_FALSE(decode_run(*bytes, std::numeric_limits<std::int32_t>::max()));
    const auto empty = encode_run({}, 5);
    ASSERT_TRUE(empty);
    EXPECT_EQ(*empty, std::string(1, '\0'));
    EXPECT_EQ(decode_run(*empty, 5).value(), std::vector<RunEvent>{});
}

TEST(BalanceRuns, PlainChangesTakeFewBytes) {
    // A typical event (a reward to one component) in a busy account's run.
    std::vector<RunEvent> events;
    for (int i = 1; i <= 32; ++i) {
        events.push_back({1000 + 3 * i, 1, Role::Owner, 64, {}, false, {change(C::vesting_shares, ChangeKind::add, 987'654)}});
    }
    const auto bytes = encode_run(events, 1000);
    ASSERT_TRUE(bytes);
    EXPECT_LE(bytes->size(), 1 + 32 * 9u);
}

TEST(BalanceRuns, RefusesWhatItCannotKeep) {
    EXPECT_FALSE(encode_run({{100, 0, Role::Sender, 2, {}, false, {}}}, 100));  // at the state's block
    EXPECT_FALSE(encode_run({{101, 0, Role::Sender, 2, {}, false, {}}, {100, 0, Role::Sender, 2, {}, false, {}}}, 0));  // out of order
    RunEvent huge{101, 0, Role::Sender, 2, {}, false, {change(C::hive_balance, ChangeKind::add, 0)}};
    huge.changes.front().amount = static_cast<BalanceState::Units>(std::numeric_limits<std::int64_t>::max()) + 1;
    EXPECT_FALSE(encode_run({huge}, 0));
}

// Malformed bytes give an error, never undefined behaviour (run under the
// asan preset): every truncation, every single-byte change, random bytes.
TEST(BalanceRuns, MalformedBytesAreErrors) {
    const std::string bytes = encode_run(sample_run(), 100).value();
    for (std::size_t size = 0; size < bytes.size(); ++size) {
        EXPECT_FALSE(decode_run(bytes.substr(0, size), 100)) << size;
    }
    EXPECT_FALSE(decode_run(bytes + '\0', 100));
    int decoded = 0;
    for (std::size_t at = 0; at < bytes.size(); ++at) {
        for (const unsigned value : {0x00u, 0x01u, 0x7fu, 0x80u, 0xffu}) {
            std::string changed = bytes;
            changed[at] = static_cast<char>(value);
            decoded += decode_run(changed, 100) ? 1 : 0;
        }
    }
    EXPECT_GT(decoded, 0);  // some changes are still well-formed runs
    std::mt19937 random(28);
    for (int i = 0; i < 2000; ++i) {
        std::string noise(random() % 64, '\0');
        for (auto& byte : noise) byte = static_cast<char>(random() & 0xff);
        (void)decode_run(noise, static_cast<std::int64_t>(random() % 1000));
    }
    EXPECT_FALSE(decode_run(std::string(10, '\xff'), 0));
}

TEST(BalanceRuns, ChangesConvertBothWays) {
    BalanceChange original;
    original.account = "alice";
    original.component = C::received_vests;
    original.kind = ChangeKind::delegation;
    original.amount = Decimal::from_units(123'456, 6).value();
    original.other = "bob";
    EXPECT_EQ(RunChange::of(original).to_change("alice"), original);
}

// The pass's input (migration 0031): a block's events, each under the account
// whose run it joins, back as they were (the row's block); malformed bytes an
// error.
TEST(BalanceRuns, PendingEventsRoundTrip) {
    std::vector<PendingEvent> events;
    // Ids of every width the codec must carry: negative, small, wide.
    constexpr std::array<std::int32_t, 6> kAccounts{-3, -2'983, 17, 70'017, 1'999'999'999, 0};
    std::size_t next = 0;
    for (auto event : sample_run()) {
        event.block_num = 777;
        events.push_back({kAccounts[next++ % kAccounts.size()], event});
    }
    events.push_back({std::numeric_limits<std::int32_t>::max(), {777, 0, Role::Owner, 64, {}, false, {}}});
    const auto bytes = encode_pending(events);
    ASSERT_TRUE(bytes) << bytes.error();
    const auto decoded = decode_pending(*bytes, 777);
    ASSERT_TRUE(decoded) << decoded.error();
    EXPECT_EQ(*decoded, events);
    EXPECT_EQ(decode_pending(encode_pending({}).value(), 1).value(), std::vector<PendingEvent>{});
    for (std::size_t size = 0; size < bytes->size(); ++size) {
        EXPECT_FALSE(decode_pending(bytes->substr(0, size), 777)) << size;
    }
    EXPECT_FALSE(decode_pending(*bytes + '\0', 777));
    std::mt19937 random(31);
    for (int i = 0; i < 2000; ++i) {
        std::string noise(random() % 64, '\0');
        for (auto& byte : noise) byte = static_cast<char>(random() & 0xff);
        (void)decode_pending(noise, 1);
    }
    // A plain event (a reward to one component of its own account) takes a few bytes.
    const auto reward = encode_pending({{123'456, {777, 1, Role::Owner, 64, {}, false, {change(C::vesting_shares, ChangeKind::add, 987'654)}}}});
    ASSERT_TRUE(reward);
    EXPECT_LE(reward->size(), 1 + 12u);
}

// A run's state at a block: the state at its start with the changes of its
// events up to the block (an undecodable event has none); malformed bytes an
// error.
TEST(BalanceRuns, StateAtABlock) {
    BalanceState start;
    start.set(C::hive_balance, 5000);
    const auto state = start.encode();
    ASSERT_TRUE(state);
    std::vector<RunEvent> events;
    events.push_back({11, 0, Role::Receiver, 2, {}, false, {change(C::hive_balance, ChangeKind::add, 700)}});
    events.push_back({12, 4, Role::Sender, 2, {}, true, {}});
    events.push_back({15, 1, Role::Sender, 2, {}, false, {change(C::hive_balance, ChangeKind::add, -200)}});
    const auto changes = encode_run(events, 10);
    ASSERT_TRUE(changes);
    const auto value_at = [&](std::int64_t block) { return run_state_at(*state, *changes, 10, block).value().value(C::hive_balance); };
    EXPECT_EQ(value_at(10), 5000);
    EXPECT_EQ(value_at(11), 5700);
    EXPECT_EQ(value_at(14), 5700);
    EXPECT_EQ(value_at(15), 5500);
    EXPECT_EQ(value_at(1'000), 5500);
    EXPECT_FALSE(run_state_at(*state, changes->substr(1), 10, 15));
    EXPECT_FALSE(run_state_at("\xff", *changes, 10, 15));
}

}  // namespace
}  // namespace wallet
