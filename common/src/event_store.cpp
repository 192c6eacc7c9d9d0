#include "wallet/event_store.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <limits>
#include <string_view>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "wallet/balance_snapshots.hpp"
#include "wallet/decoder.hpp"
#include "wallet/decoder_version.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/json_util.hpp"
#include "wallet/log.hpp"
#include "wallet/migrations.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/pg.hpp"

namespace wallet {
namespace {

// Server notices ("relation already exists, skipping") are not for operators.
void ignore_notice(void*, const char*) {}

}  // namespace

namespace store {

std::span<const std::string_view> asset_templates() noexcept {
    // Measured on the synthetic chain at mainnet density (t/bench/scale.sh),
    // most bytes first; the current chain's names (a current node serves the
    // Steem era's blocks with them too).
    static constexpr std::array<std::string_view, 14> kTemplates = {
        "hbd_payout %s HBD hive_payout %s HIVE vesting_payout %s VESTS curators_vesting_payout %s VESTS",
        "reward_hive %s HIVE reward_hbd %s HBD reward_vests %s VESTS",
        "hive_vested %s HIVE vesting_shares_received %s VESTS",
        "hbd_payout %s HBD hive_payout %s HIVE vesting_payout %s VESTS",
        "withdrawn %s VESTS deposited %s HIVE",
        "amount_to_sell %s HBD min_to_receive %s HIVE",
        "amount_to_sell %s HIVE min_to_receive %s HBD",
        "current_pays %s HBD open_pays %s HIVE",
        "current_pays %s HIVE open_pays %s HBD",
        "initial_vesting_shares %s VESTS initial_delegation %s VESTS",
        "withdrawn %s VESTS deposited %s VESTS",
        "amount_in %s HBD amount_out %s HIVE",
        "amount_in %s HIVE amount_out %s HBD excess_collateral %s HIVE",
        "fee %s HIVE delegation %s VESTS",
    };
    static_assert(kTemplates.size() <= kAssetTemplateCodes.size());
    return kTemplates;
}

namespace {

// The columns of the two tables a batch writes (migrations 0004 and 0015).
constexpr std::string_view kEventColumns =
    "ts, account_id, block_num, block_seq, virtual_op, op_in_trx, op_type, role, amount, symbol, vesting_amount, "
    "vesting_symbol, trx_id, counterparty, memo, author, permlink, assets, wide";
constexpr std::string_view kBlockColumns = "block_num, ts, ops";
using Row = std::vector<std::optional<std::string>>;

// Rows per multi-row INSERT statement: 18 parameters each, well below
// PostgreSQL's 65535-parameter limit.
constexpr std::size_t kRowsPerInsert = 1000;

// A cache of account ids stops growing here (about 100 MB); it starts over.
constexpr std::size_t kMaxCachedAccounts = 1'000'000;

// PostgreSQL text cannot hold NUL: a memo with one keeps a visible U+FFFD.
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

}  // namespace

std::string storable_text(std::string_view text) {
    if (text.find('\0') == std::string_view::npos) return std::string(text);
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '\0') {
            out += kReplacementCharacter;
        } else {
            out += c;
        }
    }
    return out;
}

namespace {

// json refuses the escape \u0000 for the same reason; it becomes \ufffd.
// Other escapes (an escaped backslash before "u0000" included) stay as they are.
std::string storable_json(std::string text) {
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
        if (text[i] != '\\') continue;
        if (text.compare(i + 1, 5, "u0000") == 0) text.replace(i + 2, 4, "fffd");
        ++i;  // skip the escaped character
    }
    return text;
}

constexpr std::size_t kTrxIdDigits = 40;

// A transaction id as hived prints it: 40 lowercase hex digits.
bool is_canonical_trx_id(std::string_view trx_id) {
    return trx_id.size() == kTrxIdDigits && std::all_of(trx_id.begin(), trx_id.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// trx_id as stored (bytea, migration 0007's wallet_trx_id_bytes), in
// bytea's hex input form: the 20 bytes a 40-digit lowercase hex id spells;
// any other text as its own bytes, a NUL appended when those are exactly 20
// (text never holds one), so that wallet_trx_id_text reads every value back.
std::string trx_id_bytes_text(std::string_view trx_id) {
    if (is_canonical_trx_id(trx_id)) return "\\x" + std::string(trx_id);
    static constexpr char kHex[] = "0123456789abcdef";
    const std::string text = storable_text(trx_id);
    std::string out = "\\x";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        out += kHex[byte >> 4];
        out += kHex[byte & 15];
    }
    if (text.size() == kTrxIdDigits / 2) out += "00";
    return out;
}

// NUMERIC(30,6) rounds silently; an amount it cannot hold exactly is refused.
Result<std::string> numeric_text(const Asset& asset, const char* column) {
    auto at_scale_6 = asset.amount.rescaled(6);
    if (!at_scale_6) return make_error(std::string(column) + " " + asset.symbol + " has more than 6 decimals");
    Decimal::Units units = at_scale_6->units();
    if (units < 0) units = -units;
    Decimal::Units limit = 1;
    for (int i = 0; i < 30; ++i) limit *= 10;
    if (units >= limit) return make_error(std::string(column) + " " + asset.symbol + " exceeds NUMERIC(30,6)");
    return asset.amount_string();
}

// A field name, amount or symbol the compact `assets` form can hold as it is.
bool is_asset_token(std::string_view text) {
    if (text.empty()) return false;
    for (const char c : text) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '.' || c == '@' || c == '-';
        if (!plain) return false;
    }
    return true;
}

// The `assets` list as stored (wallet_assets_json, migration 0004): the
// triples "field amount symbol" separated by spaces; since migration 0009,
// when its fields and symbols are those of a template, the template's code
// and the amounts alone ("#0.013 0.000 31.935041 7.096675"); when a part is
// not a plain token, the list as JSON (it starts with '[').
std::string assets_text(const std::vector<AssetField>& assets) {
    std::string compact;
    std::string json = "[";
    std::string shape;    // the fields and symbols, as a template spells them
    std::string amounts;  // the amounts alone
    bool plain = true;
    for (const auto& field : assets) {
        const auto printed = field.asset.amount_string();  // the decoder checked that it prints
        const std::string amount = printed ? *printed : std::string("0");
        plain = plain && is_asset_token(field.field) && is_asset_token(amount) && is_asset_token(field.asset.symbol);
        if (!compact.empty()) {
            compact += ' ';
            shape += ' ';
            amounts += ' ';
        }
        compact += field.field + ' ' + amount + ' ' + field.asset.symbol;
        shape += field.field + " %s " + field.asset.symbol;
        amounts += amount;
        if (json.size() > 1) json += ',';
        json += "{\"field\":";
        json::append_quoted(json, field.field);
        json += ",\"amount\":";
        json::append_quoted(json, amount);
        json += ",\"symbol\":";
        json::append_quoted(json, field.asset.symbol);
        json += '}';
    }
    if (!plain) return json + "]";
    const auto templates = asset_templates();
    const auto found = std::find(templates.begin(), templates.end(), shape);
    if (assets.empty() || found == templates.end()) return compact;
    return std::string(1, kAssetTemplateCodes[static_cast<std::size_t>(found - templates.begin())]) + amounts;
}

