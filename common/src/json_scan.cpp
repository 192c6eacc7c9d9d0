#include "wallet/json_scan.hpp"

#include <array>
#include <string>

#include "wallet/json_util.hpp"

namespace wallet::json {

namespace detail {

std::size_t skip_whitespace(std::string_view text, std::size_t pos) noexcept {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t')) ++pos;
    return pos;
}

bool open_container(std::string_view text, char open, std::size_t& pos) {
    pos = skip_whitespace(text, 0);
    if (pos >= text.size() || text[pos] != open) return false;
    pos = skip_whitespace(text, pos + 1);
    return true;
}

bool next_separator(std::string_view text, char close, std::size_t& pos, bool& done) {
    pos = skip_whitespace(text, pos);
    if (pos >= text.size()) return false;
    if (text[pos] == close) {
        done = true;
        ++pos;
        return true;
    }
    if (text[pos] != ',') return false;
    pos = skip_whitespace(text, pos + 1);
    return true;
}

}  // namespace detail

namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_hex(char c) noexcept { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

void Scanner::skip_whitespace() noexcept { pos_ = detail::skip_whitespace(text_, pos_); }

bool Scanner::fail(const char* what) {
    if (error_.empty()) error_ = std::string("JSON: ") + what + " at offset " + std::to_string(pos_);
    return false;
}

bool Scanner::at_end() {
    skip_whitespace();
    return pos_ >= text_.size();
}

std::string_view Scanner::next_value() {
    skip_whitespace();
    const std::size_t start = pos_;
    if (!skip_value(0)) return {};
    return text_.substr(start, pos_ - start);
}

bool Scanner::consume(char c) {
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == c) {
        ++pos_;
        return true;
    }
    return false;
}

bool Scanner::expect(char c) {
    if (consume(c)) return true;
    const char what[] = {'e', 'x', 'p', 'e', 'c', 't', 'e', 'd', ' ', '\'', c, '\'', '\0'};
    return fail(what);
}

bool Scanner::read_string(std::string_view& raw) {
    skip_whitespace();
    if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a string");
    const std::size_t start = pos_;
    if (!skip_string()) return false;
    raw = text_.substr(start + 1, pos_ - start - 2);
    return true;
}

bool Scanner::skip_value(int depth) {
    if (depth > kMaxScanDepth) return fail("nesting too deep");
    skip_whitespace();
    if (pos_ >= text_.size()) return fail("unexpected end");
    const char c = text_[pos_];
    if (c == '"') return skip_string();
    if (c == '-' || is_digit(c)) return skip_number();
    if (c == 't') return skip_literal("true");
    if (c == 'f') return skip_literal("false");
    if (c == 'n') return skip_literal("null");
    if (c != '[' && c != '{') return fail("unexpected character");
    const bool is_object = c == '{';
    const char close = is_object ? '}' : ']';
    ++pos_;
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == close) {
        ++pos_;
        return true;
    }
    while (true) {
        if (is_object) {
            skip_whitespace();
            if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a member name");
            if (!skip_string()) return false;
            skip_whitespace();
            if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':'");
            ++pos_;
        }
        if (!skip_value(depth + 1)) return false;
        skip_whitespace();
        if (pos_ >= text_.size()) return fail("unexpected end");
        if (text_[pos_] == close) {
            ++pos_;
            return true;
        }
        if (text_[pos_] != ',') return fail(is_object ? "expected ',' or '}'" : "expected ',' or ']'");
        ++pos_;
    }
}

// Characters a string scan must look at: the quote, the backslash and the
// control characters JSON forbids raw; everything else is skipped in a tight loop.
constexpr std::array<bool, 256> kStringSpecial = [] {
    std::array<bool, 256> special{};
    for (int c = 0; c < 0x20; ++c) special[static_cast<std::size_t>(c)] = true;
    special['"'] = true;
    special['\\'] = true;
    return special;
}();

bool Scanner::skip_string() {
    ++pos_;  // the opening quote
    const std::size_t size = text_.size();
    const char* data = text_.data();
    while (pos_ < size) {
        pos_ += plain_run(text_.substr(pos_));  // stops at DEL too, which the table lets through
        while (pos_ < size && !kStringSpecial[static_cast<unsigned char>(data[pos_])]) ++pos_;
        if (pos_ >= size) break;
        const char c = text_[pos_];
        if (c == '"') {
            ++pos_;
            return true;
        }
        if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
        if (c == '\\') {
            if (pos_ + 1 >= text_.size()) break;
            const char escaped = text_[pos_ + 1];
            if (escaped == 'u') {
                if (pos_ + 6 > text_.size()) break;
                for (std::size_t i = pos_ + 2; i < pos_ + 6; ++i) {
                    if (!is_hex(text_[i])) return fail("bad \\u escape");
                }
                pos_ += 6;
                continue;
            }
            if (std::string_view("\"\\/bfnrt").find(escaped) == std::string_view::npos) return fail("bad escape");
            pos_ += 2;
            continue;
        }
        ++pos_;
    }
    return fail("unterminated string");
}

bool Scanner::skip_number() {
    if (!scan_number(text_, pos_)) return fail("bad number");
    return true;
}

bool Scanner::skip_literal(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return fail("bad literal");
    pos_ += literal.size();
    return true;
}

bool scan_number(std::string_view text, std::size_t& pos) noexcept {
    if (pos < text.size() && text[pos] == '-') ++pos;
    if (pos >= text.size() || !is_digit(text[pos])) return false;
    if (text[pos] == '0') {
        ++pos;
    } else {
        while (pos < text.size() && is_digit(text[pos])) ++pos;
    }
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        if (pos >= text.size() || !is_digit(text[pos])) return false;
        while (pos < text.size() && is_digit(text[pos])) ++pos;
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
        ++pos;
        if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) ++pos;
        if (pos >= text.size() || !is_digit(text[pos])) return false;
        while (pos < text.size() && is_digit(text[pos])) ++pos;
    }
    return true;
}

bool plain_string(std::string_view value_text, std::string_view& out) noexcept {
    if (value_text.size() < 2 || value_text.front() != '"' || value_text.back() != '"') return false;
    const std::string_view inner = value_text.substr(1, value_text.size() - 2);
    if (inner.find('\\') != std::string_view::npos) return false;
    out = inner;
    return true;
}

Result<std::int64_t> integer_value(std::string_view value_text) {
    std::string_view digits;
    // Numbers above 2^53 come as strings of digits.
    if (plain_string(value_text, digits)) return parse_int64(digits);
    if (value_text.find_first_of(".eE") != std::string_view::npos) return make_error("expected an integer");
    return parse_int64(value_text);
}

}  // namespace wallet::json
