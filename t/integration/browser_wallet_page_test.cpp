// The wallet page of the demo (issue 30, point 2) in a real browser: Debian's
// Chromium, headless, driven by playwright-core (t/browser/wallet_page.js),
// against the demo's own nginx configuration (scripts/render-demo-nginx: the
// router with the page on /wallet/ and the wallet_history API), PostgreSQL
// filled by the real wallet-indexer from the node simulator's real-data chain,
// and Redis. Every row, total and message the page shows is compared with what
// the API answers the same request, through the same router. A second site,
// on a store of the simulator's synthetic chain from block 1, is where the
// balances answer: its panel and chart are compared with get_balances and
// get_balance_history.
//
// The stack and the browser start once for all the tests of this program (one
// ctest test, label `browser`); each test loads the page afresh (a desktop or a phone tab) and
// saves a screenshot in <build>/t/browser/screenshots/WalletPage/<test>.png.
// Without Chromium, Node.js or the pinned npm package, the tests are skipped
// and say why; under CI=true they fail.
#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

#include "indexer_support.hpp"
#include "support/api_support.hpp"
#include "support/balances_support.hpp"
#include "support/browser_support.hpp"
#include "synthetic_chain.hpp"
#include "wallet/balance_change.hpp"
#include "wallet/timestamp.hpp"

namespace {

using namespace harness;
using api_test::dump;
using api_test::parse_json;
using api_test::str;
using wallet::JsonPtr;

// camilla's busiest stretch of the real-data chain, narrowed to the blocks
// the tests need: from her first event past 50 (three pages of the page's
// default 25) to her last, 54 wallet events (six author rewards, the rest
// curation rewards) from 2016-09-12 01:11 to 09-14 09:54, which the windows
// of the totals cut. Indexed, then the indexer stops: the pages stay still.
constexpr std::int64_t kFirstBlock = 4891910;
constexpr std::int64_t kLastBlock = 4959683;
constexpr const char* kAccount = "camilla";
constexpr int kPageSize = 25;  // the page's default "Per page"

// An event as wallet.js renders a history row: time, op type, role, amount,
// counterparty, details (memo, or the post of a reward), block.
std::vector<std::string> rendered_row(json_t* event) {
    const auto field = [event](const char* key) -> std::optional<std::string> {
        json_t* value = json_object_get(event, key);
        if (json_is_string(value)) return std::string(json_string_value(value));
        return std::nullopt;
    };
    const std::string none = "—";
    std::string time = field("timestamp").value_or("");
    time = replace_all(replace_all(time, "T", " "), "Z", "");
    std::vector<std::string> amounts;
    if (auto amount = field("amount")) amounts.push_back(*amount + " " + field("symbol").value_or(""));
    if (auto vests = field("vesting_amount")) amounts.push_back(*vests + " " + field("vesting_symbol").value_or(""));
    std::string amount = amounts.empty() ? none : amounts[0];
    if (amounts.size() == 2) amount += " + " + amounts[1];
    std::string details = none;
    if (auto memo = field("memo"); memo && !memo->empty()) {
        details = *memo;
    } else if (field("author") && field("permlink")) {
        details = "@" + *field("author") + "/" + *field("permlink");
    }
    return {time, *field("op_type"), *field("role"), amount, field("counterparty").value_or(none), details,
            std::to_string(json_integer_value(json_object_get(event, "block_num")))};
}

std::vector<std::vector<std::string>> rendered_rows(json_t* page) {
    std::vector<std::vector<std::string>> rows;
    json_t* items = json_object_get(page, "items");
    for (std::size_t i = 0; i < json_array_size(items); ++i) rows.push_back(rendered_row(json_array_get(items, i)));
    return rows;
}

// Totals as wallet.js renders them: reward, count, vesting sum, liquid sums.
std::vector<std::vector<std::string>> rendered_totals(json_t* result) {
    static const std::map<std::string, std::string> names = {{"author_reward", "Author rewards"},
                                                             {"curation_reward", "Curation rewards"},
                                                             {"comment_benefactor_reward", "Beneficiary rewards"}};
    std::vector<std::vector<std::string>> rows;
    const char* type = nullptr;
    json_t* total = nullptr;
    json_object_foreach(json_object_get(result, "totals"), type, total) {
        std::string liquid;
        json_t* parts = json_object_get(total, "liquid");
        for (std::size_t i = 0; i < json_array_size(parts); ++i) {
            if (i > 0) liquid += " + ";
            liquid += str(json_array_get(parts, i), "amount") + " " + str(json_array_get(parts, i), "symbol");
        }
        rows.push_back({names.count(type) != 0 ? names.at(type) : type,
                        std::to_string(json_integer_value(json_object_get(total, "count"))),
                        str(total, "vesting_amount") + " " + str(total, "vesting_symbol"), liquid.empty() ? "—" : liquid});
    }
    return rows;
}

std::vector<std::vector<std::string>> string_table(json_t* rows) {
    std::vector<std::vector<std::string>> table;
    for (std::size_t i = 0; i < json_array_size(rows); ++i) {
        std::vector<std::string> row;
        json_t* cells = json_array_get(rows, i);
        for (std::size_t j = 0; j < json_array_size(cells); ++j) row.emplace_back(json_string_value(json_array_get(cells, j)));
        table.push_back(std::move(row));
    }
    return table;
}

std::vector<std::string> strings(json_t* list) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < json_array_size(list); ++i) out.emplace_back(json_string_value(json_array_get(list, i)));
    return out;
}

