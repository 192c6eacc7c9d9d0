#include "api_response.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>
#include <vector>

#include "api_sql.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/json_util.hpp"

namespace wallet::api {

namespace {

using json::append_quoted;

bool is_null(PGresult* rows, int row, int column) { return PQgetisnull(rows, row, column) != 0; }

std::string_view text_of(PGresult* rows, int row, int column) {
    return {PQgetvalue(rows, row, column), static_cast<std::size_t>(PQgetlength(rows, row, column))};
}

std::int64_t integer_of(PGresult* rows, int row, int column) {
    std::string_view text = text_of(rows, row, column);
    std::int64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

void append_key(std::string& out, std::string_view key) {
    append_quoted(out, key);
    out += ':';
}

void append_text_or_null(std::string& out, PGresult* rows, int row, int column) {
    if (is_null(rows, row, column)) {
        out += "null";
    } else {
        append_quoted(out, text_of(rows, row, column));
    }
}

void append_amount_or_null(std::string& out, PGresult* rows, int row, int amount_column, int symbol_column) {
    if (is_null(rows, row, amount_column)) {
        out += "null";
        return;
    }
    std::string_view symbol = is_null(rows, row, symbol_column) ? std::string_view() : text_of(rows, row, symbol_column);
    append_quoted(out, format_amount(text_of(rows, row, amount_column), symbol));
}

std::string iso_of_epoch(std::int64_t seconds) {
    auto t = Timestamp::from_seconds(seconds);
    return t ? t->to_iso_z() : std::string("1970-01-01T00:00:00Z");
}

void append_indexer(std::string& out, std::int64_t indexed_block) {
    out += R"("indexer":{"indexed_block":)";
    out += std::to_string(indexed_block);
    out += '}';
}

void append_event(std::string& out, PGresult* rows, int row) {
    namespace c = page_column;
    const std::string_view op_type = text_of(rows, row, c::kOpType);
    out += '{';
    append_key(out, "account");
    append_quoted(out, text_of(rows, row, c::kAccount));
    out += ',';
    append_key(out, "role");
    append_quoted(out, text_of(rows, row, c::kRole));
    out += ',';
    append_key(out, "op_type");
    append_quoted(out, op_type);
    out += ",\"block_num\":";
    out += text_of(rows, row, c::kBlockNum);
    out += ",\"block_seq\":";
    out += text_of(rows, row, c::kBlockSeq);
    out += ",\"trx_id\":";
    // Virtual operations have no transaction of their own (decisions.md 1).
    if (is_virtual_op_type(op_type)) {
        out += "null";
    } else {
        append_text_or_null(out, rows, row, c::kTrxId);
    }
    out += ",\"op_in_trx\":";
    out += text_of(rows, row, c::kOpInTrx);
    out += ",\"virtual_op\":";
    out += text_of(rows, row, c::kVirtualOp);
    out += ",\"timestamp\":";
    append_quoted(out, iso_of_epoch(integer_of(rows, row, c::kEpoch)));
    out += ",\"amount\":";
    append_amount_or_null(out, rows, row, c::kAmount, c::kSymbol);
    out += ",\"symbol\":";
    append_text_or_null(out, rows, row, c::kSymbol);
    out += ",\"vesting_amount\":";
    append_amount_or_null(out, rows, row, c::kVestingAmount, c::kVestingSymbol);
    out += ",\"vesting_symbol\":";
    append_text_or_null(out, rows, row, c::kVestingSymbol);
    out += ",\"counterparty\":";
    append_text_or_null(out, rows, row, c::kCounterparty);
    out += ",\"memo\":";
    append_text_or_null(out, rows, row, c::kMemo);
    out += ",\"author\":";
    append_text_or_null(out, rows, row, c::kAuthor);
    out += ",\"permlink\":";
    append_text_or_null(out, rows, row, c::kPermlink);
    // `assets` is jsonb printed by PostgreSQL: valid JSON, amounts as strings.
    out += ",\"assets\":";
    if (is_null(rows, row, c::kAssets)) {
        out += "[]";
    } else {
        out += text_of(rows, row, c::kAssets);
    }
    out += '}';
}

void append_window(std::string& out, const PageQuery& query) {
    if (query.from) {
        out += ",\"from\":";
        append_quoted(out, query.from->to_iso_z());
    }
    if (query.to) {
        out += ",\"to\":";
        append_quoted(out, query.to->to_iso_z());
    }
}

}  // namespace

std::string format_amount(std::string_view decimal_text, std::string_view symbol) {
    const std::size_t precision = symbol == "VESTS" ? 6 : 3;
    // NUMERIC text is [-]digits[.digits]: rescaled by trimming zeros or padding.
    std::string_view digits = decimal_text.substr(decimal_text.empty() || decimal_text[0] != '-' ? 0 : 1);
    const std::size_t point = digits.find('.');
    const std::string_view whole = digits.substr(0, point);
    const std::string_view fraction = point == std::string_view::npos ? std::string_view() : digits.substr(point + 1);
    auto all_digits = [](std::string_view text) {
        return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (whole.empty() || !all_digits(whole) || !all_digits(fraction)) return std::string(decimal_text);
    if (fraction.size() > precision &&
        fraction.find_first_not_of('0', precision) != std::string_view::npos) {
        return std::string(decimal_text);  // never drop a non-zero digit
    }
    std::string out(decimal_text.substr(0, decimal_text.size() - digits.size()));
    out += whole;
    out += '.';
    out += fraction.substr(0, std::min(fraction.size(), precision));
    out.append(precision - std::min(fraction.size(), precision), '0');
    return out;
}

std::string page_result(Method method, const PageQuery& query, PGresult* rows, const CursorCodec& cursors) {
    namespace c = page_column;
    const int total = PQntuples(rows);
    const std::int64_t indexed_block = total > 0 && !is_null(rows, 0, c::kIndexedBlock) ? integer_of(rows, 0, c::kIndexedBlock) : 0;
    // An empty page comes back as one row of NULL event columns.
    int events = total;
    if (events == 1 && is_null(rows, 0, c::kAccount)) events = 0;
    const bool more = events > query.limit;
    if (more) events = static_cast<int>(query.limit);

    std::string out;
    out.reserve(static_cast<std::size_t>(events) * 420 + 128);
    out += '{';
    append_key(out, "account");
    append_quoted(out, query.account);
    out += ",\"items\":[";
    for (int row = 0; row < events; ++row) {
        if (row > 0) out += ',';
        append_event(out, rows, row);
    }
    out += "],\"next_cursor\":";
    if (more) {
        const int last = events - 1;
        CursorPosition position;
        auto ts = Timestamp::from_seconds(integer_of(rows, last, c::kEpoch));
        if (ts) position.timestamp = *ts;
        position.block_num = integer_of(rows, last, c::kBlockNum);
        position.block_seq = static_cast<std::int32_t>(integer_of(rows, last, c::kBlockSeq));
        position.role = std::string(text_of(rows, last, c::kRole));
        append_quoted(out, cursors.encode(position, query.account, query_fingerprint(method, query)));
    } else {
        out += "null";
    }
    out += ',';
    append_indexer(out, indexed_block);
    out += '}';
    return out;
}

std::string totals_result(const PageQuery& query, PGresult* rows) {
    struct Totals {
        std::int64_t count = 0;
        std::string vesting = "0";
        std::vector<std::pair<std::string, std::string>> liquid;  // symbol, amount
    };
    std::map<std::string, Totals, std::less<>> by_type;
    for (const char* type : {"author_reward", "curation_reward", "comment_benefactor_reward"}) by_type[type];
    std::int64_t indexed_block = 0;
    for (int row = 0; row < PQntuples(rows); ++row) {
        const std::int64_t kind = integer_of(rows, row, 0);
        if (kind == 2) {
            if (!is_null(rows, row, 3)) indexed_block = integer_of(rows, row, 3);
            continue;
        }
        auto it = by_type.find(text_of(rows, row, 1));
        if (it == by_type.end()) continue;
        if (kind == 0) {
            it->second.count = integer_of(rows, row, 3);
            if (!is_null(rows, row, 4)) it->second.vesting = std::string(text_of(rows, row, 4));
        } else {
            it->second.liquid.emplace_back(std::string(text_of(rows, row, 2)), std::string(text_of(rows, row, 4)));
        }
    }
    std::string out = "{";
    append_key(out, "account");
    append_quoted(out, query.account);
    append_window(out, query);
    out += ",\"totals\":{";
    bool first = true;
    for (auto& [type, totals] : by_type) {
        if (!first) out += ',';
        first = false;
        append_key(out, type);
        out += "{\"vesting_amount\":";
        append_quoted(out, format_amount(totals.vesting, "VESTS"));
        out += ",\"vesting_symbol\":\"VESTS\",\"count\":";
        out += std::to_string(totals.count);
        // Additive (decisions.md 3): liquid payouts of these rewards per symbol.
        out += ",\"liquid\":[";
        std::sort(totals.liquid.begin(), totals.liquid.end());
        for (std::size_t i = 0; i < totals.liquid.size(); ++i) {
            if (i > 0) out += ',';
            out += "{\"amount\":";
            append_quoted(out, format_amount(totals.liquid[i].second, totals.liquid[i].first));
            out += ",\"symbol\":";
            append_quoted(out, totals.liquid[i].first);
            out += '}';
        }
        out += "]}";
    }
    out += "},";
    append_indexer(out, indexed_block);
    out += '}';
    return out;
}

std::string status_result(PGresult* rows) {
    // Columns: indexed block, its time, head block, its time, observation
    // fresh, now (epoch seconds).
    const bool indexed = PQntuples(rows) == 1 && !is_null(rows, 0, 0);
    const std::int64_t indexed_block = indexed ? integer_of(rows, 0, 0) : 0;
    const std::int64_t indexed_time = indexed ? integer_of(rows, 0, 1) : 0;
    const bool node_known = PQntuples(rows) == 1 && !is_null(rows, 0, 2) && text_of(rows, 0, 4) == "t";
    const std::int64_t now = PQntuples(rows) == 1 ? integer_of(rows, 0, 5) : 0;
    std::string out = "{\"indexed_block\":" + std::to_string(indexed_block) + ",\"indexed_time\":";
    append_quoted(out, iso_of_epoch(indexed_time));
    std::int64_t lag_seconds = now - indexed_time;
    if (node_known) {
        const std::int64_t head = integer_of(rows, 0, 2);
        out += ",\"head_block\":" + std::to_string(head);
        out += ",\"lag_blocks\":" + std::to_string(std::max<std::int64_t>(0, head - indexed_block));
        lag_seconds = integer_of(rows, 0, 3) - indexed_time;
    }
    out += ",\"lag_seconds\":" + std::to_string(std::max<std::int64_t>(0, lag_seconds));
    out += '}';
    return out;
}

std::string methods_result() {
    std::string out = "{\"methods\":[";
    const auto& names = method_names();
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += ',';
        append_quoted(out, names[i]);
    }
    out += "]}";
    return out;
}

}  // namespace wallet::api
