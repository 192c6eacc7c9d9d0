// The spec's fallback rule, checked on the real-data chain (the simulator
// serving every mainnet operation of t/fixtures/hive): for each account,
// the events indexed from its blocks (get_ops_in_block -> decoder -> store ->
// table) equal, row for row, the events of its get_account_history mapped
// through the same decoder, on every field but block_seq and virtual_op
// (decisions.md section 1).
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "indexer_support.hpp"
#include "support/fixture_entries.hpp"
#include "wallet/decimal.hpp"

using namespace indexer_test;

namespace {

// The accounts of every wallet operation of the mainnet fixture files, and
// the operation types those give events for.
struct FixtureWalletOps {
    std::set<std::string> accounts;
    std::set<std::string> types;
};

FixtureWalletOps fixture_wallet_ops() {
    FixtureWalletOps found;
    fixture_test::for_each_history_entry(fixtures_dir() / "hived-mainnet-5m", [&](json_t* entry) {
        if (auto events = wallet::decode_entry(entry, wallet::AssetTable::mainnet())) {
            for (const auto& event : *events) {
                found.accounts.insert(event.account);
                found.types.insert(event.op_type);
            }
        }
    });
    return found;
}

// An amount column's text ("1.372000") and an event's amount compared as
// exact decimals at NUMERIC(30,6)'s scale.
std::string at_scale_6(const std::string& text) {
    if (text == "NULL") return text;
    auto value = wallet::Decimal::parse(text);
    if (!value) return "bad:" + text;
    auto rescaled = value->rescaled(6);
    return rescaled ? rescaled->to_string(6).value() : "bad:" + text;
}

std::string canonical_json(const std::string& text) {
    auto parsed = wallet::json::parse(text);
    if (!parsed) return "bad:" + text;
    wallet::MallocPtr<char> dumped(json_dumps(parsed->get(), JSON_COMPACT | JSON_SORT_KEYS));
    return dumped.get();
}

// One event as compared: every field but block_seq and virtual_op.
std::string comparable(std::vector<std::string> fields) {
    std::string out;
    for (const auto& field : fields) out += field + "|";
    return out;
}

std::string comparable_event(const wallet::WalletEvent& e) {
    auto amount = [](const std::optional<wallet::Asset>& asset) {
        return asset ? at_scale_6(asset->amount_string().value()) : std::string("NULL");
    };
    return comparable({std::to_string(e.block_num), std::to_string(e.trx_in_block), std::to_string(e.op_in_trx), e.account,
                       std::string(wallet::role_name(e.role)), e.op_type, e.trx_id.value_or("NULL"), e.timestamp.to_iso_z(),
                       amount(e.amount), e.amount ? e.amount->symbol : "NULL", amount(e.vesting),
                       e.vesting ? e.vesting->symbol : "NULL", e.counterparty.value_or("NULL"), e.memo.value_or("NULL"),
                       e.author.value_or("NULL"), e.permlink.value_or("NULL"),
                       canonical_json(wallet::json::dump_compact(wallet::assets_to_json(e.assets).get()))});
}

}  // namespace