bool flag(json_t* snapshot, const char* key) { return json_is_true(json_object_get(snapshot, key)); }

// A value of get_balances as wallet.js shows it: an amount's exact decimal
// string as it is, a count as an integer.
std::string balance_text(json_t* value) {
    return json_is_string(value) ? json_string_value(value) : std::to_string(json_integer_value(value));
}

// get_balances' answer as the page's two lists of [name, value]: the main
// balances under wallet.js's names (MAIN_BALANCES), and every component.
std::vector<std::vector<std::string>> rendered_main_balances(json_t* result) {
    static const std::vector<std::pair<std::string, std::string>> main_balances = {
        {"hive_balance", "HIVE"},
        {"hbd_balance", "HBD"},
        {"vesting_shares", "Vesting shares (Hive Power)"},
        {"hive_savings", "HIVE in savings"},
        {"hbd_savings", "HBD in savings"},
        {"delegated_vests", "Delegated to others"},
        {"received_vests", "Received by delegation"}};
    std::vector<std::vector<std::string>> rows;
    json_t* balances = json_object_get(result, "balances");
    for (const auto& [field, name] : main_balances) {
        if (json_t* value = json_object_get(balances, field.c_str())) rows.push_back({name, balance_text(value)});
    }
    return rows;
}
std::vector<std::vector<std::string>> rendered_all_balances(json_t* result) {
    std::vector<std::vector<std::string>> rows;
    const char* field = nullptr;
    json_t* value = nullptr;
    json_object_foreach(json_object_get(result, "balances"), field, value) rows.push_back({field, balance_text(value)});
    return rows;
}

// A point of the chart: the change's block, the balance after it, its time.
using ChartPoint = std::tuple<std::int64_t, std::string, std::string>;

std::vector<ChartPoint> shown_points(json_t* snapshot) {
    std::vector<ChartPoint> points;
    json_t* list = json_object_get(snapshot, "chart_points");
    for (std::size_t i = 0; i < json_array_size(list); ++i) {
        json_t* point = json_array_get(list, i);
        points.emplace_back(json_integer_value(json_object_get(point, "block_num")), str(point, "balance"), str(point, "time"));
    }
    return points;
}

// One demo site: a node simulator and one nginx on the demo's configuration
// (the router with the page, the API on its own database), with its Redis.
class Site {
public:
    Site(const fs::path& dir, std::vector<std::string> simulator_args, const PostgresServer& pg, const std::string& database,
         std::map<std::string, std::string> api_env = {})
        : dir_(dir), sim_(std::move(simulator_args)), pg_(pg), database_(database), api_env_(std::move(api_env)) {}

    const NodeSimulator& sim() const { return sim_; }
    void start_nginx() {
        auto env = pg_.env(database_);
        for (const auto& [name, value] : api_env_) env[name] = value;
        nginx_ = std::make_unique<browser_test::DemoNginx>(dir_, sim_.url(), redis_.port(), env);
    }
    std::string page_url() const { return nginx_->router_url() + "wallet/"; }

