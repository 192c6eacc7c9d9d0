// The compact store (migration 0004) upgrades a populated store of the
// previous layout in place, and the API answers every request on it byte for
// byte as the previous release answered on the store before the upgrade.
//
// The store: real mainnet blocks of the fixtures (every event the decoder
// makes of them, through the simulator) and a synthetic account with a deep
// history and self transfers, written with the previous layout's SQL into a
// store at schema version 3. The requests: every account's history walked
// page by page with cursors, op type filters, windows, reward listings and
// totals. t/fixtures/api/previous_release_answers.txt holds the SHA-256 and
// length of each answer of the previous release (4c2556f), recorded by this
// same test built in that tree with WALLET_RECORD_PREVIOUS_RELEASE=<file>
// (there, the store is never upgraded: version 3 is its latest).
#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "harness/harness.hpp"
#include "harness/node_sim.hpp"
#include "support/api_support.hpp"
#include "support/fixture_entries.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"
#include "wallet/migrations.hpp"
#include "wallet/node_client.hpp"

namespace {

using namespace api_test;
namespace fs = std::filesystem;

constexpr int kPreviousSchemaVersion = 3;

std::string hex_sha256(const std::string& text) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < size; ++i) {
        out += kHex[digest[i] >> 4];
        out += kHex[digest[i] & 15];
    }
    return out;
}

fs::path answers_file() { return fs::path(WALLET_SOURCE_DIR) / "t/fixtures/api/previous_release_answers.txt"; }

// Block numbers of the operation entries in the fixtures of one source.
std::set<long> fixture_blocks(const std::string& source) {
    std::set<long> blocks;
    fixture_test::for_each_history_entry(fs::path(WALLET_HIVE_FIXTURES_DIR) / source, [&](json_t* entry) {
        json_t* block = json_object_get(entry, "block");
        if (json_is_integer(block)) blocks.insert(static_cast<long>(json_integer_value(block)));
    });
    return blocks;
}

// An event as the previous layout's writer stored it.
EventRow row_of(const wallet::WalletEvent& e) {
    EventRow row;
    row.block_num = static_cast<long>(e.block_num);
    row.trx_in_block = e.trx_in_block;
    row.op_in_trx = static_cast<int>(e.op_in_trx);
    row.virtual_op = static_cast<int>(e.virtual_op.value_or(0));
    row.account = e.account;
    row.role = std::string(wallet::role_name(e.role));
    row.block_seq = static_cast<int>(e.block_seq.value_or(0));
    row.op_type = e.op_type;
    row.trx_id = e.trx_id;
    row.timestamp = e.timestamp.to_iso_z();
    if (e.amount) {
        row.amount = e.amount->amount_string().value();
        row.symbol = e.amount->symbol;
    }
    if (e.vesting) {
        row.vesting_amount = e.vesting->amount_string().value();
        row.vesting_symbol = e.vesting->symbol;
    }
    row.counterparty = e.counterparty;
    row.memo = e.memo;
    row.author = e.author;
    row.permlink = e.permlink;
    row.assets = wallet::json::dump_compact(wallet::assets_to_json(e.assets).get());
    row.payload = e.payload ? *e.payload : std::string("{}");
    return row;
}

class StoreUpgrade : public ::testing::Test {
protected:
    StoreUpgrade() : stack(kPreviousSchemaVersion) {}

    // Real blocks, every event of them; the accounts that have events.
    std::set<std::string> store_real_blocks() {
        harness::NodeSimulator sim(harness::NodeSimulator::real_chain_args());
        wallet::NodeClientOptions options;
        options.url = sim.url();
        auto node = wallet::NodeClient::create(options);
        EXPECT_TRUE(node) << node.error();
        std::set<std::string> accounts;
        std::vector<EventRow> rows;
        for (const std::string source : {"hived-mainnet-5m", "hive-mainnet-2026-denser", "steem-mainnet-17m"}) {
            for (const long block : fixture_blocks(source)) {
                auto ops = node.value().get_ops_in_blocks(block, block, wallet::OpsForm::AccountHistory);
                EXPECT_TRUE(ops) << ops.error();
                if (!ops || ops->empty()) continue;
                auto events = wallet::decode_block_entries(ops->front().entries, wallet::AssetTable::mainnet());
                EXPECT_TRUE(events) << events.error();
                if (!events) continue;
                for (const auto& event : *events) {
                    // The previous release stored spec 000's types only.
                    if (!wallet::is_spec_wallet_operation(event.op_type)) continue;
                    accounts.insert(event.account);
                    rows.push_back(row_of(event));
                }
                if (rows.size() >= 500) {
                    insert_events(stack.settings(), rows);
                    rows.clear();
                }
            }
        }
        if (!rows.empty()) insert_events(stack.settings(), rows);
        return accounts;
    }

