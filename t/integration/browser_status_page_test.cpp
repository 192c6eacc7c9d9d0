// The operator's status page (issue 30, point 1) in a real browser: Debian's
// Chromium, headless, driven by playwright-core (t/browser/driver.js with
// status_page.js), on the demo's own nginx configuration (the API's server
// serves it on /status/, scripts/render-demo-nginx) with the routing file's
// `node` target a pool of two node simulators, PostgreSQL filled and followed
// by the real wallet-indexer, and Redis. What the page shows is compared with
// get_status and /metrics read right after it; then the indexer stops, a
// node of the pool is killed and a real wallet-backfill is held in the middle
// of a shard below the indexer's range, and the page is seen to say so.
//
// The stack and the browser start once for all the tests of this program (one
// ctest test, label `browser`). The heads of the simulators move only when a
// test moves them, so the numbers stand still while they are compared.
// Screenshots: <build>/t/browser/screenshots/StatusPage/<test>[-<moment>].png. Without
// Chromium, Node.js or the pinned npm package the tests are skipped and say
// why; under CI=true they fail.
#include <cstdio>
#include <memory>

#include "backfill_support.hpp"
#include "indexer_support.hpp"
#include "support/api_support.hpp"
#include "support/browser_support.hpp"
#include "support/prometheus_text.hpp"

namespace {

using namespace harness;
using api_test::dump;
using api_test::str;
using wallet::JsonPtr;

constexpr int kHead = 200;  // the synthetic chain's head until a test moves it
// The indexer's range starts above the blocks a test loads with wallet-backfill.
constexpr int kIndexerStart = 101;
// The page as the tests open it: a refresh every second, a stall after 3 s
// without a new indexed block while the chain moves (defaults: 3 s and 60 s).
constexpr const char* kPageQuery = "status/?refresh=1&stall=3";

std::string integer(double value) { return std::to_string(static_cast<long long>(value)); }

// The stack: two simulators (a pool), PostgreSQL followed by the indexer, Redis, the demo's nginx, the browser.
class Stack {
public:
    static constexpr const char* kPageModule = "status_page.js";
    Stack()
        : node_a_(node_args()), node_b_(std::make_unique<indexer_test::Simulator>(node_args())), dir_("browser-status") {
        const auto started = std::chrono::steady_clock::now();
        pg_.provision();
        health_port_ = free_port();
        auto env = indexer_test::indexer_env(pg_, "wallet", node_a_.url(), health_port_);
        env.erase("DB_PASSWORD");  // the indexer needs only the writer role
        env["INDEXER_START_BLOCK"] = std::to_string(kIndexerStart);
        indexer_ = std::make_unique<indexer_test::IndexerDaemon>(env, health_port_);
        indexer_->start();
        wait_indexed(kHead);
        node_b_url_ = node_b_->url();
        nginx_ = std::make_unique<browser_test::DemoNginx>(dir_.path(), node_a_.url() + "," + node_b_url_, redis_.port(),
                                                           pg_.env());
        driver_ = std::make_unique<browser_test::BrowserDriver>(kPageModule, dir_.path());
        std::cout << "status stack and browser ready after "
                  << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s" << std::endl;
    }

    static std::vector<std::string> node_args() { return {"--length", std::to_string(kHead), "--block-interval-ms", "0"}; }

    // The indexer caught up with a head: it trails the last irreversible block (head - 1) by 2.
    void wait_indexed(int head) {
        if (!indexer_test::wait_for_checkpoint(pg_, "wallet", head - 3, 120s)) {
            throw std::runtime_error("the indexer did not catch up:\n" + indexer_->log());
        }
    }
    indexer_test::IndexerDaemon& indexer() { return *indexer_; }
    void advance_nodes(int blocks) {
        for (auto* node : {&node_a_, node_b_.get()}) {
            if (node != nullptr) node->control(R"({"advance":)" + std::to_string(blocks) + "}");
        }
    }
    void kill_node_b() { node_b_.reset(); }
    std::string node_a() const { return node_a_.url(); }
    const std::string& node_b() const { return node_b_url_; }