    // A wallet_history call through the router, as the page makes it: the whole answer.
    JsonPtr call(const std::string& method, const std::string& params) const {
        auto response = http_post_json(nginx_->router_url(), R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.)" +
                                                                  method + R"(","params":)" + params + "}");
        JsonPtr answer = parse_json(response.body);
        return answer ? std::move(answer) : JsonPtr(json_object());
    }
    JsonPtr result(const std::string& method, const std::string& params) const {
        JsonPtr answer = call(method, params);
        json_t* result = json_object_get(answer.get(), "result");
        EXPECT_NE(result, nullptr) << method << " " << params << " -> " << dump(answer.get());
        return JsonPtr(json_incref(result != nullptr ? result : json_object()));
    }

private:
    fs::path dir_;
    NodeSimulator sim_;
    const PostgresServer& pg_;
    std::string database_;
    std::map<std::string, std::string> api_env_;
    RedisServer redis_;  // each router its own: their caches must not answer for each other
    std::unique_ptr<browser_test::DemoNginx> nginx_;
};

// The synthetic chain of the balances site (the simulator's ledger keeps it
// payable): small, so that it is indexed in about a second, and every account's
// changes of a component fit the chart's pages.
constexpr std::uint32_t kLedgerHead = 300;
constexpr std::uint32_t kLedgerAccounts = 100;
constexpr std::uint64_t kLedgerSeed = 30;
// Where the indexer stops on it by default: 2 blocks below the last irreversible one (the head's parent).
constexpr std::uint32_t kLedgerIndexed = kLedgerHead - 3;

const sim::SyntheticChain& ledger_chain() {
    static const sim::SyntheticChain instance = [] {
        sim::SyntheticOptions options;
        options.seed = kLedgerSeed;
        options.accounts = kLedgerAccounts;
        options.ledger = true;
        return sim::SyntheticChain(options);
    }();
    return instance;
}

// The demo, twice on one PostgreSQL and one browser: `fixture()`, the real-data
// chain's store from camilla's stretch (it starts at kFirstBlock, so it has no
// balances), and `ledger()`, a store of the synthetic chain from block 1 (its
// genesis balances stored as snapshots at block 0, as the balance tests and the
// operator of such a chain store them), where get_balances answers. Both
// indexed at once by the real indexer, which then stops: the pages stay still.
class Demo {
public:
    static constexpr const char* kPageModule = "wallet_page.js";
    Demo()
        : dir_("browser-wallet"),
          fixture_(dir_.path() / "fixture", indexer_test::Simulator::real_chain_args(), pg_, "wallet"),
          ledger_(dir_.path() / "ledger",
                  {"--synthetic", "--ledger", "--seed", std::to_string(kLedgerSeed), "--accounts",
                   std::to_string(kLedgerAccounts), "--length", std::to_string(kLedgerHead), "--block-interval-ms", "0"},
                  pg_, "ledger", {{"CHAIN_HARDFORKS", "genesis"}}) {
        const auto started = std::chrono::steady_clock::now();
        const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
        pg_.provision();
        pg_.provision("ledger");
        pg_.query(balances_test::genesis_runs_sql(ledger_chain()), "ledger");
        index();
        std::cout << "indexed blocks " << kFirstBlock << ".." << kLastBlock << " of the real-data chain and 1.."
                  << kLedgerIndexed << " of the synthetic one after " << seconds() << " s" << std::endl;
        fixture_.start_nginx();
        ledger_.start_nginx();
        driver_ = std::make_unique<browser_test::BrowserDriver>(kPageModule, dir_.path());
        std::cout << "demo stacks and browser ready after " << seconds() << " s" << std::endl;
    }

    PostgresServer& pg() { return pg_; }
    const Site& fixture() const { return fixture_; }
    const Site& ledger() const { return ledger_; }

    // The fixture site's calls (most tests use only it).
    JsonPtr call(const std::string& method, const std::string& params) const { return fixture_.call(method, params); }
    JsonPtr result(const std::string& method, const std::string& params) const { return fixture_.result(method, params); }

