#include "wallet/json_util.hpp"

#include <array>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wallet::json {

Result<JsonPtr> parse(std::string_view text) {
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

#if defined(__SSE2__)
// Bit i set where byte i of the block needs escaping.
int special_bytes(__m128i block) noexcept {
    const __m128i last_control = _mm_set1_epi8(0x1f);
    // Unsigned c <= 0x1f exactly when max(c, 0x1f) == 0x1f.
    const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(block, last_control), last_control);
    const __m128i quote_or_backslash =
        _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')), _mm_cmpeq_epi8(block, _mm_set1_epi8('\\')));
    const __m128i del = _mm_cmpeq_epi8(block, _mm_set1_epi8(0x7f));
    return _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control, quote_or_backslash), del));
}
#endif

// The length of the prefix of text that needs no escaping: sixteen bytes at
// a time where SSE2 is there (every x86-64), the rest byte by byte.
std::size_t plain_run(std::string_view text) noexcept {
    std::size_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= text.size(); i += 16) {
        const int mask = special_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i)));
        if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    while (i < text.size() && !kNeedsEscape[static_cast<unsigned char>(text[i])]) ++i;
    return i;
}

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
