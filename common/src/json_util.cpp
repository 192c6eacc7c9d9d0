#include "wallet/json_util.hpp"

#include "wallet/json_ascii.hpp"
#include "wallet/json_scan.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wallet::json {

namespace {

// A tree built straight from the text for the common shape of node answers:
// ASCII, strings without escapes, integers of at most 18 digits. jansson's
// own parser spends ~150 instructions per byte in its character-by-character
// lexer (callgrind of wallet-backfill: 40% of the loader). Anything else
// (escapes, fractions, non-ASCII text, errors) gives nullptr and the caller
// lets jansson parse the whole text, so values and errors are jansson's.
class PlainTreeBuilder {
public:
    explicit PlainTreeBuilder(std::string_view text) noexcept : text_(text) {}

    JsonPtr build() {
        for (const char c : text_) {
            if (static_cast<unsigned char>(c) >= 0x80) return nullptr;
        }
        JsonPtr value = value_at(0);
        skip_whitespace();
        return value && pos_ == text_.size() ? std::move(value) : nullptr;
    }

private:
    static constexpr int kMaxDepth = 64;

    void skip_whitespace() noexcept {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t')) {
            ++pos_;
        }
    }

    bool next_is(char c) {
        skip_whitespace();
        if (pos_ >= text_.size() || text_[pos_] != c) return false;
        ++pos_;
        return true;
    }

    // After the opening quote: the text up to the closing one, which it
    // passes; false for escapes and control characters (jansson's cases).
    bool plain_string(std::string_view& out) noexcept {
        const std::size_t start = pos_;
        while (pos_ < text_.size()) {
            pos_ += plain_run(text_.substr(pos_));
            if (pos_ >= text_.size()) break;
            const unsigned char c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                out = text_.substr(start, pos_ - start);
                ++pos_;
                return true;
            }
            if (c == '\\' || c < 0x20) return false;
            ++pos_;
        }
        return false;
    }

    JsonPtr value_at(int depth) {
        if (depth > kMaxDepth) return nullptr;
        skip_whitespace();
        if (pos_ >= text_.size()) return nullptr;
        const char c = text_[pos_];
        if (c == '{') {
            ++pos_;
            JsonPtr object = json_own(json_object());
            if (next_is('}')) return object;
            do {
                std::string_view key;
                if (!next_is('"') || !plain_string(key) || !next_is(':')) return nullptr;
                JsonPtr member = value_at(depth + 1);
                // A repeated name keeps the last value, as jansson's parser does.
                if (!member || json_object_setn_new_nocheck(object.get(), key.data(), key.size(), member.release()) != 0) {
                    return nullptr;
                }
            } while (next_is(','));
            return next_is('}') ? std::move(object) : nullptr;
        }
        if (c == '[') {
            ++pos_;
            JsonPtr array = json_own(json_array());
            if (next_is(']')) return array;
            do {
                JsonPtr element = value_at(depth + 1);
                if (!element || json_array_append_new(array.get(), element.release()) != 0) return nullptr;
            } while (next_is(','));
            return next_is(']') ? std::move(array) : nullptr;
        }
        if (c == '"') {
            ++pos_;
            std::string_view text;
            if (!plain_string(text)) return nullptr;
            return json_own(json_stringn_nocheck(text.data(), text.size()));
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            const std::size_t start = pos_;
            if (!scan_number(text_, pos_)) return nullptr;
            const std::string_view number = text_.substr(start, pos_ - start);
            const std::size_t digits = number.size() - (c == '-' ? 1 : 0);
            if (digits > 18 || number.find_first_of(".eE") != std::string_view::npos) return nullptr;
            json_int_t value = 0;
            for (const char d : number.substr(c == '-' ? 1 : 0)) value = value * 10 + (d - '0');
            return json_own(json_integer(c == '-' ? -value : value));
        }
        if (literal("true")) return json_own(json_true());
        if (literal("false")) return json_own(json_false());
        if (literal("null")) return json_own(json_null());
        return nullptr;
    }

    bool literal(std::string_view word) noexcept {
        if (text_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

}  // namespace

Result<JsonPtr> parse(std::string_view text) {
    if (JsonPtr plain = PlainTreeBuilder(text).build()) return plain;
    json_error_t error;
    JsonPtr value = json_own(json_loadb(text.data(), text.size(), JSON_DECODE_ANY | JSON_ALLOW_NUL, &error));
    if (!value) {
        return make_error("invalid JSON at line " + std::to_string(error.line) + " column " + std::to_string(error.column) +
                          ": " + error.text);
    }
    return value;
}

std::string dump_compact(const json_t* value) {
    MallocPtr<char> text(json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY));
    return text ? std::string(text.get()) : std::string();
}