    // wallet-backfill over blocks first..last from `node_url`, in shards of 50 blocks and batches of 10, one worker.
    Process start_backfill(const std::string& node_url, int first, int last) const {
        return Process::start({backfill_test::backfill_binary().string(), "--progress=log"},
                              ProcessOptions{backfill_test::daemon_env(pg_, {{"BACKFILL_RPC_URLS", node_url},
                                                                              {"BACKFILL_START_BLOCK", std::to_string(first)},
                                                                              {"BACKFILL_END_BLOCK", std::to_string(last)},
                                                                              {"BACKFILL_SHARD_SIZE", "50"},
                                                                              {"BACKFILL_BATCH_SIZE", "10"},
                                                                              {"BACKFILL_WORKERS", "1"}}),
                                             {},
                                             dir_.path() / "wallet-backfill.log",
                                             {},
                                             false});
    }
    // backfill_shards as the backfill writes them: "start end state next_block|...".
    std::string shards() const {
        return pg_.query("SELECT coalesce(string_agg(concat_ws(' ', start_block, end_block, state, next_block), '|'"
                         " ORDER BY start_block), '') FROM backfill_shards").at(0);
    }

    std::string page_url() const { return nginx_->api_url() + kPageQuery; }
    std::string router_url() const { return nginx_->router_url(); }
    JsonPtr status() const {
        auto response = http_post_json(nginx_->api_url(), R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_status","params":{}})");
        JsonPtr answer = api_test::parse_json(response.body);
        json_t* result = answer ? json_object_get(answer.get(), "result") : nullptr;
        EXPECT_NE(result, nullptr) << response.body;
        return JsonPtr(json_incref(result != nullptr ? result : json_object()));
    }
    prometheus_text::Scrape metrics() const {
        auto response = http_request("GET", nginx_->api_url() + "metrics");
        EXPECT_EQ(response.status, 200) << response.body;
        auto scrape = prometheus_text::parse(response.body);
        EXPECT_EQ(scrape.error, "");
        return scrape;
    }
    // `moment` names the screenshot when a test takes several.
    JsonPtr browse(const std::string& url, const std::string& steps, const std::string& moment = "", bool phone = false) {
        return driver_->run(browser_test::script(url, steps, phone), browser_test::screenshot_path(moment));
    }

private:
    indexer_test::Simulator node_a_;
    std::unique_ptr<indexer_test::Simulator> node_b_;
    std::string node_b_url_;
    PostgresServer pg_;
    RedisServer redis_;
    TempDir dir_;
    std::uint16_t health_port_ = 0;
    std::unique_ptr<indexer_test::IndexerDaemon> indexer_;
    std::unique_ptr<browser_test::DemoNginx> nginx_;
    std::unique_ptr<browser_test::BrowserDriver> driver_;
};

std::string field(json_t* snapshot, const char* name) { return str(json_object_get(json_object_get(snapshot, "fields"), name), "text"); }
std::string state(json_t* snapshot, const char* name) { return str(json_object_get(json_object_get(snapshot, "fields"), name), "state"); }

// The lag as the page must show it: behind the chain head it shows, from the indexed block it shows.
std::string lag_behind_shown_head(json_t* snapshot) {
    const long long blocks = std::stoll(field(snapshot, "head_block")) - std::stoll(field(snapshot, "indexed_block"));
    return std::to_string(blocks) + " blocks, about " + std::to_string(3 * blocks) + " s";
}

std::vector<std::vector<std::string>> table(json_t* snapshot, const char* name) {
    std::vector<std::vector<std::string>> rows;
    json_t* list = json_object_get(snapshot, name);
    for (std::size_t i = 0; i < json_array_size(list); ++i) {
        std::vector<std::string> row;
        for (std::size_t j = 0; j < json_array_size(json_array_get(list, i)); ++j) {
            row.emplace_back(json_string_value(json_array_get(json_array_get(list, i), j)));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

// The node pools' rows as status.js renders them from a scrape.
std::vector<std::vector<std::string>> node_rows(const prometheus_text::Scrape& scrape) {
    const auto gauge = [&](const char* name, const prometheus_text::Sample& node) {
        return scrape.value(name, node.labels);
    };
    std::map<std::string, double> best;
    for (const auto& s : scrape.samples) {
        if (s.name != "jsonrpc_router_url_in" || s.value != 1) continue;
        if (auto head = gauge("jsonrpc_router_url_head_block", s)) best[s.labels.at("target")] = std::max(best[s.labels.at("target")], *head);
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : scrape.samples) {
        if (s.name != "jsonrpc_router_url_in") continue;
        const std::string& target = s.labels.at("target");
        auto head = gauge("jsonrpc_router_url_head_block", s);
        auto lib = gauge("jsonrpc_router_url_irreversible_block", s);
        rows.push_back({target, s.labels.at("url"), s.value == 1 ? "in" : "out", head ? integer(*head) : "—",
                        lib ? integer(*lib) : "—",
                        head && best.count(target) ? integer(std::max(0.0, best[target] - *head)) + " blocks" : "—",
                        integer(scrape.sum("jsonrpc_router_upstream_errors_total", {{"target", target}, {"url", s.labels.at("url")}}))});
    }
    return rows;
}

// Requests and errors by method class (the first three columns), as status.js counts them.
std::vector<std::vector<std::string>> class_rows(const prometheus_text::Scrape& scrape) {
    static const std::set<std::string> failures = {"busy", "timeout", "database_error", "internal_error"};
    std::vector<std::string> order;
    std::map<std::string, std::pair<double, std::optional<double>>> classes;
    const auto add = [&](const std::string& name, double requests, std::optional<double> errors) {
        if (!classes.count(name)) {
            order.push_back(name);
            classes[name] = {0, errors ? std::optional<double>(0) : std::nullopt};
        }
        classes[name].first += requests;
        if (errors) classes[name].second = classes[name].second.value_or(0) + *errors;
    };
    for (const auto& s : scrape.samples) {
        if (s.name == "wallet_history_requests_total") {
            add("API " + s.labels.at("method"), s.value, failures.count(s.labels.at("outcome")) ? s.value : 0);
        }
    }
    for (const auto& s : scrape.samples) {
        if (s.name == "jsonrpc_router_calls_total") add("route " + s.labels.at("route"), s.value, std::nullopt);
    }
    for (const auto& s : scrape.samples) {
        if (s.name == "jsonrpc_router_upstream_duration_seconds_count") add("upstream " + s.labels.at("target"), s.value, 0);
    }
    for (const auto& s : scrape.samples) {
        if (s.name == "jsonrpc_router_upstream_errors_total") add("upstream " + s.labels.at("target"), 0, s.value);
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& name : order) {
        const auto& [requests, errors] = classes[name];
        if (requests > 0) rows.push_back({name, integer(requests), errors ? integer(*errors) : "—"});
    }
    return rows;
}

// The API's databases as status.js renders them from a scrape.
std::vector<std::vector<std::string>> database_rows(const prometheus_text::Scrape& scrape) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : scrape.samples) {
        if (s.name != "wallet_history_database_up") continue;
        const auto standby = scrape.value("wallet_history_database_standby", s.labels);
        const auto delay = scrape.value("wallet_history_database_replay_delay_seconds", s.labels);
        char delay_text[32];
        std::snprintf(delay_text, sizeof delay_text, "%.1f s", delay.value_or(0));
        rows.push_back({s.labels.at("database"), standby ? (*standby == 1 ? "standby" : "primary") : "—",
                        s.value == 1 ? "yes" : "no", standby == 1.0 && delay ? delay_text : "—"});
    }
    return rows;
}

using StatusPage = browser_test::BrowserSuite<Stack>;

TEST_F(StatusPage, ShowsTheNumbersOfGetStatusAndMetricsAtThatMoment) {
    // Some traffic through the router: a cacheable call twice (a miss, then a hit), the API, a client's mistake.
    for (int i = 0; i < 2; ++i) {
        http_post_json(stack().router_url(), R"({"jsonrpc":"2.0","id":1,"method":"block_api.get_block","params":{"block_num":5}})");
    }
    http_post_json(stack().router_url(), R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"Bad!"}})");