// Whether the event's `assets` is what the store gives back for a row without
// them (wallet_derived_assets): the one asset of its op type's sole field,
// equal to the amount (or else vesting) column and printed at the precision
// the API prints that symbol with.
bool assets_are_derived(const WalletEvent& e) {
    const std::optional<Asset>& column = e.amount ? e.amount : e.vesting;
    const auto field = sole_asset_field(e.op_type);
    if (!field || !column) return e.assets.empty() && (!field || !column);
    if (e.assets.size() != 1) return false;
    const AssetField& only = e.assets.front();
    const int printed_precision = only.asset.symbol == "VESTS" ? 6 : 3;
    return only.field == *field && only.asset == *column && only.asset.precision == printed_precision;
}

// wallet_events.wide (migration 0015): the op type is beyond spec 000's
// (wallet_is_spec_type in SQL; a foundation test keeps the two equal).
bool is_wide_type(int op_type) {
    static const std::array<bool, kOperationTypes.size()> wide = [] {
        std::array<bool, kOperationTypes.size()> by_id{};
        for (std::size_t id = 0; id < by_id.size(); ++id) by_id[id] = !is_spec_wallet_operation(kOperationTypes[id]);
        return by_id;
    }();
    return wide[static_cast<std::size_t>(op_type)];
}

// Writes an event's row to `sink` (CopyText or RowList below), column by
// column in kEventColumns' order; `time` is e.timestamp.to_iso_z().
template <typename Sink>
Result<bool> render_event_row(const WalletEvent& e, std::int32_t account_id, std::string_view time, Sink& sink) {
    if (!e.block_seq || !e.virtual_op) {
        return make_error("event of block " + std::to_string(e.block_num) + " has no block position (decoded without the block)");
    }
    const int op_type = operation_type_id(e.op_type);
    if (op_type < 0) return make_error("event of block " + std::to_string(e.block_num) + " has an unknown op type");
    const auto text = [&sink](const std::optional<std::string>& value) {
        if (!value) sink.null();
        else if (value->find('\0') == std::string::npos) sink.field(*value);
        else sink.field(storable_text(*value));
    };
    const auto asset = [&sink](const std::optional<Asset>& value, const char* column) -> Result<bool> {
        if (!value) {
            sink.null();
            sink.null();
            return true;
        }
        auto amount = numeric_text(*value, column);
        if (!amount) return make_error(amount.error());
        sink.field(*amount);
        sink.field(value->symbol);
        return true;
    };
    sink.field(time);
    sink.number(account_id);
    sink.number(e.block_num);
    sink.number(*e.block_seq);
    sink.number(*e.virtual_op);
    sink.number(e.op_in_trx);
    sink.number(op_type);
    sink.number(role_code(e.role));
    if (auto done = asset(e.amount, "amount"); !done) return done;
    if (auto done = asset(e.vesting, "vesting_amount"); !done) return done;
    if (e.trx_id) sink.field(trx_id_bytes_text(*e.trx_id));
    else sink.null();
    text(e.counterparty);
    text(e.memo);
    text(e.author);
    text(e.permlink);
    if (!assets_are_derived(e)) sink.field(assets_text(e.assets));
    else sink.null();
    sink.field(is_wide_type(op_type) ? "t" : "f");
    sink.end_row();
    return true;
}

// The members of an operation entry's envelope that the event rows already
// hold (migration 0009): the stored entry leaves out each one whose value is
// exactly what wallet_operation_payload() rebuilds from the row, and says which
// in a bit mask. Bits as in that function; the mask is a third element.
enum EnvelopeBit : int {
    kBlockBit = 1,           // "block": block_num
    kTrxInBlockBit = 2,      // "trx_in_block": the stored trx_in_block
    kOpInTrxBit = 4,         // "op_in_trx": op_in_trx
    kVirtualOpBit = 8,       // "virtual_op": true for a virtual operation, else false
    kTimestampBit = 16,      // "timestamp": ts as "YYYY-MM-DDTHH:MM:SS" (UTC)
    kTrxIdBit = 32,          // "trx_id": trx_id (40 lowercase hex digits)
    kZeroTrxIdBit = 64,      // "trx_id": 40 zeros (a virtual operation; trx_id is NULL)
    kZeroOperationIdBit = 128,  // "operation_id": 0
    kOpNameBit = 256,        // "op": ["name", ...] without its first element, the op type's name
    kOpTypeBit = 512,        // "op": {"type": "name_operation", ...} without "type"
};

constexpr std::array<std::string_view, 8> kEnvelopeKeys = {"block",     "trx_in_block", "op_in_trx",    "virtual_op",
                                                            "timestamp", "trx_id",       "operation_id", "op"};

// The bit of an envelope member whose value the row rebuilds exactly; 0 when
// the member is kept as sent.
int envelope_bit(const WalletEvent& e, std::string_view key, std::string_view value) {
    // Compared in place: this runs for every member of every stored entry.
    const auto is_number = [value](std::int64_t number) {
        char digits[24];
        const char* end = std::to_chars(std::begin(digits), std::end(digits), number).ptr;
        return value == std::string_view(digits, static_cast<std::size_t>(end - digits));
    };
    const auto is_quoted = [value](std::string_view text) {
        return value.size() == text.size() + 2 && value.front() == '"' && value.back() == '"' &&
               value.substr(1, text.size()) == text;
    };
    if (key == "block") return is_number(e.block_num) ? kBlockBit : 0;
    if (key == "trx_in_block") return is_number(e.trx_in_block) ? kTrxInBlockBit : 0;
    if (key == "op_in_trx") return is_number(e.op_in_trx) ? kOpInTrxBit : 0;
    if (key == "virtual_op") return value == (e.virtual_op.value_or(0) > 0 ? "true" : "false") ? kVirtualOpBit : 0;
    if (key == "timestamp") return is_quoted(e.timestamp.to_node_form()) ? kTimestampBit : 0;
    if (key == "trx_id") {
        if (e.trx_id) return is_canonical_trx_id(*e.trx_id) && is_quoted(*e.trx_id) ? kTrxIdBit : 0;
        constexpr std::string_view kZeros = "0000000000000000000000000000000000000000";
        static_assert(kZeros.size() == kTrxIdDigits);
        return is_quoted(kZeros) ? kZeroTrxIdBit : 0;
    }
    if (key == "operation_id") return value == "0" ? kZeroOperationIdBit : 0;
    return 0;
}

