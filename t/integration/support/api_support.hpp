// Test support for the wallet_history API: a provisioned PostgreSQL, event
// rows written directly with SQL (hand-written ones mirroring real node
// operations, and bulk synthetic ones generated inside PostgreSQL), nginx
// with the module, and JSON-RPC calls.
#pragma once

#include <gtest/gtest.h>
#include <jansson.h>

#include <map>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/harness.hpp"
#include "wallet/handles.hpp"
#include "wallet/pg.hpp"

namespace api_test {

using harness::HttpResponse;
using wallet::JsonPtr;

// One stored wallet event, as the indexer would write it.
struct EventRow {
    long block_num = 1;
    long long trx_in_block = 0;
    int op_in_trx = 0;
    int virtual_op = 0;
    std::string account;
    std::string role;
    int block_seq = 0;
    std::string op_type;
    std::optional<std::string> trx_id;
    std::string timestamp;  // ISO 8601 UTC
    std::optional<std::string> amount, symbol, vesting_amount, vesting_symbol, counterparty, memo, author, permlink;
    std::string assets = "[]";
    std::string payload = "{}";
};

inline std::string sql_text(PGconn* conn, const std::optional<std::string>& v) {
    return v ? wallet::pg::quote_literal(conn, *v) : std::string("NULL");
}

// Inserts rows in one statement as the writer role (as the indexer does).
inline void insert_events(const wallet::Settings& settings, const std::vector<EventRow>& rows) {
    auto conn = wallet::pg::connect(settings.db.indexer_url);
    ASSERT_TRUE(conn) << conn.error();
    PGconn* c = conn->get();
    std::string sql =
        "INSERT INTO wallet_operation_events (block_num, trx_in_block, op_in_trx, virtual_op, account, role, "
        "block_seq, op_type, trx_id, \"timestamp\", amount, symbol, vesting_amount, vesting_symbol, counterparty, "
        "memo, author, permlink, assets, payload) VALUES ";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const EventRow& r = rows[i];
        if (i > 0) sql += ",";
        sql += "(" + std::to_string(r.block_num) + "," + std::to_string(r.trx_in_block) + "," +
               std::to_string(r.op_in_trx) + "," + std::to_string(r.virtual_op) + "," + sql_text(c, r.account) + "," +
               sql_text(c, r.role) + "," + std::to_string(r.block_seq) + "," + sql_text(c, r.op_type) + "," +
               sql_text(c, r.trx_id) + "," + sql_text(c, r.timestamp) + "," + sql_text(c, r.amount) + "," +
               sql_text(c, r.symbol) + "," + sql_text(c, r.vesting_amount) + "," + sql_text(c, r.vesting_symbol) + "," +
               sql_text(c, r.counterparty) + "," + sql_text(c, r.memo) + "," + sql_text(c, r.author) + "," +
               sql_text(c, r.permlink) + "," + sql_text(c, r.assets) + "::jsonb," + sql_text(c, r.payload) +
               "::jsonb)";
    }
    sql += " ON CONFLICT DO NOTHING";
    auto r = wallet::pg::exec(c, sql);
    ASSERT_TRUE(r) << r.error();
}

