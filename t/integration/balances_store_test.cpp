// The balance sums (migration 0017; docs/store-layout.md, "Balances from the
// history"): the writers keep, in the transaction of the rows, per account,
// component and day the sum of the `add` changes of exactly the rows they
// insert, and the events whose changes wait for block order. Shown on the
// simulator's synthetic chain with its ledger, written through the writers'
// own paths (the backfill loader's insert_events, the indexer's batches):
//   - shards out of order, a re-run of a range, then indexer batches with a
//     fork rewound give the same sums as one in-order load;
//   - genesis plus the sums equal the ledger's balances at head for every
//     account and every component that no stateful change touches (those wait
//     for the block-order pass), and the pending rows name exactly the events
//     with stateful changes;
//   - a batch killed mid-way (rolled back) adds nothing.
//
// Sizes: 300 accounts, 2,000 blocks, one PostgreSQL server with two stores.
// About 10 s of CPU (30 s on a machine shared with other builds).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "harness/harness.hpp"
#include "ledger.hpp"
#include "served_ops.hpp"
#include "synthetic_chain.hpp"
#include "wallet/decoder.hpp"
#include "wallet/event_store.hpp"
#include "wallet/pg.hpp"

using namespace harness;
using wallet::BalanceComponent;
using wallet::BlockRef;
using wallet::EventStore;
using C = wallet::BalanceComponent;

