// The event store against a real PostgreSQL: exact columns, idempotent
// writes with both write methods, one transaction per batch, fork rewinds,
// block id retention, node observations.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "harness/harness.hpp"
#include "support/fixture_entries.hpp"
#include "support/wide_column.hpp"
#include "wallet/decoder.hpp"
#include "wallet/event_store.hpp"
#include "wallet/json_util.hpp"
#include "wallet/pg.hpp"

using namespace harness;
using wallet::AssetTable;
using wallet::BlockRef;
using wallet::EventStore;
using wallet::JsonPtr;
using wallet::Timestamp;
using wallet::WalletEvent;
namespace store = wallet::store;

namespace {

JsonPtr parse(const std::string& text) {
    auto parsed = wallet::json::parse(text);
    if (!parsed) throw std::runtime_error(parsed.error());
    return std::move(parsed).value();
}

std::vector<WalletEvent> decode_block_text(const std::string& ops_json) {
    JsonPtr ops = parse(ops_json);
    auto events = wallet::decode_block(ops.get(), AssetTable::mainnet());
    if (!events) throw std::runtime_error(events.error());
    return std::move(events).value();
}

BlockRef ref(std::int64_t num, char fill = 'a') {
    char prefix[9];
    std::snprintf(prefix, sizeof prefix, "%08llx", static_cast<unsigned long long>(num));
    return BlockRef{num, std::string(prefix) + std::string(32, fill), Timestamp::from_seconds(1458835500 + num * 3).value()};
}

// A block with a transfer (2 events), a claim, a producer reward and an author reward.
std::string sample_block(std::int64_t num, const std::string& memo = "thanks") {
    const std::string block = std::to_string(num);
    return R"([
      {"trx_id":"0e4bf604dfa68169b01dd537901ebf7bd775470f","block":)" + block + R"(,"trx_in_block":0,"op_in_trx":0,
       "virtual_op":false,"timestamp":"2016-09-07T00:18:18",
       "op":{"type":"transfer_operation","value":{"from":"alice","to":"bob","memo":)" + wallet::json::dump_compact(parse("\"" + memo + "\"").get()) + R"(,
             "amount":{"amount":"1372","precision":3,"nai":"@@000000013"}}}},
      {"trx_id":"1e4bf604dfa68169b01dd537901ebf7bd775470f","block":)" + block + R"(,"trx_in_block":1,"op_in_trx":0,
       "virtual_op":false,"timestamp":"2016-09-07T00:18:18",
       "op":["claim_reward_balance",{"account":"carol","reward_hive":"0.000 HIVE","reward_hbd":"0.005 HBD","reward_vests":"12.345678 VESTS"}]},
      {"trx_id":"0000000000000000000000000000000000000000","block":)" + block + R"(,"trx_in_block":4294967295,"op_in_trx":1,
       "virtual_op":true,"timestamp":"2016-09-07T00:18:18",
       "op":["producer_reward",{"producer":"dave","vesting_shares":"1.000000 VESTS"}]},
      {"trx_id":"0000000000000000000000000000000000000000","block":)" + block + R"(,"trx_in_block":4294967295,"op_in_trx":2,
       "virtual_op":true,"timestamp":"2016-09-07T00:18:18",
       "op":["author_reward",{"author":"alice","permlink":"post","hbd_payout":"0.013 HBD","hive_payout":"0.000 HIVE",
             "vesting_payout":"31.935041 VESTS","curators_vesting_payout":"7.096675 VESTS","payout_must_be_claimed":true}]}])";
}

struct Database {
    PostgresServer pg;
    wallet::Settings settings = pg.provision();
    EventStore store = connect();

    EventStore connect() {
        auto opened = EventStore::connect(settings.db.indexer_url);
        if (!opened) throw std::runtime_error(opened.error());
        return std::move(opened).value();
    }
    std::vector<std::string> rows() {
        return pg.query_analyzed(
            "SELECT block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq, op_type, coalesce(trx_id, 'NULL'),"
            " to_char(\"timestamp\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), coalesce(amount::text, 'NULL'),"
            " coalesce(symbol, 'NULL'), coalesce(vesting_amount::text, 'NULL'), coalesce(vesting_symbol, 'NULL'),"
            " coalesce(counterparty, 'NULL'), coalesce(memo, 'NULL'), coalesce(author, 'NULL'), coalesce(permlink, 'NULL'),"
            " assets::text, md5(payload::text) FROM wallet_operation_events ORDER BY 1, 2, 3, 4, 5, 6");
    }
    std::string count() { return pg.query("SELECT count(*) FROM wallet_operation_events").at(0); }
};

