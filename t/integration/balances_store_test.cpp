// The balances' storage (migrations 0017, 0024, 0026; docs/store-layout.md,
// "Balances from the history"): the writers keep, in the transaction of the
// rows, the events that carry a change of another account and those whose
// changes the decoder cannot read; the balance pass replays the stored events
// in block order over the fully loaded, irreversible prefix and appends each
// changed account's change runs (its state and its events' changes). Shown on the simulator's
// synthetic chain with its ledger, written through the writers' own paths
// (the backfill loader's insert_events, the indexer's batches):
//   - shards out of order, a re-run of a range, then indexer batches with a
//     fork stored and rewound, the pass run only at the end (and held below
//     the fork by its limit), give the same runs as one in-order load
//     with the pass run after every batch;
//   - every account's state from its runs equals the ledger's balances at
//     period ends and between, every component the node shows; closed runs
//     are cut at kRunEvents (across periods), each account's last is open;
//   - a rewind below the pass cuts the runs and the pass redoes them;
//   - a store with snapshots (0023) upgraded: its snapshots become runs and
//     the pass goes on from them;
//   - the carried rows name exactly the events with another account's change;
//   - a batch killed mid-way (rolled back) adds nothing;
//   - an account named by a period's events without a change in them keeps
//     its genesis run.
//
// Sizes: 300 accounts, 2,000 blocks, one PostgreSQL server with three stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "harness/harness.hpp"
#include "ledger.hpp"
#include "support/balances_support.hpp"
#include "wallet/balance_runs.hpp"
#include "wallet/balance_snapshots.hpp"
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
constexpr std::int64_t kPeriod = 250;  // CHAIN_BALANCE_SNAPSHOT_BLOCKS of the test
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
const std::vector<wallet::WalletEvent>& block_events(std::uint32_t num, std::uint64_t salt,
                                                     sim::Form form = sim::Form::nai) {
    static std::map<std::tuple<std::uint32_t, std::uint64_t, sim::Form>, std::vector<wallet::WalletEvent>> decoded;
    auto [it, added] = decoded.try_emplace({num, salt, form});
    if (added) {
        const wallet::AssetTable table = wallet::AssetTable::mainnet();
        // The entries point into the texts.
        const auto texts = sim::test::serve(chain(), num, form, salt);
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

std::vector<wallet::WalletEvent> events_of(std::uint32_t first, std::uint32_t last, std::uint64_t salt = 0,
                                           sim::Form form = sim::Form::nai) {
    std::vector<wallet::WalletEvent> out;
    for (std::uint32_t num = first; num <= last; ++num) {
        const auto& events = block_events(num, salt, form);
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
    wallet::Settings upgraded = pg.provision("upgraded", 23);  // with snapshots (0017..0023), upgraded by the test
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

// The change runs by account name, closed and open (an open run's end is
// the pass's checkpoint), their carrying accounts named (the two stores give
// accounts their ids in different orders).
std::vector<std::string> runs(const std::string& database, const std::string& from = "wallet_balance_all_runs") {
    std::map<std::int32_t, std::string> names;
    for (const auto& row : stores().pg.query("SELECT id || ' ' || name FROM wallet_accounts", database)) {
        names[std::stoi(row.substr(0, row.find(' ')))] = row.substr(row.find(' ') + 1);
    }
    std::vector<std::string> out;
    for (const auto& row : stores().pg.query("SELECT a.name, r.after_block, r.through_block, encode(r.state, 'hex'),"
                                             " encode(r.changes, 'hex') FROM " + from + " r"
                                             " JOIN wallet_accounts a ON a.id = r.account_id",
                                             database)) {
        std::vector<std::string> cells;
        for (std::size_t at = 0;;) {
            const auto tab = row.find('\t', at);
            cells.push_back(row.substr(at, tab == std::string::npos ? std::string::npos : tab - at));
            if (tab == std::string::npos) break;
            at = tab + 1;
        }
        std::string text = cells.at(0) + " " + cells.at(1) + " " + cells.at(2) + " " + cells.at(3);
        const auto bytes = wallet::bytes_of_hex(cells.at(4));
        auto events = bytes ? wallet::decode_run(*bytes, std::stoll(cells.at(1)))
                            : wallet::Result<std::vector<wallet::RunEvent>>(wallet::make_error("not hex"));
        if (!events) {
            ADD_FAILURE() << row << ": " << events.error();
            continue;
        }
        for (const auto& event : *events) {
            text += " | " + std::to_string(event.block_num) + "." + std::to_string(event.block_seq) + "." +
                    std::to_string(wallet::role_code(event.role)) + " op " + std::to_string(event.op_type) +
                    (event.carried_by ? " by " + names[*event.carried_by] : std::string()) +
                    (event.undecodable ? " undecodable" : "");
            for (const auto& change : event.changes) {
                text += " " + std::string(wallet::component_name(change.component)) + " " +
                        std::string(wallet::change_kind_name(change.kind)) + " " + std::to_string(static_cast<std::int64_t>(change.amount)) +
                        " " + change.other.value_or("-") + " " + std::to_string(change.request_id.value_or(-1));
            }
        }
        out.push_back(std::move(text));
    }
    std::sort(out.begin(), out.end());
    return out;
}
std::vector<std::string> carried(const std::string& database) {
    return stores().pg.query("SELECT a.name || ' ' || c.block_num || ' ' || c.block_seq || ' ' || c.role"
                             " FROM wallet_balance_carried c JOIN wallet_accounts a ON a.id = c.account_id ORDER BY 1",
                             database);
}
std::string through(const std::string& database) {
    return stores().pg.query("SELECT through_block FROM wallet_balance_snapshot_state", database).at(0);
}

// The snapshot pass up to `limit` (the caller's last irreversible block), period by period.
void pass(const wallet::Settings& settings, std::int64_t limit) {
    auto conn = connect(settings);
    wallet::store::AccountIds ids;
    for (;;) {
        auto step = wallet::store::advance_balance_snapshots(conn.get(), ids, rules(), kPeriod, limit);
        ASSERT_TRUE(step) << step.error();
        if (!step->advanced) return;
    }
}

// Loads both stores, each with the chain's genesis states (runs without events): in order by
// indexer batches with the pass after each; out of order by shards, a
// re-run, and indexer batches that first store a fork's blocks (the pass
// held below them) and then rewind them, the pass at the end.
void load() {
    stores().pg.query(balances_test::genesis_runs_sql(chain()), "in_order");
    stores().pg.query(balances_test::genesis_runs_sql(chain()), "shuffled");
    {
        auto connected = EventStore::connect(stores().in_order.db.indexer_url);
        ASSERT_TRUE(connected) << connected.error();
        EventStore store = std::move(connected).value();
        store.set_balance_rules(rules());
        for (std::uint32_t first = 1; first <= kHead; first += 500) {
            commit(store, indexer_batch(first, first + 499));
            pass(stores().in_order, first + 499);
        }
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
    // Nothing is known to be loaded from block 1 yet (no indexer, no shards planned): the pass waits.
    pass(stores().shuffled, kHead);
    EXPECT_EQ(through("shuffled"), "0");
    // The indexer goes on from 1,950 on a fork (the pass stops at its limit, the
    // last irreversible block 1,950), then rewinds it.
    auto connected = EventStore::connect(stores().shuffled.db.indexer_url);
    ASSERT_TRUE(connected) << connected.error();
    EventStore store = std::move(connected).value();
    store.set_balance_rules(rules());
    commit(store, indexer_batch(1951, kHead, kForkSalt));
    pass(stores().shuffled, 1950);
    EXPECT_EQ(through("shuffled"), "1750");
    // The pass's input (migration 0031): the writers' rows of the blocks above it, none below.
    EXPECT_EQ(stores().pg.query("SELECT count(*) > 100, min(block_num) > 1750 FROM wallet_balance_pending", "shuffled"),
              std::vector<std::string>{"t\tt"});
    commit(store, indexer_batch(1951, kHead, 0, 1950));
    pass(stores().shuffled, kHead);
}

void expect_the_in_order_runs() {
    const auto expected = runs("in_order");
    EXPECT_GT(expected.size(), 500u);
    EXPECT_EQ(runs("shuffled"), expected);
    EXPECT_EQ(through("shuffled"), std::to_string(kHead));
    EXPECT_EQ(through("in_order"), std::to_string(kHead));
    EXPECT_EQ(carried("shuffled"), carried("in_order"));
    for (const char* database : {"in_order", "shuffled"}) {
        EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_balance_pending", database), std::vector<std::string>{"0"});
    }
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_events", "shuffled"),
              stores().pg.query("SELECT count(*) FROM wallet_events", "in_order"));
}

// Every account's state at `block` (up to the pass's checkpoint) from its
// runs, as a read takes it: its last run starting at or below the block,
// closed or open, the run's changes up to the block.
std::map<std::string, wallet::BalanceState> states_at(std::uint32_t block, const std::string& database) {
    std::map<std::string, wallet::BalanceState> out;
    for (const auto& row : stores().pg.query("SELECT DISTINCT ON (r.account_id) a.name, r.after_block, encode(r.state, 'hex'),"
                                             " encode(r.changes, 'hex')"
                                             " FROM wallet_balance_all_runs r JOIN wallet_accounts a ON a.id = r.account_id"
                                             " WHERE r.after_block <= " + std::to_string(block) +
                                                 " ORDER BY r.account_id, r.after_block DESC",
                                             database)) {
        const auto first = row.find('\t'), second = row.find('\t', first + 1), third = row.find('\t', second + 1);
        const auto state = wallet::bytes_of_hex(row.substr(second + 1, third - second - 1));
        const auto changes = wallet::bytes_of_hex(row.substr(third + 1));
        auto at = state && changes ? wallet::run_state_at(*state, *changes, std::stoll(row.substr(first + 1, second - first - 1)), block)
                                   : wallet::Result<wallet::BalanceState>(wallet::make_error("not hex"));
        if (!at) {
            ADD_FAILURE() << row << ": " << at.error();
            continue;
        }
        out.emplace(row.substr(0, first), std::move(at).value());
    }
    return out;
}

// Every account's state at `block` from its change runs (states_at) is the
// ledger's there.
void expect_the_ledger_at(std::uint32_t block, const std::string& database = "shuffled") {
    const auto no_fork = [](std::uint32_t) -> std::uint64_t { return 0; };
    const auto ledger = chain().ledger()->balances_at(chain(), block, no_fork);
    const auto stored = states_at(block, database);
    int compared = 0, differences = 0;
    for (std::uint32_t index = 0; index < chain().account_count(); ++index) {
        const std::string name(chain().account(index));
        const auto found = stored.find(name);
        ASSERT_NE(found, stored.end()) << name;
        for (const auto& [component, expected] : balances_test::components_of(ledger[index])) {
            ++compared;
            const auto got = found->second.value(component);
            if (got != expected && ++differences <= 10) {
                ADD_FAILURE() << name << " " << wallet::component_name(component) << " at " << block << ": ledger "
                              << expected << ", runs " << static_cast<std::int64_t>(got);
            }
        }
    }
    EXPECT_EQ(differences, 0) << "of " << compared;
}

void expect_carried_rows_for_the_carried_changes() {
    std::set<std::string> expected;
    for (const auto& event : events_of(1, kHead)) {
        auto changes = wallet::balance_changes(event, wallet::AssetTable::mainnet(), wallet::HardforkSchedule::from_genesis());
        ASSERT_TRUE(changes) << changes.error();
        for (const auto& change : *changes) {
            if (change.account == event.account) continue;
            expected.insert(change.account + " " + std::to_string(event.block_num) + " " + std::to_string(*event.block_seq) +
                            " " + std::to_string(wallet::role_code(event.role)));
        }
    }
    EXPECT_GT(expected.size(), 0u);
    const auto stored = carried("shuffled");
    EXPECT_EQ(std::set<std::string>(stored.begin(), stored.end()), expected);
}

void expect_nothing_from_a_rolled_back_batch() {
    const auto before = carried("shuffled");
    const auto events_before = stores().pg.query("SELECT count(*) FROM wallet_events", "shuffled");
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
    EXPECT_EQ(carried("shuffled"), before);
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_events", "shuffled"), events_before);
}

// An event whose balance changes the decoder cannot read (here an asset of
// an unknown NAI in a transfer) is stored with its batch, listed in
// wallet_balance_undecodable with its block and op, and carries nothing.
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
    const auto carried_before = carried("shuffled");
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
    EXPECT_EQ(carried("shuffled"), carried_before);
}

// Closed runs are appended, cut at the end of the block where they reach
// kRunEvents events and not at the periods' ends (migration 0026); each
// account's last run is its open run, with fewer events; the runs of an
// account follow each other (each starts where the previous ended).
void expect_runs_bounded_and_contiguous() {
    const std::string period = std::to_string(kPeriod);
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM (SELECT after_block, lag(through_block) OVER"
                                " (PARTITION BY account_id ORDER BY after_block) AS previous FROM wallet_balance_all_runs) r"
                                " WHERE r.after_block <> r.previous",
                                "shuffled"),
              std::vector<std::string>{"0"});
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_balance_open_runs o WHERE o.after_block < (SELECT max(r.through_block)"
                                " FROM wallet_balance_runs r WHERE r.account_id = o.account_id)",
                                "shuffled"),
              std::vector<std::string>{"0"});
    // Runs span periods: one for most accounts (fewer than kRunEvents events), the busy ones' cut within periods.
    const auto spanning = stores().pg.query("SELECT count(*) FROM wallet_balance_all_runs WHERE through_block > after_block"
                                            " AND (through_block - 1) / " + period + " <> after_block / " + period,
                                            "shuffled");
    EXPECT_GT(std::stoll(spanning.at(0)), 500);
    const auto busiest = stores().pg.query("SELECT max(n) FROM (SELECT count(*) AS n FROM wallet_events"
                                           " GROUP BY account_id, (block_num - 1) / " + period + ") g",
                                           "shuffled");
    EXPECT_GT(std::stoll(busiest.at(0)), 2 * wallet::store::kRunEvents);
    const auto cut = stores().pg.query("SELECT through_block FROM wallet_balance_runs WHERE through_block % " + period +
                                           " <> 0 GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1",
                                       "shuffled");
    ASSERT_EQ(cut.size(), 1u);
    const auto events_of_run = [](const std::string& run) {
        return static_cast<std::size_t>(std::count(run.begin(), run.end(), '|'));
    };
    // Closed runs hold kRunEvents or more (the rest of the block where they reach it); open ones fewer.
    // (Genesis runs of accounts without events stay closed, without events.)
    std::size_t longest = 0;
    for (const auto& run : runs("shuffled", "(SELECT * FROM wallet_balance_runs WHERE through_block > after_block)")) {
        longest = std::max(longest, events_of_run(run));
        EXPECT_GE(events_of_run(run), static_cast<std::size_t>(wallet::store::kRunEvents)) << run.substr(0, 80);
    }
    const auto open = runs("shuffled", "(SELECT account_id, after_block, 0 AS through_block, state, changes"
                                       " FROM wallet_balance_open_runs)");
    EXPECT_GT(open.size(), 250u);  // of 300 accounts
    for (const auto& run : open) {
        EXPECT_LT(events_of_run(run), static_cast<std::size_t>(wallet::store::kRunEvents)) << run.substr(0, 80);
    }
    EXPECT_GE(longest, static_cast<std::size_t>(wallet::store::kRunEvents));
    EXPECT_LT(longest, static_cast<std::size_t>(wallet::store::kRunEvents + 16));
    // Any block below the checkpoint reads from one run per account: the cut's and one between.
    expect_the_ledger_at(static_cast<std::uint32_t>(std::stoul(cut.at(0))));
    expect_the_ledger_at(1333);
}

// The block-time segments (migration 0030) against wallet_blocks up to the
// pass's checkpoint: the stored blocks at or below it whose time by their
// segment differs (or that have none), and the segments starting above it
// ("0 0" when they agree).
std::string block_times_differing(const std::string& db) {
    return stores()
        .pg.query("SELECT (SELECT count(*) FROM wallet_blocks b, wallet_balance_snapshot_state k"
                  "   WHERE b.block_num <= k.through_block AND b.ts IS DISTINCT FROM"
                  "    (SELECT t.base + (b.block_num - t.first_block) * interval '3 seconds' FROM wallet_block_time_segments t"
                  "      WHERE t.first_block <= b.block_num ORDER BY t.first_block DESC LIMIT 1))"
                  " || ' ' || (SELECT count(*) FROM wallet_block_time_segments t, wallet_balance_snapshot_state k"
                  "   WHERE t.first_block > k.through_block)",
                  db)
        .at(0);
}

// A rewind below the pass's checkpoint (not done by the indexer, whose pass
// stays below forks, but kept consistent): the runs are cut at the block,
// the checkpoint goes down to it, and the pass redoing the blocks after it
// gives the ledger again. On the in-order store, last.
void expect_a_rewind_below_the_pass_cuts_the_runs() {
    constexpr std::uint32_t kRewind = 1610;
    auto connected = EventStore::connect(stores().in_order.db.indexer_url);
    ASSERT_TRUE(connected) << connected.error();
    EventStore store = std::move(connected).value();
    store.set_balance_rules(rules());
    // The indexer's batch rewinding to the block (wallet::store::delete_events_above) and storing the blocks again.
    commit(store, indexer_batch(kRewind + 1, kHead, 0, kRewind));
    EXPECT_EQ(through("in_order"), std::to_string(kRewind));
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_balance_all_runs WHERE through_block > " + std::to_string(kRewind) +
                                    " OR after_block > " + std::to_string(kRewind),
                                "in_order"),
              std::vector<std::string>{"0"});
    EXPECT_GT(std::stoll(stores().pg.query("SELECT count(*) FROM wallet_balance_open_runs", "in_order").at(0)), 100);
    // The pages' block times (migrations 0029, 0030) are cut with them, and follow the pass again.
    EXPECT_EQ(block_times_differing("in_order"), "0 0");
    expect_the_ledger_at(kRewind, "in_order");
    // Missed blocks after the rewind (the chain's blocks are all 3 s apart): 7 s more from block 1701 on,
    // 30 s more from 1751 on; the pass starts a segment at each.
    stores().pg.query("UPDATE wallet_blocks SET ts = ts + interval '7 seconds' WHERE block_num > 1700;"
                      " UPDATE wallet_blocks SET ts = ts + interval '30 seconds' WHERE block_num > 1750",
                      "in_order");
    pass(stores().in_order, kHead);
    EXPECT_EQ(through("in_order"), std::to_string(kHead));
    EXPECT_EQ(block_times_differing("in_order"), "0 0");
    EXPECT_EQ(stores().pg.query("SELECT string_agg(first_block::text, ' ' ORDER BY first_block) FROM wallet_block_time_segments",
                                "in_order"),
              std::vector<std::string>{stores().pg.query("SELECT min(block_num) || ' ' || min(block_num) FILTER (WHERE block_num > 1700)"
                                                         " || ' ' || min(block_num) FILTER (WHERE block_num > 1750) FROM wallet_blocks",
                                                         "in_order").at(0)});
    expect_the_ledger_at(1777, "in_order");
    expect_the_ledger_at(kHead, "in_order");
}