// Appends the entry's "op" without the op type's name, which the rows hold
// (op_type): ["name", body] as [body], {"type": "name_operation", "value":
// body} as {"value": body}; returns its bit, or 0 (the op appended as sent).
int append_op_without_name(std::string& out, const WalletEvent& e, std::string_view op) {
    // The name wallet_op_type_name() gives the stored code (renamed types
    // keep their Steem-era names in the entry).
    const int id = operation_type_id(e.op_type);
    if (id < 0) {
        out += op;
        return 0;
    }
    const std::string_view type_name = kOperationTypes[static_cast<std::size_t>(id)];
    std::vector<std::string_view> parts;
    bool named = false;
    bool repeated = false;
    std::string_view name;
    const auto append_parts = [&](char open, char close) {
        out += open;
        for (std::size_t i = 0; i < parts.size(); ++i) {
            if (i > 0) out += ',';
            out += parts[i];
        }
        out += close;
    };
    if (op.starts_with('[')) {
        auto scanned = json::for_each_element(op, [&](std::string_view element) {
            if (parts.empty() && !named && json::plain_string(element, name) && name == type_name) {
                named = true;
            } else {
                parts.push_back(element);
            }
            return true;
        });
        if (scanned && *scanned && named) {
            append_parts('[', ']');
            return kOpNameBit;
        }
    } else if (op.starts_with('{')) {
        auto scanned = json::for_each_member(op, [&](std::string_view key, std::string_view value) {
            if (key == "type") {
                repeated = repeated || named;
                named = json::plain_string(value, name) && name.size() == type_name.size() + 10 &&
                        name.starts_with(type_name) && name.ends_with("_operation");
            } else {
                parts.push_back(op.substr(static_cast<std::size_t>(key.data() - op.data() - 1),
                                          static_cast<std::size_t>(value.data() + value.size() - key.data() + 1)));
            }
            return key.find('\\') == std::string_view::npos;
        });
        if (scanned && *scanned && named && !repeated) {
            append_parts('{', '}');
            return kOpTypeBit;
        }
    }
    out += op;
    return 0;
}

// Appends an operation as wallet_blocks.ops holds it: [trx_in_block, entry]
// with the entry as the node sent it, or [trx_in_block, entry without the
// members the rows rebuild, mask]. An entry that does not scan, or names a
// member twice or with escapes, is kept whole. Written in place: no copy of
// the entry but the one appended.
void append_stored_operation(std::string& out, const WalletEvent& e) {
    out += '[';
    out += std::to_string(e.trx_in_block);
    out += ',';
    if (!e.payload) {
        out += "{}]";
        return;
    }
    // storable_json changes only entries with the escape \u0000.
    std::string fixed;
    if (e.payload->find("\\u0000") != std::string::npos) fixed = storable_json(*e.payload);
    const std::string_view entry = fixed.empty() ? std::string_view(*e.payload) : std::string_view(fixed);
    const std::size_t start = out.size();
    out += '{';
    int mask = 0;
    bool whole = false;
    bool first = true;
    std::vector<std::string_view> envelope_keys;
    auto scanned = json::for_each_member(entry, [&](std::string_view key, std::string_view value) {
        const int bit = envelope_bit(e, key, value);
        // jsonb keeps a name's last value: a repeated envelope name (or one
        // spelled with escapes) could rebuild another value than it keeps.
        const bool envelope = std::find(kEnvelopeKeys.begin(), kEnvelopeKeys.end(), key) != kEnvelopeKeys.end();
        if (key.find('\\') != std::string_view::npos ||
            (envelope && std::find(envelope_keys.begin(), envelope_keys.end(), key) != envelope_keys.end())) {
            whole = true;
            return false;
        }
        if (envelope) envelope_keys.push_back(key);
        if (bit != 0) {
            mask |= bit;
            return true;
        }
        if (!first) out += ',';
        first = false;
        out += '"';
        out += key;
        out += "\":";
        if (key == "op") {
            mask |= append_op_without_name(out, e, value);
        } else {
            out += value;
        }
        return true;
    });
    if (!scanned || !*scanned || whole || mask == 0) {
        out.resize(start);
        out += entry;
        out += ']';
        return;
    }
    out += "},";
    out += std::to_string(mask);
    out += ']';
}

// The rows of both tables for a batch of events, as COPY text (CopyText)
// or statement parameters (RowList).
template <typename Sink>
struct Rendered {
    Sink events;
    Sink blocks;
};

// Block rows: every operation with events, once, under its block_seq, as
// append_stored_operation() gives it. Events arrive in block order,
// the events of one operation next to each other.
// Out of line: t/bench/loader_profile.sh counts it as a part (rows).
template <typename Sink>
[[gnu::noinline]] Result<bool> render_rows(const std::vector<WalletEvent>& events, const AccountIds& ids,
                                           Rendered<Sink>& out) {
    std::int64_t block = -1;
    std::int64_t last_seq = -1;
    std::string ops;
    std::string block_time;
    // The events of a block share its time: printed once.
    std::optional<Timestamp> time;
    std::string time_text;
    auto close_block = [&] {
        if (block < 0) return;
        ops += '}';
        out.blocks.number(block);
        out.blocks.field(block_time);
        out.blocks.field(ops);
        out.blocks.end_row();
    };
    for (const auto& event : events) {
        auto id = ids.find(storable_text(event.account));
        if (!id) return make_error("account " + event.account + " has no id");
        if (!time || event.timestamp != *time) {
            time = event.timestamp;
            time_text = time->to_iso_z();
        }
        if (auto row = render_event_row(event, *id, time_text, out.events); !row) return make_error(row.error());
        if (event.block_num != block) {
            // A block's operations must be together: a batch of events out
            // of block order would give one block two rows.
            if (event.block_num < block) return make_error("events are not in block order");
            close_block();
            block = event.block_num;
            block_time = time_text;
            last_seq = -1;
            ops = "{";
        }
        if (*event.block_seq != last_seq) {
            if (ops.size() > 1) ops += ',';
            ops += '"';
            ops += std::to_string(*event.block_seq);
            ops += "\":";
            append_stored_operation(ops, event);
            last_seq = *event.block_seq;
        }
    }
    close_block();
    return true;
}

// The bytes COPY's text format escapes: its delimiters and the backslash.
constexpr auto kCopyDelimiter = [] {
    std::array<bool, 256> table{};
    table['\\'] = table['\t'] = table['\n'] = table['\r'] = true;
    return table;
}();

// How many bytes from the start of text COPY takes as they are.
std::size_t copy_plain_run(std::string_view text) noexcept {
    const char* const p = text.data();
    const std::size_t n = text.size();
    std::size_t i = 0;
#if defined(__SSE2__)
    // Sixteen bytes a step: the stored operations are long runs without one.
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i tab = _mm_set1_epi8('\t');
    const __m128i newline = _mm_set1_epi8('\n');
    const __m128i carriage_return = _mm_set1_epi8('\r');
    for (; i + 16 <= n; i += 16) {
        const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        const __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, backslash), _mm_cmpeq_epi8(block, tab)),
                                          _mm_or_si128(_mm_cmpeq_epi8(block, newline), _mm_cmpeq_epi8(block, carriage_return)));
        const int mask = _mm_movemask_epi8(hits);
        if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    while (i < n && !kCopyDelimiter[static_cast<unsigned char>(p[i])]) ++i;
    return i;
}

