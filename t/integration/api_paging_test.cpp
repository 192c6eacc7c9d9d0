// Keyset paging: walking every page of an account with 10,000 events returns
// each event exactly once, newest first, in the same order as a direct SQL
// ordering on (timestamp, block_num, block_seq, role) — for every paged
// method, with op_types and windows, and while newer rows are being inserted.
#include <atomic>
#include <thread>

#include "support/api_support.hpp"

using namespace api_test;

namespace {

constexpr int kEvents = 10000;

class ApiPaging : public ::testing::Test {
protected:
    void SetUp() override {
        generate_events(stack.pg(), "bigwallet", kEvents, 1000);
        generate_events(stack.pg(), "neighbour", 300, 1000);  // interleaved rows of another account
        stack.set_checkpoint(9000, "2020-01-02T00:00:00Z");
        stack.start_nginx();
    }

    // block_num/block_seq/role of each row, in keyset order, straight from SQL.
    std::vector<std::string> expected(const std::string& where) {
        return stack.pg().query(
            "SELECT block_num || '/' || block_seq || '/' || role FROM wallet_operation_events "
            "WHERE account = 'bigwallet' " + where +
            " ORDER BY \"timestamp\" DESC, block_num DESC, block_seq DESC, role DESC");
    }

    // Walks every page; returns the keys in the order the API gave them.
    std::vector<std::string> walk(const std::string& method, const std::string& params_without_cursor,
                                  const std::function<void()>& after_first_page = {}) {
        std::vector<std::string> keys;
        std::string cursor;
        for (int page = 0; page < 1000; ++page) {
            std::string params = "{" + params_without_cursor;
            if (!cursor.empty()) params += R"(,"cursor":")" + cursor + "\"";
            params += "}";
            JsonPtr result = stack.result(method, params);
            json_t* items = json_object_get(result.get(), "items");
            size_t i = 0;
            json_t* e = nullptr;
            json_array_foreach(items, i, e) {
                keys.push_back(std::to_string(json_integer_value(json_object_get(e, "block_num"))) + "/" +
                               std::to_string(json_integer_value(json_object_get(e, "block_seq"))) + "/" +
                               str(e, "role"));
                EXPECT_EQ(str(e, "account"), "bigwallet");
            }
            json_t* next = json_object_get(result.get(), "next_cursor");
            if (page == 0 && after_first_page) after_first_page();
            if (json_is_null(next)) {
                return keys;
            }
            EXPECT_GT(json_array_size(items), 0u);
            cursor = json_string_value(next);
        }
        ADD_FAILURE() << "paging did not end";
        return keys;
    }

    ApiStack stack;
};

}  // namespace

TEST_F(ApiPaging, WalletHistoryEveryEventOnceInKeysetOrder) {
    auto all = expected("");
    ASSERT_GT(all.size(), static_cast<size_t>(kEvents));  // self transfers add sender rows
    EXPECT_EQ(walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":200)"), all);
    // The default page size and a limit above the maximum (clamped) page the same rows.
    EXPECT_EQ(walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":100000)"), all);
}

TEST_F(ApiPaging, OpTypeFiltersAndWindows) {
    EXPECT_EQ(walk("wallet_history.get_wallet_history",
                   R"("account":"bigwallet","limit":137,"op_types":["transfer","author_reward"])"),
              expected("AND op_type IN ('transfer', 'author_reward')"));
    EXPECT_EQ(walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":200,"op_types":["transfer"])"),
              expected("AND op_type = 'transfer'"));
    EXPECT_EQ(walk("wallet_history.get_author_rewards",
                   R"("account":"bigwallet","limit":50,"from":"2020-01-01T00:30:00Z","to":"2020-01-01T01:00:00Z")"),
              expected("AND op_type = 'author_reward' AND \"timestamp\" >= '2020-01-01T00:30:00Z' "
                       "AND \"timestamp\" < '2020-01-01T01:00:00Z'"));
    EXPECT_EQ(walk("wallet_history.get_curation_rewards", R"("account":"bigwallet","limit":200,"to":"2020-01-01T00:40:00Z")"),
              expected("AND op_type = 'curation_reward' AND \"timestamp\" < '2020-01-01T00:40:00Z'"));
    EXPECT_EQ(walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":200,"from":"2020-01-01T00:50:00")"),
              expected("AND \"timestamp\" >= '2020-01-01T00:50:00Z'"));
}

TEST_F(ApiPaging, ConcurrentInsertsOfNewerRowsDoNotDisturbAWalk) {
    auto before = expected("");
    std::atomic<bool> stop{false};
    std::thread inserter;
    int batches = 0;
    auto start_inserting = [&] {
        inserter = std::thread([&] {
            long block = 100000;
            while (!stop && batches < 200) {
                std::vector<EventRow> rows;
                for (int i = 0; i < 20; ++i) {
                    EventRow r;
                    r.block_num = block;
                    r.block_seq = i;
                    r.account = "bigwallet";
                    r.role = "receiver";
                    r.op_type = "transfer";
                    r.trx_id = "00ff";
                    r.timestamp = "2021-01-01T00:00:00Z";
                    r.amount = "1.000";
                    r.symbol = "HIVE";
                    rows.push_back(r);
                }
                ++block;
                insert_events(stack.settings(), rows);
                ++batches;
            }
        });
    };
    auto walked = walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":200)", start_inserting);
    stop = true;
    inserter.join();
    EXPECT_GT(batches, 0);
    EXPECT_EQ(walked, before);
    // And the new rows are there for a walk that starts now.
    EXPECT_EQ(walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":200)"), expected(""));
}

// A primary may hold rows above indexed_block (newer rows, or a backfill
// still loading below the checkpoint, which holds indexed_block back): a
// cursor there is answered at once, never waited on as if the database were
// a standby behind it (that wait ran into the request deadline).
TEST_F(ApiPaging, RowsAboveTheIndexedBlockPageLikeAnyOther) {
    generate_events(stack.pg(), "bigwallet", 400, 100000, "2021-01-01T00:00:00Z");  // the checkpoint is 9000
    EXPECT_EQ(walk("wallet_history.get_wallet_history", R"("account":"bigwallet","limit":150)"), expected(""));
}