EventStore::Batch batch_of(std::vector<WalletEvent> events, std::vector<BlockRef> blocks, std::int64_t keep = 26) {
    EventStore::Batch batch;
    batch.events = std::move(events);
    batch.checkpoint = blocks.back();
    batch.blocks = std::move(blocks);
    batch.keep_block_ids = keep;
    return batch;
}

}  // namespace

TEST(IndexerStore, StoresEveryColumnExactly) {
    Database db;
    EXPECT_FALSE(db.store.checkpoint().value().has_value());
    auto counts = db.store.commit_batch(batch_of(decode_block_text(sample_block(7)), {ref(7)}));
    ASSERT_TRUE(counts) << counts.error();
    EXPECT_EQ(counts->offered, 5);
    EXPECT_EQ(counts->inserted, 5);
    const auto rows = db.rows();
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[0],
              "7\t0\t0\t0\talice\tsender\t0\ttransfer\t0e4bf604dfa68169b01dd537901ebf7bd775470f\t2016-09-07T00:18:18Z\t1.372000\tHBD\t"
              "NULL\tNULL\tbob\tthanks\tNULL\tNULL\t[{\"field\": \"amount\", \"amount\": \"1.372\", \"symbol\": \"HBD\"}]\t" +
                  rows[0].substr(rows[0].rfind('\t') + 1));
    EXPECT_EQ(rows[1].substr(0, rows[1].find("\t[")),
              "7\t0\t0\t0\tbob\treceiver\t0\ttransfer\t0e4bf604dfa68169b01dd537901ebf7bd775470f\t2016-09-07T00:18:18Z\t1.372000\tHBD\t"
              "NULL\tNULL\talice\tthanks\tNULL\tNULL");
    EXPECT_EQ(rows[2].substr(0, rows[2].find("\t[")),
              "7\t1\t0\t0\tcarol\towner\t1\tclaim_reward_balance\t1e4bf604dfa68169b01dd537901ebf7bd775470f\t2016-09-07T00:18:18Z\t"
              "0.005000\tHBD\t12.345678\tVESTS\tNULL\tNULL\tNULL\tNULL");
    // The producer reward, virtual op 1 of the block; then the author reward,
    // virtual op 2; no trx_id.
    EXPECT_EQ(rows[3].substr(0, rows[3].find("\t[")),
              "7\t4294967295\t1\t1\tdave\towner\t2\tproducer_reward\tNULL\t2016-09-07T00:18:18Z\tNULL\tNULL\t1.000000\tVESTS\t"
              "NULL\tNULL\tNULL\tNULL");
    EXPECT_EQ(rows[4].substr(0, rows[4].find("\t[")),
              "7\t4294967295\t2\t2\talice\tauthor\t3\tauthor_reward\tNULL\t2016-09-07T00:18:18Z\tNULL\tNULL\t31.935041\tVESTS\t"
              "NULL\tNULL\talice\tpost");
    EXPECT_NE(rows[4].find("{\"field\": \"curators_vesting_payout\", \"amount\": \"7.096675\", \"symbol\": \"VESTS\"}"),
              std::string::npos);
    // The payload is the entry as the node sent it.
    EXPECT_EQ(db.pg.query("SELECT payload->'op'->1->>'curators_vesting_payout', payload->>'trx_id'"
                          " FROM wallet_operation_events WHERE role = 'author'"),
              std::vector<std::string>{"7.096675 VESTS\t0000000000000000000000000000000000000000"});
    auto checkpoint = db.store.checkpoint();
    ASSERT_TRUE(checkpoint && checkpoint->has_value());
    EXPECT_EQ(**checkpoint, ref(7));
}

// Rule 8 with migration 0009: the store keeps an operation without the
// envelope members its rows hold, and the view puts them back. Every history
// entry of the real fixtures (every node form: hived's, steemd's, HAfAH
// REST's, the testnet pairs) is stored as an operation of its block, and its
// payload must be jsonb-equal to the entry.
// Every history entry of the real fixtures as an operation of its block.
struct FixtureOperations {
    std::vector<WalletEvent> events;
    std::vector<BlockRef> blocks;
    std::string expected = "[";  // [[block, block_seq, entry], ...]
    std::size_t operations = 0;
};

