#include "wallet/json_scan.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "wallet/json_ascii.hpp"
#include "wallet/json_util.hpp"

namespace wallet::json {

namespace detail {

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
        pos_ += plain_run_inline(text_.substr(pos_));  // stops at DEL too, which the table lets through
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

// ---- Tape -------------------------------------------------------------------

namespace {

int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return c - 'A' + 10;
}

unsigned hex4(const char* at) noexcept {
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) value = value * 16 + static_cast<unsigned>(hex_digit(at[i]));
    return value;
}

void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

// A validated string's text between its quotes with its escapes decoded.
void append_unescaped(std::string& out, std::string_view raw) {
    for (std::size_t i = 0; i < raw.size();) {
        const std::size_t plain = raw.find('\\', i);
        if (plain == std::string_view::npos) {
            out.append(raw.substr(i));
            return;
        }
        out.append(raw.substr(i, plain - i));
        const char escaped = raw[plain + 1];
        i = plain + 2;
        switch (escaped) {
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                std::uint32_t code = hex4(raw.data() + i);
                i += 4;
                if (code >= 0xD800 && code <= 0xDBFF) {  // the builder checked the low half follows
                    code = 0x10000 + ((code - 0xD800) << 10) + (hex4(raw.data() + i + 2) - 0xDC00);
                    i += 6;
                }
                append_utf8(out, code);
                break;
            }
            default: out += escaped; break;  // " \ /
        }
    }
}

// The length of a UTF-8 sequence that starts at text[pos] and is valid as
// jansson checks it (no overlong forms, no surrogates, at most U+10FFFF);
// 0 when invalid.
std::size_t utf8_sequence(std::string_view text, std::size_t pos) noexcept {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned first = byte(pos);
    std::size_t size = 0;
    std::uint32_t code = 0;
    if (first >= 0xC2 && first <= 0xDF) {
        size = 2;
        code = first & 0x1F;
    } else if (first >= 0xE0 && first <= 0xEF) {
        size = 3;
        code = first & 0x0F;
    } else if (first >= 0xF0 && first <= 0xF4) {
        size = 4;
        code = first & 0x07;
    } else {
        return 0;
    }
    if (pos + size > text.size()) return 0;
    for (std::size_t i = 1; i < size; ++i) {
        const unsigned next = byte(pos + i);
        if ((next & 0xC0) != 0x80) return 0;
        code = (code << 6) | (next & 0x3F);
    }
    if ((size == 3 && code < 0x800) || (size == 4 && code < 0x10000) || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
        return 0;
    }
    return size;
}

}  // namespace

class Tape::Builder {
public:
    Builder(std::string_view text, std::vector<Token>& tokens) noexcept : text_(text), tokens_(tokens) {}

    Result<bool> build() {
        if (text_.size() >= std::numeric_limits<std::uint32_t>::max()) return make_error("JSON: text too long");
        if (!value(0)) return make_error(error_);
        skip_whitespace();
        if (pos_ != text_.size()) return make_error(at("text after the value"));
        return true;
    }

private:
    std::string at(const char* what) const { return std::string("JSON: ") + what + " at offset " + std::to_string(pos_); }
    bool fail(const char* what) {
        if (error_.empty()) error_ = at(what);
        return false;
    }
    void skip_whitespace() noexcept { pos_ = detail::skip_whitespace(text_, pos_); }
    std::uint32_t push(Kind kind) {
        tokens_.push_back(Token{kind, false, 0, 0, 0, 0});
        return static_cast<std::uint32_t>(tokens_.size() - 1);
    }
    void close(std::uint32_t index) noexcept { tokens_[index].next = static_cast<std::uint32_t>(tokens_.size()); }

    bool value(int depth) {
        if (depth > kMaxScanDepth) return fail("nesting too deep");
        skip_whitespace();
        if (pos_ >= text_.size()) return fail("unexpected end");
        const char c = text_[pos_];
        if (c == '"') return string();
        if (c == '-' || is_digit(c)) return number();
        if (c == 't') return literal("true", Kind::True);
        if (c == 'f') return literal("false", Kind::False);
        if (c == 'n') return literal("null", Kind::Null);
        if (c != '[' && c != '{') return fail("unexpected character");
        const bool is_object = c == '{';
        const char closing = is_object ? '}' : ']';
        const std::uint32_t index = push(is_object ? Kind::Object : Kind::Array);
        ++pos_;
        skip_whitespace();
        if (pos_ < text_.size() && text_[pos_] == closing) {
            ++pos_;
            close(index);
            return true;
        }
        while (true) {
            if (is_object) {
                skip_whitespace();
                if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a member name");
                if (!string()) return false;
                skip_whitespace();
                if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':'");
                ++pos_;
            }
            if (!value(depth + 1)) return false;
            skip_whitespace();
            if (pos_ >= text_.size()) return fail("unexpected end");
            if (text_[pos_] == closing) {
                ++pos_;
                close(index);
                return true;
            }
            if (text_[pos_] != ',') return fail(is_object ? "expected ',' or '}'" : "expected ',' or ']'");
            ++pos_;
        }
    }

    bool string() {
        const std::uint32_t index = push(Kind::String);
        const std::size_t start = ++pos_;
        bool escaped = false;
        while (true) {
            pos_ += plain_run_inline(text_.substr(pos_));
            if (pos_ >= text_.size()) return fail("unterminated string");
            const unsigned char c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') break;
            if (c == 0x7F) {
                ++pos_;
            } else if (c < 0x20) {
                return fail("control character in a string");
            } else {
                escaped = true;
                if (!escape()) return false;
            }
        }
        // plain_run passes bytes >= 0x80: their sequences are checked here.
        if (!valid_utf8(start)) return false;
        Token& token = tokens_[index];
        token.escaped = escaped;
        token.offset = static_cast<std::uint32_t>(start);
        token.length = static_cast<std::uint32_t>(pos_ - start);
        ++pos_;  // the closing quote
        close(index);
        return true;
    }