    JsonPtr answer = stack().browse(stack().page_url(),
                                    R"([{"wait":{"updates":2,"indexer":"caught-up","databases":1}},{"pause":true}])");
    auto shown = browser_test::snapshots(answer, 2);
    // Read right after the page's last refresh, which nothing has changed since.
    const auto scrape = stack().metrics();
    JsonPtr status = stack().status();
    json_t* page = shown[1];

    EXPECT_TRUE(json_is_null(json_object_get(page, "problem"))) << dump(page);
    EXPECT_EQ(field(page, "head_block"), std::to_string(kHead));
    EXPECT_EQ(scrape.value("jsonrpc_router_url_head_block", {{"target", "node"}, {"url", stack().node_a()}}), kHead);
    EXPECT_EQ(field(page, "irreversible_block"),
              integer(*scrape.value("jsonrpc_router_url_irreversible_block", {{"target", "node"}, {"url", stack().node_a()}})));
    EXPECT_EQ(field(page, "indexed_block"), dump(json_object_get(status.get(), "indexed_block")));
    EXPECT_EQ(field(page, "indexed_time"), replace_all(replace_all(str(status.get(), "indexed_time"), "T", " "), "Z", ""));
    EXPECT_EQ(field(page, "lag"), lag_behind_shown_head(page));
    // The indexer saw the head the router sees: one lag, no second view.
    EXPECT_EQ(dump(json_object_get(status.get(), "head_block")), field(page, "head_block"));
    EXPECT_EQ(dump(json_object_get(status.get(), "lag_blocks")) + " blocks", field(page, "lag").substr(0, field(page, "lag").find(',')));
    EXPECT_EQ(field(page, "lag_indexer"), "");
    EXPECT_EQ(state(page, "indexer_state"), "caught-up");
    ASSERT_EQ(json_object_get(status.get(), "loading"), nullptr) << dump(status.get());
    EXPECT_EQ(field(page, "loading"), "Nothing: every block of the configured range is stored.");
    json_t* decoder = json_object_get(status.get(), "decoder");
    ASSERT_TRUE(json_is_true(json_object_get(decoder, "up_to_date"))) << dump(status.get());
    EXPECT_EQ(field(page, "decoder"), "Version " + dump(json_object_get(decoder, "current_version")) +
                                          ": every stored block was decoded by it.");
    json_t* connections = json_object_get(status.get(), "db_connections");
    EXPECT_EQ(field(page, "db_connections"), "at most " + dump(json_object_get(connections, "max")) + " (all workers), " +
                                                 dump(json_object_get(connections, "per_worker_max")) + " per worker");