FixtureOperations fixture_operations() {
    std::map<std::int64_t, std::vector<std::string>> entries_by_block;
    fixture_test::for_each_history_entry(WALLET_HIVE_FIXTURES_DIR, [&](json_t* entry) {
        json_t* block = json_object_get(entry, "block");
        if (json_is_integer(block) && json_integer_value(block) > 0) {
            entries_by_block[json_integer_value(block)].push_back(wallet::json::dump_compact(entry));
        }
    });
    FixtureOperations out;
    for (auto& [block, entries] : entries_by_block) {
        std::sort(entries.begin(), entries.end());
        entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
        std::int64_t seq = 0;
        for (const auto& entry : entries) {
            // One entry as its own block list: its position is then the
            // entry's index among the block's fixture entries.
            auto decoded = wallet::decode_block(parse("[" + entry + "]").get(), AssetTable::mainnet());
            if (!decoded || decoded->empty()) continue;
            for (WalletEvent event : decoded.value()) {
                event.block_seq = seq;
                out.events.push_back(std::move(event));
            }
            out.expected += (out.operations++ == 0 ? "[" : ",[") + std::to_string(block) + ',' + std::to_string(seq) + ',' + entry + ']';
            ++seq;
        }
        if (seq > 0) out.blocks.push_back(ref(block));
    }
    out.expected += ']';
    return out;
}

TEST(IndexerStore, ThePayloadIsTheNodeEntryForEveryFixtureOperation) {
    const FixtureOperations fixture = fixture_operations();
    const auto& [events, blocks, expected, operations] = fixture;
    ASSERT_GT(operations, 1000u);
    Database db;
    auto counts = db.store.commit_batch(batch_of(events, blocks));
    ASSERT_TRUE(counts) << counts.error();
    ASSERT_EQ(counts->inserted, static_cast<std::int64_t>(events.size()));
    ASSERT_EQ(expected.find("$fixture$"), std::string::npos);
    // Both sides once (a join into the view would parse the blocks per entry).
    EXPECT_EQ(db.pg.query_analyzed("WITH x AS MATERIALIZED (SELECT (x ->> 0)::integer AS block_num, (x ->> 1)::integer AS block_seq,"
                          "                                x -> 2 AS entry"
                          "                           FROM jsonb_array_elements($fixture$" + expected + "$fixture$) AS x),"
                          " e AS MATERIALIZED (SELECT block_num, block_seq, payload FROM wallet_operation_events)"
                          " SELECT count(*), count(*) FILTER (WHERE e.payload IS DISTINCT FROM x.entry)"
                          "   FROM x JOIN e USING (block_num, block_seq)"),
              std::vector<std::string>{std::to_string(events.size()) + "\t0"});
    // Most entries were stored without their envelope, and their type name.
    const auto stripped = db.pg.query("SELECT count(*) FILTER (WHERE json_array_length(o.value) = 3),"
                                      "       count(*) FILTER (WHERE (o.value ->> 2)::integer & (256 | 512) <> 0)"
                                      "  FROM wallet_blocks b CROSS JOIN LATERAL json_each(b.ops) o");
    ASSERT_EQ(stripped.size(), 1u);
    const std::string counts_text = stripped.front();
    EXPECT_GT(std::stoul(counts_text), operations * 3 / 4) << counts_text << " of " << operations;
    EXPECT_GT(std::stoul(counts_text.substr(counts_text.find('\t') + 1)), operations * 3 / 4)
        << counts_text << " of " << operations;
}