// A store of the snapshots' release (migration 0023: wallet_balance_snapshots
// with rows, the pass's checkpoint at the last) upgraded to this one: 0024
// turns each snapshot into a run without events, and the pass goes on from
// the checkpoint with runs (0026: the open runs apart), replacing the last
// ones. The snapshots are every account's states at two period ends, as the
// in-order store's runs give them; the events are then stored by indexer
// batches and the pass run to the head: the states at the snapshots' blocks
// and above the checkpoint are the ledger's.
void expect_snapshots_upgraded_to_runs() {
    constexpr std::uint32_t kFirst = 500, kLast = 1000;
    std::string accounts, snapshots;
    for (const std::uint32_t block : {kFirst, kLast}) {
        for (const auto& [name, at] : states_at(block, "in_order")) {
            const auto bytes = at.encode();
            ASSERT_TRUE(bytes) << name;
            if (block == kFirst) accounts += (accounts.empty() ? "('" : ",('") + name + "')";
            snapshots += (snapshots.empty() ? "('" : ",('") + name + "'," + std::to_string(block) + ",'" + wallet::hex_of(*bytes) + "')";
        }
    }
    ASSERT_FALSE(snapshots.empty());
    stores().pg.query("INSERT INTO wallet_accounts (name) VALUES " + accounts + " ON CONFLICT DO NOTHING;"
                      " INSERT INTO wallet_balance_snapshots (account_id, block_num, state) SELECT a.id, s.block, decode(s.state, 'hex')"
                      " FROM (VALUES " + snapshots + ") AS s(name, block, state) JOIN wallet_accounts a ON a.name = s.name;"
                      " UPDATE wallet_balance_snapshot_state SET through_block = " + std::to_string(kLast),
                      "upgraded");
    const auto snapshot_count = stores().pg.query("SELECT count(*) FROM wallet_balance_snapshots", "upgraded").at(0);
    stores().upgraded = stores().pg.provision("upgraded");
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_balance_runs WHERE after_block = through_block", "upgraded").at(0),
              snapshot_count);
    // As if the events up to 1,333 had been stored before migration 0031 (no pending rows kept for
    // them): the pass reads those periods' events back, and the writers' rows above.
    stores().pg.query("UPDATE wallet_balance_snapshot_state SET events_read_through = 1333", "upgraded");
    {
        auto connected = EventStore::connect(stores().upgraded.db.indexer_url);
        ASSERT_TRUE(connected) << connected.error();
        EventStore store = std::move(connected).value();
        store.set_balance_rules(rules());
        for (std::uint32_t first = 1; first <= kHead; first += 1000) commit(store, indexer_batch(first, first + 999));
    }
    pass(stores().upgraded, kHead);
    EXPECT_EQ(through("upgraded"), std::to_string(kHead));
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_balance_pending", "upgraded"), std::vector<std::string>{"0"});
    // The converted runs at the first snapshots' block stay; those at the checkpoint are replaced by the
    // pass's runs starting there (of the accounts with events above it).
    const auto converted = [](std::uint32_t block) {
        return std::stoll(stores().pg.query("SELECT count(*) FROM wallet_balance_runs WHERE after_block = through_block"
                                            " AND after_block = " + std::to_string(block), "upgraded").at(0));
    };
    EXPECT_EQ(converted(kFirst) * 2, std::stoll(snapshot_count));
    EXPECT_LT(converted(kLast) * 4, std::stoll(snapshot_count));
    expect_the_ledger_at(kFirst, "upgraded");
    expect_the_ledger_at(kLast, "upgraded");
    expect_the_ledger_at(1333, "upgraded");
    expect_the_ledger_at(kHead, "upgraded");
}