namespace {

constexpr std::uint32_t kHead = 2000;
constexpr std::uint64_t kForkSalt = 77;

const sim::SyntheticChain& chain() {
    static const sim::SyntheticChain instance = [] {
        sim::SyntheticOptions options;
        options.seed = 28;
        options.accounts = 300;
        options.pathological_every = 0;
        options.ledger = true;
        return sim::SyntheticChain(options);
    }();
    return instance;
}

wallet::store::BalanceRules rules() {
    return {wallet::AssetTable::mainnet(), wallet::HardforkSchedule::from_genesis()};
}

// The events of one block as the loader decodes them (salt: a fork's), decoded once.
const std::vector<wallet::WalletEvent>& block_events(std::uint32_t num, std::uint64_t salt) {
    static std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<wallet::WalletEvent>> decoded;
    auto [it, added] = decoded.try_emplace({num, salt});
    if (added) {
        const wallet::AssetTable table = wallet::AssetTable::mainnet();
        // The entries point into the texts.
        const auto texts = sim::test::serve(chain(), num, sim::Form::nai, salt);
        std::vector<wallet::RawEntry> entries;
        for (const auto& text : texts) {
            auto entry = wallet::scan_entry(text);
            if (!entry) throw std::runtime_error(entry.error());
            entries.push_back(*entry);
        }
        auto events = wallet::decode_block_entries(entries, table);
        if (!events) throw std::runtime_error(events.error());
        it->second = std::move(events).value();
    }
    return it->second;
}

std::vector<wallet::WalletEvent> events_of(std::uint32_t first, std::uint32_t last, std::uint64_t salt = 0) {
    std::vector<wallet::WalletEvent> out;
    for (std::uint32_t num = first; num <= last; ++num) {
        const auto& events = block_events(num, salt);
        out.insert(out.end(), events.begin(), events.end());
    }
    return out;
}

BlockRef ref(std::uint32_t num, std::uint64_t salt = 0) {
    char id[41];
    std::snprintf(id, sizeof id, "%08x%032llx", num, static_cast<unsigned long long>(salt + 1));
    return BlockRef{num, id, wallet::Timestamp::from_seconds(sim::SyntheticChain::time_of(num)).value()};
}

// An indexer batch of blocks first..last (salt: a fork's), rewinding first.
EventStore::Batch indexer_batch(std::uint32_t first, std::uint32_t last, std::uint64_t salt = 0,
                                std::optional<std::int64_t> rewind_above = std::nullopt) {
    EventStore::Batch batch;
    batch.rewind_above = rewind_above;
    batch.events = events_of(first, last, salt);
    for (std::uint32_t num = first; num <= last; ++num) batch.blocks.push_back(ref(num, salt));
    batch.checkpoint = batch.blocks.back();
    batch.keep_block_ids = 26;
    return batch;
}

struct Stores {
    PostgresServer pg;
    wallet::Settings in_order = pg.provision("in_order");
    wallet::Settings shuffled = pg.provision("shuffled");
};

Stores& stores() {
    static Stores instance;
    return instance;
}

wallet::PgConnPtr connect(const wallet::Settings& settings) {
    auto conn = wallet::pg::connect(settings.db.indexer_url);
    if (!conn) throw std::runtime_error(conn.error());
    if (auto prepared = wallet::store::prepare_session(conn->get()); !prepared) throw std::runtime_error(prepared.error());
    return std::move(conn).value();
}

// A backfill worker's batch: its events in one transaction.
void shard_batch(PGconn* conn, wallet::store::AccountIds& ids, std::uint32_t first, std::uint32_t last,
                 wallet::store::WriteMethod method) {
    auto tx = wallet::pg::Transaction::begin(conn);
    ASSERT_TRUE(tx) << tx.error();
    auto written = wallet::store::insert_events(conn, ids, events_of(first, last), method, rules());
    ASSERT_TRUE(written) << written.error();
    ASSERT_TRUE(tx.value().commit());
}

void commit(EventStore& store, const EventStore::Batch& batch) {
    auto committed = store.commit_batch(batch);
    ASSERT_TRUE(committed) << committed.error();
}

// The sums and pending rows by account name, non-zero sums only.
std::vector<std::string> sums(const std::string& database) {
    return stores().pg.query("SELECT a.name || ' ' || d.component || ' ' || d.day || ' ' || d.units"
                             " FROM wallet_balance_daily d JOIN wallet_accounts a ON a.id = d.account_id"
                             " WHERE d.units <> 0 ORDER BY 1",
                             database);
}
std::vector<std::string> pending(const std::string& database) {
    return stores().pg.query("SELECT a.name || ' ' || p.block_num || ' ' || p.block_seq || ' ' || p.role"
                             " FROM wallet_balance_pending p JOIN wallet_accounts a ON a.id = p.account_id ORDER BY 1",
                             database);
}

// Loads both stores: in order by indexer batches; out of order by
// shards, a re-run, and indexer batches that first store a fork's blocks and
// then rewind them.
void load() {
    {
        auto connected = EventStore::connect(stores().in_order.db.indexer_url);
        ASSERT_TRUE(connected) << connected.error();
        EventStore store = std::move(connected).value();
        store.set_balance_rules(rules());
        for (std::uint32_t first = 1; first <= kHead; first += 500) commit(store, indexer_batch(first, first + 499));
    }
    auto conn = connect(stores().shuffled);
    wallet::store::AccountIds ids;
    using wallet::store::WriteMethod;
    shard_batch(conn.get(), ids, 1401, 1850, WriteMethod::CopyMerge);
    shard_batch(conn.get(), ids, 1, 700, WriteMethod::MultiRowInsert);
    shard_batch(conn.get(), ids, 701, 1400, WriteMethod::CopyMerge);
    // A re-run of a range already stored, and one overlapping the unloaded end.
    shard_batch(conn.get(), ids, 300, 1000, WriteMethod::CopyMerge);
    shard_batch(conn.get(), ids, 1801, 1950, WriteMethod::MultiRowInsert);
    // The indexer goes on from 1,950 on a fork, then rewinds it.
    auto connected = EventStore::connect(stores().shuffled.db.indexer_url);
    ASSERT_TRUE(connected) << connected.error();
    EventStore store = std::move(connected).value();
    store.set_balance_rules(rules());
    commit(store, indexer_batch(1951, kHead, kForkSalt));
    commit(store, indexer_batch(1951, kHead, 0, 1950));
}

void expect_the_in_order_sums() {
    const auto expected = sums("in_order");
    EXPECT_GT(expected.size(), 1000u);
    EXPECT_EQ(sums("shuffled"), expected);
    EXPECT_EQ(pending("shuffled"), pending("in_order"));
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_events", "shuffled"),
              stores().pg.query("SELECT count(*) FROM wallet_events", "in_order"));
}

