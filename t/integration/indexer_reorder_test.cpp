// wallet-reorder (migration 0010): irreversible history written in block
// order is rewritten in account order. The API's answers stay byte for byte,
// one busy account's page then lies on a few heap pages instead of one per
// event, blocks above the last irreversible block are never touched, a step
// killed in the middle leaves the table as it was, and running again
// finishes the same table.
#include <cstring>
#include <functional>

#include "support/api_support.hpp"

using namespace api_test;

namespace {

constexpr int kBlocks = 300;
constexpr int kEventsPerBlock = 30;
constexpr int kIrreversible = 250;

// Blocks 1..kBlocks in block order (one INSERT, rows in block order): in
// every block "whale" receives a transfer, 29 other events go to 200 other
// accounts (transfers and curation rewards).
std::string block_order_rows_sql() {
    return "INSERT INTO wallet_operation_events (block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq,"
           " op_type, trx_id, \"timestamp\", amount, symbol, vesting_amount, vesting_symbol, counterparty, memo, author,"
           " permlink, assets, payload)"
           " SELECT b, i, 0, CASE WHEN r THEN 1 ELSE 0 END,"
           "  CASE WHEN i = 0 THEN 'whale' ELSE 'acct-' || ((b * 31 + i) % 200) END,"
           "  CASE WHEN r THEN 'curator' WHEN i = 0 THEN 'receiver' ELSE 'sender' END, i,"
           "  CASE WHEN r THEN 'curation_reward' ELSE 'transfer' END,"
           "  CASE WHEN NOT r THEN md5(b || '/' || i) || '00000000' END,"
           "  '2020-01-01T00:00:00Z'::timestamptz + b * interval '3 seconds',"
           "  CASE WHEN NOT r THEN (b * 7 + i)::numeric / 1000 END, CASE WHEN NOT r THEN 'HIVE' END,"
           "  CASE WHEN r THEN (b * 13 + i)::numeric / 1000000 END, CASE WHEN r THEN 'VESTS' END,"
           "  CASE WHEN NOT r THEN 'acct-' || (b % 200) END,"
           "  CASE WHEN NOT r THEN 'payment ' || b || '/' || i || ' for the services of the month, with thanks from the whole team; see the invoice attached to the mail' END,"
           "  CASE WHEN r THEN 'author-' || (i % 7) END, CASE WHEN r THEN 'a-post-with-a-long-permlink-' || b END,"
           "  '[]'::jsonb, '{}'::jsonb"
           " FROM generate_series(1, " + std::to_string(kBlocks) + ") AS b,"
           "      generate_series(0, " + std::to_string(kEventsPerBlock - 1) + ") AS i,"
           "      LATERAL (SELECT i > 0 AND i % 2 = 0 AS r) AS kind"
           " ORDER BY b, i";
}

class IndexerReorder : public ::testing::Test {
protected:
    void SetUp() override {
        pg().query(block_order_rows_sql());
        stack.set_checkpoint(kBlocks, "2020-01-01T00:15:00Z");
        // What the indexer last saw the node report: blocks above it may still change.
        pg().query("INSERT INTO node_observation (head_block, head_block_time, last_irreversible, observed_at)"
                   " VALUES (" + std::to_string(kBlocks + 20) + ", now(), " + std::to_string(kIrreversible) + ", now())");
        pg().query("VACUUM ANALYZE wallet_events");
        stack.start_nginx();
    }

    harness::PostgresServer& pg() { return stack.pg(); }

    // Heap pages holding the newest 50 events of the account at or below a block.
    int heap_pages_of_page(const std::string& account, int below) {
        return std::stoi(pg().query(
            "SELECT count(DISTINCT (ctid::text::point)[0]) FROM (SELECT e.ctid FROM wallet_events e"
            " JOIN wallet_accounts a ON a.id = e.account_id WHERE a.name = '" + account + "' AND e.block_num <= " +
            std::to_string(below) + " ORDER BY e.block_num DESC LIMIT 50) p").at(0));
    }

    // Every row's columns (ctid order aside), and the reward sums.
    std::vector<std::string> table() {
        auto rows = pg().query("SELECT e::text FROM wallet_events e ORDER BY account_id, wide, block_num, block_seq, role");
        for (const auto& sums : {"wallet_reward_daily", "wallet_reward_liquid_daily"}) {
            auto more = pg().query(std::string("SELECT s::text FROM ") + sums + " s ORDER BY 1");
            rows.insert(rows.end(), more.begin(), more.end());
        }
        return rows;
    }

    // Where (ctid) and by whom (xmin) each reversible row was written.
    std::vector<std::string> reversible_rows() {
        return pg().query("SELECT ctid::text || ' ' || xmin::text FROM wallet_events WHERE block_num > " +
                          std::to_string(kIrreversible) + " ORDER BY ctid");
    }

