#include "api_response.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "api_sql.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/decoder.hpp"
#include "wallet/decoder_version.hpp"
#include "wallet/json_util.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet::api {

namespace {

using json::append_quoted;

// Hive produces a block every 3 seconds (HIVE_BLOCK_INTERVAL).
constexpr std::int64_t kHiveBlockIntervalSeconds = 3;


std::string_view text_of(PGresult* rows, int row, int column) {
    return {PQgetvalue(rows, row, column), static_cast<std::size_t>(PQgetlength(rows, row, column))};
}

// An integer as PostgreSQL prints one: [-]digits (0 for anything else).
std::int64_t integer_in(std::string_view text) {
    const char* p = text.data();
    const char* const end = p + text.size();
    const bool negative = p != end && *p == '-';
    if (negative) ++p;
    std::uint64_t value = 0;
    for (; p != end; ++p) {
        // One unsigned test per digit: bytes below '0' wrap around above 9.
        const auto digit = static_cast<std::uint64_t>(static_cast<unsigned char>(*p)) - '0';
        if (digit > 9) break;
        value = value * 10 + digit;
    }
    return static_cast<std::int64_t>(negative ? 0 - value : value);  // modular: no overflow
}

// Epoch seconds: ten digits from 2001 to 2286, without integer_in's sign
// and wrap handling; other texts as above.
std::int64_t epoch_in(std::string_view text) {
    if (text.size() != 10) return integer_in(text);
    std::int64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return integer_in(text);
        value = value * 10 + (c - '0');
    }
    return value;
}

std::int64_t integer_of(PGresult* rows, int row, int column) { return integer_in(text_of(rows, row, column)); }

void append_integer(std::string& out, std::int64_t value) {
    char text[24];
    out.append(text, static_cast<std::size_t>(std::to_chars(text, text + sizeof text, value).ptr - text));
}

// An amount at its asset's precision, as a JSON string.
void append_quoted_amount(std::string& out, std::string_view decimal_text, std::string_view symbol) {
    char text[64];
    if (amount_capacity(decimal_text.size()) > sizeof text) {
        append_quoted(out, format_amount(decimal_text, symbol));
        return;
    }
    append_quoted(out, std::string_view(text, static_cast<std::size_t>(write_amount(text, decimal_text, symbol) - text)));
}

std::string iso_of_epoch(std::int64_t seconds) {
    auto t = Timestamp::from_seconds(seconds);
    return t ? t->to_iso_z() : std::string("1970-01-01T00:00:00Z");
}

void append_indexer(std::string& out, std::int64_t indexed_block) {
    out += R"("indexer":{"indexed_block":)";
    append_integer(out, indexed_block);
    out += '}';
}

// One column of a row as libpq holds it (text format).
struct Field {
    std::string_view text;
    bool null;
};

// A text of at most 16 bytes as two machine words, compared and written
// without a call or a loop: two overlapping words cover all of its bytes
// (8-byte words at 0 and size - 8; 4-byte words below 8 bytes; the bytes
// themselves below 4).
class ShortText {
public:
    static constexpr std::size_t kMaxSize = 16;

    // False when the text is longer than kMaxSize.
    bool assign(std::string_view text) {
        const std::size_t n = text.size();
        const char* p = text.data();
        size_ = n;
        if (n >= 8) {
            if (n > kMaxSize) return false;
            head_ = load<std::uint64_t>(p);
            tail_ = load<std::uint64_t>(p + n - 8);
        } else if (n >= 4) {
            head_ = load<std::uint32_t>(p);
            tail_ = load<std::uint32_t>(p + n - 4);
        } else {
            head_ = 0;
            tail_ = 0;
            if (n > 0) std::memcpy(&head_, p, n);
        }
        return true;
    }

    bool operator==(const ShortText& other) const {
        return size_ == other.size_ && head_ == other.head_ && tail_ == other.tail_;
    }