    // Runs the steps on the site's page loaded afresh; the driver's answer
    // ({"filters", "snapshots", "problems"}), the screenshot saved as <test>.png.
    JsonPtr browse(const std::string& steps, bool phone = false) const { return browse(fixture_, steps, phone); }
    JsonPtr browse(const Site& site, const std::string& steps, bool phone = false) const {
        JsonPtr answer = driver_->run(browser_test::script(site.page_url(), steps, phone), browser_test::screenshot_path());
        if (json_object_get(answer.get(), "filters") == nullptr) {
            json_object_set_new(answer.get(), "filters", json_object());
        }
        return answer;
    }

private:
    // Both stores at once (the indexer waits on the node and on PostgreSQL in turn).
    void index() {
        const auto fixture_health = free_port();
        auto fixture_env = indexer_test::indexer_env(pg_, "wallet", fixture_.sim().url(), fixture_health);
        fixture_env.erase("DB_PASSWORD");  // the indexer needs only the writer role
        fixture_env["INDEXER_START_BLOCK"] = std::to_string(kFirstBlock);
        fixture_env["INDEXER_MAX_BATCH_BLOCKS"] = "1000";  // runs of empty blocks
        // The real-data chain serves only the recorded operations: blocks without a producer_reward.
        fixture_env["CHAIN_EVERY_BLOCK_REWARDED"] = "false";
        const auto ledger_health = free_port();
        auto ledger_env = indexer_test::indexer_env(pg_, "ledger", ledger_.sim().url(), ledger_health);
        ledger_env.erase("DB_PASSWORD");
        ledger_env["CHAIN_HARDFORKS"] = "genesis";  // the synthetic chain's rules, as its API's
        indexer_test::IndexerDaemon fixture_indexer(fixture_env, fixture_health, "wallet-indexer-fixture");
        indexer_test::IndexerDaemon ledger_indexer(ledger_env, ledger_health, "wallet-indexer-ledger");
        fixture_indexer.start();
        ledger_indexer.start();
        for (auto [indexer, database, last] : {std::tuple{&fixture_indexer, "wallet", std::int64_t{kLastBlock}},
                                               std::tuple{&ledger_indexer, "ledger", std::int64_t{kLedgerIndexed}}}) {
            if (!indexer_test::wait_for_checkpoint(pg_, database, last, 180s)) {
                throw std::runtime_error(std::string("the indexer of ") + database + " did not reach block " +
                                         std::to_string(last) + ":\n" + indexer->log());
            }
            if (indexer->stop() != 0) throw std::runtime_error("the indexer did not stop cleanly:\n" + indexer->log());
            pg_.query("ANALYZE", database);
        }
    }

    PostgresServer pg_;
    TempDir dir_;
    Site fixture_, ledger_;
    std::unique_ptr<browser_test::BrowserDriver> driver_;
};

class WalletPage : public browser_test::BrowserSuite<Demo> {
protected:
    Demo& demo() { return stack(); }

    static std::vector<json_t*> snapshots(const JsonPtr& answer, std::size_t steps) {
        return browser_test::snapshots(answer, steps);
    }

    static std::string history_params(const std::string& extra = "") {
        return std::string(R"({"account":")") + kAccount + R"(","limit":)" + std::to_string(kPageSize) + extra + "}";
    }

    // The balances site (Demo::ledger): the store of the synthetic chain from
    // block 1, where get_balances and get_balance_history answer.
    const Site& ledger() { return stack().ledger(); }

    // The account the tests show: the busiest one whose whole balance history
    // the chart loads (its 6 pages of 50 look at up to 4 x 50 events each,
    // docs/wallet-history-api.md); on this chain about 600 events, 80 changes
    // of HIVE and 50 of VESTS. The very busiest, with over 1,200, would show
    // only its most recent changes.
    std::string chart_account() {
        return demo().pg().query("SELECT a.name FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id"
                                 " GROUP BY a.name HAVING count(*) <= 1200 ORDER BY count(*) DESC, a.name LIMIT 1",
                                 "ledger").at(0);
    }

    // get_balance_history of one component as wallet.js pages it for the
    // chart (pages of 50, at most 6), oldest first; all of them here.
    std::vector<ChartPoint> changes(const std::string& account, const std::string& component) {
        std::vector<ChartPoint> points;
        std::string cursor;
        for (int page = 0; page < 6; ++page) {
            std::string params = R"({"account":")" + account + R"(","component":")" + component + R"(","limit":50)";
            if (!cursor.empty()) params += R"(,"cursor":")" + cursor + "\"";
            JsonPtr result = ledger().result("get_balance_history", params + "}");
            json_t* items = json_object_get(result.get(), "items");
            for (std::size_t i = 0; i < json_array_size(items); ++i) {
                json_t* item = json_array_get(items, i);
                points.emplace_back(json_integer_value(json_object_get(item, "block_num")), str(item, "balance"),
                                    str(item, "timestamp"));
            }
            json_t* next = json_object_get(result.get(), "next_cursor");
            if (!json_is_string(next)) {
                std::reverse(points.begin(), points.end());
                return points;
            }
            cursor = json_string_value(next);
        }
        ADD_FAILURE() << account << " has more " << component << " changes than the chart loads: choose a smaller chain";
        return {};
    }

};

