// The monitoring of conf/monitoring (issue 30 point 3): the alert rules pass
// `promtool check rules` and their unit tests (conf/monitoring/alerts.test.yml),
// the example configuration `promtool check config`; the dashboards and the
// provisioning files have the layout Grafana loads; and every metric name a
// dashboard or a rule uses is in the /metrics of the running stack: a
// PostgreSQL primary with a streaming standby, the node simulator, a finished
// backfill, the indexer following the chain, and nginx with the module
// serving the API and the router. A renamed metric fails the test.
#include <gtest/gtest.h>

#include <array>
#include <regex>
#include <set>
#include <thread>

#include "backfill_support.hpp"
#include "support/prometheus_text.hpp"
#include "wallet/decoder_version.hpp"
#include "wallet/event_store.hpp"
#include "wallet/json_util.hpp"

using namespace backfill_test;
using namespace std::chrono_literals;

namespace {

const fs::path kMonitoring = source_dir() / "conf" / "monitoring";

std::string promtool() {
    for (const char* path : {"/usr/bin/promtool", "/usr/local/bin/promtool"}) {
        if (fs::exists(path)) return path;
    }
    return {};
}

// The PromQL expressions of the rules (each `expr:`, block scalars included).
std::vector<std::string> rule_expressions(const fs::path& rules) {
    std::vector<std::string> exprs;
    std::istringstream in(read_file(rules));
    std::string line;
    std::string block;
    std::size_t block_indent = 0;
    bool in_block = false;
    while (std::getline(in, line)) {
        const std::size_t indent = line.find_first_not_of(' ');
        if (in_block) {
            if (indent != std::string::npos && indent > block_indent) {
                block += line + "\n";
                continue;
            }
            exprs.push_back(block);
            in_block = false;
        }
        if (indent == std::string::npos || line.compare(indent, 5, "expr:") != 0) continue;
        const std::string value = line.substr(indent + 5);
        if (value.find('|') != std::string::npos) {
            in_block = true;
            block_indent = indent;
            block.clear();
        } else {
            exprs.push_back(value);
        }
    }
    if (in_block) exprs.push_back(block);
    return exprs;
}

// The queries of a Grafana dashboard: panels' targets' "expr" and the
// query variables' "query", at any depth.
void collect_queries(json_t* node, std::vector<std::string>& out) {
    if (json_is_object(node)) {
        const char* key = nullptr;
        json_t* value = nullptr;
        json_t* type = json_object_get(node, "type");
        const bool query_variable = json_is_string(type) && std::string(json_string_value(type)) == "query";
        json_object_foreach(node, key, value) {
            if ((std::string(key) == "expr" || (query_variable && std::string(key) == "query")) && json_is_string(value)) {
                out.push_back(json_string_value(value));
            } else {
                collect_queries(value, out);
            }
        }
    } else if (json_is_array(node)) {
        std::size_t i = 0;
        json_t* value = nullptr;
        json_array_foreach(node, i, value) collect_queries(value, out);
    }
}

// The metric names a PromQL expression reads: identifiers that are not
// inside label matchers, ranges, strings or grouping clauses, not functions
// (followed by "("), not keywords, not Grafana's variables ($name).
std::set<std::string> metric_names(std::string expr) {
    // label_values(metric, label): the label is no metric.
    expr = std::regex_replace(expr, std::regex(R"(label_values\(([^,()]*),[^)]*\))"), "label_values($1)");
    expr = std::regex_replace(expr, std::regex(R"("(\\.|[^"\\])*")"), " ");
    expr = std::regex_replace(expr, std::regex(R"(\{[^}]*\})"), " ");
    expr = std::regex_replace(expr, std::regex(R"(\[[^\]]*\])"), " ");
    expr = std::regex_replace(expr, std::regex(R"(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))"), " ");
    expr = std::regex_replace(expr, std::regex(R"(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)"), " ");
    static const std::set<std::string> keywords = {"and", "or", "unless", "bool", "offset", "by", "without", "on",
                                                   "ignoring", "group_left", "group_right", "Inf", "NaN", "inf", "nan"};
    std::set<std::string> names;
    const std::regex identifier(R"(([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?)");
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), identifier); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1];
        const auto at = static_cast<std::size_t>(it->position(0));
        // A number's exponent or unit ("1e3", "5m" outside ranges does not occur).
        if (at > 0 && (std::isdigit(static_cast<unsigned char>(expr[at - 1])) || expr[at - 1] == '.')) continue;
        if ((*it)[2].matched || keywords.contains(name)) continue;
        names.insert(name);
    }
    return names;
}