    // Writes the text at out; returns its end.
    char* write(char* out) const {
        const std::size_t n = size_;
        if (n >= 8) {
            std::memcpy(out, &head_, 8);
            std::memcpy(out + n - 8, &tail_, 8);
        } else if (n >= 4) {
            const auto head = static_cast<std::uint32_t>(head_);
            const auto tail = static_cast<std::uint32_t>(tail_);
            std::memcpy(out, &head, 4);
            std::memcpy(out + n - 4, &tail, 4);
        } else {
            std::memcpy(out, &head_, n);  // the bytes assign() copied in, on any byte order
        }
        return out + n;
    }

private:
    template <typename Word>
    static std::uint64_t load(const char* at) {
        Word word;
        std::memcpy(&word, at, sizeof word);
        return word;
    }

    std::size_t size_ = 0;
    std::uint64_t head_ = 0;
    std::uint64_t tail_ = 0;
};

// Texts that recur from row to row (role names, symbols), each escaped once
// per page: a text seen before that needed no escape is copied as it is.
class RecurringTexts {
public:
    char* write_quoted(char* out, std::string_view text) {
        ShortText key;
        if (!key.assign(text)) return json::write_quoted(out, text);
        for (std::size_t i = 0; i < count_; ++i) {
            if (plain_[i] == key) return write_plain(out, key);
        }
        char* const end = json::write_quoted(out, text);
        // Nothing escaped: the text between two quotes.
        if (static_cast<std::size_t>(end - out) == text.size() + 2 && count_ < plain_.size()) plain_[count_++] = key;
        return end;
    }

    static char* write_plain(char* out, const ShortText& text) {
        *out++ = '"';
        out = text.write(out);
        *out++ = '"';
        return out;
    }

private:
    std::array<ShortText, 6> plain_;
    std::size_t count_ = 0;
};

// What a page needs to know again and again, worked out once per page: which
// op types are virtual (they have no transaction of their own, decisions.md
// 1) and which asset field their amount columns stand for, and the date part
// of timestamps (a page mostly spans a few days).
class PageMemo {
public:
    struct OpTypeFacts {
        bool is_virtual = false;
        std::optional<std::string_view> sole_asset_field;
        // The name and the sole asset field as written (when they fit and
        // need no escape).
        std::optional<ShortText> plain_name;
        std::optional<ShortText> plain_sole_asset_field;
    };

    const OpTypeFacts& op_type(std::string_view op_type) {
        ShortText key;
        if (key.assign(op_type)) {
            for (const auto& [type, facts] : op_types_) {
                if (facts.plain_name && *facts.plain_name == key) return facts;
            }
        }
        for (const auto& [type, facts] : op_types_) {
            if (!facts.plain_name && type == op_type) return facts;
        }
        OpTypeFacts facts{is_virtual_op_type(op_type), sole_asset_field(op_type), plain(op_type), std::nullopt};
        if (facts.sole_asset_field) facts.plain_sole_asset_field = plain(*facts.sole_asset_field);
        return op_types_.emplace_back(op_type, facts).second;
    }

    RecurringTexts roles;
    RecurringTexts symbols;

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
    // A text as a ShortText when it fits and holds nothing to escape.
    static std::optional<ShortText> plain(std::string_view text) {
        ShortText plain;
        if (json::plain_run(text) != text.size() || !plain.assign(text)) return std::nullopt;
        return plain;
    }
    static char* write_two_digits(char* out, std::int64_t value) {
        *out++ = static_cast<char>('0' + value / 10);
        *out++ = static_cast<char>('0' + value % 10);
        return out;
    }

    std::vector<std::pair<std::string_view, OpTypeFacts>> op_types_;
    std::int64_t day_ = -1;
    char date_[11] = {};  // "YYYY-MM-DDT"
};