// The components a stateful change (or a savings withdrawal a cancel may
// need) moves: they wait for the block-order pass.
const std::set<C>& stateful_components() {
    static const std::set<C> components = {
        C::delegated_vests,         C::received_vests,  C::hive_savings,
        C::hbd_savings,             C::savings_withdraw_requests, C::savings_pending_amount_hive,
        C::savings_pending_amount_hbd, C::vesting_withdraw_rate, C::to_withdraw,
        C::withdrawn,
    };
    return components;
}

void expect_the_ledger_for_every_plain_component() {
    const auto no_fork = [](std::uint32_t) -> std::uint64_t { return 0; };
    const auto ledger = chain().ledger()->balances_at(chain(), kHead, no_fork);
    std::map<std::pair<std::string, int>, std::string> stored;
    for (const auto& row : stores().pg.query("SELECT a.name || ' ' || d.component || ' ' || sum(d.units)"
                                             " FROM wallet_balance_daily d JOIN wallet_accounts a ON a.id = d.account_id"
                                             " GROUP BY a.name, d.component",
                                             "shuffled")) {
        const auto first = row.find(' ');
        const auto second = row.find(' ', first + 1);
        stored[{row.substr(0, first), std::stoi(row.substr(first + 1, second - first - 1))}] = row.substr(second + 1);
    }
    int compared = 0, differences = 0;
    for (std::uint32_t index = 0; index < chain().account_count(); ++index) {
        const std::string name(chain().account(index));
        const auto genesis = sim::genesis_balances(chain(), index);
        const auto& b = ledger[index];
        const std::map<C, std::pair<std::int64_t, std::int64_t>> plain = {
            {C::hive_balance, {b.hive, genesis.hive}},
            {C::hbd_balance, {b.hbd, genesis.hbd}},
            {C::vesting_shares, {b.vests, genesis.vests}},
            {C::hive_rewards, {b.reward_hive, genesis.reward_hive}},
            {C::hbd_rewards, {b.reward_hbd, genesis.reward_hbd}},
            {C::vests_rewards, {b.reward_vests, genesis.reward_vests}},
        };
        for (const auto& [component, values] : plain) {
            ASSERT_FALSE(stateful_components().contains(component));
            const auto found = stored.find({name, static_cast<int>(component)});
            // Both in the component's smallest unit.
            const std::int64_t summed = found == stored.end() ? 0 : std::stoll(found->second);
            ++compared;
            if (values.second + summed != values.first && ++differences <= 10) {
                ADD_FAILURE() << name << " " << wallet::component_name(component) << ": ledger " << values.first
                              << ", genesis " << values.second << " + sums " << summed;
            }
        }
    }
    EXPECT_EQ(differences, 0) << "of " << compared;
    // Every stateful kind happened, and each such event waits in pending.
    EXPECT_GT(std::stoi(stores().pg.query("SELECT count(*) FROM wallet_balance_pending", "shuffled").at(0)), 0);
}

void expect_pending_rows_for_the_stateful_events() {
    std::set<std::string> expected;
    for (const auto& event : events_of(1, kHead)) {
        auto changes = wallet::balance_changes(event, wallet::AssetTable::mainnet(), wallet::HardforkSchedule::from_genesis());
        ASSERT_TRUE(changes) << changes.error();
        for (const auto& change : *changes) {
            if (change.kind == wallet::ChangeKind::add && !change.request_id && change.account == event.account) continue;
            expected.insert(change.account + " " + std::to_string(event.block_num) + " " + std::to_string(*event.block_seq) +
                            " " + std::to_string(wallet::role_code(event.role)));
        }
    }
    EXPECT_GT(expected.size(), 10u);
    const auto stored = pending("shuffled");
    EXPECT_EQ(std::set<std::string>(stored.begin(), stored.end()), expected);
}