// `count` synthetic events of `account`, generated inside PostgreSQL: a mix
// of op types and roles, several events sharing a timestamp and a block (so
// that the keyset's tiebreakers matter), one self transfer per 97 rows (two
// roles of one operation). Blocks start at first_block.
inline std::string generate_events_sql(const std::string& account, int count, long first_block,
                                      const std::string& start_time = "2020-01-01T00:00:00Z") {
    return "INSERT INTO wallet_operation_events (block_num, trx_in_block, op_in_trx, virtual_op, account, role, "
             "block_seq, op_type, trx_id, \"timestamp\", amount, symbol, vesting_amount, vesting_symbol, counterparty, "
             "author, permlink, assets, payload) "
             "SELECT " + std::to_string(first_block) + " + i / 4, i % 4, 0, CASE WHEN i % 3 = 0 THEN 0 ELSE 1 END, '" +
             account + "', "
             "CASE WHEN i % 97 = 0 THEN 'receiver' WHEN i % 3 = 0 THEN 'sender' WHEN i % 3 = 1 THEN 'curator' ELSE 'author' END, "
             "i % 4, CASE WHEN i % 3 = 0 THEN 'transfer' WHEN i % 3 = 1 THEN 'curation_reward' ELSE 'author_reward' END, "
             "CASE WHEN i % 3 = 0 THEN md5(i::text) || '00000000' END, "
             "'" + start_time + "'::timestamptz + (i / 8) * interval '3 seconds', "
             "CASE WHEN i % 3 = 0 THEN (i % 1000)::numeric / 1000 + 1 END, CASE WHEN i % 3 = 0 THEN 'HIVE' END, "
             "CASE WHEN i % 3 <> 0 THEN (i % 100000)::numeric / 1000000 + 0.5 END, CASE WHEN i % 3 <> 0 THEN 'VESTS' END, "
             "CASE WHEN i % 3 = 0 THEN 'peer' END, CASE WHEN i % 3 <> 0 THEN 'someone' END, "
             "CASE WHEN i % 3 <> 0 THEN 'post-' || i END, "
             "CASE WHEN i % 3 = 2 THEN jsonb_build_array(jsonb_build_object('field', 'hbd_payout', 'amount', "
             "((i % 50)::numeric / 1000)::numeric(20,3)::text, 'symbol', 'HBD')) ELSE '[]'::jsonb END, '{}'::jsonb "
             "FROM generate_series(0, " + std::to_string(count - 1) + ") AS i "
             // the self transfers: the sender row of the same operation
             "UNION ALL SELECT " + std::to_string(first_block) + " + i / 4, i % 4, 0, 0, '" + account +
             "', 'sender', i % 4, 'transfer', md5(i::text) || '00000000', "
             "'" + start_time + "'::timestamptz + (i / 8) * interval '3 seconds', 1.000, 'HIVE', NULL, NULL, '" +
             account + "', NULL, NULL, '[]'::jsonb, '{}'::jsonb FROM generate_series(0, " + std::to_string(count - 1) +
             ") AS i WHERE i % 97 = 0 ON CONFLICT DO NOTHING";
}

inline void generate_events(harness::PostgresServer& pg, const std::string& account, int count, long first_block,
                            const std::string& start_time = "2020-01-01T00:00:00Z") {
    pg.query(generate_events_sql(account, count, first_block, start_time));
}

inline JsonPtr parse_json(const std::string& text) {
    json_error_t error;
    JsonPtr j(json_loads(text.c_str(), JSON_DECODE_ANY, &error));
    EXPECT_TRUE(j) << "not JSON: " << text.substr(0, 400);
    return j;
}

inline std::string dump(json_t* j) {
    wallet::MallocPtr<char> text(json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS));
    return text ? text.get() : "";
}

inline std::string str(json_t* object, const char* key) {
    json_t* v = json_object_get(object, key);
    return json_is_string(v) ? json_string_value(v) : (v == nullptr ? "<absent>" : dump(v));
}

inline std::string nginx_http_config() {
    return "server {\n"
           "    listen 127.0.0.1:{{PORT}};\n"
           "    client_max_body_size 1m;\n"
           "    client_body_buffer_size 64k;\n"
           "    location = /health { wallet_history_health; }\n"
           "    location = /metrics { jsonrpc_router_metrics; }\n"
           "    location / { wallet_history_api; }\n"
           "}\n";
}