    // The pool: both nodes in, at the same head, lag 0.
    const auto nodes = node_rows(scrape);
    EXPECT_EQ(table(page, "nodes"), nodes);
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0], (std::vector<std::string>{"node", stack().node_a(), "in", std::to_string(kHead),
                                                  std::to_string(kHead - 1), "0 blocks", "0"}));
    EXPECT_EQ(nodes[1][1], stack().node_b());

    // One hit of two cacheable calls.
    EXPECT_EQ(scrape.sum("jsonrpc_router_cache_total", {{"result", "hit"}}), 1);
    EXPECT_EQ(scrape.sum("jsonrpc_router_cache_total"), 2);
    EXPECT_EQ(field(page, "cache_hit_ratio"), "50.0 %");
    EXPECT_EQ(field(page, "cache_counts"), "(hit 1, miss 1, coalesced 0)");

    // Requests and errors by method class; the invalid name is the client's error, not the server's.
    std::vector<std::vector<std::string>> classes;
    for (auto row : table(page, "classes")) classes.push_back({row.at(0), row.at(1), row.at(2)});
    EXPECT_EQ(classes, class_rows(scrape));
    EXPECT_NE(std::find(classes.begin(), classes.end(),
                        std::vector<std::string>{"API wallet_history.get_wallet_history", "1", "0"}),
              classes.end())
        << dump(page);
    EXPECT_EQ(field(page, "db_errors"), "0 (timeout 0, failed 0, unavailable 0)");

    // The API's one database: the primary, reachable (its worker's probe answered), no replay delay.
    const auto databases = database_rows(scrape);
    EXPECT_EQ(table(page, "databases"), databases);
    ASSERT_EQ(databases.size(), 1u) << dump(page);
    EXPECT_EQ(databases[0], (std::vector<std::string>{databases[0][0], "primary", "yes", "—"}));
    EXPECT_EQ(databases[0][0].rfind("127.0.0.1:", 0), 0u) << databases[0][0];
    EXPECT_EQ(scrape.value("wallet_history_database_replay_delay_seconds", {{"database", databases[0][0]}}), 0);
}