TEST_F(WalletPage, ShowsCamillasHistoryEqualToGetWalletHistory) {
    JsonPtr answer = demo().browse(R"([{"account":"camilla"}])");
    auto shown = snapshots(answer, 1);
    json_t* first = shown[0];

    JsonPtr page = demo().result("get_wallet_history", history_params());
    ASSERT_EQ(json_array_size(json_object_get(page.get(), "items")), static_cast<std::size_t>(kPageSize));
    EXPECT_EQ(string_table(json_object_get(first, "rows")), rendered_rows(page.get()));
    EXPECT_TRUE(json_is_null(json_object_get(first, "message"))) << dump(first);
    EXPECT_EQ(str(first, "page_number"), "Page 1");
    EXPECT_FALSE(flag(first, "newer_enabled"));
    EXPECT_TRUE(flag(first, "older_enabled"));

    // Lifetime reward totals.
    JsonPtr totals = demo().result("get_reward_totals", R"({"account":"camilla"})");
    EXPECT_EQ(string_table(json_object_get(first, "totals")), rendered_totals(totals.get()));
    EXPECT_EQ(str(first, "totals_window"), "From the first indexed block to now (UTC).");

    // This store starts at kFirstBlock, so get_balances cannot answer: the page says why, and shows no balances.
    JsonPtr balances = demo().call("get_balances", R"({"account":"camilla"})");
    const std::string why = str(json_object_get(balances.get(), "error"), "message");
    EXPECT_EQ(why, "the store's history starts at block " + std::to_string(kFirstBlock) +
                       ", not 1: a balance needs every block from 1");
    EXPECT_EQ(str(first, "balances_note"), "Balances are not available here: " + why + ".");
    EXPECT_EQ(json_array_size(json_object_get(first, "balances")), 0u);
    // Nor a balance chart: get_balance_history refuses for the same reason, so the page does not draw one.
    JsonPtr changes = demo().call("get_balance_history", R"({"account":"camilla","component":"hive_balance"})");
    EXPECT_EQ(str(json_object_get(changes.get(), "error"), "message"), why);
    EXPECT_FALSE(flag(first, "chart_visible"));
    EXPECT_EQ(json_array_size(json_object_get(first, "chart_points")), 0u);

    // The filter offers exactly the op types get_methods names.
    JsonPtr methods = demo().result("get_methods", "{}");
    json_t* filters = json_object_get(answer.get(), "filters");
    EXPECT_EQ(strings(json_object_get(filters, "default")), strings(json_object_get(json_object_get(methods.get(), "op_types"), "default")));
    EXPECT_EQ(strings(json_object_get(filters, "opt_in")), strings(json_object_get(json_object_get(methods.get(), "op_types"), "opt_in")));
    EXPECT_EQ(json_array_size(json_object_get(filters, "default")), 15u);
}