// An account named by a period's events without a balance change in any of
// them keeps its genesis state. Here the receiver of a power-up
// (transfer_to_vesting: its VESTS arrive with transfer_to_vesting_completed,
// the sender's event carries the HIVE): its run without events at block 0
// is replaced only by a run the period begins for it, and this period
// begins none (a pass that deleted it read the account as all zero: 159
// differences in the balances bench, on no account of this chain). On the
// upgraded store, whose pass goes on from kHead over one more period.
void expect_an_account_without_changes_keeps_its_genesis_run() {
    const std::string quiet = "quietgenesis";
    constexpr std::uint32_t kEnd = kHead + static_cast<std::uint32_t>(kPeriod);
    wallet::BalanceState genesis;
    genesis.set(C::hive_balance, 1234567);
    genesis.set(C::vesting_shares, 9876543210);
    const auto state = genesis.encode();
    ASSERT_TRUE(state);
    stores().pg.query(balances_test::genesis_runs_sql({{quiet, genesis}}), "upgraded");
    auto batch = indexer_batch(kHead + 1, kEnd);
    const auto in_block = std::find_if(batch.events.begin(), batch.events.end(),
                                       [](const wallet::WalletEvent& e) { return e.block_num == kHead + 10; });
    ASSERT_NE(in_block, batch.events.end());
    wallet::WalletEvent receiver = *in_block;
    receiver.account = quiet;
    receiver.role = wallet::Role::Receiver;
    receiver.op_type = "transfer_to_vesting";
    receiver.block_seq = 900;
    receiver.virtual_op = 0;
    receiver.payload = std::make_shared<const std::string>(
        R"({"type":"transfer_to_vesting_operation","value":{"from":")" + std::string(chain().account(0)) +
        R"(","to":"quietgenesis","amount":{"amount":"1000","precision":3,"nai":"@@000000021"}}})");
    receiver.balance_changes = nullptr;
    batch.events.insert(std::next(in_block), receiver);
    {
        auto connected = EventStore::connect(stores().upgraded.db.indexer_url);
        ASSERT_TRUE(connected) << connected.error();
        EventStore store = std::move(connected).value();
        store.set_balance_rules(rules());
        commit(store, batch);
    }
    EXPECT_EQ(stores().pg.query("SELECT count(*) FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                                " WHERE a.name = '" + quiet + "'",
                                "upgraded"),
              std::vector<std::string>{"1"});
    pass(stores().upgraded, kEnd);
    EXPECT_EQ(through("upgraded"), std::to_string(kEnd));
    EXPECT_EQ(stores().pg.query("SELECT r.after_block || ' ' || r.through_block FROM wallet_balance_all_runs r"
                                " JOIN wallet_accounts a ON a.id = r.account_id WHERE a.name = '" + quiet + "'",
                                "upgraded"),
              std::vector<std::string>{"0 0"});
    for (const std::uint32_t block : {kHead + 9, kHead + 10, kEnd}) {
        const auto states = states_at(block, "upgraded");
        const auto found = states.find(quiet);
        ASSERT_NE(found, states.end()) << "no state at " << block;
        EXPECT_EQ(found->second.encode(), state) << "at " << block;
    }
    expect_the_ledger_at(kEnd, "upgraded");
}