TEST(IndexerDifferential, IndexedEventsEqualTheMappedAccountHistory) {
    Simulator sim({"--fixtures", fixtures_dir().string(), "--block-interval-ms", "0"});
    wallet::NodeClientOptions options;
    options.url = sim.url();
    auto client = wallet::NodeClient::create(options);
    ASSERT_TRUE(client) << client.error();
    wallet::NodeClient& node = client.value();

    // Each account's history, mapped without block context (the fallback).
    std::map<std::string, std::vector<std::string>> mapped;
    std::map<std::string, std::size_t> mapped_by_type;
    std::set<std::int64_t> blocks;
    const FixtureWalletOps fixture = fixture_wallet_ops();
    for (const auto& account : fixture.accounts) {
        std::int64_t start = -1;
        while (true) {
            const std::int64_t limit = start < 0 ? 1000 : std::min<std::int64_t>(1000, start + 1);
            auto history = node.call("condenser_api.get_account_history",
                                     wallet::json_own(json_pack("[s, I, I]", account.c_str(), static_cast<json_int_t>(start),
                                                                static_cast<json_int_t>(limit))));
            ASSERT_TRUE(history) << account << ": " << history.error();
            json_t* items = history->get();
            ASSERT_TRUE(json_is_array(items));
            for (std::size_t i = 0; i < json_array_size(items); ++i) {
                json_t* entry = json_array_get(json_array_get(items, i), 1);
                blocks.insert(json_integer_value(json_object_get(entry, "block")));
                auto events = wallet::decode_entry(entry, wallet::AssetTable::mainnet());
                ASSERT_TRUE(events) << account << ": " << events.error();
                for (const auto& event : *events) {
                    if (event.account != account) continue;
                    mapped[account].push_back(comparable_event(event));
                    ++mapped_by_type[event.op_type];
                }
            }
            if (json_array_size(items) == 0) break;
            const std::int64_t first_seq = json_integer_value(json_array_get(json_array_get(items, 0), 0));
            if (first_seq == 0) break;
            start = first_seq - 1;
        }
    }
    ASSERT_GT(mapped.size(), 100u);

    // The same accounts' events indexed from their blocks, through the store.
    PostgresServer pg;
    auto settings = pg.provision("differential");
    auto store = wallet::EventStore::connect(settings.db.indexer_url);
    ASSERT_TRUE(store) << store.error();
    std::vector<wallet::WalletEvent> indexed;
    for (const std::int64_t block : blocks) {
        auto ops = node.get_ops_in_blocks(block, block, wallet::OpsForm::AccountHistory);
        ASSERT_TRUE(ops) << ops.error();
        auto events = wallet::decode_block_entries(ops->front().entries, wallet::AssetTable::mainnet());
        ASSERT_TRUE(events) << events.error();
        for (auto& event : *events) indexed.push_back(std::move(event));
    }
    auto tx = wallet::pg::Transaction::begin(store.value().connection());
    ASSERT_TRUE(tx);
    auto written = wallet::store::insert_events(store.value().connection(), indexed);
    ASSERT_TRUE(written) << written.error();
    ASSERT_TRUE(tx.value().commit());

    std::size_t compared = 0;
    for (auto& [account, expected] : mapped) {
        // One text per row, columns split by the unit separator (memos may hold tabs).
        const auto rows = pg.query(
            "SELECT concat_ws(chr(31), block_num, trx_in_block, op_in_trx, account, role, op_type, coalesce(trx_id, 'NULL'),"
            " to_char(\"timestamp\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), coalesce(amount::text, 'NULL'),"
            " coalesce(symbol, 'NULL'), coalesce(vesting_amount::text, 'NULL'), coalesce(vesting_symbol, 'NULL'),"
            " coalesce(counterparty, 'NULL'), coalesce(memo, 'NULL'), coalesce(author, 'NULL'), coalesce(permlink, 'NULL'),"
            " assets::text) FROM wallet_operation_events WHERE account = " +
                wallet::pg::quote_literal(store.value().connection(), account),
            "differential");
        std::vector<std::string> actual;
        for (const auto& row : rows) {
            std::vector<std::string> fields;
            std::size_t from = 0;
            while (true) {
                const auto separator = row.find('\x1f', from);
                fields.push_back(row.substr(from, separator == std::string::npos ? std::string::npos : separator - from));
                if (separator == std::string::npos) break;
                from = separator + 1;
            }
            ASSERT_EQ(fields.size(), 17u);
            fields[8] = at_scale_6(fields[8]);
            fields[10] = at_scale_6(fields[10]);
            fields[16] = canonical_json(fields[16]);
            actual.push_back(comparable(fields));
        }
        std::sort(actual.begin(), actual.end());
        std::sort(expected.begin(), expected.end());
        EXPECT_EQ(actual, expected) << account;
        compared += expected.size();
    }
    // Every operation type that gives events in the mainnet fixtures (the
    // spec's and the other balance-moving ones) is among the compared rows.
    for (const auto& type : fixture.types) EXPECT_GT(mapped_by_type[type], 0u) << type;
    for (const char* type : {"producer_reward", "fill_order", "limit_order_create", "account_created", "pow_reward",
                             "transfer_to_vesting_completed", "author_reward", "curation_reward", "transfer"}) {
        EXPECT_EQ(fixture.types.count(type), 1u) << type;
    }
    std::cout << "compared " << compared << " events of " << mapped.size() << " accounts over " << blocks.size() << " blocks"
              << std::endl;
    EXPECT_GT(compared, 1000u);
}