// Every metric name the rules and the dashboards use, with where it is used.
std::map<std::string, std::string> used_metric_names() {
    std::map<std::string, std::string> used;
    for (const std::string& expr : rule_expressions(kMonitoring / "alerts.yml")) {
        for (const std::string& name : metric_names(expr)) used.emplace(name, "alerts.yml");
    }
    for (const auto& entry : fs::directory_iterator(kMonitoring / "grafana" / "dashboards")) {
        json_error_t error;
        wallet::JsonPtr dashboard = wallet::json_own(json_load_file(entry.path().c_str(), 0, &error));
        EXPECT_TRUE(dashboard) << entry.path() << ": " << error.text;
        if (!dashboard) continue;
        std::vector<std::string> queries;
        collect_queries(dashboard.get(), queries);
        EXPECT_FALSE(queries.empty()) << entry.path();
        for (const std::string& query : queries) {
            for (const std::string& name : metric_names(query)) used.emplace(name, entry.path().filename().string());
        }
    }
    return used;
}

// A scrape, its text kept under the build tree (what the names were checked against).
prometheus_text::Scrape scrape(const std::string& url, const std::string& saved_as) {
    HttpResponse response = http_request("GET", url);
    EXPECT_EQ(response.status, 200) << url << ": " << response.body;
    fs::create_directories(binary_dir() / "monitoring");
    write_file(binary_dir() / "monitoring" / saved_as, response.body);
    prometheus_text::Scrape parsed = prometheus_text::parse(response.body);
    EXPECT_EQ(parsed.error, "") << url;
    return parsed;
}

}  // namespace

TEST(MonitoringRules, PromtoolChecksTheRulesAndTheConfigAndPassesTheirUnitTests) {
    const std::string tool = promtool();
    if (tool.empty()) GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/install-deps installs it)";
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{tool, "check", "rules", (kMonitoring / "alerts.yml").string()},
          std::vector<std::string>{tool, "check", "config", (kMonitoring / "prometheus.yml").string()},
          std::vector<std::string>{tool, "test", "rules", (kMonitoring / "alerts.test.yml").string()}}) {
        auto result = run_command(argv);
        EXPECT_EQ(result.exit_code, 0) << argv[1] << " " << argv[2] << ":\n" << result.output;
        EXPECT_NE(result.output.find("SUCCESS"), std::string::npos) << result.output;
    }
    // compose.yaml's configuration, mounted beside the rules as the profile does.
    TempDir mounted("wallet-prometheus");
    fs::copy_file(kMonitoring / "compose" / "prometheus.yml", mounted.path() / "prometheus.yml");
    fs::copy_file(kMonitoring / "alerts.yml", mounted.path() / "alerts.yml");
    auto compose = run_command({tool, "check", "config", (mounted.path() / "prometheus.yml").string()});
    EXPECT_EQ(compose.exit_code, 0) << compose.output;
    // Every alert of the rules has unit tests (and, by their design, cases where it must not fire).
    const std::string rules = read_file(kMonitoring / "alerts.yml");
    const std::string tests = read_file(kMonitoring / "alerts.test.yml");
    const std::regex alert(R"(- alert: (\w+))");
    int alerts = 0;
    for (auto it = std::sregex_iterator(rules.begin(), rules.end(), alert); it != std::sregex_iterator(); ++it) {
        ++alerts;
        const std::string name = (*it)[1];
        const std::regex tested("alertname: " + name + "\\n\\s+exp_alerts: \\[\\]");
        EXPECT_TRUE(std::regex_search(tests, tested)) << name << " has no case where it must not fire";
        EXPECT_NE(tests.find("alertname: " + name + "\n        exp_alerts:\n"), std::string::npos)
            << name << " has no case where it fires";
    }
    EXPECT_GE(alerts, 10);
}