TEST_F(WalletPage, PagesOlderAndBackNewerByTheCursors) {
    JsonPtr answer = demo().browse(
        R"([{"account":"camilla"},{"click":"older"},{"click":"older"},{"click":"newer"},{"click":"newer"}])");
    auto shown = snapshots(answer, 5);

    // The API's pages, each fetched by the previous one's next_cursor.
    std::vector<JsonPtr> pages;
    pages.push_back(demo().result("get_wallet_history", history_params()));
    for (int i = 0; i < 2; ++i) {
        const std::string cursor = str(pages.back().get(), "next_cursor");
        pages.push_back(demo().result("get_wallet_history", history_params(R"(,"cursor":")" + cursor + "\"")));
    }
    ASSERT_TRUE(json_is_null(json_object_get(pages[2].get(), "next_cursor"))) << "camilla has more than three pages";
    const std::vector<std::size_t> expected_page = {0, 1, 2, 1, 0};
    for (std::size_t step = 0; step < shown.size(); ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const std::size_t index = expected_page[step];
        EXPECT_EQ(string_table(json_object_get(shown[step], "rows")), rendered_rows(pages[index].get()));
        EXPECT_EQ(str(shown[step], "page_number"), "Page " + std::to_string(index + 1));
        EXPECT_EQ(flag(shown[step], "newer_enabled"), index > 0);
        EXPECT_EQ(flag(shown[step], "older_enabled"), index < 2);
    }
}

TEST_F(WalletPage, FiltersByOpTypeDefaultAndOptIn) {
    // Two of the spec's types, then also an opt-in one (the producer rewards of a witness; camilla has none).
    JsonPtr answer = demo().browse(R"([{"account":"camilla"},{"check":["author_reward","interest"]},)"
                                   R"({"check":["producer_reward"]}])");
    auto shown = snapshots(answer, 3);

    JsonPtr two = demo().result("get_wallet_history", history_params(R"(,"op_types":["author_reward","interest"])"));
    const auto rows = string_table(json_object_get(shown[1], "rows"));
    EXPECT_EQ(rows, rendered_rows(two.get()));
    ASSERT_FALSE(rows.empty());
    std::set<std::string> types;
    for (const auto& row : rows) types.insert(row.at(1));
    EXPECT_EQ(types, (std::set<std::string>{"author_reward"}));  // no interest in this stretch
    EXPECT_EQ(str(shown[1], "page_number"), "Page 1");

    JsonPtr three = demo().result("get_wallet_history",
                                  history_params(R"(,"op_types":["author_reward","interest","producer_reward"])"));
    EXPECT_EQ(string_table(json_object_get(shown[2], "rows")), rendered_rows(three.get()));
    EXPECT_EQ(string_table(json_object_get(shown[2], "rows")), rows);
}

TEST_F(WalletPage, ShowsRewardTotalsOverAChosenWindow) {
    JsonPtr answer = demo().browse(
        R"([{"account":"camilla"},{"window":"7"},{"custom_window":["2016-09-12","2016-09-14"]}])");
    auto shown = snapshots(answer, 3);

    // "Last 7 days" ends at the chain time the index reached, not at the wall clock.
    JsonPtr status = demo().result("get_status", "{}");
    auto indexed = wallet::Timestamp::parse(str(status.get(), "indexed_time"));
    ASSERT_TRUE(indexed) << dump(status.get());
    const std::string week_ago = wallet::Timestamp::from_seconds(indexed->seconds() - 7 * 86400).value().to_iso_z();
    JsonPtr week = demo().result("get_reward_totals", R"({"account":"camilla","from":")" + week_ago + "\"}");
    EXPECT_EQ(string_table(json_object_get(shown[1], "totals")), rendered_totals(week.get()));
    EXPECT_EQ(str(shown[1], "totals_window"),
              "From " + replace_all(replace_all(week_ago, "T", " "), "Z", "") + " to now (UTC).");

    JsonPtr custom = demo().result("get_reward_totals",
                                   R"({"account":"camilla","from":"2016-09-12T00:00:00Z","to":"2016-09-14T00:00:00Z"})");
    EXPECT_EQ(string_table(json_object_get(shown[2], "totals")), rendered_totals(custom.get()));
    EXPECT_EQ(str(shown[2], "totals_window"), "From 2016-09-12 00:00:00 to 2016-09-14 00:00:00 (UTC).");
    // The windows differ: the comparison is not of two empty tables.
    EXPECT_NE(rendered_totals(custom.get()), rendered_totals(week.get()));
}

