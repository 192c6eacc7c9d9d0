#include "wallet/json_util.hpp"

#include <limits>

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

char* write_quoted(char* out, std::string_view text) noexcept {
    static constexpr char kHex[] = "0123456789abcdef";
    *out++ = '"';
    for (const char raw : text) {
        const auto c = static_cast<unsigned char>(raw);
        if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\') {
            *out++ = raw;
            continue;
        }
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
    }
    *out++ = '"';
    return out;
}

void append_quoted(std::string& out, std::string_view text) {
    const std::size_t start = out.size();
    out.resize(start + quoted_capacity(text.size()));
    char* end = write_quoted(out.data() + start, text);
    out.resize(static_cast<std::size_t>(end - out.data()));
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