void expect_nothing_from_a_rolled_back_batch() {
    const auto before = sums("shuffled");
    auto conn = connect(stores().shuffled);
    {
        // The writer dies before its commit: the transaction rolls back.
        auto tx = wallet::pg::Transaction::begin(conn.get());
        ASSERT_TRUE(tx) << tx.error();
        auto written = wallet::store::insert_events(conn.get(), events_of(kHead + 1, kHead + 50),
                                                    wallet::store::WriteMethod::CopyMerge, rules());
        ASSERT_TRUE(written) << written.error();
        EXPECT_GT(written->inserted, 0);
    }
    EXPECT_EQ(sums("shuffled"), before);
}

// An event whose balance changes the decoder cannot read (here an asset of
// an unknown NAI in a transfer) is stored with its batch, listed in
// wallet_balance_undecodable with its block and op, and adds no sum.
void expect_an_undecodable_event_stored_and_listed() {
    auto events = events_of(kHead + 60, kHead + 60);
    ASSERT_FALSE(events.empty());
    wallet::WalletEvent odd = events.front();
    odd.op_type = "transfer";
    odd.role = wallet::Role::Sender;
    odd.account = "oddsender";
    odd.payload = std::make_shared<const std::string>(
        R"({"type":"transfer_operation","value":{"from":"oddsender","to":"oddreceiver",)"
        R"("amount":{"amount":"1000","precision":3,"nai":"@@000000099"},"memo":""}})");
    odd.block_seq = 900;
    const auto sums_before = sums("shuffled");
    auto conn = connect(stores().shuffled);
    auto tx = wallet::pg::Transaction::begin(conn.get());
    ASSERT_TRUE(tx) << tx.error();
    auto written = wallet::store::insert_events(conn.get(), {odd}, wallet::store::WriteMethod::CopyMerge, rules());
    ASSERT_TRUE(written) << written.error();
    ASSERT_TRUE(tx.value().commit());
    EXPECT_EQ(written->inserted, 1);
    EXPECT_EQ(written->balance_undecodable, 1);
    EXPECT_EQ(stores().pg.query("SELECT a.name || ' ' || u.block_num || ' ' || wallet_op_type_name(u.op_type)"
                                " FROM wallet_balance_undecodable u JOIN wallet_accounts a ON a.id = u.account_id",
                                "shuffled"),
              std::vector<std::string>{"oddsender " + std::to_string(kHead + 60) + " transfer"});
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                                " WHERE a.name = 'oddsender'",
                                "shuffled"),
              std::vector<std::string>{"1"});
    EXPECT_EQ(sums("shuffled"), sums_before);
}

// One test, so that ctest loads the chain once (each test is a process).
TEST(BalancesStore, OutOfOrderShardsReRunsForkRewindsAndKilledBatchesGiveTheLedger) {
    load();
    if (HasFatalFailure()) return;
    {
        SCOPED_TRACE("shards out of order, re-runs, a fork rewound = one load in order");
        expect_the_in_order_sums();
    }
    {
        SCOPED_TRACE("genesis + sums = the ledger");
        expect_the_ledger_for_every_plain_component();
    }
    {
        SCOPED_TRACE("pending rows");
        expect_pending_rows_for_the_stateful_events();
    }
    {
        SCOPED_TRACE("a batch rolled back");
        expect_nothing_from_a_rolled_back_batch();
    }
    {
        SCOPED_TRACE("an event the decoder cannot read the changes of");
        expect_an_undecodable_event_stored_and_listed();
    }
}

}  // namespace