    // Every request of the comparison, in a fixed order; a history is
    // walked page by page with the cursors the answers give.
    std::vector<std::pair<std::string, std::string>> answers(const std::set<std::string>& accounts) {
        std::vector<std::pair<std::string, std::string>> out;
        auto ask = [&](const std::string& method, const std::string& params) {
            const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.)" + method +
                                     R"(","params":)" + params + "}";
            auto response = stack.post(body);
            out.emplace_back(body, std::to_string(response.status) + " " + response.body);
            return response.body;
        };
        auto walk = [&](const std::string& method, const std::string& params_head, int max_pages) {
            std::string cursor;
            for (int page = 0; page < max_pages; ++page) {
                std::string params = "{" + params_head + (cursor.empty() ? "" : R"(,"cursor":")" + cursor + "\"") + "}";
                JsonPtr answer = parse_json(ask(method, params));
                json_t* next = json_object_get(json_object_get(answer.get(), "result"), "next_cursor");
                if (!json_is_string(next)) return;
                cursor = json_string_value(next);
            }
        };
        for (const auto& account : accounts) {
            const std::string who = R"("account":")" + account + "\"";
            walk("get_wallet_history", who + R"(,"limit":4)", 50);
            walk("get_wallet_history", who + R"(,"limit":3,"op_types":["transfer","curation_reward","author_reward"])", 5);
            walk("get_wallet_history", who + R"(,"limit":2,"from":"2016-09-01T00:00:00Z","to":"2017-09-01T00:00:00Z")", 5);
            walk("get_author_rewards", who + R"(,"limit":5)", 3);
            walk("get_curation_rewards", who + R"(,"limit":5)", 3);
            ask("get_reward_totals", "{" + who + "}");
            ask("get_reward_totals", "{" + who + R"(,"from":"2016-08-31T12:34:56Z","to":"2026-01-01T00:00:01Z"})");
        }
        return out;
    }

    ApiStack stack;
};

TEST_F(StoreUpgrade, ApiAnswersByteForByteAsThePreviousReleaseAfterTheUpgrade) {
    const char* record = std::getenv("WALLET_RECORD_PREVIOUS_RELEASE");
    std::set<std::string> accounts = store_real_blocks();
    ASSERT_GT(accounts.size(), 100u);
    generate_events(stack.pg(), "deep.history", 3000, 7000000, "2021-03-04T05:06:07Z");
    accounts.insert("deep.history");
    accounts.insert("nobody.here");
    stack.set_checkpoint(80000000, "2026-01-01T00:00:00Z");

    if (record == nullptr) {
        // Rule 8 across the upgrade: the payloads as stored before it.
        stack.pg().query("CREATE TABLE payload_before AS SELECT block_num, trx_in_block, op_in_trx, virtual_op, account,"
                         " role, payload FROM wallet_operation_events");
        // The upgrade, as the daemons apply it when they start.
        auto writer = wallet::pg::connect(stack.settings().db.indexer_url);
        ASSERT_TRUE(writer) << writer.error();
        auto version = wallet::apply_migrations(writer->get());
        ASSERT_TRUE(version) << version.error();
        ASSERT_GT(*version, kPreviousSchemaVersion);
        // Every payload back, jsonb-equal (migration 0009 keeps operations
        // without the envelope members their rows hold); most were stripped.
        EXPECT_EQ(stack.pg().query("SELECT count(*), count(*) FILTER (WHERE e.payload IS DISTINCT FROM b.payload)"
                                   "  FROM payload_before b LEFT JOIN wallet_operation_events e USING"
                                   "  (block_num, trx_in_block, op_in_trx, virtual_op, account, role)"),
                  std::vector<std::string>{stack.pg().query("SELECT count(*) FROM wallet_events").at(0) + "\t0"});
        EXPECT_GT(std::stol(stack.pg().query("SELECT count(*) FROM wallet_blocks b CROSS JOIN LATERAL json_each(b.ops) o"
                                             " WHERE json_array_length(o.value) = 3").at(0)),
                  100);
        stack.pg().query("DROP TABLE payload_before");
    }
    stack.start_nginx({{"WALLET_API_CURSOR_SECRET", "store-upgrade-test-cursor-secret"}, {"WALLET_API_MAX_RANGE_DAYS", "4000"}});
    const auto answered = answers(accounts);
    if (record == nullptr) {
        // Loaded by the previous release's decoder (version 1): the indexer's
        // blocks, from the lowest stored one to the checkpoint, are outdated.
        JsonPtr status = stack.result("wallet_history.get_status");
        EXPECT_EQ(json_integer_value(json_object_get(status.get(), "indexed_block")), 80000000);
        EXPECT_EQ(dump(json_object_get(status.get(), "decoder")),
                  R"({"current_version":2,"outdated":{"from":)" + stack.pg().query("SELECT min(block_num) FROM wallet_blocks").at(0) +
                      R"(,"to":80000000},"up_to_date":false})");
    }

    if (record != nullptr) {
        std::ofstream out(record);
        for (const auto& [request, answer] : answered) {
            out << hex_sha256(answer) << ' ' << answer.size() << ' ' << request << '\n';
        }
        GTEST_SKIP() << "recorded " << answered.size() << " answers to " << record;
    }
    std::ifstream in(answers_file());
    ASSERT_TRUE(in) << "missing " << answers_file();
    std::size_t line_number = 0;
    std::string line;
    for (const auto& [request, answer] : answered) {
        ASSERT_TRUE(std::getline(in, line)) << "fewer recorded answers than requests";
        ++line_number;
        std::istringstream fields(line);
        std::string digest, size;
        fields >> digest >> size;
        const std::string recorded_request = line.substr(digest.size() + size.size() + 2);
        ASSERT_EQ(recorded_request, request) << "line " << line_number;
        EXPECT_EQ(digest + " " + size, hex_sha256(answer) + " " + std::to_string(answer.size()))
            << "line " << line_number << ": " << request << "\nanswered now: " << answer.substr(0, 3000);
    }
    EXPECT_FALSE(std::getline(in, line)) << "more recorded answers than requests";
    EXPECT_GT(line_number, 1000u);
}

}  // namespace