// COPY text format: backslash escapes for the characters that delimit it.
void append_copy_text(std::string& out, std::string_view text) {
    // Runs without a delimiter are appended whole (a byte at a time was 8% of
    // the loader's instructions).
    while (!text.empty()) {
        const std::size_t run = copy_plain_run(text);
        out.append(text.data(), run);
        if (run == text.size()) break;
        const char c = text[run];
        out += c == '\\' ? "\\\\" : c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
        text.remove_prefix(run + 1);
    }
}

// Rows as COPY text, each field escaped as it is appended: a batch's rows
// are one buffer, written once and sent as they are (no row of strings per
// event between the decoded events and the COPY).
class CopyText {
public:
    void field(std::string_view text) {
        separate();
        append_copy_text(text_, text);
    }
    void number(std::int64_t value) {
        separate();
        char digits[24];
        const char* end = std::to_chars(std::begin(digits), std::end(digits), value).ptr;
        text_.append(digits, static_cast<std::size_t>(end - digits));
    }
    void null() {
        separate();
        text_ += "\\N";
    }
    void end_row() {
        text_ += '\n';
        first_ = true;
        ++rows_;
    }
    std::string_view text() const noexcept { return text_; }
    std::size_t size() const noexcept { return rows_; }

private:
    void separate() {
        if (!first_) text_ += '\t';
        first_ = false;
    }
    std::string text_;
    std::size_t rows_ = 0;
    bool first_ = true;
};

// Rows as statement parameters (the multi-row INSERT).
class RowList {
public:
    void field(std::string_view text) { row_.emplace_back(std::string(text)); }
    void number(std::int64_t value) { row_.emplace_back(std::to_string(value)); }
    void null() { row_.emplace_back(); }
    void end_row() { rows_.push_back(std::move(row_)); row_.clear(); }
    const std::vector<Row>& rows() const noexcept { return rows_; }
    std::size_t size() const noexcept { return rows_.size(); }

private:
    Row row_;
    std::vector<Row> rows_;
};

std::int64_t affected_rows(PGresult* result) {
    const char* count = PQcmdTuples(result);
    return count != nullptr && *count != '\0' ? std::strtoll(count, nullptr, 10) : 0;
}

// An event row's key (wallet_events' unique key, as the writers see it).
using EventKey = std::tuple<std::int32_t, std::int64_t, std::int64_t, int>;  // account_id, block_num, block_seq, role
constexpr std::string_view kReturnedKey = " RETURNING account_id, block_num, block_seq, role";

// The rows a write inserted: all of the batch, or those `keys` name.
struct Inserted {
    std::int64_t count = 0;
    std::optional<std::set<EventKey>> keys;  // nullopt: every row of the batch
};

void collect_keys(PGresult* result, std::set<EventKey>& keys) {
    for (int row = 0; row < PQntuples(result); ++row) {
        const auto number = [&](int column) { return std::strtoll(PQgetvalue(result, row, column), nullptr, 10); };
        keys.emplace(static_cast<std::int32_t>(number(0)), number(1), number(2), static_cast<int>(number(3)));
    }
}

// The outcome of a COPY: empty on success, else the message and SQLSTATE.
struct CopyFailure {
    std::string message;
    std::string sqlstate;
};

std::optional<CopyFailure> copy_rows(PGconn* conn, const std::string& table, std::string_view columns,
                                     const CopyText& rows) {
    auto started = pg::exec(conn, "COPY " + table + " (" + std::string(columns) + ") FROM STDIN");
    if (!started) return CopyFailure{"COPY: " + started.error(), ""};
    // A megabyte a message: libpq copies each into its own buffer.
    constexpr std::size_t kChunkBytes = 1 << 20;
    bool sent = true;
    for (std::string_view text = rows.text(); sent && !text.empty();) {
        const std::size_t chunk = std::min(kChunkBytes, text.size());
        sent = PQputCopyData(conn, text.data(), static_cast<int>(chunk)) == 1;
        text.remove_prefix(chunk);
    }
    const bool ended = PQputCopyEnd(conn, sent ? nullptr : "client could not send COPY data") == 1;
    std::optional<CopyFailure> failure;
    while (PGresult* raw = PQgetResult(conn)) {
        PgResultPtr result(raw);
        if (PQresultStatus(raw) != PGRES_COMMAND_OK && !failure) {
            const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
            failure = CopyFailure{std::string("COPY: ") + PQresultErrorMessage(raw), state != nullptr ? state : ""};
        }
    }
    if (!failure && (!sent || !ended)) failure = CopyFailure{"COPY: " + pg::last_error(conn), ""};
    return failure;
}

constexpr const char* kUniqueViolation = "23505";

// A block already stored keeps its operations; those it lacks are added (a
// block row is only ever written whole, so this is the rare case of rows
// written operation by operation through the wallet_operation_events view).
// Each side's ops is parsed once: a payout block holds thousands of them.
constexpr const char* kMergeBlocks =
    " ON CONFLICT (block_num) DO UPDATE SET ops = (EXCLUDED.ops::jsonb || b.ops::jsonb)::json"
    " WHERE NOT b.ops::jsonb ?& ARRAY(SELECT json_object_keys(EXCLUDED.ops))";

// COPY straight into the tables: the common case, where nothing of the batch
// is stored yet. When some is (a block written again, a backfill
// overlapping), the COPY fails on a unique key, is rolled back to a
// savepoint, and the rows go through staging tables and ON CONFLICT.
std::optional<CopyFailure> copy_direct(PGconn* conn, const Rendered<CopyText>& rows) {
    auto failure = copy_rows(conn, "wallet_blocks", kBlockColumns, rows.blocks);
    if (!failure) failure = copy_rows(conn, "wallet_events", kEventColumns, rows.events);
    return failure;
}