// Holds an ACCESS EXCLUSIVE lock on the events table, so every statement
// reading it waits (an outside way to make the API's queries slow).
class TableLock {
public:
    explicit TableLock(harness::PostgresServer& pg) {
        auto conn = wallet::pg::connect(pg.superuser_url("wallet"));
        if (!conn) throw std::runtime_error(conn.error());
        conn_ = std::move(conn).value();
        auto r = wallet::pg::exec(conn_.get(), "BEGIN; LOCK TABLE wallet_operation_events IN ACCESS EXCLUSIVE MODE");
        if (!r) throw std::runtime_error(r.error());
    }
    void release() {
        if (conn_) (void)wallet::pg::exec(conn_.get(), "COMMIT");
        conn_.reset();
    }
    ~TableLock() { release(); }

private:
    wallet::PgConnPtr conn_;
};

inline int api_statements_waiting_on_locks(harness::PostgresServer& pg) {
    return std::stoi(pg.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wallet_history_api' "
                              "AND wait_event_type = 'Lock'").at(0));
}

// PostgreSQL provisioned with the schema, and nginx serving the API from it.
class ApiStack {
public:
    // The schema of the given version (an older store, upgrade tests) or the latest.
    explicit ApiStack(std::optional<int> schema_version = std::nullopt) { settings_ = pg_.provision("wallet", schema_version); }

    // Starts (or restarts) nginx; `env` adds to / overrides the database env;
    // `http_config` replaces the API's own server (nginx_http_config()).
    void start_nginx(const std::map<std::string, std::string>& env = {}, int workers = 1,
                     const std::string& http_config = nginx_http_config()) {
        nginx_.reset();
        harness::NginxServer::Options options;
        options.http_config = http_config;
        options.workers = workers;
        options.env = pg_.env();
        options.env.erase("DB_PASSWORD");
        options.env["WALLET_API_RATE_RPS"] = "0";  // tests that limit say so
        for (const auto& [k, v] : env) options.env[k] = v;
        nginx_ = std::make_unique<harness::NginxServer>(options);
    }

    harness::PostgresServer& pg() { return pg_; }
    const wallet::Settings& settings() const { return settings_; }
    harness::NginxServer& nginx() { return *nginx_; }

    HttpResponse post(const std::string& body, std::vector<std::string> headers = {}) {
        return harness::http_post_json(nginx_->url("/"), body, std::move(headers));
    }

    // A JSON-RPC call; the whole parsed response.
    JsonPtr call(const std::string& method, const std::string& params_json = "{}") {
        auto response = post(R"({"jsonrpc":"2.0","id":7,"method":")" + method + R"(","params":)" + params_json + "}");
        EXPECT_EQ(response.status, 200) << response.body;
        return parse_json(response.body);
    }

    // The result of a call that must succeed.
    JsonPtr result(const std::string& method, const std::string& params_json = "{}") {
        JsonPtr response = call(method, params_json);
        json_t* result = json_object_get(response.get(), "result");
        EXPECT_NE(result, nullptr) << dump(response.get());
        return result != nullptr ? wallet::json_ref(result) : JsonPtr(json_object());
    }

    void set_checkpoint(long block, const std::string& time) {
        pg_.query("INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (" + std::to_string(block) +
                  ", 'id', '" + time + "') ON CONFLICT (singleton) DO UPDATE SET block_num = EXCLUDED.block_num, "
                  "block_time = EXCLUDED.block_time");
    }

    // A worker the test kills itself is not a crash: the master's report of
    // it is left out of the fatal lines.
    void expect_killed_workers() { killed_workers_expected_ = true; }

    ~ApiStack() {
        if (nginx_) {
            auto fatal = nginx_->fatal_log_lines();
            if (killed_workers_expected_) {
                std::erase_if(fatal, [](const std::string& line) {
                    return line.find("exited on signal 9") != std::string::npos;
                });
            }
            EXPECT_TRUE(fatal.empty()) << fatal.front();
        }
    }

private:
    harness::PostgresServer pg_;
    wallet::Settings settings_;
    std::unique_ptr<harness::NginxServer> nginx_;
    bool killed_workers_expected_ = false;
};

}  // namespace api_test
