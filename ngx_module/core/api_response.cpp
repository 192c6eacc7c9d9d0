#include "api_response.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "api_sql.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/decoder.hpp"
#include "wallet/decoder_version.hpp"
#include "wallet/json_util.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet::api {

namespace {

using json::append_quoted;

bool is_null(PGresult* rows, int row, int column) { return PQgetisnull(rows, row, column) != 0; }

std::string_view text_of(PGresult* rows, int row, int column) {
    return {PQgetvalue(rows, row, column), static_cast<std::size_t>(PQgetlength(rows, row, column))};
}

std::int64_t integer_in(std::string_view text) {
    std::int64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

std::int64_t integer_of(PGresult* rows, int row, int column) { return integer_in(text_of(rows, row, column)); }

void append_key(std::string& out, std::string_view key) {
    append_quoted(out, key);
    out += ':';
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

// One column of a row as libpq holds it (text format).
struct Field {
    std::string_view text;
    bool null = true;
};

// The event columns of one row of a page statement, read from libpq once.
class EventRow {
public:
    EventRow(PGresult* rows, int row) {
        for (int column = page_column::kRole; column < page_column::kCount; ++column) {
            const int length = PQgetlength(rows, row, column);
            Field& f = fields_[static_cast<std::size_t>(column)];
            f.text = {PQgetvalue(rows, row, column), static_cast<std::size_t>(length)};
            // Only an empty value can be NULL.
            f.null = length == 0 && is_null(rows, row, column);
            text_bytes_ += static_cast<std::size_t>(length);
        }
    }
    const Field& operator[](int column) const { return fields_[static_cast<std::size_t>(column)]; }
    std::string_view text(int column) const { return (*this)[column].text; }
    std::size_t text_bytes() const { return text_bytes_; }

private:
    std::array<Field, page_column::kCount> fields_{};
    std::size_t text_bytes_ = 0;
};

// What a page needs to know again and again, worked out once per page: which
// op types are virtual (they have no transaction of their own, decisions.md
// 1), and the date part of timestamps (a page mostly spans a few days).
class PageMemo {
public:
    bool is_virtual(std::string_view op_type) {
        for (const auto& [type, answer] : op_types_) {
            if (type == op_type) return answer;
        }
        const bool answer = is_virtual_op_type(op_type);
        op_types_.emplace_back(op_type, answer);
        return answer;
    }

    // "YYYY-MM-DDTHH:MM:SSZ" of epoch seconds (the epoch itself when out of range).
    char* write_iso_z(char* out, std::int64_t epoch_seconds) {
        auto t = Timestamp::from_seconds(epoch_seconds);
        if (!t) return Timestamp().write_iso_z(out);
        const std::int64_t day = epoch_seconds / kSecondsPerDay;
        if (day != day_) {
            char text[Timestamp::kIsoZSize];
            Timestamp::from_seconds(day * kSecondsPerDay)->write_iso_z(text);
            std::memcpy(date_, text, sizeof date_);
            day_ = day;
        }
        std::memcpy(out, date_, sizeof date_);
        out += sizeof date_;
        const std::int64_t second_of_day = epoch_seconds - day * kSecondsPerDay;
        out = write_two_digits(out, second_of_day / 3600);
        *out++ = ':';
        out = write_two_digits(out, second_of_day / 60 % 60);
        *out++ = ':';
        out = write_two_digits(out, second_of_day % 60);
        *out++ = 'Z';
        return out;
    }

private:
    static constexpr std::int64_t kSecondsPerDay = 86400;
    static char* write_two_digits(char* out, std::int64_t value) {
        *out++ = static_cast<char>('0' + value / 10);
        *out++ = static_cast<char>('0' + value % 10);
        return out;
    }

    std::vector<std::pair<std::string_view, bool>> op_types_;
    std::int64_t day_ = -1;
    char date_[11] = {};  // "YYYY-MM-DDT"
};

// Writes a page through a raw pointer into a ResponseBuffer: each row first
// reserves an upper bound of its size (every text may at most grow sixfold
// when escaped), so the many small pieces need no capacity checks.
class RowWriter {
public:
    explicit RowWriter(char* at) : at_(at) {}
    char* end() const { return at_; }

    template <std::size_t N>
    void literal(const char (&text)[N]) {
        std::memcpy(at_, text, N - 1);
        at_ += N - 1;
    }
    void raw(std::string_view text) {
        if (text.empty()) return;  // its data pointer may be null
        std::memcpy(at_, text.data(), text.size());
        at_ += text.size();
    }
    void quoted(std::string_view text) { at_ = json::write_quoted(at_, text); }
    void quoted_or_null(const Field& f) {
        if (f.null) {
            literal("null");
        } else {
            quoted(f.text);
        }
    }
    void amount_or_null(const Field& amount, const Field& symbol) {
        if (amount.null) {
            literal("null");
            return;
        }
        *at_++ = '"';
        at_ = write_amount(at_, amount.text, symbol.null ? std::string_view() : symbol.text);
        *at_++ = '"';
    }
    void iso_time(PageMemo& memo, std::int64_t epoch_seconds) {
        *at_++ = '"';
        at_ = memo.write_iso_z(at_, epoch_seconds);
        *at_++ = '"';
    }

private:
    char* at_;
};

// Bytes of an event besides its texts: keys, punctuation, the padding of
// two amounts, the timestamp, and `assets` when it is derived (an amount and
// a symbol again).
constexpr std::size_t kEventOverhead = 640;

// Every text may at most grow sixfold when escaped, plus its quotes.
std::size_t event_bound(const EventRow& row) {
    return kEventOverhead + json::quoted_capacity(row.text_bytes()) + 2 * page_column::kCount;
}

// The compact triples as jsonb prints their list: the tokens need no escapes.
// The store writes whole triples; a list that is not is printed as none
// rather than as broken JSON.
void write_compact_assets(RowWriter& w, std::string_view compact) {
    std::array<std::string_view, 3> triple;
    std::size_t count = 0;
    for (std::string_view rest = compact; !rest.empty();) {
        const std::size_t end = rest.find(' ');
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        ++count;
    }
    w.literal("[");
    if (count % 3 == 0) {
        std::size_t index = 0;
        for (std::string_view rest = compact; !rest.empty(); ++index) {
            const std::size_t end = rest.find(' ');
            triple[index % 3] = rest.substr(0, end);
            rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
            if (index % 3 != 2) continue;
            if (index > 2) w.literal(", ");
            w.literal("{\"field\": \"");
            w.raw(triple[0]);
            w.literal("\", \"amount\": \"");
            w.raw(triple[1]);
            w.literal("\", \"symbol\": \"");
            w.raw(triple[2]);
            w.literal("\"}");
        }
    }
    w.literal("]");
}

// quoted_account: the page's account as a JSON string.
void write_event(RowWriter& w, const EventRow& row, std::string_view quoted_account, PageMemo& memo) {
    namespace c = page_column;
    const std::string_view op_type = row.text(c::kOpType);
    w.literal("{\"account\":");
    w.raw(quoted_account);
    w.literal(",\"role\":");
    w.quoted(row.text(c::kRole));
    w.literal(",\"op_type\":");
    w.quoted(op_type);
    w.literal(",\"block_num\":");
    w.raw(row.text(c::kBlockNum));
    w.literal(",\"block_seq\":");
    w.raw(row.text(c::kBlockSeq));
    w.literal(",\"trx_id\":");
    if (memo.is_virtual(op_type)) {
        w.literal("null");
    } else {
        w.quoted_or_null(row[c::kTrxId]);
    }
    w.literal(",\"op_in_trx\":");
    w.raw(row.text(c::kOpInTrx));
    w.literal(",\"virtual_op\":");
    w.raw(row.text(c::kVirtualOp));
    w.literal(",\"timestamp\":");
    w.iso_time(memo, integer_in(row.text(c::kEpoch)));
    const Field& symbol_field = row[c::kSymbol];
    const Field& vesting_symbol = row[c::kVestingSymbol];
    w.literal(",\"amount\":");
    w.amount_or_null(row[c::kAmount], symbol_field);
    w.literal(",\"symbol\":");
    w.quoted_or_null(symbol_field);
    w.literal(",\"vesting_amount\":");
    w.amount_or_null(row[c::kVestingAmount], vesting_symbol);
    w.literal(",\"vesting_symbol\":");
    w.quoted_or_null(vesting_symbol);
    w.literal(",\"counterparty\":");
    w.quoted_or_null(row[c::kCounterparty]);
    w.literal(",\"memo\":");
    w.quoted_or_null(row[c::kMemo]);
    w.literal(",\"author\":");
    w.quoted_or_null(row[c::kAuthor]);
    w.literal(",\"permlink\":");
    w.quoted_or_null(row[c::kPermlink]);
    // `assets` as stored (migration 0004), printed as the jsonb of 0001 was:
    // JSON printed by PostgreSQL (it starts with '['), the compact triples
    // "field amount symbol ..." of plain tokens, or NULL for the one asset
    // the amount columns hold.
    w.literal(",\"assets\":");
    const Field& assets = row[c::kAssets];
    if (!assets.null && assets.text.starts_with('[')) {
        w.raw(assets.text);
    } else if (!assets.null) {
        write_compact_assets(w, assets.text);
    } else {
        const bool liquid = !row[c::kAmount].null;
        const Field& amount = liquid ? row[c::kAmount] : row[c::kVestingAmount];
        const Field& symbol = liquid ? symbol_field : vesting_symbol;
        const auto field = sole_asset_field(op_type);
        if (!field || amount.null) {
            w.literal("[]");
        } else {
            w.literal("[{\"field\": ");
            w.quoted(*field);
            w.literal(", \"amount\": ");
            w.amount_or_null(amount, symbol);
            w.literal(", \"symbol\": ");
            w.quoted_or_null(symbol);
            w.literal("}]");
        }
    }
    w.literal("}");
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

char* write_amount(char* out, std::string_view decimal_text, std::string_view symbol) {
    const std::size_t precision = symbol == "VESTS" ? 6 : 3;
    // An empty view may have no data pointer at all, which memcpy must not see.
    auto copy = [&out](std::string_view text) {
        if (text.empty()) return;
        std::memcpy(out, text.data(), text.size());
        out += text.size();
    };
    // NUMERIC text is [-]digits[.digits]: rescaled by trimming zeros or padding.
    std::string_view digits = decimal_text.substr(decimal_text.empty() || decimal_text[0] != '-' ? 0 : 1);
    const std::size_t point = digits.find('.');
    const std::string_view whole = digits.substr(0, point);
    const std::string_view fraction = point == std::string_view::npos ? std::string_view() : digits.substr(point + 1);
    auto all_digits = [](std::string_view text) {
        return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    const bool drops_a_digit =
        fraction.size() > precision && fraction.find_first_not_of('0', precision) != std::string_view::npos;
    if (whole.empty() || !all_digits(whole) || !all_digits(fraction) || drops_a_digit) {
        copy(decimal_text);  // never drop a non-zero digit
        return out;
    }
    copy(decimal_text.substr(0, decimal_text.size() - digits.size()));
    copy(whole);
    *out++ = '.';
    const std::size_t kept = std::min(fraction.size(), precision);
    copy(fraction.substr(0, kept));
    std::memset(out, '0', precision - kept);
    return out + (precision - kept);
}

std::string format_amount(std::string_view decimal_text, std::string_view symbol) {
    std::string out(amount_capacity(decimal_text.size()), '\0');
    out.resize(static_cast<std::size_t>(write_amount(out.data(), decimal_text, symbol) - out.data()));
    return out;
}

std::string_view write_page_response(ResponseBuffer& buffer, std::string_view id_json, Method method,
                                     const PageQuery& query, PGresult* rows, const CursorCodec& cursors) {
    namespace c = page_column;
    const int total = PQntuples(rows);
    const std::int64_t indexed_block = total > 0 && !is_null(rows, 0, c::kIndexedBlock) ? integer_of(rows, 0, c::kIndexedBlock) : 0;
    // An empty page comes back as one row of NULL event columns.
    int events = total;
    if (events == 1 && is_null(rows, 0, c::kRole)) events = 0;
    const bool more = events > query.limit;
    if (more) events = static_cast<int>(query.limit);

    const std::string quoted_account = json::quoted(query.account);
    std::string head(jsonrpc::kResultHead);
    head += "{\"account\":";
    head += quoted_account;
    head += ",\"items\":[";
    buffer.clear();
    buffer.append(head);
    PageMemo memo;
    for (int row = 0; row < events; ++row) {
        const EventRow event(rows, row);
        RowWriter w(buffer.reserve(event_bound(event) + quoted_account.size()));
        if (row > 0) w.literal(",");
        write_event(w, event, quoted_account, memo);
        buffer.commit(w.end());
    }
    std::string tail = "],\"next_cursor\":";
    if (more) {
        const int last = events - 1;
        CursorPosition position;
        auto ts = Timestamp::from_seconds(integer_of(rows, last, c::kEpoch));
        if (ts) position.timestamp = *ts;
        position.block_num = integer_of(rows, last, c::kBlockNum);
        position.block_seq = static_cast<std::int32_t>(integer_of(rows, last, c::kBlockSeq));
        position.role = std::string(text_of(rows, last, c::kRole));
        append_quoted(tail, cursors.encode(position, query.account, query_fingerprint(method, query)));
    } else {
        tail += "null";
    }
    tail += ',';
    append_indexer(tail, indexed_block);
    tail += '}';
    jsonrpc::append_response_id(tail, id_json);
    buffer.append(tail);
    return buffer.view();
}

std::string totals_result(const PageQuery& query, PGresult* rows) {
    struct Totals {
        std::int64_t count = 0;
        std::string vesting = "0";
        std::vector<std::pair<std::string, std::string>> liquid;  // symbol, amount
    };
    std::map<std::string, Totals, std::less<>> by_type;
    for (const char* type : {"author_reward", "curation_reward", "comment_benefactor_reward"}) by_type[type];
    // Additive, asked for with scope "all" (docs/operations.md).
    if (query.all_types) by_type["producer_reward"];
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
    namespace col = status_column;
    const bool one = PQntuples(rows) == 1;
    const bool indexed = one && !is_null(rows, 0, col::kIndexedBlock);
    const std::int64_t indexed_block = indexed ? integer_of(rows, 0, col::kIndexedBlock) : 0;
    const std::int64_t indexed_time =
        indexed && !is_null(rows, 0, col::kIndexedEpoch) ? integer_of(rows, 0, col::kIndexedEpoch) : 0;
    const bool node_known = one && !is_null(rows, 0, col::kHeadBlock) && text_of(rows, 0, col::kNodeFresh) == "t";
    const std::int64_t now = one ? integer_of(rows, 0, col::kNowEpoch) : 0;
    std::string out = "{\"indexed_block\":" + std::to_string(indexed_block) + ",\"indexed_time\":";
    append_quoted(out, iso_of_epoch(indexed_time));
    std::int64_t lag_seconds = now - indexed_time;
    if (node_known) {
        const std::int64_t head = integer_of(rows, 0, col::kHeadBlock);
        out += ",\"head_block\":" + std::to_string(head);
        out += ",\"lag_blocks\":" + std::to_string(std::max<std::int64_t>(0, head - indexed_block));
        lag_seconds = integer_of(rows, 0, col::kHeadEpoch) - indexed_time;
    }
    out += ",\"lag_seconds\":" + std::to_string(std::max<std::int64_t>(0, lag_seconds));
    // Additive: the blocks of the configured range not stored yet (the
    // backfill below the checkpoint), which hold indexed_block back.
    if (one && !is_null(rows, 0, col::kLoadingFrom)) {
        out += ",\"loading\":{\"from\":" + std::string(text_of(rows, 0, col::kLoadingFrom)) +
               ",\"to\":" + std::string(text_of(rows, 0, col::kLoadingTo)) +
               ",\"blocks\":" + std::string(text_of(rows, 0, col::kLoadingBlocks)) + '}';
    }
    // Additive: whether every stored block was loaded by this decoder version;
    // else the lowest run of blocks to load again (wallet-backfill over it).
    const bool outdated = one && !is_null(rows, 0, col::kOutdatedFrom);
    out += ",\"decoder\":{\"current_version\":" + std::to_string(kDecoderVersion) +
           ",\"up_to_date\":" + (outdated ? "false" : "true");
    if (outdated) {
        out += ",\"outdated\":{\"from\":" + std::string(text_of(rows, 0, col::kOutdatedFrom)) +
               ",\"to\":" + std::string(text_of(rows, 0, col::kOutdatedTo)) + '}';
    }
    out += "}}";
    return out;
}

std::string methods_result() {
    std::string out = "{\"methods\":[";
    const auto& names = method_names();
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += ',';
        append_quoted(out, names[i]);
    }
    // Additive: the op types get_wallet_history answers by default (spec
    // 000's) and those only `op_types` or `scope: "all"` return, and the roles.
    auto append_list = [&out](std::span<const std::string_view> items, auto keep) {
        bool first = true;
        for (const auto item : items) {
            if (!keep(item)) continue;
            if (!first) out += ',';
            first = false;
            append_quoted(out, item);
        }
        out += ']';
    };
    out += "],\"op_types\":{\"default\":[";
    append_list(wallet::spec_wallet_operation_types(), [](std::string_view) { return true; });
    out += ",\"opt_in\":[";
    append_list(wallet::wallet_operation_types(), [](std::string_view t) { return !wallet::is_spec_wallet_operation(t); });
    out += "},\"roles\":[";
    std::vector<std::string_view> roles;
    for (int code = 0; code < 100; ++code) {
        if (const auto role = wallet::role_of_code(code)) roles.push_back(wallet::role_name(*role));
    }
    append_list(roles, [](std::string_view) { return true; });
    out += "}";
    return out;
}

}  // namespace wallet::api