    // The bytes from start to pos_ (a string's, escapes are ASCII) are UTF-8.
    bool valid_utf8(std::size_t start) {
        constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;
        std::size_t i = start;
        while (i < pos_) {
            std::uint64_t word = 0;
            if (i + 8 <= pos_) {
                std::memcpy(&word, text_.data() + i, sizeof word);
                if ((word & kHighBits) == 0) {
                    i += 8;
                    continue;
                }
            }
            if (static_cast<unsigned char>(text_[i]) < 0x80) {
                ++i;
                continue;
            }
            const std::size_t size = utf8_sequence(text_.substr(0, pos_), i);
            if (size == 0) {
                pos_ = i;
                return fail("invalid UTF-8 in a string");
            }
            i += size;
        }
        return true;
    }

    // At a backslash: moves past the escape.
    bool escape() {
        if (pos_ + 1 >= text_.size()) return fail("unterminated string");
        const char escaped = text_[pos_ + 1];
        if (escaped != 'u') {
            if (std::string_view("\"\\/bfnrt").find(escaped) == std::string_view::npos) return fail("bad escape");
            pos_ += 2;
            return true;
        }
        if (!hex_escape(pos_)) return false;
        const unsigned code = hex4(text_.data() + pos_ + 2);
        pos_ += 6;
        if (code >= 0xDC00 && code <= 0xDFFF) return fail("lone low surrogate");
        if (code < 0xD800 || code > 0xDBFF) return true;
        if (pos_ + 1 >= text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u' || !hex_escape(pos_)) {
            return fail("high surrogate without a low one");
        }
        const unsigned low = hex4(text_.data() + pos_ + 2);
        if (low < 0xDC00 || low > 0xDFFF) return fail("high surrogate without a low one");
        pos_ += 6;
        return true;
    }

    // Whether a \uXXXX escape with four hex digits starts at `at`.
    bool hex_escape(std::size_t at) {
        if (at + 6 > text_.size()) return fail("unterminated string");
        for (std::size_t i = at + 2; i < at + 6; ++i) {
            if (!is_hex(text_[i])) return fail("bad \\u escape");
        }
        return true;
    }

    bool number() {
        const std::size_t start = pos_;
        if (!scan_number(text_, pos_)) return fail("bad number");
        const std::string_view number = text_.substr(start, pos_ - start);
        if (number.find_first_of(".eE") == std::string_view::npos) {
            auto parsed = parse_int64(number);
            if (!parsed) return fail("integer out of range");
            tokens_[push(Kind::Integer)].integer = *parsed;
        } else {
            // jansson refuses reals that overflow a double (not those that underflow).
            const std::string copy(number);
            const double parsed = std::strtod(copy.c_str(), nullptr);
            if (parsed == HUGE_VAL || parsed == -HUGE_VAL) return fail("real number overflow");
            push(Kind::Real);
        }
        close(static_cast<std::uint32_t>(tokens_.size() - 1));
        return true;
    }

    bool literal(std::string_view word, Kind kind) {
        if (text_.substr(pos_, word.size()) != word) return fail("bad literal");
        pos_ += word.size();
        close(push(kind));
        return true;
    }

    std::string_view text_;
    std::vector<Token>& tokens_;
    std::size_t pos_ = 0;
    std::string error_;
};

Result<Tape> Tape::parse(std::string_view text) {
    Tape tape;
    tape.text_ = text;
    tape.tokens_.reserve(text.size() / 16 + 8);
    auto built = Builder(text, tape.tokens_).build();
    if (!built) return make_error(built.error());
    return tape;
}

View View::member(std::string_view name) const {
    if (!is_object()) return View();
    const auto& tokens = tape_->tokens_;
    const char* const text = tape_->text_.data();
    std::uint32_t found = 0;
    // Keys are rarely escaped: their text is compared as it is, else decoded.
    for (std::uint32_t key = index_ + 1; key < tokens[index_].next; key = tokens[key + 1].next) {
        const Tape::Token& token = tokens[key];
        const bool same = token.escaped ? View(tape_, key).string() == name
                                        : token.length == name.size() && std::memcmp(text + token.offset, name.data(), name.size()) == 0;
        if (same) found = key + 1;
    }
    return found != 0 ? View(tape_, found) : View();
}

std::size_t View::size() const noexcept {
    std::size_t count = 0;
    if (is_array()) {
        for_each_element([&](View) { ++count; });
    } else if (is_object()) {
        for_each_member([&](View, View) { ++count; });
    }
    return count;
}

View View::element(std::size_t index) const noexcept {
    View found;
    std::size_t at = 0;
    for_each_element([&](View element) {
        if (at++ == index) found = element;
    });
    return found;
}

std::int64_t View::integer() const noexcept { return is_integer() ? tape_->tokens_[index_].integer : 0; }

std::string View::string() const {
    std::string out;
    if (!is_string()) return out;
    const Tape::Token& token = tape_->tokens_[index_];
    const std::string_view raw = tape_->text_.substr(token.offset, token.length);
    if (token.escaped) {
        append_unescaped(out, raw);
    } else {
        out.assign(raw);
    }
    return out;
}

bool View::string_equals(std::string_view text) const {
    if (!is_string()) return false;
    const Tape::Token& token = tape_->tokens_[index_];
    if (token.escaped) return string() == text;
    return token.length == text.size() && std::memcmp(tape_->text_.data() + token.offset, text.data(), text.size()) == 0;
}

}  // namespace wallet::json