TEST_F(StatusPage, ShowsTheIndexerStalledWhileTheChainMoves) {
    JsonPtr before = stack().browse(stack().page_url(), R"([{"wait":{"indexer":"caught-up"}}])", "-following");
    auto shown_before = browser_test::snapshots(before, 1);
    const std::string indexed = field(shown_before[0], "indexed_block");

    // The indexer stops; the chain goes on.
    ASSERT_EQ(stack().indexer().stop(), 0);
    stack().advance_nodes(5);
    JsonPtr after = stack().browse(
        "", R"([{"wait":{"indexer":"stalled"}}])");
    auto shown = browser_test::snapshots(after, 1);
    stack().indexer().start();  // the other tests see it following again

    EXPECT_EQ(state(shown_before[0], "indexer_state"), "caught-up");
    EXPECT_EQ(state(shown[0], "indexer_state"), "stalled");
    const std::string text = field(shown[0], "indexer_state");
    EXPECT_EQ(text.rfind("stalled: no block indexed for ", 0), 0u) << text;
    EXPECT_NE(text.find(" s while the chain advanced 5 blocks"), std::string::npos) << text;
    EXPECT_EQ(field(shown[0], "indexed_block"), indexed);
    EXPECT_EQ(field(shown[0], "head_block"), std::to_string(kHead + 5));
    // The lag counts from the head shown, not from the one the indexer saw last.
    EXPECT_EQ(field(shown[0], "lag"), lag_behind_shown_head(shown[0]));
    EXPECT_EQ(field(shown[0], "lag_indexer").rfind("(the indexer last saw head " + std::to_string(kHead) + ", ", 0), 0u)
        << field(shown[0], "lag_indexer");
    stack().wait_indexed(kHead + 5);
}

TEST_F(StatusPage, ShowsANodeOfThePoolKilled) {
    JsonPtr before = stack().browse(stack().page_url(), R"([{"wait":{"nodes":2,"nodes_out":0}}])", "-whole");
    auto shown_before = browser_test::snapshots(before, 1);

    stack().kill_node_b();
    JsonPtr after = stack().browse(
        "", R"([{"wait":{"nodes_out":1}},{"pause":true}])");
    auto shown = browser_test::snapshots(after, 2);
    const auto scrape = stack().metrics();

    const auto rows = table(shown[1], "nodes");
    ASSERT_EQ(rows.size(), 2u) << dump(shown[1]);
    EXPECT_EQ(rows, node_rows(scrape));
    EXPECT_EQ(rows[0][1], stack().node_a());
    EXPECT_EQ(rows[0][2], "in");
    EXPECT_EQ(rows[1][1], stack().node_b());
    EXPECT_EQ(rows[1][2], "out");
    EXPECT_EQ(scrape.value("jsonrpc_router_url_in", {{"target", "node"}, {"url", stack().node_b()}}), 0);
    // The chain's head is still known from the node left.
    EXPECT_EQ(field(shown[1], "head_block"), rows[0][3]);
}