    // The API's answers: every page of a few accounts (the busy one, 50 at a
    // time, and its transfers alone), reward totals, status.
    std::vector<std::string> answers() {
        std::vector<std::string> out;
        for (const std::string account : {"whale", "acct-7", "acct-150"}) {
            std::string cursor;
            for (int page = 0; page < 100; ++page) {
                std::string params = R"({"account":")" + account + R"(","limit":50)";
                if (!cursor.empty()) params += R"(,"cursor":")" + cursor + "\"";
                JsonPtr result = stack.result("wallet_history.get_wallet_history", params + "}");
                out.push_back(dump(result.get()));
                json_t* next = json_object_get(result.get(), "next_cursor");
                if (!json_is_string(next)) break;
                cursor = json_string_value(next);
            }
            out.push_back(dump(stack.result("wallet_history.get_wallet_history",
                                            R"({"account":")" + account + R"(","limit":7,"op_types":["curation_reward"]})").get()));
            out.push_back(dump(stack.result("wallet_history.get_reward_totals", R"({"account":")" + account + R"("})").get()));
        }
        return out;
    }

    // Sends `sql` (a step or a merge's group) on a connection of its own and
    // kills it in the middle: once it deleted and re-inserted its rows, its
    // reward triggers wait for the sums' table, held here; `meanwhile` runs
    // then, and the statement's backend is terminated.
    void kill_in_the_middle(const std::string& sql, const std::function<void()>& meanwhile) {
        auto holder = wallet::pg::connect(stack.settings().db.indexer_url);
        ASSERT_TRUE(holder) << holder.error();
        ASSERT_TRUE(wallet::pg::exec(holder->get(), "BEGIN; LOCK TABLE wallet_reward_daily IN EXCLUSIVE MODE"));
        auto stepper = wallet::pg::connect(stack.settings().db.indexer_url);
        ASSERT_TRUE(stepper) << stepper.error();
        ASSERT_EQ(PQsendQuery(stepper->get(), sql.c_str()), 1);
        const std::string pid = std::to_string(PQbackendPID(stepper->get()));
        ASSERT_TRUE(harness::wait_until([&] {
            return pg().query("SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid +
                              " AND wait_event_type = 'Lock'").at(0) == "1";
        })) << "the statement never reached the reward sums";
        meanwhile();
        EXPECT_EQ(pg().query("SELECT pg_terminate_backend(" + pid + ")"), std::vector<std::string>{"t"});
        ASSERT_TRUE(wallet::pg::exec(holder->get(), "ROLLBACK"));
    }

    harness::CommandResult run_reorder(const std::vector<std::string>& args) {
        std::vector<std::string> argv{(harness::binary_dir() / "reorder" / "wallet-reorder").string()};
        argv.insert(argv.end(), args.begin(), args.end());
        auto env = pg().env();
        env.erase("DB_PASSWORD");
        return harness::run_command(argv, env);
    }

    ApiStack stack;
};

}  // namespace