TEST_F(WalletPage, SaysWhenTheAccountIsUnknown) {
    JsonPtr answer = demo().browse(R"([{"account":"nosuchaccount"}])");
    auto shown = snapshots(answer, 1);
    // The index has no event of that name.
    JsonPtr page = demo().result("get_wallet_history", R"({"account":"nosuchaccount"})");
    EXPECT_EQ(json_array_size(json_object_get(page.get(), "items")), 0u);
    json_t* message = json_object_get(shown[0], "message");
    EXPECT_EQ(str(message, "kind"), "error");
    EXPECT_EQ(str(message, "text"),
              "Unknown account @nosuchaccount: this index holds no wallet history for it. Check the spelling.");
    EXPECT_FALSE(flag(shown[0], "history_visible"));
    EXPECT_FALSE(flag(shown[0], "totals_visible"));
}

TEST_F(WalletPage, SaysWhenTheNameIsInvalid) {
    JsonPtr answer = demo().browse(R"([{"account":"Bad_Name!"}])");
    auto shown = snapshots(answer, 1);
    // The API judges the name (the page has no rules of its own).
    JsonPtr refused = demo().call("get_wallet_history", R"({"account":"Bad_Name!"})");
    EXPECT_EQ(str(json_object_get(refused.get(), "error"), "message"), "invalid account");
    json_t* message = json_object_get(shown[0], "message");
    EXPECT_EQ(str(message, "kind"), "error");
    EXPECT_EQ(str(message, "text"),
              "“Bad_Name!” is not a valid Hive account name: 3 to 16 characters, lower-case letters, digits, hyphens "
              "and dots, each part starting with a letter.");
    EXPECT_FALSE(flag(shown[0], "history_visible"));
}

TEST_F(WalletPage, SaysWhenTheApiFails) {
    // The API's database goes away: the API answers errors, and the page says so.
    demo().pg().stop();
    JsonPtr failing = demo().call("get_status", "{}");
    json_t* error = json_object_get(failing.get(), "error");
    JsonPtr answer = demo().browse(R"([{"account":"camilla"}])");
    demo().pg().start();
    auto shown = snapshots(answer, 1);

    ASSERT_TRUE(json_is_object(error)) << dump(failing.get());
    json_t* message = json_object_get(shown[0], "message");
    EXPECT_EQ(str(message, "kind"), "error");
    EXPECT_EQ(str(message, "text"), "The API answered an error while loading @camilla: " + str(error, "message") +
                                        " (code " + dump(json_object_get(error, "code")) + ").");
    EXPECT_FALSE(flag(shown[0], "history_visible"));
    // Back once the database is: the other tests see the stack whole.
    EXPECT_TRUE(wait_until([&] { return json_object_get(demo().call("get_status", "{}").get(), "result") != nullptr; }, 30s,
                           200ms));
}

TEST_F(WalletPage, FitsAPhoneScreen) {
    JsonPtr answer = demo().browse(R"([{"account":"camilla"}])", true);
    auto shown = snapshots(answer, 1);
    JsonPtr page = demo().result("get_wallet_history", history_params());
    EXPECT_EQ(string_table(json_object_get(shown[0], "rows")), rendered_rows(page.get()));
    // Rows are cards (no header row) and nothing is wider than the 390-pixel screen.
    EXPECT_FALSE(flag(shown[0], "table_header_shown"));
    EXPECT_EQ(json_integer_value(json_object_get(shown[0], "viewport_width")), 390);
    EXPECT_LE(json_integer_value(json_object_get(shown[0], "page_width")), 390);
}