Result<Inserted> copy_merge(PGconn* conn, const Rendered<CopyText>& rows) {
    auto saved = pg::exec(conn, "SAVEPOINT wallet_direct_copy");
    if (!saved) return make_error(saved.error());
    auto direct = copy_direct(conn, rows);
    if (!direct) {
        auto released = pg::exec(conn, "RELEASE SAVEPOINT wallet_direct_copy");
        if (!released) return make_error(released.error());
        return Inserted{static_cast<std::int64_t>(rows.events.size()), std::nullopt};
    }
    if (direct->sqlstate != kUniqueViolation) return make_error(direct->message);
    auto undone = pg::exec(conn, "ROLLBACK TO SAVEPOINT wallet_direct_copy");
    if (!undone) return make_error(undone.error());
    if (const auto staged = copy_rows(conn, "wallet_blocks_incoming", kBlockColumns, rows.blocks)) {
        return make_error(staged->message);
    }
    if (const auto staged = copy_rows(conn, "wallet_events_incoming", kEventColumns, rows.events)) {
        return make_error(staged->message);
    }
    // Moving the rows leaves the staging tables empty for the next insert; a
    // rollback undoes both the COPY and the move.
    auto blocks = pg::exec(conn, "WITH moved AS (DELETE FROM wallet_blocks_incoming RETURNING *)"
                                 " INSERT INTO wallet_blocks AS b (" + std::string(kBlockColumns) + ") SELECT " +
                                     std::string(kBlockColumns) + " FROM moved" + kMergeBlocks);
    if (!blocks) return make_error("merge: " + blocks.error());
    auto merged = pg::exec(conn, "WITH moved AS (DELETE FROM wallet_events_incoming RETURNING *)"
                                 " INSERT INTO wallet_events (" + std::string(kEventColumns) + ") SELECT " +
                                     std::string(kEventColumns) + " FROM moved ON CONFLICT DO NOTHING" +
                                     std::string(kReturnedKey));
    if (!merged) return make_error("merge: " + merged.error());
    Inserted inserted{affected_rows(merged->get()), std::set<EventKey>{}};
    collect_keys(merged->get(), *inserted.keys);
    return inserted;
}

// A bulk load's write: no merge (wallet_events has no unique index then);
// wallet_blocks' primary key still refuses a block stored twice.
Result<Inserted> copy_only(PGconn* conn, const Rendered<CopyText>& rows) {
    if (const auto failure = copy_direct(conn, rows)) {
        if (failure->sqlstate == kUniqueViolation) {
            return make_error("a block of the batch is already stored, which a bulk load never does (" +
                              failure->message + ")");
        }
        return make_error(failure->message);
    }
    return Inserted{static_cast<std::int64_t>(rows.events.size()), std::nullopt};
}

// One multi-row INSERT per kRowsPerInsert rows; returns the rows inserted.
Result<std::int64_t> insert_rows(PGconn* conn, const std::string& head, const std::vector<Row>& rows,
                                 const std::string& tail, std::set<EventKey>* keys = nullptr) {
    std::int64_t inserted = 0;
    for (std::size_t first = 0; first < rows.size(); first += kRowsPerInsert) {
        const std::size_t count = std::min(kRowsPerInsert, rows.size() - first);
        std::string sql = head + " VALUES ";
        std::vector<std::optional<std::string>> params;
        for (std::size_t r = 0; r < count; ++r) {
            const Row& row = rows[first + r];
            sql += r == 0 ? "(" : ",(";
            for (std::size_t column = 0; column < row.size(); ++column) {
                params.push_back(row[column]);
                sql += (column == 0 ? "$" : ",$") + std::to_string(params.size());
            }
            sql += ')';
        }
        auto result = pg::exec_params(conn, sql + tail, params);
        if (!result) return make_error("insert: " + result.error());
        inserted += affected_rows(result->get());
        if (keys) collect_keys(result->get(), *keys);
    }
    return inserted;
}

Result<Inserted> multi_row_insert(PGconn* conn, const Rendered<RowList>& rows) {
    auto blocks = insert_rows(conn, "INSERT INTO wallet_blocks AS b (" + std::string(kBlockColumns) + ")", rows.blocks.rows(),
                              kMergeBlocks);
    if (!blocks) return make_error(blocks.error());
    Inserted inserted{0, std::set<EventKey>{}};
    auto events = insert_rows(conn, "INSERT INTO wallet_events (" + std::string(kEventColumns) + ")", rows.events.rows(),
                              " ON CONFLICT DO NOTHING" + std::string(kReturnedKey), &*inserted.keys);
    if (!events) return make_error(events.error());
    inserted.count = *events;
    return inserted;
}

// ---- balance rows the writers keep (migrations 0017, 0018) ---------------

// What the writers keep of the balance changes of the rows they insert:
// the events that carry a change of another account (wallet_balance_carried)
// and those whose changes the decoder cannot read (wallet_balance_undecodable).
// The balances themselves are the snapshot pass's (wallet/balance_snapshots.hpp).
class BalanceRows {
public:
    void add_event(const WalletEvent& event, std::int32_t account_id, const BalanceRules& rules) {
        // The events of one operation are adjacent and share its payload:
        // its changes are read once, each event takes its role's.
        if (!operation_ || event.payload != operation_->payload || event.block_num != operation_->block_num ||
            event.op_type != operation_->op_type) {
            operation_ = Operation{event.payload, event.block_num, event.op_type,
                                   event_balance_changes(event, rules.assets, rules.forks)};
        }
        const auto& changes = operation_->changes;
        pending_.add(event, account_id, changes);  // the pass's input (migration 0031)
        const std::string account = storable_text(event.account);
        if (!changes) {
            // Stored without its changes, listed so that the balances it may
            // move are refused: one odd operation never stops a load.
            undecodable_.push_back({account, event.block_num, event.block_seq.value_or(0), role_code(event.role),
                                    operation_type_id(event.op_type), event.op_type, changes.error()});
            return;
        }
        for (const auto& [carrier, change] : *changes) {
            if (carrier != event.role || change.account == account) continue;
            carried_.emplace(storable_text(change.account), event.block_num, event.block_seq.value_or(0),
                             role_code(event.role), account);
        }
    }

    // Inside the writer's transaction.
    Result<bool> write(PGconn* conn, AccountIds& ids) {
        std::vector<std::string> names;
        for (const auto& key : carried_) names.push_back(std::get<0>(key));
        for (const auto& event : undecodable_) names.push_back(event.account);
        auto resolved = ids.resolve_names(conn, std::move(names));
        if (!resolved) return make_error(resolved.error());
        if (!carried_.empty()) {
            std::string accounts = "{", blocks = "{", seqs = "{", roles = "{", owners = "{";
            for (const auto& [account, block, seq, role, owner] : carried_) {
                const auto id = ids.find(account);
                const auto owner_id = ids.find(owner);
                if (!id || !owner_id) return make_error("account " + account + " or " + owner + " has no id");
                const char* comma = accounts.size() > 1 ? "," : "";
                accounts += comma + std::to_string(*id);
                blocks += comma + std::to_string(block);
                seqs += comma + std::to_string(seq);
                roles += comma + std::to_string(role);
                owners += comma + std::to_string(*owner_id);
            }
            auto kept = pg::exec_params(
                conn,
                "INSERT INTO wallet_balance_carried (account_id, block_num, block_seq, role, event_account_id)"
                " SELECT * FROM unnest($1::integer[], $2::integer[], $3::integer[], $4::smallint[], $5::integer[])"
                " ON CONFLICT DO NOTHING",
                {accounts + "}", blocks + "}", seqs + "}", roles + "}", owners + "}"});
            if (!kept) return make_error("balance carried: " + kept.error());
        }
        for (const auto& event : undecodable_) {
            const auto id = ids.find(event.account);
            if (!id) return make_error("account " + event.account + " has no id");
            auto listed = pg::exec_params(
                conn,
                "INSERT INTO wallet_balance_undecodable (account_id, block_num, block_seq, role, op_type, decoder_version, problem)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
                {std::to_string(*id), std::to_string(event.block_num), std::to_string(event.block_seq),
                 std::to_string(event.role), std::to_string(event.op_type), std::to_string(kDecoderVersion),
                 event.problem});
            if (!listed) return make_error("balance undecodable: " + listed.error());
            log_warning("balance changes of block " + std::to_string(event.block_num) + " " +
                        event.op_type_name + " (account " + event.account +
                        ") not readable, stored without them: " + event.problem);
        }
        return pending_.write(conn, ids);
    }