// Role names by store code (codes are below 100: migration 0007).
const std::array<std::string_view, 100>& role_names() {
    static const std::array<std::string_view, 100> names = [] {
        std::array<std::string_view, 100> all{};
        for (int code = 0; code < 100; ++code) {
            if (const auto role = role_of_code(code)) all[static_cast<std::size_t>(code)] = role_name(*role);
        }
        return all;
    }();
    return names;
}

// The role name of a row's kind (op type code * 100 + role code).
std::string_view role_of_kind(std::int64_t kind) { return role_names()[static_cast<std::size_t>(kind % 100)]; }

std::string_view op_type_of_kind(std::int64_t kind) {
    const auto code = static_cast<std::size_t>(kind / 100);
    return code < kOperationTypes.size() ? kOperationTypes[code] : std::string_view();
}

// The event columns of one row of a page statement, read from libpq once.
// Text-format values are NUL-terminated and hold no NUL (PostgreSQL's text
// output never does): strlen gives PQgetlength's answer for less than a
// libpq call costs. The trx_id of a virtual op type is not read (it is
// printed as null; fields_ is left uninitialized: it is written for every
// event column of every row).
class EventRow {
public:
    EventRow(PGresult* rows, int row, PageMemo& memo) {
        namespace c = page_column;
        const std::int64_t kind = integer_in(PQgetvalue(rows, row, c::kKind));
        role_ = role_of_kind(kind);
        op_type_ = op_type_of_kind(kind);
        facts_ = &memo.op_type(op_type_);
        for (int column = c::kBlockNum; column < c::kCount; ++column) {
            if (column == c::kTrxId && facts_->is_virtual) {
                fields_[static_cast<std::size_t>(column)] = {{}, true};
                continue;
            }
            read(rows, row, column);
        }
        const auto place = static_cast<std::uint64_t>(integer_in(text(c::kOpPlace)));
        op_in_trx_ = number_text(op_in_trx_text_, place & 0xffffffffU);
        virtual_op_ = number_text(virtual_op_text_, place >> 32);
    }
    const Field& operator[](int column) const { return fields_[static_cast<std::size_t>(column)]; }
    std::string_view text(int column) const { return (*this)[column].text; }
    std::string_view role() const { return role_; }
    std::string_view op_type() const { return op_type_; }
    std::string_view op_in_trx() const { return op_in_trx_; }
    std::string_view virtual_op() const { return virtual_op_; }
    std::size_t text_bytes() const { return text_bytes_; }
    const PageMemo::OpTypeFacts& op_type_facts() const { return *facts_; }

private:
    // Columns whose text form is empty only when they are NULL: integers and
    // NUMERICs.
    static constexpr std::uint32_t kNeverEmpty = [] {
        namespace c = page_column;
        std::uint32_t mask = 0;
        for (const int column : {c::kKind, c::kBlockNum, c::kBlockSeq, c::kOpPlace, c::kEpoch, c::kAmount,
                                 c::kVestingAmount}) {
            mask |= 1U << column;
        }
        return mask;
    }();
    static_assert(page_column::kCount <= 32);

    void read(PGresult* rows, int row, int column) {
        const char* value = PQgetvalue(rows, row, column);
        const std::size_t length = std::strlen(value);
        Field& f = fields_[static_cast<std::size_t>(column)];
        f.text = {value, length};
        // Only an empty value can be NULL, and names, numbers and timestamps
        // never print empty: libpq is asked about empty text columns only.
        f.null = length == 0 && ((kNeverEmpty >> column & 1) != 0 || is_null(rows, row, column));
        text_bytes_ += length;
    }

    template <std::size_t N>
    static std::string_view number_text(std::array<char, N>& out, std::uint64_t value) {
        return {out.data(), static_cast<std::size_t>(std::to_chars(out.data(), out.data() + N, value).ptr - out.data())};
    }

    std::array<Field, page_column::kCount> fields_;
    std::string_view role_;
    std::string_view op_type_;
    std::array<char, 12> op_in_trx_text_;
    std::array<char, 12> virtual_op_text_;
    std::string_view op_in_trx_;
    std::string_view virtual_op_;
    std::size_t text_bytes_ = 0;
    const PageMemo::OpTypeFacts* facts_ = nullptr;
};