namespace {

// The value of `key: value` on a line of a small YAML file ("" when absent; the first one).
std::string yaml_value(const std::string& text, const std::string& key) {
    std::smatch match;
    if (!std::regex_search(text, match, std::regex("(^|\\n)[ -]*" + key + R"(:\s*([^#\n]*[^#\s]))"))) return {};
    return match[2];
}

std::string json_text(json_t* object, const char* key) {
    json_t* value = json_object_get(object, key);
    return json_is_string(value) ? json_string_value(value) : "";
}

}  // namespace

TEST(MonitoringDashboards, DashboardsAndProvisioningHaveTheLayoutGrafanaLoads) {
    // The provider reads the directory the package installs the dashboards to, and compose.yaml mounts them there.
    const std::string provider = read_file(kMonitoring / "grafana/provisioning/dashboards/hive-wallet.yml");
    EXPECT_EQ(yaml_value(provider, "apiVersion"), "1");
    EXPECT_NE(provider.find("providers:"), std::string::npos);
    EXPECT_EQ(yaml_value(provider, "type"), "file");
    const std::string dashboards_path = yaml_value(provider, "path");
    EXPECT_EQ(dashboards_path, "/usr/share/hive-wallet/monitoring/grafana/dashboards");
    const std::string compose = read_file(source_dir() / "compose.yaml");
    EXPECT_NE(compose.find("./conf/monitoring/grafana/dashboards:" + dashboards_path + ":ro"), std::string::npos);
    EXPECT_NE(compose.find("./conf/monitoring/grafana/provisioning/dashboards/hive-wallet.yml:"
                           "/etc/grafana/provisioning/dashboards/hive-wallet.yml:ro"),
              std::string::npos);
    // Both datasources (the package's and compose's) are Prometheus with the uid the variables default to.
    std::string datasource_uid;
    for (const fs::path& file : {kMonitoring / "grafana/provisioning/datasources/prometheus.yml",
                                 kMonitoring / "compose/grafana-datasource.yml"}) {
        const std::string datasource = read_file(file);
        EXPECT_EQ(yaml_value(datasource, "apiVersion"), "1") << file;
        EXPECT_NE(datasource.find("datasources:"), std::string::npos) << file;
        EXPECT_EQ(yaml_value(datasource, "type"), "prometheus") << file;
        EXPECT_NE(yaml_value(datasource, "url"), "") << file;
        if (datasource_uid.empty()) datasource_uid = yaml_value(datasource, "uid");
        EXPECT_EQ(yaml_value(datasource, "uid"), datasource_uid) << file;
    }
    EXPECT_NE(compose.find("./conf/monitoring/compose/grafana-datasource.yml:"
                           "/etc/grafana/provisioning/datasources/prometheus.yml:ro"),
              std::string::npos);
    EXPECT_EQ(datasource_uid, "prometheus");

    std::set<std::string> uids;
    std::size_t dashboards = 0;
    for (const auto& entry : fs::directory_iterator(kMonitoring / "grafana" / "dashboards")) {
        const std::string file = entry.path().filename().string();
        EXPECT_EQ(entry.path().extension(), ".json") << file << ": the provider loads *.json only";
        json_error_t error;
        wallet::JsonPtr dashboard = wallet::json_own(json_load_file(entry.path().c_str(), JSON_REJECT_DUPLICATES, &error));
        ASSERT_TRUE(dashboard) << file << ":" << error.line << ": " << error.text;
        ++dashboards;
        json_t* d = dashboard.get();
        // A provisioned dashboard is found by its uid (at most 40 characters); a numeric id would clash.
        const std::string uid = json_text(d, "uid");
        EXPECT_TRUE(!uid.empty() && uid.size() <= 40) << file;
        EXPECT_TRUE(uids.insert(uid).second) << file << ": uid " << uid << " twice";
        EXPECT_TRUE(json_is_null(json_object_get(d, "id")) || !json_object_get(d, "id")) << file;
        EXPECT_FALSE(json_text(d, "title").empty()) << file;
        EXPECT_TRUE(json_is_integer(json_object_get(d, "schemaVersion"))) << file;
        // The datasource variable: Prometheus, defaulting to the provisioned one.
        json_t* variables = json_object_get(json_object_get(d, "templating"), "list");
        bool datasource_variable = false;
        std::size_t i = 0;
        json_t* variable = nullptr;
        json_array_foreach(variables, i, variable) {
            if (json_text(variable, "name") == "datasource") {
                datasource_variable = json_text(variable, "type") == "datasource" && json_text(variable, "query") == "prometheus";
            }
        }
        EXPECT_TRUE(datasource_variable) << file;
        // Panels: unique ids, on the 24-column grid without overlapping, each query on the variable's datasource.
        json_t* panels = json_object_get(d, "panels");
        ASSERT_TRUE(json_is_array(panels) && json_array_size(panels) > 0) << file;
        std::set<json_int_t> ids;
        std::vector<std::array<json_int_t, 4>> placed;  // x, y, w, h
        json_t* panel = nullptr;
        json_array_foreach(panels, i, panel) {
            const std::string title = file + ": panel " + json_text(panel, "title");
            EXPECT_FALSE(json_text(panel, "title").empty()) << title;
            EXPECT_TRUE(ids.insert(json_integer_value(json_object_get(panel, "id"))).second) << title << ": id twice";
            json_t* grid = json_object_get(panel, "gridPos");
            const std::array<json_int_t, 4> at{json_integer_value(json_object_get(grid, "x")),
                                               json_integer_value(json_object_get(grid, "y")),
                                               json_integer_value(json_object_get(grid, "w")),
                                               json_integer_value(json_object_get(grid, "h"))};
            EXPECT_TRUE(at[0] >= 0 && at[1] >= 0 && at[2] > 0 && at[3] > 0 && at[0] + at[2] <= 24) << title;
            for (const auto& other : placed) {
                const bool overlap = at[0] < other[0] + other[2] && other[0] < at[0] + at[2] &&
                                     at[1] < other[1] + other[3] && other[1] < at[1] + at[3];
                EXPECT_FALSE(overlap) << title << " overlaps the panel at x=" << other[0] << " y=" << other[1];
            }
            placed.push_back(at);
            if (json_text(panel, "type") == "row") continue;
            EXPECT_EQ(json_text(json_object_get(panel, "datasource"), "uid"), "${datasource}") << title;
            json_t* targets = json_object_get(panel, "targets");
            EXPECT_GT(json_array_size(targets), 0u) << title;
            std::set<std::string> ref_ids;
            std::size_t t = 0;
            json_t* target = nullptr;
            json_array_foreach(targets, t, target) {
                EXPECT_TRUE(ref_ids.insert(json_text(target, "refId")).second) << title << ": refId twice";
                EXPECT_FALSE(json_text(target, "expr").empty()) << title;
                EXPECT_EQ(json_text(json_object_get(target, "datasource"), "uid"), "${datasource}") << title;
            }
        }
    }
    EXPECT_EQ(dashboards, 2u);
}

