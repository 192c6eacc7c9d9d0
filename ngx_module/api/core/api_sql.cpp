#include "api_sql.hpp"

#include <map>

#include "wallet/decoder_version.hpp"
#include "wallet/wallet_event.hpp"
#include "wallet/operation_types.hpp"

namespace wallet::api {

namespace {

// The event columns in page_column order. Fields cost the worker's libpq
// more than anything else about a row (a length, an allocation and a copy
// each), so a row carries only what differs from row to row, in as few
// fields as PostgreSQL forms without more work per row: the op type and
// role codes as one number (the worker knows both lists), op_in_trx and
// virtual_op as one (callgrind: 1,400 to 4,500 fewer worker instructions
// per page than as two fields). `assets` is NULL when the amount columns hold it
// (wallet_derived_assets), the compact triples of wallet_assets_json (stored
// as a template's amounts since migration 0009: wallet_assets_triples spells
// them out), or JSON printed as jsonb; the writer renders it. trx_id is
// stored as bytes (migration 0007).
constexpr const char* kEventColumns =
    "e.op_type * 100 + e.role AS kind, e.block_num, e.block_seq, wallet_trx_id_text(e.trx_id) AS trx_id,"
    " e.virtual_op::bigint * 4294967296 + e.op_in_trx AS op_place, extract(epoch FROM e.ts)::bigint AS epoch,"
    " e.amount::text AS amount, e.symbol, e.vesting_amount::text AS vesting_amount, e.vesting_symbol,"
    " e.counterparty, e.memo, e.author, e.permlink,"
    " CASE WHEN e.assets LIKE '[%' THEN e.assets::jsonb::text ELSE wallet_assets_triples(e.assets) END AS assets";

// The indexed block of a page or totals answer: the store's state row `s`
// (read once per statement), which the writers keep (migration 0014).
constexpr const char* kPageIndexedBlock = "s.indexed_block";

// The account of a page: the id the worker remembered for the name ($8,
// with the store generation it came with, $9) when the store is still that
// one, else the name's ($1) id looked up (a hash index on the name, migration
// 0010: a bucket page and the row, two buffers); an unknown name has none and
// matches no row. The lookup is an init plan, run only when the CASE needs
// it. The one state row (migration 0013) is read once per page.
const std::string kPageState =
    std::string("WITH page AS (SELECT s.generation, CASE WHEN s.generation = $9 THEN $8"
                " ELSE (SELECT id FROM wallet_accounts WHERE name = $1) END AS account_id, ") +
    kPageIndexedBlock + " AS indexed_block FROM wallet_store_state s) ";

constexpr const char* kAccount = " e.account_id = (SELECT account_id FROM page)";

// Window ($2 inclusive, $3 exclusive) and keyset position ($4..$6): rows
// strictly older than the cursor's row. Block times never decrease, so the
// keyset (block_num, block_seq, role) orders rows as (timestamp, block_num,
// block_seq, role) does, and a window is a block range (looked up only when
// the window has that bound) plus the exact time test. The indexes hold
// (block_seq, role) folded into block_seq * 100 + role (migration 0007:
// roles are codes below 100), which orders rows exactly as the pair does.
constexpr const char* kWindowAndKeyset =
    " e.ts >= $2 AND e.ts < $3"
    " AND e.block_num >= CASE WHEN $2 = '-infinity' THEN 0 ELSE wallet_first_block_at($2) END"
    " AND e.block_num < CASE WHEN $3 = 'infinity' THEN 2147483647 ELSE wallet_first_block_at($3) END"
    " AND (e.block_num, e.block_seq * 100 + e.role) < ($4, $5 * 100 + coalesce(wallet_role_code($6), 0))"
    " ORDER BY e.block_num DESC, e.block_seq * 100 + e.role DESC LIMIT $7";

// $8, $9: the remembered account id and its generation (NULL: none).
constexpr const char* kPageParams = "text, timestamptz, timestamptz, integer, integer, text, integer, integer, bigint";

// Merged event rows (of several index ranges) in keyset order.
constexpr const char* kMergedOrder = ") AS x ORDER BY x.block_num DESC, x.block_seq DESC, x.kind % 100 DESC LIMIT $7";

// First the page's header, one row even for an empty page, in the event
// columns (page_header), then the events. The header holds the page-wide
// values once: indexed_block, the account id and generation used, and for
// a next page stored_block, the highest block this database holds (the
// indexer's checkpoint, or a block stored above it: a block's rows and its
// wallet_blocks row commit together): a standby that has not replayed the
// cursor's block yet says so by a stored_block below it. Not indexed_block,
// which a backfill loading below the checkpoint holds back while newer
// blocks are stored. Only a standby's answer is judged by it, and it costs
// a next page three to four buffers: a primary and a first page ($4 is the
// largest integer) skip it.
std::string with_page_header(const std::string& events_sql) {
    return kPageState +
           "SELECT NULL::integer AS kind, p.indexed_block AS block_num,"
           " CASE WHEN $4 < 2147483647 AND pg_is_in_recovery() THEN (SELECT greatest((SELECT block_num FROM indexer_checkpoint),"
           " (SELECT max(block_num) FROM wallet_blocks))) END AS block_seq, NULL::text AS trx_id,"
           " p.account_id::bigint AS op_place, p.generation AS epoch, NULL::text, NULL::text, NULL::text, NULL::text,"
           " NULL::text, NULL::text, NULL::text, NULL::text, NULL::text FROM page p"
           " UNION ALL (" +
           events_sql + ")";
}

// The reward events of the account ($1) in [from, to), for the parts of
// days a totals window cuts.
std::string reward_events_sql(const char* from, const char* to) {
    return std::string("  SELECT op_type, vesting_amount, assets FROM wallet_events"
                       "   WHERE account_id = (SELECT id FROM account) AND wallet_is_reward_type(op_type)"
                       "     AND block_num >= wallet_first_block_at(") + from + ") AND block_num < wallet_first_block_at(" +
           to + ")     AND ts >= " + from + " AND ts < " + to;
}

// Reward totals: the aggregate rows of days $2..$3 (inclusive; the lifetime
// row is day 'infinity'), plus, with partial days, the events of [$4, $5) and
// [$6, $7) themselves. Whole days only (lifetime, or a window on day
// boundaries) need no look at the events at all.
// The account of a totals statement, as a page's (kPageState): the
// remembered id (parameter `id`) while the generation (`generation`) is the
// store's, else the name's.
std::string totals_account(const char* id, const char* generation) {
    return std::string("account AS (SELECT s.generation, CASE WHEN s.generation = ") + generation + " THEN " + id +
           " ELSE (SELECT id FROM wallet_accounts WHERE name = $1) END AS id, " + kPageIndexedBlock +
           " AS indexed_block FROM wallet_store_state s)";
}

std::string totals_sql(bool with_partial_days) {
    std::string raw_vesting;
    std::string raw_liquid;
    std::string sql;
    if (with_partial_days) {
        sql = "(text, date, date, timestamptz, timestamptz, timestamptz, timestamptz, integer, bigint) AS "
              "WITH " + totals_account("$8", "$9") + ", raw AS (" +
              reward_events_sql("$4", "$5") + "  UNION ALL" + reward_events_sql("$6", "$7") + "), ";
        raw_vesting = "  UNION ALL SELECT op_type, 1, vesting_amount FROM raw";
        raw_liquid = "  UNION ALL SELECT r.op_type, l.symbol, l.amount FROM raw r,"
                     " wallet_reward_liquid_parts(coalesce(wallet_assets_json(r.assets), '[]')) l";
    } else {
        sql = "(text, date, date, integer, bigint) AS WITH " + totals_account("$4", "$5") + ", ";
    }
    sql += "vesting AS ("
           "  SELECT op_type, event_count, vesting_sum FROM wallet_reward_daily"
           "   WHERE account_id = (SELECT id FROM account) AND day BETWEEN $2 AND $3" +
           raw_vesting +
           "), liquid AS ("
           "  SELECT op_type, symbol, amount_sum FROM wallet_reward_liquid_daily"
           "   WHERE account_id = (SELECT id FROM account) AND day BETWEEN $2 AND $3" +
           raw_liquid +
           ")"
           " SELECT 0 AS kind, wallet_op_type_name(op_type), NULL AS symbol, sum(event_count)::bigint AS n,"
           " sum(vesting_sum)::text AS total FROM vesting GROUP BY op_type"
           " UNION ALL SELECT 1, wallet_op_type_name(op_type), symbol, NULL, sum(amount_sum)::text FROM liquid"
           " GROUP BY op_type, symbol"
           // The account id and generation used, as texts in symbol and total.
           " UNION ALL SELECT 2, NULL, a.id::text, a.indexed_block, a.generation::text FROM account a";
    return sql;
}

// get_balances (api_balances.hpp): the rows of wallet_balance_run_rows
// (migration 0024; 0018 says what they are).
// How far a database's replay is behind, in seconds (numeric): now() minus
// the commit time of the last transaction a standby replayed; 0 on a primary
// and on a standby that replayed all the WAL it received (an idle primary
// commits nothing new: its standbys are not behind).
constexpr const char* kReplayDelaySeconds =
    "CASE WHEN pg_is_in_recovery() AND pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn()"
    " THEN greatest(0, extract(epoch FROM now() - pg_last_xact_replay_timestamp())) ELSE 0 END";

// $4, $5: the remembered account id and its generation (migration 0030; NULL: none).
constexpr const char* kBalancesSql =
    "(text, integer, smallint, integer, bigint) AS SELECT * FROM wallet_balance_run_rows($1, $2, $3, $4, $5)";
// get_balances at a time: the same rows and where the time falls (migrations 0022, 0024).
constexpr const char* kBalancesAtTimeSql =
    "(text, timestamptz, smallint) AS SELECT * FROM wallet_balance_run_rows_at_time($1, $2, $3)";
// get_balance_history and get_balance_aggregation (api_balance_history.hpp):
// the rows of migration 0030's (pages from the change runs; $8, $9 the
// remembered account id and its generation) and 0024's functions (0020 says
// what they are).
constexpr const char* kBalanceHistorySql =
    "(text, integer, integer, timestamptz, timestamptz, integer, smallint, integer, bigint) AS"
    " SELECT * FROM wallet_balance_history_page_rows($1, $2, $3, $4, $5, $6, $7, $8, $9)";
constexpr const char* kBalancePeriodsSql =
    "(text, text, timestamptz, timestamptz, integer, smallint) AS"
    " SELECT * FROM wallet_balance_period_run_rows($1, $2, $3, $4, $5, $6)";

const std::map<std::string, std::string>& statements() {
    static const std::map<std::string, std::string> all = [] {
        std::map<std::string, std::string> s;
        // Spec 000's types only (the default): one range of the keyset index.
        // Spec 000's types only (the default): one range of the keyset index.
        s["wh_page"] = std::string("(") + kPageParams + ") AS " +
                       with_page_header(std::string("SELECT ") + kEventColumns + " FROM wallet_events e WHERE" +
                                        kAccount + " AND NOT e.wide AND" + kWindowAndKeyset);
        // Every type (scope "all"): the two ranges of the index, merged.
        s["wh_page_all"] =
            std::string("(") + kPageParams + ") AS " +
            with_page_header(std::string("SELECT x.* FROM (VALUES (false), (true)) AS s(wide) CROSS JOIN LATERAL (SELECT ") +
                             kEventColumns + " FROM wallet_events e WHERE" + kAccount + " AND e.wide = s.wide AND" +
                             kWindowAndKeyset + kMergedOrder);
        s["wh_page_type"] = std::string("(") + kPageParams + ", smallint) AS " +
                            with_page_header(std::string("SELECT ") + kEventColumns + " FROM wallet_events e WHERE" +
                                             kAccount + " AND e.op_type = $10 AND" + kWindowAndKeyset);
        // Several op types: one index range per type, merged. Each type's scan
        // stops after a page, so rare types never scan the whole account.
        s["wh_page_types"] =
            std::string("(") + kPageParams + ", smallint[]) AS " +
            with_page_header(std::string("SELECT x.* FROM unnest($10) AS t(code) CROSS JOIN LATERAL (SELECT ") +
                             kEventColumns + " FROM wallet_events e WHERE" + kAccount +
                             " AND e.op_type = t.code AND" + kWindowAndKeyset + kMergedOrder);
        // Push (ngx_http_wallet_history_push.hpp): the events of the accounts ($1) after a
        // position ($2 block_num, $3 block_seq * 100 + role, $4 the
        // account's name: the key orders rows of one block and op of
        // several accounts too), oldest first, at most $5; each account's
        // two ranges of the keyset index read at most a page. Columns:
        // page_column's, then push_column's.
        s["wh_push"] =
            std::string("(text[], integer, integer, text, integer) AS SELECT x.* FROM wallet_accounts a"
                        " CROSS JOIN (VALUES (false), (true)) AS w(wide) CROSS JOIN LATERAL (SELECT ") +
            kEventColumns +
            ", a.name AS account, e.wide FROM wallet_events e WHERE e.account_id = a.id AND e.wide = w.wide"
            " AND (e.block_num, e.block_seq * 100 + e.role) >= ($2, $3)"
            " ORDER BY e.block_num, e.block_seq * 100 + e.role LIMIT $5 + 1) x"
            " WHERE a.name = ANY($1) AND (x.block_num, x.block_seq * 100 + x.kind % 100, x.account COLLATE \"C\")"
            " > ($2, $3, $4 COLLATE \"C\")"
            " ORDER BY x.block_num, x.block_seq * 100 + x.kind % 100, x.account COLLATE \"C\" LIMIT $5";
        // wh_push's rows read by block instead of by account, of every
        // account: the events of blocks $1..$5 above the keyset ($1, $2, $3),
        // oldest first, at most $4, each with its account's name (a probe of
        // the accounts' key per row; the worker skips the rows of accounts
        // nobody subscribed to). Naming the subscribed accounts here cost a
        // comparison with each of them per account row read (a thousand
        // names: tens of milliseconds a fetch). Same columns, order and
        // keyset; the live fetch's choice when its lowest position is close
        // to the notified head (ngx_http_wallet_history_push.cpp, kRangeBlocks).
        s["wh_push_range"] =
            std::string("(integer, integer, text, integer, integer) AS SELECT x.* FROM (SELECT ") + kEventColumns +
            ", (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id) AS account, e.wide"
            " FROM wallet_events e WHERE e.block_num BETWEEN $1 AND $5"
            " AND (e.block_num, e.block_seq * 100 + e.role) >= ($1, $2)) x"
            " WHERE (x.block_num, x.block_seq * 100 + x.kind % 100, x.account COLLATE \"C\") > ($1, $2, $3 COLLATE \"C\")"
            " ORDER BY x.block_num, x.block_seq * 100 + x.kind % 100, x.account COLLATE \"C\" LIMIT $4";
        // Where a subscription without a cursor starts: after every event
        // of the highest block stored (a block's rows commit together, and
        // the checkpoint's block may have none).
        s["wh_push_head"] = "AS SELECT greatest((SELECT block_num FROM indexer_checkpoint),"
                            " (SELECT max(block_num) FROM wallet_blocks), 0)";
        // The push listener's connection (migration 0025), and the highest
        // block a subscription with irreversible_only may deliver (0027).
        s["wh_push_listen"] = "AS SELECT wallet_listen_events(), wallet_push_irreversible()";
        s["wh_balances"] = kBalancesSql;
        s["wh_balances_at_time"] = kBalancesAtTimeSql;
        s["wh_balance_history"] = kBalanceHistorySql;
        s["wh_balance_periods"] = kBalancePeriodsSql;
        s["wh_totals"] = totals_sql(true);
        s["wh_totals_days"] = totals_sql(false);
        // Columns: status_column order. Indexed block, what is loading and
        // the outdated run come from the small state tables (migration 0006).
        s["wh_status"] =
            "(bigint, smallint) AS "
            "SELECT s.indexed_block, s.indexed_epoch,"
            " n.head_block, extract(epoch FROM n.head_block_time)::bigint,"
            " n.observed_at IS NOT NULL AND now() - n.observed_at <= $1 * interval '1 millisecond',"
            " extract(epoch FROM now())::bigint,"
            " s.loading_from, s.loading_to, s.loading_blocks, s.outdated_from, s.outdated_to,"
            // A standby's own delay: the rows above are as old as its replay.
            " (" + std::string(kReplayDelaySeconds) + ")::bigint,"
            " CASE WHEN s.loading_from IS NOT NULL THEN wallet_loading_shards_from() END"  // migration 0023
            " FROM wallet_store_status($2) AS s LEFT JOIN node_observation n ON true";
        // Columns: database_column order. No table: any database of the list
        // answers it, whatever its store holds.
        s["wh_database"] = "AS SELECT pg_is_in_recovery(), ((" + std::string(kReplayDelaySeconds) + ") * 1000000)::bigint";
        return s;
    }();
    return all;
}

void append_remembered(StatementCall& call, const std::optional<RememberedAccount>& remembered) {
    if (remembered) {
        call.params.push_back(std::to_string(remembered->id));
        call.params.push_back(std::to_string(remembered->generation));
    } else {
        call.params.insert(call.params.end(), {std::nullopt, std::nullopt});
    }
}

std::string iso_or(const std::optional<Timestamp>& t, const char* fallback) {
    return t ? t->to_iso_z() : std::string(fallback);
}

// A bound as a parameter: SQL NULL when there is none.
std::optional<std::string> iso(const std::optional<Timestamp>& t) {
    return t ? std::optional(t->to_iso_z()) : std::nullopt;
}

constexpr std::int64_t kSecondsPerDay = 86400;

std::int64_t floor_day(std::int64_t seconds) { return seconds / kSecondsPerDay * kSecondsPerDay; }
std::int64_t ceil_day(std::int64_t seconds) { return floor_day(seconds + kSecondsPerDay - 1); }

std::string day_text(std::int64_t seconds) {
    auto t = Timestamp::from_seconds(seconds);
    return t ? t->to_iso_z().substr(0, 10) : std::string("infinity");
}

std::string time_text(std::int64_t seconds) {
    auto t = Timestamp::from_seconds(seconds);
    return t ? t->to_iso_z() : std::string("infinity");
}

}  // namespace

const std::map<std::string, std::string>& prepared_statements() { return statements(); }

StatementCall page_statement(const PageQuery& query, const std::optional<RememberedAccount>& remembered) {
    StatementCall call;
    call.params = {query.account, iso_or(query.from, "-infinity"), iso_or(query.to, "infinity")};
    if (query.after) {
        // The cursor's timestamp is implied by its block (block times never
        // decrease); cursors keep it, so that they stay what they were.
        call.params.push_back(std::to_string(query.after->block_num));
        call.params.push_back(std::to_string(query.after->block_seq));
        call.params.push_back(query.after->role);
    } else {
        // Every stored block is below the largest integer.
        call.params.insert(call.params.end(), {"2147483647", "0", ""});
    }
    // One row more than the page tells whether another page exists.
    call.params.push_back(std::to_string(query.limit + 1));
    append_remembered(call, remembered);
    if (query.op_types.empty()) {
        call.name = query.all_types ? "wh_page_all" : "wh_page";
    } else if (query.op_types.size() == 1) {
        call.name = "wh_page_type";
        call.params.push_back(std::to_string(operation_type_id(query.op_types.front())));
    } else {
        call.name = "wh_page_types";
        std::string array = "{";
        for (std::size_t i = 0; i < query.op_types.size(); ++i) {
            if (i > 0) array += ',';
            array += std::to_string(operation_type_id(query.op_types[i]));  // validated names
        }
        array += '}';
        call.params.push_back(array);
    }
    return call;
}

StatementCall totals_statement(const PageQuery& query, const std::optional<RememberedAccount>& remembered) {
    // Aggregate days are inclusive bounds; ("infinity", "infinity") is the
    // lifetime row and ("infinity", "-infinity") selects no aggregate row.
    // Finite ranges end at 9999-12-31 (the last day a request can name), so
    // they never include the lifetime row.
    constexpr const char* kNone = "infinity";
    std::string day_first = "infinity";
    std::string day_last = "infinity";
    std::string raw1_from = kNone, raw1_to = kNone, raw2_from = kNone, raw2_to = kNone;
    if (query.from || query.to) {
        const std::int64_t whole_from = query.from ? ceil_day(query.from->seconds()) : -1;
        const std::int64_t whole_to = query.to ? floor_day(query.to->seconds()) : -1;
        day_first = query.from ? day_text(whole_from) : "-infinity";
        day_last = query.to ? day_text(whole_to - kSecondsPerDay) : "9999-12-31";
        if (query.from && query.to && whole_from >= whole_to) {
            // No whole day inside the window: all of it from the events.
            day_first = "infinity";
            day_last = "-infinity";
            raw1_from = query.from->to_iso_z();
            raw1_to = query.to->to_iso_z();
        } else {
            // The parts of days before the first and after the last whole day.
            if (query.from && query.from->seconds() < whole_from) {
                raw1_from = query.from->to_iso_z();
                raw1_to = time_text(whole_from);
            }
            if (query.to && whole_to < query.to->seconds()) {
                raw2_from = time_text(whole_to);
                raw2_to = query.to->to_iso_z();
            }
        }
    }
    StatementCall call;
    if (raw1_from == kNone && raw2_from == kNone) {
        call.name = "wh_totals_days";
        call.params = {query.account, day_first, day_last};
    } else {
        call.name = "wh_totals";
        call.params = {query.account, day_first, day_last, raw1_from, raw1_to, raw2_from, raw2_to};
    }
    append_remembered(call, remembered);
    return call;
}

StatementCall balances_statement(const BalanceQuery& query, const std::optional<RememberedAccount>& remembered) {
    if (query.time) return StatementCall{"wh_balances_at_time", {query.account, iso(query.time), std::to_string(kDecoderVersion)}};
    StatementCall call{"wh_balances",
                       {query.account, query.block ? std::optional(std::to_string(*query.block)) : std::nullopt,
                        std::to_string(kDecoderVersion)}};
    append_remembered(call, remembered);
    return call;
}

StatementCall balance_history_statement(const BalanceHistoryQuery& query, const std::optional<RememberedAccount>& remembered) {
    std::string before_block = "2147483647", before_key = "0";  // every stored block is below the largest integer
    if (query.after) {
        const auto role = parse_role(query.after->role);
        before_block = std::to_string(query.after->block_num);
        before_key = std::to_string(std::int64_t{query.after->block_seq} * 100 + (role ? role_code(*role) : 0));
    }
    // One event more than the page looks at tells whether another page exists.
    StatementCall call{"wh_balance_history",
                       {query.account, before_block, before_key, iso(query.from), iso(query.to),
                        std::to_string(balance_history_scan(query.limit)), std::to_string(kDecoderVersion)}};
    append_remembered(call, remembered);
    return call;
}

StatementCall balance_periods_statement(const BalanceHistoryQuery& query, std::int64_t max_periods) {
    return StatementCall{"wh_balance_periods",
                         {query.account, std::string(granularity_name(query.granularity)), iso(query.from), iso(query.to),
                          std::to_string(max_periods), std::to_string(kDecoderVersion)}};
}

StatementCall database_statement() { return StatementCall{"wh_database", {}}; }

StatementCall status_statement(std::int64_t node_max_stall_ms) {
    return StatementCall{"wh_status", {std::to_string(node_max_stall_ms), std::to_string(kDecoderVersion)}};
}

}  // namespace wallet::api