// Migration 0015: the writers store `wide`. The fixture operations (spec 000's
// types and others) written with either method, and through the view's
// trigger, get their op type's class.
TEST(IndexerStore, EveryWriterStoresTheOpTypesClassAsWide) {
    const FixtureOperations fixture = fixture_operations();
    for (auto method : {store::WriteMethod::CopyMerge, store::WriteMethod::MultiRowInsert}) {
        Database db;
        ASSERT_TRUE(db.store.commit_batch(batch_of(fixture.events, fixture.blocks), method));
        const std::string counts = store_test::wide_column_counts(db.pg);
        EXPECT_TRUE(store_test::wide_column_is_the_op_types_class(counts)) << counts;
        if (method != store::WriteMethod::CopyMerge) continue;
        // A row of each op type again, through the view, in other blocks.
        db.pg.query("CREATE TEMP TABLE again AS SELECT DISTINCT ON (op_type) * FROM wallet_operation_events"
                    " ORDER BY op_type, block_num, block_seq, account;"
                    " UPDATE again SET block_num = block_num + 1000000000; TRUNCATE wallet_events;"
                    " INSERT INTO wallet_operation_events SELECT * FROM again");
        const std::string through_view = store_test::wide_column_counts(db.pg);
        EXPECT_TRUE(store_test::wide_column_is_the_op_types_class(through_view)) << through_view;
    }
}

TEST(IndexerStore, RewritingABlockNeverDuplicatesWithEitherMethod) {
    Database db;
    const auto events = decode_block_text(sample_block(7));
    ASSERT_TRUE(db.store.commit_batch(batch_of(events, {ref(7)}), store::WriteMethod::CopyMerge));
    const auto first = db.rows();
    for (auto method : {store::WriteMethod::CopyMerge, store::WriteMethod::MultiRowInsert}) {
        auto again = db.store.commit_batch(batch_of(events, {ref(7)}), method);
        ASSERT_TRUE(again) << again.error();
        EXPECT_EQ(again->inserted, 0);
        EXPECT_EQ(db.rows(), first);
    }
    // Both methods store identical rows.
    Database other;
    ASSERT_TRUE(other.store.commit_batch(batch_of(events, {ref(7)}), store::WriteMethod::MultiRowInsert));
    EXPECT_EQ(other.rows(), first);
}

TEST(IndexerStore, AFailingBatchLeavesNothingBehind) {
    Database db;
    ASSERT_TRUE(db.store.commit_batch(batch_of(decode_block_text(sample_block(7)), {ref(7)})));
    const auto before = db.rows();
    auto events = decode_block_text(sample_block(8));
    // An amount NUMERIC(30,6) cannot hold exactly is refused, not rounded.
    events.back().vesting = wallet::parse_legacy_asset("1.12345678 VESTS").value();
    auto failed = db.store.commit_batch(batch_of(events, {ref(8)}));
    ASSERT_FALSE(failed);
    EXPECT_NE(failed.error().find("more than 6 decimals"), std::string::npos) << failed.error();
    EXPECT_EQ(db.rows(), before);
    EXPECT_EQ(db.store.checkpoint().value()->num, 7);

    // Events decoded without their block cannot be stored either.
    JsonPtr entry = parse(R"({"trx_id":"0000000000000000000000000000000000000000","block":9,"trx_in_block":4294967295,
        "op_in_trx":1,"virtual_op":true,"timestamp":"2016-09-07T00:18:18",
        "op":["return_vesting_delegation",{"account":"alice","vesting_shares":"1.000000 VESTS"}]})");
    auto unplaced = wallet::decode_entry(entry.get(), AssetTable::mainnet());
    ASSERT_TRUE(unplaced);
    auto refused = db.store.commit_batch(batch_of(*unplaced, {ref(9)}));
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("no block position"), std::string::npos);
    EXPECT_EQ(db.rows(), before);

    // The connection stays usable after a failed batch.
    ASSERT_TRUE(db.store.commit_batch(batch_of(decode_block_text(sample_block(8)), {ref(8)})));
    EXPECT_EQ(db.count(), "10");
}

TEST(IndexerStore, AwkwardTextRoundTrips) {
    Database db;
    // Tab, newline, backslash, quotes, non-ASCII and a NUL (which PostgreSQL
    // text cannot hold: it becomes U+FFFD, in the column and in the payload).
    const std::string memo = R"(a\tb\nc\\d \"q\" \u00e9\u0000z)";
    ASSERT_TRUE(db.store.commit_batch(batch_of(decode_block_text(sample_block(7, memo)), {ref(7)})));
    EXPECT_EQ(db.pg.query("SELECT DISTINCT memo = E'a\\tb\\nc\\\\d \"q\" \\u00e9\\ufffdz' FROM wallet_operation_events"
                          " WHERE op_type = 'transfer'"),
              std::vector<std::string>{"t"});
    EXPECT_EQ(db.pg.query("SELECT DISTINCT payload->'op'->'value'->>'memo' = memo FROM wallet_operation_events"
                          " WHERE op_type = 'transfer'"),
              std::vector<std::string>{"t"});
    Database other;
    ASSERT_TRUE(other.store.commit_batch(batch_of(decode_block_text(sample_block(7, memo)), {ref(7)}),
                                         store::WriteMethod::MultiRowInsert));
    EXPECT_EQ(other.rows(), db.rows());
}