TEST(MonitoringMetrics, EveryMetricOfTheDashboardsAndRulesIsInTheRunningStacksMetrics) {
    const auto used = used_metric_names();
    ASSERT_GE(used.size(), 30u);

    PostgresServer primary;
    const wallet::Settings settings = primary.provision("wallet");
    PostgresServer standby(PostgresServer::StandbyOf{primary, {}});
    NodeSimulator node(chain_args(300));

    // The history before the indexer's start, in two shards.
    auto backfill = run_command({backfill_binary().string(), "--progress=none"},
                                daemon_env(primary, {{"BACKFILL_RPC_URLS", node.url()},
                                                     {"BACKFILL_START_BLOCK", "1"},
                                                     {"BACKFILL_END_BLOCK", "200"},
                                                     {"BACKFILL_SHARD_SIZE", "100"},
                                                     {"BACKFILL_BATCH_SIZE", "50"},
                                                     {"BACKFILL_WORKERS", "2"}}));
    ASSERT_EQ(backfill.exit_code, 0) << backfill.output;

    const std::uint16_t health_port = free_port();
    TempDir dir("wallet-monitoring");
    Process indexer = Process::start(
        {indexer_binary().string()},
        ProcessOptions{daemon_env(primary, {{"CHAIN_RPC_URL", node.url()},
                                            {"INDEXER_START_BLOCK", "201"},
                                            {"INDEXER_HEALTH_ADDR", "127.0.0.1:" + std::to_string(health_port)},
                                            {"INDEXER_POLL_INTERVAL_MS", "100"}}),
                       {},
                       dir.path() / "wallet-indexer.log",
                       {},
                       false});

    // The API and a router to the node in one nginx: one /metrics for both.
    write_file(dir.path() / "routes.json", R"({"targets": {"hived": [")" + node.url() + R"("]},
  "routes": {".*": {"target": "hived"}}})");
    NginxServer::Options options;
    options.http_config = "server {\n    listen 127.0.0.1:{{PORT}};\n"
                          "    location = /metrics { jsonrpc_router_metrics; }\n"
                          "    location = /api { wallet_history_api; }\n"
                          "    location / { jsonrpc_router " + (dir.path() / "routes.json").string() + "; }\n}\n";
    options.env = primary.env();
    options.env.erase("DB_PASSWORD");
    // The API reads the primary and the standby: its probes name both.
    const std::string on_primary = "127.0.0.1:" + std::to_string(primary.port()) + "/wallet";
    const std::string on_standby = "127.0.0.1:" + std::to_string(standby.port()) + "/wallet";
    options.env["API_DATABASE_URL"] = std::string("postgresql://wallet_api_reader:") + kReaderPassword + "@127.0.0.1:" +
                                      std::to_string(primary.port()) + ",127.0.0.1:" + std::to_string(standby.port()) +
                                      "/wallet";
    options.env["WALLET_API_CURSOR_SECRET"] = "monitoring-test-cursor-secret-0001";
    NginxServer nginx(options);
    // A call through each, so the per-method series have values.
    EXPECT_EQ(http_post_json(nginx.url("/api"), R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_status","params":{}})").status, 200);
    EXPECT_EQ(http_post_json(nginx.url("/"), R"({"jsonrpc":"2.0","id":1,"method":"condenser_api.get_dynamic_global_properties","params":[]})").status, 200);

    // The indexer past the backfill, with the store's state read.
    const std::string indexer_metrics = "http://127.0.0.1:" + std::to_string(health_port) + "/metrics";
    prometheus_text::Scrape from_indexer;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (port_accepts(health_port)) {
            from_indexer = scrape(indexer_metrics, "indexer-metrics.txt");
            if (from_indexer.value("wallet_indexer_indexed_block").value_or(0) >= 250 &&
                from_indexer.value("wallet_store_standbys").value_or(0) == 1) {
                break;
            }
        }
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_GE(from_indexer.value("wallet_indexer_indexed_block").value_or(0), 250) << read_file(dir.path() / "wallet-indexer.log");
    // What the store holds, as the indexer reports it.
    EXPECT_EQ(from_indexer.value("wallet_store_standbys"), 1);
    EXPECT_EQ(from_indexer.value("wallet_store_backfill_shards", {{"state", "done"}}), 2);
    EXPECT_EQ(from_indexer.value("wallet_store_backfill_shards", {{"state", "running"}}), 0);
    EXPECT_EQ(from_indexer.value("wallet_store_backfill_shards_stalled"), 0);
    EXPECT_EQ(from_indexer.value("wallet_store_backfill_shard_attempts_max"), 0);
    std::size_t standby_series = 0;
    for (const auto& sample : from_indexer.samples) {
        if (sample.name == "wallet_store_standby_replay_lag_seconds") ++standby_series;
    }
    EXPECT_EQ(standby_series, 1u);
    // Every stored block was loaded by this build's decoder.
    EXPECT_EQ(from_indexer.value("wallet_store_decoder_version"), wallet::kDecoderVersion);
    EXPECT_EQ(from_indexer.value("wallet_store_decoder_outdated_blocks"), 0);
    prometheus_text::Scrape from_nginx;
    EXPECT_TRUE(wait_until([&] {
        from_nginx = scrape(nginx.url("/metrics"), "nginx-metrics.txt");
        return from_nginx.value("wallet_history_database_up", {{"database", on_primary}}) == 1 &&
               from_nginx.value("wallet_history_database_up", {{"database", on_standby}}) == 1;
    }));
    // The probes: the primary, and the standby with its replay delay.
    EXPECT_EQ(from_nginx.value("wallet_history_database_standby", {{"database", on_primary}}), 0);
    EXPECT_EQ(from_nginx.value("wallet_history_database_standby", {{"database", on_standby}}), 1);
    EXPECT_GE(from_nginx.value("wallet_history_database_replay_delay_seconds", {{"database", on_standby}}).value_or(-1), 0);
    // The router's call is answered: nothing in flight to the node, no budget hit.
    EXPECT_EQ(from_nginx.value("jsonrpc_router_upstream_in_flight", {{"target", "hived"}, {"url", node.url()}}), 0);
    EXPECT_EQ(from_nginx.value("jsonrpc_router_upstream_duration_seconds_count", {{"target", "hived"}, {"url", node.url()}}), 1);
    EXPECT_EQ(from_nginx.sum("jsonrpc_router_limited_total"), 0);

    // A shard whose worker died after its third claim: what the backfill
    // alerts read (directly: the indexer reads it only every 15 s).
    // Its blocks were loaded by an older decoder: the run get_status reports as outdated.
    primary.query("UPDATE backfill_shards SET state = 'running', attempts = 3, heartbeat_at = now() - interval '2 minutes',"
                  " decoder_version = " + std::to_string(wallet::kDecoderVersion - 1) + " WHERE start_block = 1");
    auto store = wallet::EventStore::connect(settings.db.indexer_url);
    ASSERT_TRUE(store) << store.error();
    auto state = store.value().monitored_state();
    ASSERT_TRUE(state) << state.error();
    EXPECT_EQ(state->shards_running, 1);
    EXPECT_EQ(state->shards_done, 1);
    EXPECT_EQ(state->shards_stalled, 1);
    EXPECT_EQ(state->shard_attempts_max, 3);
    EXPECT_EQ(state->outdated_from, 1);
    EXPECT_EQ(state->outdated_to, 100);
    ASSERT_EQ(state->standbys.size(), 1u);
    EXPECT_GE(state->standbys.front().replay_bytes, 0);

    // Each name: a family of either scrape, a sample name, or a histogram's series.
    std::set<std::string> exposed;
    for (const prometheus_text::Scrape* s : std::array<const prometheus_text::Scrape*, 2>{&from_indexer, &from_nginx}) {
        for (const auto& [family, type] : s->types) {
            exposed.insert(family);
            if (type == "histogram") {
                for (const char* suffix : {"_bucket", "_sum", "_count"}) exposed.insert(family + suffix);
            }
        }
        for (const auto& sample : s->samples) exposed.insert(sample.name);
    }
    exposed.insert("up");  // Prometheus's own series of each scrape
    for (const auto& [name, where] : used) {
        EXPECT_TRUE(exposed.contains(name)) << name << " (used by " << where << ") is in no /metrics of the stack";
    }
    EXPECT_TRUE(nginx.fatal_log_lines().empty());
}