// The snapshot pass reads each operation from its block's stored text
// (stored_entry_operation), not through wallet_operation_payload(): every
// stored operation, in both forms the node sends (the legacy form's name is
// left out of the stored op, the NAI form's type), gives the same balance
// changes both ways. The legacy blocks are written in a transaction rolled
// back.
void expect_stored_operations_read_as_the_payloads() {
    auto conn = connect(stores().shuffled);
    auto tx = wallet::pg::Transaction::begin(conn.get());
    ASSERT_TRUE(tx) << tx.error();
    auto written = wallet::store::insert_events(conn.get(), events_of(kHead + 101, kHead + 200, 0, sim::Form::legacy),
                                                wallet::store::WriteMethod::CopyMerge, rules());
    ASSERT_TRUE(written) << written.error();
    auto rows = wallet::pg::exec(
        conn.get(),
        "SELECT o.value::text, wallet_op_type_name(e.op_type), e.block_num,"
        " wallet_operation_payload(o.value, e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text"
        " FROM wallet_blocks b CROSS JOIN LATERAL json_each(b.ops) o"
        " CROSS JOIN LATERAL (SELECT * FROM wallet_events e WHERE e.block_num = b.block_num"
        " AND e.block_seq = o.key::integer LIMIT 1) e");
    ASSERT_TRUE(rows) << rows.error();
    const auto changes_of = [](const wallet::WalletEvent& event) {
        std::vector<std::string> out;
        auto changes = wallet::operation_balance_changes(event, rules().assets, rules().forks);
        if (!changes) return std::vector<std::string>{"undecodable"};
        for (const auto& [carrier, change] : *changes) {
            out.push_back(std::to_string(wallet::role_code(carrier)) + " " + change.account + " " +
                          std::string(wallet::component_name(change.component)) + " " +
                          std::string(wallet::change_kind_name(change.kind)) + " " + change.amount.to_string() + " " +
                          change.other.value_or("") + " " + std::to_string(change.request_id.value_or(-1)));
        }
        return out;
    };
    const int count = PQntuples(rows->get());
    int legacy = 0, differences = 0, changing = 0;
    for (int row = 0; row < count; ++row) {
        wallet::WalletEvent event;
        event.op_type = PQgetvalue(rows->get(), row, 1);
        event.block_num = std::strtoll(PQgetvalue(rows->get(), row, 2), nullptr, 10);
        event.payload = std::make_shared<const std::string>(PQgetvalue(rows->get(), row, 3));
        const auto expected = changes_of(event);
        auto operation = wallet::store::stored_entry_operation(PQgetvalue(rows->get(), row, 0), event.op_type);
        ASSERT_TRUE(operation) << operation.error();
        legacy += operation->starts_with('[') ? 1 : 0;
        event.payload = std::make_shared<const std::string>(*operation);
        const auto got = changes_of(event);
        changing += expected.empty() ? 0 : 1;
        if (got != expected && ++differences <= 5) {
            ADD_FAILURE() << "block " << event.block_num << " " << event.op_type << ": " << PQgetvalue(rows->get(), row, 0);
        }
    }
    EXPECT_EQ(differences, 0) << "of " << count;
    EXPECT_GT(legacy, 100);
    EXPECT_GT(changing, count / 2);
}