TEST_F(WalletPage, ShowsBalancesAndChartsOfHiveAndVestsEqualToTheApi) {
    const std::string account = chart_account();
    JsonPtr answer = demo().browse(demo().ledger(), R"([{"account":")" + account +
                                                        R"("},{"chart":"vesting_shares"},{"page_size":"10"}])");
    auto shown = snapshots(answer, 3);

    JsonPtr balances = ledger().result("get_balances", R"({"account":")" + account + "\"}");
    EXPECT_TRUE(json_is_null(json_object_get(shown[0], "message"))) << dump(shown[0]);
    EXPECT_EQ(str(shown[0], "balances_note"),
              "After block " + std::to_string(json_integer_value(json_object_get(balances.get(), "block"))) + ".");
    EXPECT_EQ(string_table(json_object_get(shown[0], "balances")), rendered_main_balances(balances.get()));
    // Every component the API answers, each its exact text ("1234.567", "0.000000", counts as integers).
    const auto all = rendered_all_balances(balances.get());
    EXPECT_EQ(all.size(), wallet::kBalanceComponentCount);
    EXPECT_EQ(string_table(json_object_get(shown[0], "balances_all")), all);

    // The chart: first of HIVE (the select's first choice), then of VESTS.
    const std::vector<std::pair<std::string, std::string>> charts = {{"hive_balance", "HIVE"},
                                                                     {"vesting_shares", "Vesting shares (Hive Power)"}};
    for (std::size_t step = 0; step < charts.size(); ++step) {
        const auto& [component, name] = charts[step];
        SCOPED_TRACE(component);
        json_t* snapshot = shown[step];
        const auto expected = changes(account, component);
        // Enough changes to draw a line, each a point with its exact balance.
        ASSERT_GE(expected.size(), 2u);
        EXPECT_TRUE(flag(snapshot, "chart_visible"));
        EXPECT_EQ(str(snapshot, "chart_component"), component);
        EXPECT_EQ(shown_points(snapshot), expected);
        // The last change leaves the balance get_balances answers.
        EXPECT_EQ(std::get<1>(expected.back()), str(json_object_get(balances.get(), "balances"), component.c_str()));
        const auto time = [](const ChartPoint& point) { return replace_all(replace_all(std::get<2>(point), "T", " "), "Z", ""); };
        EXPECT_EQ(str(snapshot, "chart_note"), name + ": " + std::to_string(expected.size()) + " changes, " +
                                                   time(expected.front()) + " to " + time(expected.back()) + " UTC.");
        // The labels: the extremes as the API's exact strings, and the first and last time (one day: to the minute).
        std::string lowest = std::get<1>(expected.front()), highest = lowest;
        const auto less = [](const std::string& a, const std::string& b) {  // non-negative decimals of one precision
            return a.size() != b.size() ? a.size() < b.size() : a < b;
        };
        for (const auto& point : expected) {
            if (less(std::get<1>(point), lowest)) lowest = std::get<1>(point);
            if (less(highest, std::get<1>(point))) highest = std::get<1>(point);
        }
        EXPECT_EQ(strings(json_object_get(snapshot, "chart_labels")),
                  (std::vector<std::string>{"max " + highest, "min " + lowest, time(expected.front()).substr(0, 16),
                                            time(expected.back()).substr(0, 16)}));
    }
    // The two charts are not one drawing twice.
    EXPECT_NE(shown_points(shown[0]), shown_points(shown[1]));
    // Another page size reloads the history, not the chart's choices (once each) nor the chart.
    EXPECT_EQ(strings(json_object_get(shown[2], "chart_choices")),
              (std::vector<std::string>{"hive_balance", "hbd_balance", "vesting_shares", "hive_savings", "hbd_savings",
                                        "delegated_vests", "received_vests"}));
    EXPECT_EQ(json_array_size(json_object_get(shown[2], "rows")), 10u);
    EXPECT_EQ(shown_points(shown[2]), shown_points(shown[1]));
}

TEST_F(WalletPage, BalancesAndChartFitAPhoneScreen) {
    const std::string account = chart_account();
    JsonPtr answer = demo().browse(demo().ledger(), R"([{"account":")" + account + R"("},{"open":"balances-more"}])", true);
    auto shown = snapshots(answer, 2);
    JsonPtr balances = ledger().result("get_balances", R"({"account":")" + account + "\"}");
    EXPECT_EQ(string_table(json_object_get(shown[1], "balances_all")), rendered_all_balances(balances.get()));
    EXPECT_EQ(shown_points(shown[1]), changes(account, "hive_balance"));
    for (json_t* snapshot : shown) {
        EXPECT_TRUE(flag(snapshot, "chart_visible"));
        // Nothing wider than the 390-pixel screen: the chart, nor the list of every component once opened.
        EXPECT_EQ(json_integer_value(json_object_get(snapshot, "viewport_width")), 390);
        EXPECT_LE(json_integer_value(json_object_get(snapshot, "page_width")), 390);
        EXPECT_LE(json_integer_value(json_object_get(snapshot, "chart_right")), 390);
    }
}

}  // namespace