// Writes a page through a raw pointer into a ResponseBuffer: each row first
// reserves an upper bound of its size (every text may at most grow sixfold
// when escaped), so the many small pieces need no capacity checks.
class RowWriter {
public:
    explicit RowWriter(char* at) : at_(at) {}
    char* end() const { return at_; }
    // Drops what was written after `mark` (an earlier end()).
    void rewind(char* mark) { at_ = mark; }

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
    // A text known to need no escape.
    void quoted(const ShortText& plain) { at_ = RecurringTexts::write_plain(at_, plain); }
    void quoted(RecurringTexts& memo, std::string_view text) { at_ = memo.write_quoted(at_, text); }
    void quoted_or_null(const Field& f) {
        if (f.null) {
            literal("null");
        } else {
            quoted(f.text);
        }
    }
    void quoted_or_null(RecurringTexts& memo, const Field& f) {
        if (f.null) {
            literal("null");
        } else {
            quoted(memo, f.text);
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
// rather than as broken JSON. One pass: each triple is written when its third
// token is read, and all of them are taken back if a token is left over.
void write_compact_assets(RowWriter& w, std::string_view compact) {
    std::array<std::string_view, 3> triple;
    std::size_t index = 0;
    w.literal("[");
    char* const items = w.end();
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
    if (index % 3 != 0) w.rewind(items);
    w.literal("]");
}

// quoted_account: the page's account as a JSON string.
void write_event(RowWriter& w, const EventRow& row, std::string_view quoted_account, PageMemo& memo) {
    namespace c = page_column;
    const std::string_view op_type = row.op_type();
    const PageMemo::OpTypeFacts& facts = row.op_type_facts();
    w.literal("{\"account\":");
    w.raw(quoted_account);
    w.literal(",\"role\":");
    w.quoted(memo.roles, row.role());
    w.literal(",\"op_type\":");
    if (facts.plain_name) {
        w.quoted(*facts.plain_name);
    } else {
        w.quoted(op_type);
    }
    w.literal(",\"block_num\":");
    w.raw(row.text(c::kBlockNum));
    w.literal(",\"block_seq\":");
    w.raw(row.text(c::kBlockSeq));
    w.literal(",\"trx_id\":");
    if (facts.is_virtual) {
        w.literal("null");
    } else {
        w.quoted_or_null(row[c::kTrxId]);
    }
    w.literal(",\"op_in_trx\":");
    w.raw(row.op_in_trx());
    w.literal(",\"virtual_op\":");
    w.raw(row.virtual_op());
    w.literal(",\"timestamp\":");
    w.iso_time(memo, epoch_in(row.text(c::kEpoch)));
    const Field& symbol_field = row[c::kSymbol];
    const Field& vesting_symbol = row[c::kVestingSymbol];
    w.literal(",\"amount\":");
    w.amount_or_null(row[c::kAmount], symbol_field);
    w.literal(",\"symbol\":");
    w.quoted_or_null(memo.symbols, symbol_field);
    w.literal(",\"vesting_amount\":");
    w.amount_or_null(row[c::kVestingAmount], vesting_symbol);
    w.literal(",\"vesting_symbol\":");
    w.quoted_or_null(memo.symbols, vesting_symbol);
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
        const auto& field = facts.sole_asset_field;
        if (!field || amount.null) {
            w.literal("[]");
        } else {
            w.literal("[{\"field\": ");
            if (facts.plain_sole_asset_field) {
                w.quoted(*facts.plain_sole_asset_field);
            } else {
                w.quoted(*field);
            }
            w.literal(", \"amount\": ");
            w.amount_or_null(amount, symbol);
            w.literal(", \"symbol\": ");
            w.quoted_or_null(memo.symbols, symbol);
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
    // Already at the precision (NUMERIC columns of the asset's scale): the
    // text as it is, which is what the rescaling below would write too (it
    // only ever pads or trims a fraction of another length).
    const std::size_t size = decimal_text.size();
    if (size > precision && decimal_text[size - precision - 1] == '.') {
        std::memcpy(out, decimal_text.data(), size);
        return out + size;
    }
    // NUMERIC text is [-]digits[.digits]: rescaled by trimming zeros or
    // padding, in one pass; anything else, or a non-zero digit beyond the
    // precision, is copied as it is (never drop a non-zero digit).
    auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    char* const start = out;
    const char* p = decimal_text.data();
    const char* const end = p + decimal_text.size();
    auto as_is = [&]() {
        if (!decimal_text.empty()) std::memcpy(start, decimal_text.data(), decimal_text.size());
        return start + decimal_text.size();
    };
    if (p != end && *p == '-') *out++ = *p++;
    const char* const whole = p;
    while (p != end && is_digit(*p)) *out++ = *p++;
    if (p == whole) return as_is();
    if (p != end && *p++ != '.') return as_is();
    *out++ = '.';
    std::size_t kept = 0;
    for (; p != end && kept < precision; ++kept) {
        if (!is_digit(*p)) return as_is();
        *out++ = *p++;
    }
    for (; p != end; ++p) {
        if (*p != '0') return as_is();
    }
    std::memset(out, '0', precision - kept);
    return out + (precision - kept);
}

std::string format_amount(std::string_view decimal_text, std::string_view symbol) {
    std::string out(amount_capacity(decimal_text.size()), '\0');
    out.resize(static_cast<std::size_t>(write_amount(out.data(), decimal_text, symbol) - out.data()));
    return out;
}

PageHeader read_page_header(PGresult* rows) {
    namespace h = page_header;
    PageHeader header;
    const int total = PQntuples(rows);
    // The first row (PostgreSQL appends UNION ALL's parts in order); the last
    // is looked at too, so that no plan's order could make an event of it.
    if (total > 0 && is_null(rows, 0, page_column::kKind)) {
        header.row = 0;
    } else if (total > 0 && is_null(rows, total - 1, page_column::kKind)) {
        header.row = total - 1;
    } else {
        return header;
    }
    const int row = header.row;
    if (!is_null(rows, row, h::kIndexedBlock)) header.indexed_block = integer_of(rows, row, h::kIndexedBlock);
    if (!is_null(rows, row, h::kStoredBlock)) header.stored_block = integer_of(rows, row, h::kStoredBlock);
    if (!is_null(rows, row, h::kAccountId) && !is_null(rows, row, h::kGeneration)) {
        header.account = RememberedAccount{integer_of(rows, row, h::kAccountId), integer_of(rows, row, h::kGeneration)};
    }
    return header;
}

std::string_view write_page_response(ResponseBuffer& buffer, std::string_view id_json, Method method,
                                     const PageQuery& query, PGresult* rows, const CursorCodec& cursors) {
    namespace c = page_column;
    const PageHeader header = read_page_header(rows);
    // The events: every row but the header.
    const int first = header.row == 0 ? 1 : 0;
    int events = PQntuples(rows) - (header.row >= 0 ? 1 : 0);
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
    for (int row = first; row < first + events; ++row) {
        const EventRow event(rows, row, memo);
        RowWriter w(buffer.reserve(event_bound(event) + quoted_account.size()));
        if (row > first) w.literal(",");
        write_event(w, event, quoted_account, memo);
        buffer.commit(w.end());
    }
    std::string tail = "],\"next_cursor\":";
    if (more) {
        const int last = first + events - 1;
        CursorPosition position;
        auto ts = Timestamp::from_seconds(integer_of(rows, last, c::kEpoch));
        if (ts) position.timestamp = *ts;
        position.block_num = integer_of(rows, last, c::kBlockNum);
        position.block_seq = static_cast<std::int32_t>(integer_of(rows, last, c::kBlockSeq));
        position.role = std::string(role_of_kind(integer_of(rows, last, c::kKind)));
        append_quoted(tail, cursors.encode(position, query.account, query_fingerprint(method, query)));
    } else {
        tail += "null";
    }
    tail += ',';
    append_indexer(tail, header.indexed_block);
    tail += '}';
    jsonrpc::append_response_id(tail, id_json);
    buffer.append(tail);
    return buffer.view();
}

PushedEvent read_pushed_event(PGresult* rows, int row) {
    namespace c = page_column;
    PushedEvent out;
    PageMemo memo;
    const EventRow event(rows, row, memo);
    out.account = PQgetvalue(rows, row, push_column::kAccount);
    out.op_type = std::string(event.op_type());
    out.wide = text_of(rows, row, push_column::kWide) == "t";
    const std::int64_t kind = integer_in(PQgetvalue(rows, row, c::kKind));
    out.block_num = integer_in(event.text(c::kBlockNum));
    const std::int64_t block_seq = integer_in(event.text(c::kBlockSeq));
    out.position = block_seq * 100 + kind % 100;
    if (auto ts = Timestamp::from_seconds(epoch_in(event.text(c::kEpoch)))) out.cursor.timestamp = *ts;
    out.cursor.block_num = out.block_num;
    out.cursor.block_seq = static_cast<std::int32_t>(block_seq);
    out.cursor.role = std::string(event.role());
    const std::string quoted_account = json::quoted(out.account);
    ResponseBuffer buffer;
    RowWriter w(buffer.reserve(event_bound(event) + quoted_account.size()));
    write_event(w, event, quoted_account, memo);
    buffer.commit(w.end());
    out.json = std::string(buffer.view());
    return out;
}

std::optional<RememberedAccount> totals_account(PGresult* rows) {
    for (int row = PQntuples(rows) - 1; row >= 0; --row) {
        if (integer_of(rows, row, 0) != 2) continue;
        if (is_null(rows, row, 2) || is_null(rows, row, 4)) return std::nullopt;
        return RememberedAccount{integer_of(rows, row, 2), integer_of(rows, row, 4)};
    }
    return std::nullopt;
}

std::string totals_result(const PageQuery& query, PGresult* rows) {
    // The reward types in the order they are printed (by name); producer_reward
    // is additive, asked for with scope "all" (docs/operations.md). Texts are
    // views into `rows`.
    constexpr std::array<std::string_view, 4> kTypes = {"author_reward", "comment_benefactor_reward",
                                                        "curation_reward", "producer_reward"};
    const std::size_t types = query.all_types ? 4 : 3;
    struct Totals {
        std::int64_t count = 0;
        std::string_view vesting = "0";
    };
    std::array<Totals, kTypes.size()> totals{};
    struct Liquid {
        std::size_t type;
        std::string_view symbol;
        std::string_view amount;
        bool operator<(const Liquid& other) const {
            return std::tie(type, symbol, amount) < std::tie(other.type, other.symbol, other.amount);
        }
    };
    std::vector<Liquid> liquid;
    std::int64_t indexed_block = 0;
    const int count = PQntuples(rows);
    for (int row = 0; row < count; ++row) {
        const std::int64_t kind = integer_of(rows, row, 0);
        if (kind == 2) {
            if (!is_null(rows, row, 3)) indexed_block = integer_of(rows, row, 3);
            continue;
        }
        const std::string_view type_name = text_of(rows, row, 1);
        const auto* type = std::find(kTypes.begin(), kTypes.begin() + types, type_name);
        if (type == kTypes.begin() + types) continue;
        const auto index = static_cast<std::size_t>(type - kTypes.begin());
        if (kind == 0) {
            totals[index].count = integer_of(rows, row, 3);
            if (!is_null(rows, row, 4)) totals[index].vesting = text_of(rows, row, 4);
        } else {
            liquid.push_back({index, text_of(rows, row, 2), text_of(rows, row, 4)});
        }
    }
    // Liquid payouts per type by symbol (and amount, for a stable order).
    std::sort(liquid.begin(), liquid.end());
    std::string out;
    out.reserve(512);
    out += "{\"account\":";
    append_quoted(out, query.account);
    append_window(out, query);
    out += ",\"totals\":{";
    auto next_liquid = liquid.begin();
    for (std::size_t index = 0; index < types; ++index) {
        if (index > 0) out += ',';
        out += '"';
        out += kTypes[index];  // a plain name: nothing to escape
        out += "\":{\"vesting_amount\":";
        append_quoted_amount(out, totals[index].vesting, "VESTS");
        out += ",\"vesting_symbol\":\"VESTS\",\"count\":";
        append_integer(out, totals[index].count);
        // Additive (decisions.md 3): liquid payouts of these rewards per symbol.
        out += ",\"liquid\":[";
        for (bool first = true; next_liquid != liquid.end() && next_liquid->type == index; ++next_liquid) {
            if (!first) out += ',';
            first = false;
            out += "{\"amount\":";
            append_quoted_amount(out, next_liquid->amount, next_liquid->symbol);
            out += ",\"symbol\":";
            append_quoted(out, next_liquid->symbol);
            out += '}';
        }
        out += "]}";
    }
    out += "},";
    append_indexer(out, indexed_block);
    out += '}';
    return out;
}

std::string status_result(PGresult* rows, const PoolSize& pool) {
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
        // On a standby the observation itself is as old as the replay: the
        // chain has moved on by that much more, one block per interval.
        const std::int64_t replay_delay = is_null(rows, 0, col::kReplayDelay) ? 0 : integer_of(rows, 0, col::kReplayDelay);
        const std::int64_t head = integer_of(rows, 0, col::kHeadBlock);
        out += ",\"head_block\":" + std::to_string(head);
        out += ",\"lag_blocks\":" +
               std::to_string(std::max<std::int64_t>(0, head - indexed_block) + replay_delay / kHiveBlockIntervalSeconds);
        lag_seconds = integer_of(rows, 0, col::kHeadEpoch) - indexed_time + replay_delay;
    }
    out += ",\"lag_seconds\":" + std::to_string(std::max<std::int64_t>(0, lag_seconds));
    // Additive: the blocks of the configured range not stored yet (the
    // backfill below the checkpoint), which hold indexed_block back.
    if (one && !is_null(rows, 0, col::kLoadingFrom)) {
        out += ",\"loading\":{\"from\":" + std::string(text_of(rows, 0, col::kLoadingFrom)) +
               ",\"to\":" + std::string(text_of(rows, 0, col::kLoadingTo)) +
               ",\"blocks\":" + std::string(text_of(rows, 0, col::kLoadingBlocks)) +
               ",\"shards_from\":" + std::string(text_of(rows, 0, col::kLoadingShardsFrom)) + '}';
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
    out += '}';
    // Additive: the most connections to each database, all nginx workers
    // together and one worker (the metrics' wallet_history_db_connections_*).
    out += ",\"db_connections\":{\"max\":" + std::to_string(pool.per_database()) +
           ",\"per_worker_max\":" + std::to_string(pool.per_worker) + "}}";
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

std::optional<DatabaseReading> database_reading(PGresult* rows) {
    if (rows == nullptr || PQntuples(rows) != 1 || PQnfields(rows) != 2 || is_null(rows, 0, database_column::kStandby)) {
        return std::nullopt;
    }
    const std::int64_t delay = is_null(rows, 0, database_column::kReplayDelayUs)
                                   ? 0
                                   : integer_of(rows, 0, database_column::kReplayDelayUs);
    return DatabaseReading{text_of(rows, 0, database_column::kStandby) == "t",
                           static_cast<std::uint64_t>(std::max<std::int64_t>(0, delay))};
}

}  // namespace wallet::api