TEST(IndexerStore, RewindReplacesForkedBlocksInOneTransaction) {
    Database db;
    std::vector<WalletEvent> events;
    std::vector<BlockRef> blocks;
    for (std::int64_t num = 1; num <= 10; ++num) {
        auto block = decode_block_text(sample_block(num));
        events.insert(events.end(), block.begin(), block.end());
        blocks.push_back(ref(num));
    }
    ASSERT_TRUE(db.store.commit_batch(batch_of(events, blocks, 5)));
    EXPECT_EQ(db.count(), "50");
    // Only the ids a fork check can still compare are kept.
    EXPECT_EQ(db.pg.query("SELECT min(block_num), max(block_num) FROM indexer_block_ids"), std::vector<std::string>{"6\t10"});

    // A fork at 8: blocks 9 and 10 are replaced by a chain with a different 9 and no 10 yet.
    EventStore::Batch fork = batch_of(decode_block_text(sample_block(9, "forked")), {ref(9, 'b')}, 5);
    fork.rewind_above = 8;
    ASSERT_TRUE(db.store.commit_batch(fork));
    EXPECT_EQ(db.pg.query("SELECT block_num, count(*) FROM wallet_operation_events WHERE block_num > 7 GROUP BY 1 ORDER BY 1"),
              (std::vector<std::string>{"8\t5", "9\t5"}));
    EXPECT_EQ(db.pg.query("SELECT DISTINCT memo FROM wallet_operation_events WHERE block_num = 9 AND memo IS NOT NULL"),
              std::vector<std::string>{"forked"});
    EXPECT_EQ(db.pg.query("SELECT block_num, block_id FROM indexer_block_ids ORDER BY 1"),
              (std::vector<std::string>{"6\t" + ref(6).id, "7\t" + ref(7).id, "8\t" + ref(8).id, "9\t" + ref(9, 'b').id}));
    EXPECT_EQ(db.store.checkpoint().value()->id, ref(9, 'b').id);
    EXPECT_EQ(db.store.block_ids_from(8).value(), (std::vector<BlockRef>{ref(8), ref(9, 'b')}));

    // A failing rewind batch deletes nothing.
    EventStore::Batch broken = batch_of(decode_block_text(sample_block(8)), {ref(8, 'c')}, 5);
    broken.rewind_above = 7;
    broken.events.back().block_seq.reset();
    ASSERT_FALSE(db.store.commit_batch(broken));
    EXPECT_EQ(db.count(), "45");
    EXPECT_EQ(db.store.checkpoint().value()->num, 9);
}

TEST(IndexerStore, NodeObservationsAreReadableByTheApiRole) {
    Database db;
    wallet::ChainHead head{5000000, "004c4b40", Timestamp::parse("2016-09-15T19:47:21").value(), 4999980};
    ASSERT_TRUE(db.store.record_observation(head));
    head.head_block = 5000001;
    head.last_irreversible.reset();
    ASSERT_TRUE(db.store.record_observation(head));
    auto reader = wallet::pg::connect(db.settings.db.api_url);
    ASSERT_TRUE(reader) << reader.error();
    auto seen = wallet::pg::exec(reader->get(),
                                 "SELECT head_block, last_irreversible IS NULL, observed_at > now() - interval '1 minute'"
                                 " FROM node_observation");
    ASSERT_TRUE(seen) << seen.error();
    ASSERT_EQ(PQntuples(seen->get()), 1);
    EXPECT_STREQ(PQgetvalue(seen->get(), 0, 0), "5000001");
    EXPECT_STREQ(PQgetvalue(seen->get(), 0, 1), "t");
    EXPECT_STREQ(PQgetvalue(seen->get(), 0, 2), "t");
}