namespace {

// Bytes that JSON text may not hold as they are: controls, DEL, '"' and '\\'.
constexpr std::array<bool, 256> kNeedsEscape = [] {
    std::array<bool, 256> table{};
    for (std::size_t c = 0; c < 0x20; ++c) table[c] = true;
    table[0x7f] = true;
    table['"'] = true;
    table['\\'] = true;
    return table;
}();

// kNeedsEscape, and every byte from 0x80 up (plain_ascii_run).
constexpr std::array<bool, 256> kNotAscii = [] {
    std::array<bool, 256> table = kNeedsEscape;
    for (std::size_t c = 0x80; c < 0x100; ++c) table[c] = true;
    return table;
}();

// plain_run, or with kStopAtHigh plain_ascii_run.
template <bool kStopAtHigh>
std::size_t run_of(std::string_view text) noexcept {
    const std::array<bool, 256>& stops = kStopAtHigh ? kNotAscii : kNeedsEscape;
    const char* const p = text.data();
    const std::size_t n = text.size();
    std::size_t i = 0;
#if defined(__SSE2__)
    auto first = [](int mask) { return static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask))); };
    auto load8 = [](const char* at) {
        std::uint64_t word;
        std::memcpy(&word, at, sizeof word);
        return _mm_cvtsi64_si128(static_cast<long long>(word));
    };
    if (n >= 16) {
        for (; i + 16 <= n; i += 16) {
            const int mask = special_bytes<kStopAtHigh>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
            if (mask != 0) return i + first(mask);
        }
        // The tail as the last sixteen bytes: those before it are plain, so
        // the first special byte of that block is the text's first.
        if (i == n) return n;
        const int mask = special_bytes<kStopAtHigh>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16)));
        return mask != 0 ? n - 16 + first(mask) : n;
    }
    // Short texts (most of an answer's fields): the first and the last eight
    // (or four) bytes, overlapping, instead of a byte at a time (the rest of
    // the block is zeros, which the mask leaves out).
    if (n >= 8) {
        int mask = special_bytes<kStopAtHigh>(load8(p)) & 0xff;
        if (mask != 0) return first(mask);
        mask = special_bytes<kStopAtHigh>(load8(p + n - 8)) & 0xff;
        return mask != 0 ? n - 8 + first(mask) : n;
    }
    auto load4 = [](const char* at) {
        std::uint32_t word;
        std::memcpy(&word, at, sizeof word);
        return _mm_cvtsi32_si128(static_cast<int>(word));
    };
    if (n >= 4) {
        int mask = special_bytes<kStopAtHigh>(load4(p)) & 0xf;
        if (mask != 0) return first(mask);
        mask = special_bytes<kStopAtHigh>(load4(p + n - 4)) & 0xf;
        return mask != 0 ? n - 4 + first(mask) : n;
    }
#endif
    while (i < n && !stops[static_cast<unsigned char>(p[i])]) ++i;
    return i;
}

}  // namespace

std::size_t plain_run(std::string_view text) noexcept { return run_of<false>(text); }

std::size_t plain_ascii_run(std::string_view text) noexcept { return run_of<true>(text); }

namespace {

char* write_escape(char* out, unsigned char c) noexcept {
    static constexpr char kHex[] = "0123456789abcdef";
    *out++ = '\\';
    switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\b': *out++ = 'b'; break;
        case '\f': *out++ = 'f'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        default:
            *out++ = 'u';
            *out++ = '0';
            *out++ = '0';
            *out++ = kHex[c >> 4];
            *out++ = kHex[c & 15];
    }
    return out;
}

}  // namespace

// Runs of plain bytes (almost all text) are copied whole.
char* write_quoted(char* out, std::string_view text) noexcept {
    *out++ = '"';
    // A short plain text (most fields of an answer) is copied in two
    // overlapping words rather than by a call to memcpy.
    const std::size_t n = text.size();
    if (n >= 4 && n <= 16 && plain_run(text) == n) {
        const char* const p = text.data();
        if (n >= 8) {
            std::uint64_t head, tail;
            std::memcpy(&head, p, 8);
            std::memcpy(&tail, p + n - 8, 8);
            std::memcpy(out, &head, 8);
            std::memcpy(out + n - 8, &tail, 8);
        } else {
            std::uint32_t head, tail;
            std::memcpy(&head, p, 4);
            std::memcpy(&tail, p + n - 4, 4);
            std::memcpy(out, &head, 4);
            std::memcpy(out + n - 4, &tail, 4);
        }
        out += n;
        *out++ = '"';
        return out;
    }
    while (!text.empty()) {
        const std::size_t run = plain_run(text);
        std::memcpy(out, text.data(), run);
        out += run;
        if (run == text.size()) break;
        out = write_escape(out, static_cast<unsigned char>(text[run]));
        text.remove_prefix(run + 1);
    }
    *out++ = '"';
    return out;
}

void append_quoted(std::string& out, std::string_view text) {
    out += '"';
    while (!text.empty()) {
        const std::size_t run = plain_run(text);
        out.append(text.data(), run);
        if (run == text.size()) break;
        char escape[6];
        out.append(escape, static_cast<std::size_t>(write_escape(escape, static_cast<unsigned char>(text[run])) - escape));
        text.remove_prefix(run + 1);
    }
    out += '"';
}

std::string quoted(std::string_view text) {
    std::string out;
    append_quoted(out, text);
    return out;
}

std::optional<std::string_view> string_view_of(const json_t* value) {
    if (!json_is_string(value)) return std::nullopt;
    return std::string_view(json_string_value(value), json_string_length(value));
}

Result<std::int64_t> to_int64(const json_t* value) {
    if (json_is_integer(value)) return static_cast<std::int64_t>(json_integer_value(value));
    const auto text = string_view_of(value);
    if (!text) return make_error("expected an integer");
    return parse_int64(*text);
}

Result<std::int64_t> parse_int64(std::string_view text) {
    std::string_view digits = text;
    const bool negative = !digits.empty() && digits.front() == '-';
    if (negative) digits.remove_prefix(1);
    if (digits.empty() || digits.size() > 19) return make_error("expected an integer, got \"" + std::string(text) + "\"");
    // Accumulated negatively so that INT64_MIN parses too.
    std::int64_t result = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9') return make_error("expected an integer, got \"" + std::string(text) + "\"");
        const int digit = c - '0';
        if (result < (std::numeric_limits<std::int64_t>::min() + digit) / 10) {
            return make_error("integer out of range: " + std::string(text));
        }
        result = result * 10 - digit;
    }
    if (!negative) {
        if (result == std::numeric_limits<std::int64_t>::min()) return make_error("integer out of range: " + std::string(text));
        result = -result;
    }
    return result;
}

}  // namespace wallet::json