    // Events stored without their balance changes (the decoder could not read them).
    std::int64_t undecodable() const { return static_cast<std::int64_t>(undecodable_.size()); }

private:
    // The last operation read (its payload, block and type) and its changes.
    struct Operation {
        PayloadText payload;
        std::int64_t block_num = 0;
        std::string op_type;
        Result<std::vector<CarriedBalanceChange>> changes;
    };
    std::optional<Operation> operation_;
    PendingBalanceChanges pending_;
    // (account the change is of, block, seq, role, the event's account)
    std::set<std::tuple<std::string, std::int64_t, std::int64_t, int, std::string>> carried_;
    struct Undecodable {
        std::string account;
        std::int64_t block_num;
        std::int64_t block_seq;
        int role;
        int op_type;
        std::string op_type_name;
        std::string problem;
    };
    std::vector<Undecodable> undecodable_;
};


}  // namespace

std::optional<std::int32_t> AccountIds::find(const std::string& name) const {
    const auto it = ids_.find(name);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

Result<bool> AccountIds::resolve(PGconn* conn, const std::vector<WalletEvent>& events) {
    std::vector<std::string> names;
    for (const auto& event : events) {
        std::string name = storable_text(event.account);
        if (!ids_.contains(name)) names.push_back(std::move(name));
    }
    return resolve_names(conn, std::move(names));
}

Result<bool> AccountIds::resolve_names(PGconn* conn, std::vector<std::string> names) {
    std::vector<std::string> missing;
    for (auto& name : names) {
        if (!ids_.contains(name)) missing.push_back(std::move(name));
    }
    if (missing.empty()) return true;
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (ids_.size() + missing.size() > kMaxCachedAccounts) ids_.clear();
    auto remember = [this](PGresult* result) {
        for (int row = 0; row < PQntuples(result); ++row) {
            ids_[PQgetvalue(result, row, 0)] = static_cast<std::int32_t>(std::strtol(PQgetvalue(result, row, 1), nullptr, 10));
        }
    };
    // New names in sorted order, so that writers adding overlapping names
    // wait for each other instead of deadlocking. Only names the statement's
    // snapshot lacks are offered to the INSERT: ON CONFLICT burns an identity
    // value for every name it finds stored, a gap in the ids for each name a
    // writer (one of a backfill's workers, with caches of their own) meets
    // first. The INSERT returns the new names, `known` the stored ones.
    auto found = pg::exec_params(conn,
                                 "WITH known AS (SELECT name, id FROM wallet_accounts WHERE name = ANY($1::text[])),"
                                 " added AS (INSERT INTO wallet_accounts (name)"
                                 "  SELECT n FROM unnest($1::text[]) n WHERE n NOT IN (SELECT name FROM known) ORDER BY 1"
                                 "  ON CONFLICT (name) DO NOTHING RETURNING name, id)"
                                 " SELECT name, id FROM added UNION ALL SELECT name, id FROM known",
                                 {pg::text_array_literal(missing)});
    if (!found) return make_error("account ids: " + found.error());
    remember(found->get());
    // A name another writer added concurrently is neither returned (the
    // INSERT waited for that writer and did nothing) nor in the statement's
    // snapshot; a second statement sees it.
    std::vector<std::string> late;
    for (const auto& name : missing) {
        if (!ids_.contains(name)) late.push_back(name);
    }
    if (late.empty()) return true;
    auto again = pg::exec_params(conn, "SELECT name, id FROM wallet_accounts WHERE name = ANY($1::text[])",
                                 {pg::text_array_literal(late)});
    if (!again) return make_error("account ids: " + again.error());
    remember(again->get());
    for (const auto& name : late) {
        if (!ids_.contains(name)) return make_error("account " + name + " has no id");
    }
    return true;
}

Result<bool> prepare_session(PGconn* conn) {
    PQsetNoticeProcessor(conn, ignore_notice, nullptr);
    auto created = pg::exec(conn,
                            "CREATE TEMP TABLE IF NOT EXISTS wallet_events_incoming "
                            "(LIKE wallet_events INCLUDING DEFAULTS);"
                            "CREATE TEMP TABLE IF NOT EXISTS wallet_blocks_incoming "
                            "(LIKE wallet_blocks INCLUDING DEFAULTS)");
    if (!created) return make_error("cannot create the staging tables: " + created.error());
    return true;
}

const BalanceRules& mainnet_balance_rules() {
    static const BalanceRules rules;
    return rules;
}

Result<WriteCounts> insert_events(PGconn* conn, AccountIds& ids, const std::vector<WalletEvent>& events,
                                  WriteMethod method, const BalanceRules& rules) {
    WriteCounts counts;
    counts.offered = static_cast<std::int64_t>(events.size());
    if (events.empty()) return counts;
    auto resolved = ids.resolve(conn, events);
    if (!resolved) return make_error(resolved.error());
    Result<Inserted> inserted = make_error("not written");
    if (method == WriteMethod::MultiRowInsert) {
        Rendered<RowList> rows;
        if (auto rendered = render_rows(events, ids, rows); !rendered) return make_error(rendered.error());
        inserted = multi_row_insert(conn, rows);
    } else {
        Rendered<CopyText> rows;
        if (auto rendered = render_rows(events, ids, rows); !rendered) return make_error(rendered.error());
        inserted = method == WriteMethod::CopyMerge ? copy_merge(conn, rows) : copy_only(conn, rows);
    }
    if (!inserted) return make_error(inserted.error());
    counts.inserted = inserted->count;
    // The balance rows of exactly the rows inserted: a row stored before adds nothing.
    BalanceRows balance_rows;
    for (const auto& event : events) {
        const std::int32_t account_id = *ids.find(storable_text(event.account));
        if (inserted->keys && !inserted->keys->contains(EventKey{account_id, event.block_num, event.block_seq.value_or(0),
                                                                 role_code(event.role)})) {
            continue;
        }
        balance_rows.add_event(event, account_id, rules);
    }
    auto written = balance_rows.write(conn, ids);
    if (!written) return make_error(written.error());
    counts.balance_undecodable = balance_rows.undecodable();
    return counts;
}

Result<WriteCounts> insert_events(PGconn* conn, const std::vector<WalletEvent>& events, WriteMethod method,
                                  const BalanceRules& rules) {
    AccountIds ids;
    return insert_events(conn, ids, events, method, rules);
}

Result<std::string> stored_entry_operation(std::string_view stored, std::string_view op_type) {
    std::vector<std::string_view> parts;
    auto listed = json::for_each_element(stored, [&](std::string_view element) {
        parts.push_back(element);
        return parts.size() <= 3;
    });
    if (!listed || !*listed || parts.size() < 2) return make_error("stored operation: not [trx_in_block, entry, mask]");
    const std::string_view entry = parts[1];
    if (parts.size() == 2) return std::string(entry);  // kept whole, as the node sent it
    const auto mask = json::integer_value(parts[2]);
    if (!mask) return make_error("stored operation: " + mask.error());
    std::optional<std::string_view> op;
    auto scanned = json::for_each_member(entry, [&](std::string_view key, std::string_view value) {
        if (key == "op") op = value;  // never repeated in a stripped entry (append_stored_operation)
        return true;
    });
    if (!scanned) return make_error("stored operation: " + scanned.error());
    if (!op) return std::string(entry);
    if ((*mask & kOpNameBit) != 0) {
        std::string out = "[\"" + std::string(op_type) + '"';
        auto elements = json::for_each_element(*op, [&](std::string_view element) {
            out += ',';
            out += element;
            return true;
        });
        if (!elements) return make_error("stored operation: " + elements.error());
        return out + ']';
    }
    if ((*mask & kOpTypeBit) != 0) {
        std::string out = "{\"type\":\"" + std::string(op_type) + "_operation\"";
        auto members = json::for_each_member(*op, [&](std::string_view key, std::string_view value) {
            out += ",\"";
            out += key;
            out += "\":";
            out += value;
            return true;
        });
        if (!members) return make_error("stored operation: " + members.error());
        return out + '}';
    }
    return std::string(*op);
}

Result<std::int64_t> delete_events_above(PGconn* conn, std::int64_t block_num) {
    const std::string above = std::to_string(block_num);
    // The balance pass stays below forks (it advances over irreversible
    // blocks only); were it above, its runs are cut there and it redoes them.
    auto through = pg::exec_params(conn, "SELECT through_block FROM wallet_balance_snapshot_state WHERE through_block > $1::integer",
                                   {above});
    if (!through) return make_error("delete: " + through.error());
    if (PQntuples(through->get()) > 0) {
        auto cut = cut_balance_runs(conn, block_num);
        if (!cut) return make_error("delete: " + cut.error());
    }
    auto passed = pg::exec_params(conn, "DELETE FROM wallet_balance_pending WHERE block_num > $1::integer", {above});
    if (!passed) return make_error("delete: " + passed.error());
    auto pending = pg::exec_params(conn, "DELETE FROM wallet_balance_carried WHERE block_num > $1::integer", {above});
    if (!pending) return make_error("delete: " + pending.error());
    auto undecodable = pg::exec_params(conn, "DELETE FROM wallet_balance_undecodable WHERE block_num > $1::integer", {above});
    if (!undecodable) return make_error("delete: " + undecodable.error());
    auto deleted = pg::exec_params(conn, "DELETE FROM wallet_events WHERE block_num > $1::integer", {above});
    if (!deleted) return make_error("delete: " + deleted.error());
    auto blocks = pg::exec_params(conn, "DELETE FROM wallet_blocks WHERE block_num > $1::integer", {above});
    if (!blocks) return make_error("delete: " + blocks.error());
    return affected_rows(deleted->get());
}

}  // namespace store