// A write through wallet_operation_events keeps no pending rows: it raises
// events_read_through to its block, so that the pass reads that period's
// events back (in a transaction rolled back).
void expect_a_write_through_the_view_read_back() {
    auto conn = connect(stores().shuffled);
    auto tx = wallet::pg::Transaction::begin(conn.get());
    ASSERT_TRUE(tx) << tx.error();
    const std::string block = std::to_string(kHead - 5);
    auto updated = wallet::pg::exec(conn.get(), "UPDATE wallet_operation_events SET memo = memo WHERE block_num = " + block);
    ASSERT_TRUE(updated) << updated.error();
    EXPECT_NE(std::string(PQcmdTuples(updated->get())), "0");
    auto read = wallet::pg::exec(conn.get(), "SELECT events_read_through FROM wallet_balance_snapshot_state");
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(std::string(PQgetvalue(read->get(), 0, 0)), block);
}

// One test, so that ctest loads the chain once (each test is a process).
TEST(BalancesStore, OutOfOrderShardsReRunsForkRewindsAndKilledBatchesGiveTheLedger) {
    load();
    if (HasFatalFailure()) return;
    {
        SCOPED_TRACE("shards out of order, re-runs, a fork rewound, one late pass = one load in order");
        expect_the_in_order_runs();
    }
    {
        SCOPED_TRACE("the runs = the ledger");
        expect_the_ledger_at(1000);
        expect_the_ledger_at(kHead);
    }
    {
        SCOPED_TRACE("closed runs appended at kRunEvents, across periods; the open runs apart");
        expect_runs_bounded_and_contiguous();
    }
    {
        SCOPED_TRACE("the pass reads the stored operations as wallet_operation_payload gives them");
        expect_stored_operations_read_as_the_payloads();
    }
    {
        SCOPED_TRACE("a write through the view");
        expect_a_write_through_the_view_read_back();
    }
    {
        SCOPED_TRACE("carried rows");
        expect_carried_rows_for_the_carried_changes();
    }
    {
        SCOPED_TRACE("a batch rolled back");
        expect_nothing_from_a_rolled_back_batch();
    }
    {
        SCOPED_TRACE("an event the decoder cannot read the changes of");
        expect_an_undecodable_event_stored_and_listed();
    }
    {
        SCOPED_TRACE("a store with snapshots upgraded to runs");
        expect_snapshots_upgraded_to_runs();
    }
    {
        SCOPED_TRACE("an account without changes in a period keeps its genesis run");
        expect_an_account_without_changes_keeps_its_genesis_run();
    }
    {
        SCOPED_TRACE("a rewind below the pass");
        expect_a_rewind_below_the_pass_cuts_the_runs();
    }
}

}  // namespace