// What is still loading: a real wallet-backfill over blocks 1..100 (below the
// indexer's range), two shards, held in the second by its node, whose last
// irreversible block (74) does not cover the next batch (71..80). The page
// shows what backfill_shards says; when the node moves on, the backfill ends
// and the panel empties.
TEST_F(StatusPage, ShowsTheBackfillShardStillLoading) {
    constexpr int kLast = kIndexerStart - 1;
    indexer_test::Simulator loader_node({"--length", "75", "--block-interval-ms", "0"});  // the same chain, up to 75
    Process backfill = stack().start_backfill(loader_node.url(), 1, kLast);
    const std::string held = "1 50 done 51|51 100 running 71";
    std::string shards;
    for (int i = 0; i < 600 && shards != held; ++i) {
        std::this_thread::sleep_for(100ms);
        shards = stack().shards();
    }
    ASSERT_EQ(shards, held) << backfill.log();

    JsonPtr answer = stack().browse(stack().page_url(), R"([{"wait":{"loading":"from block 71."}},{"pause":true}])", "-loading");
    auto shown = browser_test::snapshots(answer, 2);
    JsonPtr status = stack().status();
    // Still held: the page read what the table says now.
    EXPECT_EQ(stack().shards(), held);
    EXPECT_EQ(dump(json_object_get(status.get(), "loading")), R"({"blocks":30,"from":71,"shards_from":51,"to":100})");
    // The shard 51..100 with 51..70 stored: 20 of its 50 blocks.
    EXPECT_EQ(field(shown[1], "loading"), "Backfill shards over blocks 51 to 100: 20 of 50 blocks stored (40 %), "
                                          "30 still loading from block 71.");
    EXPECT_EQ(str(shown[1], "loading_bar"), "40%");
    // The missing blocks hold the indexed block back.
    EXPECT_EQ(field(shown[1], "indexed_block"), "70");

    // The node moves on: the backfill loads the rest and ends.
    loader_node.control(R"({"advance":30})");
    EXPECT_EQ(backfill.wait_exit(60s), std::optional<int>(0)) << backfill.log();
    JsonPtr done = stack().browse(stack().page_url(), R"([{"wait":{"loading":"Nothing"}},{"pause":true}])");
    shown = browser_test::snapshots(done, 2);
    EXPECT_EQ(stack().shards(), "1 50 done 51|51 100 done 101");
    EXPECT_EQ(json_object_get(stack().status().get(), "loading"), nullptr);
    EXPECT_EQ(field(shown[1], "loading"), "Nothing: every block of the configured range is stored.");
    EXPECT_EQ(str(shown[1], "loading_bar"), "100%");
}

TEST_F(StatusPage, FitsAPhoneScreen) {
    JsonPtr answer = stack().browse(stack().page_url(), R"([{"wait":{"nodes":2}},{"pause":true}])", "", true);
    auto shown = browser_test::snapshots(answer, 2);
    const auto scrape = stack().metrics();
    EXPECT_EQ(table(shown[1], "nodes"), node_rows(scrape));
    EXPECT_EQ(table(shown[1], "databases"), database_rows(scrape));
    // Rows are cards (no header row) and nothing is wider than the 390-pixel screen.
    EXPECT_FALSE(json_is_true(json_object_get(shown[1], "table_header_shown")));
    EXPECT_EQ(json_integer_value(json_object_get(shown[1], "viewport_width")), 390);
    EXPECT_LE(json_integer_value(json_object_get(shown[1], "page_width")), 390);
}

}  // namespace