namespace {

Result<BlockRef> block_ref_of(PGresult* result, int row) {
    BlockRef ref;
    ref.num = std::strtoll(PQgetvalue(result, row, 0), nullptr, 10);
    ref.id = PQgetvalue(result, row, 1);
    auto seconds = std::strtoll(PQgetvalue(result, row, 2), nullptr, 10);
    auto time = Timestamp::from_seconds(seconds);
    if (!time) return make_error(time.error());
    ref.time = *time;
    return ref;
}

// "{1,2,3}" array literals for unnest(): ids are hex, times ISO, so nothing
// needs quoting.
template <typename Render>
std::string array_literal(const std::vector<BlockRef>& refs, Render render) {
    std::string out = "{";
    for (std::size_t i = 0; i < refs.size(); ++i) {
        if (i > 0) out += ',';
        out += render(refs[i]);
    }
    return out + "}";
}

bool is_hex_id(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    for (const char c : id) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    return true;
}

}  // namespace

Result<EventStore> EventStore::connect(const std::string& url, bool apply_schema_migrations) {
    auto conn = pg::connect(url);
    if (!conn) return make_error(conn.error());
    PQsetNoticeProcessor(conn->get(), ignore_notice, nullptr);
    if (apply_schema_migrations) {
        auto migrated = apply_migrations(conn->get());
        if (!migrated) return make_error("schema migration: " + migrated.error());
    }
    auto prepared = store::prepare_session(conn->get());
    if (!prepared) return make_error(prepared.error());
    return EventStore(std::move(conn).value());
}

bool EventStore::healthy() const noexcept { return conn_ && PQstatus(conn_.get()) == CONNECTION_OK; }

Result<std::optional<BlockRef>> EventStore::checkpoint() {
    auto result = pg::exec(conn_.get(),
                           "SELECT block_num, block_id, extract(epoch FROM block_time)::bigint FROM indexer_checkpoint");
    if (!result) return make_error("checkpoint: " + result.error());
    if (PQntuples(result->get()) == 0) return std::optional<BlockRef>();
    auto ref = block_ref_of(result->get(), 0);
    if (!ref) return make_error(ref.error());
    return std::optional<BlockRef>(std::move(ref).value());
}

Result<std::vector<BlockRef>> EventStore::block_ids_from(std::int64_t from_block) {
    auto result = pg::exec_params(conn_.get(),
                                  "SELECT block_num, block_id, extract(epoch FROM block_time)::bigint FROM indexer_block_ids "
                                  "WHERE block_num >= $1::integer ORDER BY block_num",
                                  {std::to_string(from_block)});
    if (!result) return make_error("block ids: " + result.error());
    std::vector<BlockRef> refs;
    for (int row = 0; row < PQntuples(result->get()); ++row) {
        auto ref = block_ref_of(result->get(), row);
        if (!ref) return make_error(ref.error());
        refs.push_back(std::move(ref).value());
    }
    return refs;
}

