#include "api_sql.hpp"

#include <map>

#include "wallet/decoder_version.hpp"
#include "wallet/operation_types.hpp"

namespace wallet::api {

namespace {

// The event columns in page_column order (after indexed_block). Codes are
// named in SQL (inlined immutable functions); `assets` is NULL when the
// amount columns hold it (wallet_derived_assets), the compact triples of
// wallet_assets_json (stored as a template's amounts since migration 0009:
// wallet_assets_triples spells them out), or JSON printed as jsonb; the
// writer renders it.
// trx_id is stored as bytes (migration 0007).
constexpr const char* kEventColumns =
    "wallet_role_name(role) AS role, wallet_op_type_name(op_type) AS op_type, block_num, block_seq,"
    " wallet_trx_id_text(trx_id) AS trx_id,"
    " op_in_trx, virtual_op, extract(epoch FROM ts)::bigint AS epoch, amount::text AS amount, symbol,"
    " vesting_amount::text AS vesting_amount, vesting_symbol, counterparty, memo, author, permlink,"
    " CASE WHEN assets LIKE '[%' THEN assets::jsonb::text ELSE wallet_assets_triples(assets) END AS assets";

// The account's id; an unknown name matches no row. A hash index on the name
// (migration 0010) reads a bucket page and the row, where the unique btree
// would read its levels first.
constexpr const char* kAccount = " account_id = (SELECT id FROM wallet_accounts WHERE name = $1)";

// Window ($2 inclusive, $3 exclusive) and keyset position ($4..$6): rows
// strictly older than the cursor's row. Block times never decrease, so the
// keyset (block_num, block_seq, role) orders rows as (timestamp, block_num,
// block_seq, role) does, and a window is a block range (looked up only when
// the window has that bound) plus the exact time test. The indexes hold
// (block_seq, role) folded into block_seq * 100 + role (migration 0007:
// roles are codes below 100), which orders rows exactly as the pair does.
constexpr const char* kWindowAndKeyset =
    " ts >= $2 AND ts < $3"
    " AND block_num >= CASE WHEN $2 = '-infinity' THEN 0 ELSE wallet_first_block_at($2) END"
    " AND block_num < CASE WHEN $3 = 'infinity' THEN 2147483647 ELSE wallet_first_block_at($3) END"
    " AND (e.block_num, e.block_seq * 100 + e.role) < ($4, $5 * 100 + coalesce(wallet_role_code($6), 0))"
    // Qualified: a bare `role` would name the output column (the role's
    // name, text), and the generic plan would sort the whole account.
    " ORDER BY e.block_num DESC, e.block_seq * 100 + e.role DESC LIMIT $7";

constexpr const char* kPageParams = "text, timestamptz, timestamptz, integer, integer, text, integer";

// One row even for an empty page, so indexed_block always comes back (an
// init plan: computed once per page, not per row). A next page also returns
// stored_block, the highest block this database holds (the indexer's
// checkpoint, or a block stored above it: a block's rows and its
// wallet_blocks row commit together): a standby that has not replayed the
// cursor's block yet says so by a stored_block below it. Not indexed_block,
// which a backfill loading below the checkpoint holds back while newer
// blocks are stored. Only a standby's answer is judged by it, and it costs
// a next page three to four buffers: a primary and a first page ($4 is the
// largest integer) skip it.
std::string with_indexed_block(const std::string& page_sql) {
    return "SELECT (SELECT wallet_indexed_block()) AS indexed_block, e.*,"
           " CASE WHEN $4 < 2147483647 AND pg_is_in_recovery() THEN (SELECT greatest((SELECT block_num FROM indexer_checkpoint),"
           " (SELECT max(block_num) FROM wallet_blocks))) END AS stored_block"
           " FROM (SELECT 1) AS one LEFT JOIN LATERAL (" +
           page_sql + ") AS e ON true";
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
std::string totals_sql(bool with_partial_days) {
    std::string raw_vesting;
    std::string raw_liquid;
    std::string sql;
    if (with_partial_days) {
        sql = "(text, date, date, timestamptz, timestamptz, timestamptz, timestamptz) AS "
              "WITH account AS (SELECT id FROM wallet_accounts WHERE name = $1), raw AS (" +
              reward_events_sql("$4", "$5") + "  UNION ALL" + reward_events_sql("$6", "$7") + "), ";
        raw_vesting = "  UNION ALL SELECT op_type, 1, vesting_amount FROM raw";
        raw_liquid = "  UNION ALL SELECT r.op_type, l.symbol, l.amount FROM raw r,"
                     " wallet_reward_liquid_parts(coalesce(wallet_assets_json(r.assets), '[]')) l";
    } else {
        sql = "(text, date, date) AS WITH account AS (SELECT id FROM wallet_accounts WHERE name = $1), ";
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
           " UNION ALL SELECT 2, NULL, NULL, wallet_indexed_block(), NULL";
    return sql;
}

const std::map<std::string, std::string>& statements() {
    static const std::map<std::string, std::string> all = [] {
        std::map<std::string, std::string> s;
        // Spec 000's types only (the default): one range of the keyset index.
        s["wh_page"] = std::string("(") + kPageParams + ") AS " +
                       with_indexed_block(std::string("SELECT ") + kEventColumns + " FROM wallet_events e WHERE" +
                                          kAccount + " AND NOT wide AND" + kWindowAndKeyset);
        // Every type (scope "all"): the two ranges of the index, merged.
        s["wh_page_all"] =
            std::string("(") + kPageParams + ") AS " +
            with_indexed_block(std::string("SELECT x.* FROM (VALUES (false), (true)) AS s(wide) CROSS JOIN LATERAL (SELECT ") +
                               kEventColumns + " FROM wallet_events e WHERE" + kAccount +
                               " AND e.wide = s.wide AND" + kWindowAndKeyset +
                               ") AS x ORDER BY x.block_num DESC, x.block_seq DESC, wallet_role_code(x.role) DESC LIMIT $7");
        s["wh_page_type"] = std::string("(") + kPageParams + ", smallint) AS " +
                            with_indexed_block(std::string("SELECT ") + kEventColumns + " FROM wallet_events e WHERE" +
                                               kAccount + " AND op_type = $8 AND" + kWindowAndKeyset);
        // Several op types: one index range per type, merged. Each type's scan
        // stops after a page, so rare types never scan the whole account.
        s["wh_page_types"] =
            std::string("(") + kPageParams + ", smallint[]) AS " +
            with_indexed_block(std::string("SELECT x.* FROM unnest($8) AS t(code) CROSS JOIN LATERAL (SELECT ") +
                               kEventColumns + " FROM wallet_events e WHERE" + kAccount +
                               " AND e.op_type = t.code AND" + kWindowAndKeyset +
                               ") AS x ORDER BY x.block_num DESC, x.block_seq DESC, wallet_role_code(x.role) DESC LIMIT $7");
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
            // A standby's own delay: the rows above are as old as its replay
            // (0 on a primary, and on a standby that replayed all it received).
            " CASE WHEN pg_is_in_recovery() AND pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn()"
            " THEN greatest(0, extract(epoch FROM now() - pg_last_xact_replay_timestamp()))::bigint ELSE 0 END"
            " FROM wallet_store_status($2) AS s LEFT JOIN node_observation n ON true";
        return s;
    }();
    return all;
}

std::string iso_or(const std::optional<Timestamp>& t, const char* fallback) {
    return t ? t->to_iso_z() : std::string(fallback);
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

StatementCall page_statement(const PageQuery& query) {
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

StatementCall totals_statement(const PageQuery& query) {
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
    return call;
}

StatementCall status_statement(std::int64_t node_max_stall_ms) {
    return StatementCall{"wh_status", {std::to_string(node_max_stall_ms), std::to_string(kDecoderVersion)}};
}

}  // namespace wallet::api