TEST_F(IndexerReorder, AccountOrderKeepsAnswersBoundsPagesAndSparesReversibleBlocks) {
    const auto answers_before = answers();
    const auto table_before = table();
    const auto reversible_before = reversible_rows();
    const int pages_before = heap_pages_of_page("whale", kIrreversible);
    EXPECT_GE(pages_before, 30) << "block order: a heap page per one or two events";

    // Steps of 100 blocks: 1..100, 101..200, 201..250 (the last irreversible block).
    auto run = run_reorder({"--step-blocks=100"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(pg().query("SELECT ordered_through FROM wallet_reorder"), std::vector<std::string>{std::to_string(kIrreversible)});
    EXPECT_NE(run.output.find("blocks 201..250"), std::string::npos) << run.output;

    EXPECT_EQ(answers(), answers_before);
    EXPECT_EQ(table(), table_before);
    EXPECT_EQ(reversible_rows(), reversible_before) << "a block above the last irreversible one was rewritten";
    // The page's 50 events span one step's range (or two): a few pages each.
    const int pages_after = heap_pages_of_page("whale", kIrreversible);
    EXPECT_LE(pages_after, 4) << "before: " << pages_before;

    // Nothing more is irreversible: a second run moves nothing.
    const auto placed = pg().query("SELECT ctid::text || ' ' || xmin::text FROM wallet_events ORDER BY ctid");
    run = run_reorder({"--step-blocks=100"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("caught up"), std::string::npos) << run.output;
    EXPECT_EQ(pg().query("SELECT ctid::text || ' ' || xmin::text FROM wallet_events ORDER BY ctid"), placed);

    // The node finalizes the rest: the next run orders it too.
    pg().query("UPDATE node_observation SET last_irreversible = " + std::to_string(kBlocks + 10));
    run = run_reorder({"--step-blocks=100"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(pg().query("SELECT ordered_through FROM wallet_reorder"), std::vector<std::string>{std::to_string(kBlocks)});
    EXPECT_LE(heap_pages_of_page("whale", kBlocks), 4);
    EXPECT_EQ(answers(), answers_before);
}

TEST_F(IndexerReorder, KilledStepLeavesTheTableAndRerunFinishesIt) {
    const auto answers_before = answers();
    const auto table_before = table();

    // Its deletes and inserts are done, uncommitted: readers see the old rows.
    kill_in_the_middle("SELECT * FROM wallet_reorder_step(1000)", [&] { EXPECT_EQ(answers(), answers_before); });

    EXPECT_EQ(table(), table_before);
    EXPECT_EQ(pg().query("SELECT ordered_through FROM wallet_reorder"), std::vector<std::string>{"0"});

    auto run = run_reorder({"--step-blocks=1000"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(pg().query("SELECT ordered_through FROM wallet_reorder"), std::vector<std::string>{std::to_string(kIrreversible)});
    EXPECT_EQ(table(), table_before);
    EXPECT_EQ(answers(), answers_before);
    EXPECT_LE(heap_pages_of_page("whale", kIrreversible), 3);
}

TEST_F(IndexerReorder, MergedRangesPutASparseAccountsPageOnAFewPages) {
    const auto answers_before = answers();
    const auto table_before = table();
    // Ranges of 10 blocks: an account with an event every few blocks has one
    // or two in each, on a page of its own.
    auto run = run_reorder({"--step-blocks=10", "--no-merge"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const int pages_in_steps = heap_pages_of_page("acct-7", 200);
    EXPECT_GE(pages_in_steps, 10);
    EXPECT_LE(heap_pages_of_page("whale", 200), 10) << "a busy account's page spans 5 ranges";

    // Blocks 1..200 merged into one range (201..250 wait for the next 200).
    run = run_reorder({"--step-blocks=10", "--merge-blocks=200"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(pg().query("SELECT ordered_through, merged_through FROM wallet_reorder"),
              std::vector<std::string>{std::to_string(kIrreversible) + "\t200"});
    EXPECT_LE(heap_pages_of_page("acct-7", 200), 2) << "in steps: " << pages_in_steps;
    EXPECT_EQ(table(), table_before);
    EXPECT_EQ(answers(), answers_before);

    // Nothing more to merge: nothing moves.
    const auto placed = pg().query("SELECT ctid::text || ' ' || xmin::text FROM wallet_events ORDER BY ctid");
    run = run_reorder({"--step-blocks=10", "--merge-blocks=200"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(pg().query("SELECT ctid::text || ' ' || xmin::text FROM wallet_events ORDER BY ctid"), placed);
}

// A merge rewrites its range a group of accounts per transaction (migration
// 0016), each of about --merge-rows events. Killed in the middle of a group,
// it leaves the groups before it and the table as they were; run again, it
// goes on with the next group and ends as a merge in one transaction would:
// merged_through up, the same rows and answers, each account's month on a
// few pages.
TEST_F(IndexerReorder, KilledMergeResumesToTheSameEndState) {
    const auto answers_before = answers();
    const auto table_before = table();
    auto run = run_reorder({"--step-blocks=10", "--no-merge"});
    ASSERT_EQ(run.exit_code, 0) << run.output;

    // Blocks 1..200 hold 6,000 events: three groups of about 600, then stop.
    run = run_reorder({"--step-blocks=10", "--merge-blocks=200", "--merge-rows=600", "--max-steps=3"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    std::size_t groups = 0;
    for (std::size_t at = run.output.find("merge: blocks 1..200, "); at != std::string::npos;
         at = run.output.find("merge: blocks 1..200, ", at + 1)) {
        const long moved = std::stol(run.output.substr(at + std::strlen("merge: blocks 1..200, ")));
        // A group ends after the account that reaches the bound: the whale
        // has 200 events in these blocks.
        EXPECT_GE(moved, 1);
        EXPECT_LE(moved, 600 + 200) << run.output;
        ++groups;
    }
    EXPECT_EQ(groups, 3u) << run.output;
    const auto in_progress = pg().query("SELECT merged_through, merge_last_block, merge_account_through IS NOT NULL"
                                        " FROM wallet_reorder");
    EXPECT_EQ(in_progress, std::vector<std::string>{"0\t200\tt"});
    EXPECT_EQ(table(), table_before);

    // The fourth group, killed in the middle.
    kill_in_the_middle("SELECT * FROM wallet_reorder_step(200, true, 600)",
                       [&] { EXPECT_EQ(answers(), answers_before); });
    EXPECT_EQ(pg().query("SELECT merged_through, merge_last_block, merge_account_through IS NOT NULL"
                         " FROM wallet_reorder"),
              in_progress);
    EXPECT_EQ(table(), table_before);

    // Resumed (with another --merge-blocks: the merge in progress keeps its range).
    run = run_reorder({"--step-blocks=10", "--merge-blocks=250", "--merge-rows=600"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(pg().query("SELECT ordered_through, merged_through, merge_last_block IS NULL,"
                         " merge_account_through IS NULL FROM wallet_reorder"),
              std::vector<std::string>{std::to_string(kIrreversible) + "\t200\tt\tt"});
    EXPECT_EQ(pg().query("SELECT count(*) FROM wallet_reorder_merge_groups"), std::vector<std::string>{"0"});
    EXPECT_EQ(table(), table_before);
    EXPECT_EQ(answers(), answers_before);
    EXPECT_LE(heap_pages_of_page("acct-7", 200), 2);
    EXPECT_LE(heap_pages_of_page("whale", 200), 3);
}