Result<store::WriteCounts> EventStore::commit_batch(const Batch& batch, store::WriteMethod method) {
    for (const auto& ref : batch.blocks) {
        if (!is_hex_id(ref.id)) return make_error("block " + std::to_string(ref.num) + " has a malformed id");
    }
    if (!is_hex_id(batch.checkpoint.id)) return make_error("checkpoint block has a malformed id");
    PGconn* conn = conn_.get();
    // New accounts get their ids in their own short transaction, so that
    // concurrent writers never wait for each other's batches.
    auto resolved = account_ids_.resolve(conn, batch.events);
    if (!resolved) return make_error(resolved.error());
    auto tx = pg::Transaction::begin(conn);
    if (!tx) return make_error(tx.error());

    if (batch.rewind_above) {
        auto deleted = store::delete_events_above(conn, *batch.rewind_above);
        if (!deleted) return make_error(deleted.error());
        auto ids = pg::exec_params(conn, "DELETE FROM indexer_block_ids WHERE block_num > $1::integer",
                                   {std::to_string(*batch.rewind_above)});
        if (!ids) return make_error(ids.error());
    }
    auto counts = store::insert_events(conn, account_ids_, batch.events, method, balance_rules_);
    if (!counts) return make_error(counts.error());

    // Only the ids fork detection may still compare are kept.
    const std::int64_t keep_from = batch.checkpoint.num - batch.keep_block_ids + 1;
    std::vector<BlockRef> kept;
    for (const auto& ref : batch.blocks) {
        if (ref.num >= keep_from) kept.push_back(ref);
    }
    auto saved = pg::exec_params(
        conn,
        "WITH saved AS ("
        "  INSERT INTO indexer_block_ids (block_num, block_id, block_time)"
        "  SELECT * FROM unnest($1::integer[], $2::text[], $3::timestamptz[])"
        "  ON CONFLICT (block_num) DO UPDATE SET block_id = EXCLUDED.block_id, block_time = EXCLUDED.block_time),"
        " trimmed AS (DELETE FROM indexer_block_ids WHERE block_num < $4::integer OR block_num > $5::integer)"
        " INSERT INTO indexer_checkpoint (singleton, block_num, block_id, block_time, updated_at)"
        " VALUES (true, $5::integer, $6, $7::timestamptz, now())"
        " ON CONFLICT (singleton) DO UPDATE SET block_num = EXCLUDED.block_num, block_id = EXCLUDED.block_id,"
        "   block_time = EXCLUDED.block_time, updated_at = EXCLUDED.updated_at",
        {array_literal(kept, [](const BlockRef& r) { return std::to_string(r.num); }),
         array_literal(kept, [](const BlockRef& r) { return r.id; }),
         array_literal(kept, [](const BlockRef& r) { return r.time.to_iso_z(); }), std::to_string(keep_from),
         std::to_string(batch.checkpoint.num), batch.checkpoint.id, batch.checkpoint.time.to_iso_z()});
    if (!saved) return make_error("checkpoint: " + saved.error());
    // The blocks this batch stored (or, rewinding only, the ones it removed),
    // with the decoder that loaded them (migration 0006).
    const std::int64_t first_stored = batch.rewind_above  ? *batch.rewind_above + 1
                                      : batch.blocks.empty() ? batch.checkpoint.num + 1
                                                             : batch.blocks.front().num;
    // And, delivered at commit, the news for push subscribers (migration 0025).
    std::optional<std::string> rewound;
    if (batch.rewind_above) rewound = std::to_string(*batch.rewind_above);
    auto ranges = pg::exec_params(conn,
                                  "SELECT wallet_indexer_stored($1::integer, $2::integer, $3::smallint),"
                                  " wallet_events_committed($1::integer, $2::integer, $4::integer)",
                                  {std::to_string(first_stored), std::to_string(batch.checkpoint.num),
                                   std::to_string(kDecoderVersion), rewound});
    if (!ranges) return make_error("indexer ranges: " + ranges.error());
    auto committed = tx.value().commit();
    if (!committed) return make_error("commit: " + committed.error());
    return counts;
}

Result<bool> EventStore::record_observation(const ChainHead& head) {
    std::optional<std::string> lib;
    if (head.last_irreversible) lib = std::to_string(*head.last_irreversible);
    auto saved = pg::exec_params(
        conn_.get(),
        "INSERT INTO node_observation (singleton, head_block, head_block_time, last_irreversible, observed_at)"
        " VALUES (true, $1::integer, $2::timestamptz, $3::integer, clock_timestamp())"
        " ON CONFLICT (singleton) DO UPDATE SET head_block = EXCLUDED.head_block,"
        "   head_block_time = EXCLUDED.head_block_time, last_irreversible = EXCLUDED.last_irreversible,"
        "   observed_at = EXCLUDED.observed_at",
        {std::to_string(head.head_block), head.head_time.to_iso_z(), lib});
    if (!saved) return make_error("node observation: " + saved.error());
    return true;
}

Result<EventStore::MonitoredState> EventStore::monitored_state() {
    MonitoredState state;
    // 60 s: wallet-backfill's default --heartbeat-timeout-ms.
    auto shards = pg::exec(conn_.get(),
                           "SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'running'),"
                           " count(*) FILTER (WHERE state = 'done'),"
                           " count(*) FILTER (WHERE state = 'running' AND heartbeat_at < now() - interval '60 seconds'),"
                           " coalesce(max(attempts) FILTER (WHERE state <> 'done'), 0) FROM backfill_shards");
    if (!shards) return make_error("backfill shards: " + shards.error());
    PGresult* s = shards.value().get();
    auto at = [](PGresult* r, int row, int column) { return std::strtoll(PQgetvalue(r, row, column), nullptr, 10); };
    state.shards_pending = at(s, 0, 0);
    state.shards_running = at(s, 0, 1);
    state.shards_done = at(s, 0, 2);
    state.shards_stalled = at(s, 0, 3);
    state.shard_attempts_max = at(s, 0, 4);
    // The same function get_status reads (cheap when every stored block is current).
    auto outdated = pg::exec_params(conn_.get(), "SELECT first_block, last_block FROM wallet_outdated_range($1::smallint)",
                                    {std::to_string(kDecoderVersion)});
    if (!outdated) return make_error("decoder coverage: " + outdated.error());
    if (PQntuples(outdated.value().get()) > 0) {
        state.outdated_from = at(outdated.value().get(), 0, 0);
        state.outdated_to = at(outdated.value().get(), 0, 1);
    }
    // Readable to the writer through pg_read_all_stats (wallet-db-setup).
    auto standbys = pg::exec(conn_.get(),
                             // A label value without characters to escape.
                             "SELECT regexp_replace(coalesce(nullif(application_name, ''), 'standby') || '@' ||"
                             " coalesce(host(client_addr), 'local'), '[^A-Za-z0-9_.:@-]', '_', 'g') AS name,"
                             " max(coalesce(extract(epoch FROM replay_lag), 0))::float8,"
                             " max(coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0))::bigint"
                             " FROM pg_stat_replication GROUP BY name ORDER BY name");
    if (!standbys) return make_error("standbys: " + standbys.error());
    PGresult* r = standbys.value().get();
    for (int row = 0; row < PQntuples(r); ++row) {
        state.standbys.push_back({PQgetvalue(r, row, 0), std::strtod(PQgetvalue(r, row, 1), nullptr), at(r, row, 2)});
    }
    return state;
}

}  // namespace wallet
