// A validating JSON scanner that finds values in a text without building a
// tree: the node client uses it to walk batch answers of get_ops_in_block and
// parse only the entries a decoder needs. Every value it steps over is
// checked against the JSON grammar (RFC 8259: strings with their escapes and
// no raw control characters, numbers, literals, nesting), so truncated or
// malformed text is an error, never a partial result. UTF-8 inside strings is
// not checked here: what is decoded is read again through a Tape, which checks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wallet/result.hpp"

namespace wallet::json {

// Nesting deeper than this is refused (node answers nest a handful of levels).
inline constexpr int kMaxScanDepth = 64;

namespace detail {
inline std::size_t skip_whitespace(std::string_view text, std::size_t pos) noexcept;
}  // namespace detail

class Scanner {
public:
    explicit Scanner(std::string_view text) noexcept : text_(text) {}

    // The next value (leading whitespace skipped): its exact text; the
    // scanner moves past it. Empty view and an error message on failure.
    std::string_view next_value();

    // A cursor over a known shape, for one validating pass (each call skips
    // leading whitespace; a false return of read_string or expect has set
    // the error):
    // the next character is c: moves past it (else nothing happens);
    bool consume(char c);
    // the next character must be c;
    bool expect(char c);
    // a string: its text between the quotes, escapes as they are.
    bool read_string(std::string_view& raw);
    // Whether only whitespace remains.
    bool at_end();
    bool failed() const noexcept { return !error_.empty(); }
    const std::string& error() const noexcept { return error_; }
    std::size_t position() const noexcept { return pos_; }

private:
    bool skip_value(int depth);
    bool skip_string();
    bool skip_number();
    bool skip_literal(std::string_view literal);
    void skip_whitespace() noexcept { pos_ = detail::skip_whitespace(text_, pos_); }
    bool fail(const char* what);

    std::string_view text_;
    std::size_t pos_ = 0;
    std::string error_;
};

// Calls visit(element_text) for each element of an array text; false from
// visit stops early. Errors: not an array, malformed, trailing text.
template <typename Visit>
Result<bool> for_each_element(std::string_view array_text, Visit&& visit);

// Calls visit(raw_key, value_text) for each member of an object text. The
// key is the text between its quotes, escapes left as they are.
template <typename Visit>
Result<bool> for_each_member(std::string_view object_text, Visit&& visit);

// Moves pos past the JSON number (RFC 8259 grammar) that starts at text[pos].
// False when it is malformed, pos then at the offending character, so that
// callers can report where. Shared by this scanner and the router's parser.
bool scan_number(std::string_view text, std::size_t& pos) noexcept;

// A string value's text between the quotes when it has no escapes.
bool plain_string(std::string_view value_text, std::string_view& out) noexcept;

// An integer value (a JSON number without fraction or exponent, or a string
// of digits: node-api.md section 2).
Result<std::int64_t> integer_value(std::string_view value_text);

// ---- a parsed text without a tree --------------------------------------------

// What a value of a Tape is.
enum class Kind : std::uint8_t { Null, False, True, Integer, Real, String, Array, Object };

class Tape;

// A value of a Tape (or none: a member that is absent). Cheap to copy; valid
// as long as the tape and its text are.
class View {
public:
    View() = default;
    explicit operator bool() const noexcept { return tape_ != nullptr; }
    Kind kind() const noexcept;
    bool is_object() const noexcept { return is(Kind::Object); }
    bool is_array() const noexcept { return is(Kind::Array); }
    bool is_string() const noexcept { return is(Kind::String); }
    bool is_integer() const noexcept { return is(Kind::Integer); }
    bool is_null() const noexcept { return is(Kind::Null); }
    bool is_boolean() const noexcept { return is(Kind::True) || is(Kind::False); }

    // An object's member; a name given twice gives its last value, as
    // jansson keeps. No View when absent or not an object.
    View member(std::string_view name) const;
    // An array's elements or an object's members.
    std::size_t size() const noexcept;
    // An array's element (no View past the end or for other kinds).
    View element(std::size_t index) const noexcept;
    // visit(name, value) for each member of an object, in text order
    // (a repeated name once per occurrence).
    template <typename Visit>
    void for_each_member(Visit&& visit) const;
    template <typename Visit>
    void for_each_element(Visit&& visit) const;

    // An integer's value (0 for other kinds).
    std::int64_t integer() const noexcept;
    // A string's bytes, escapes decoded (empty for other kinds).
    std::string string() const;
    // Whether this is a string whose bytes are `text`.
    bool string_equals(std::string_view text) const;

private:
    friend class Tape;
    View(const Tape* tape, std::uint32_t index) noexcept : tape_(tape), index_(index) {}
    bool is(Kind kind) const noexcept { return tape_ != nullptr && this->kind() == kind; }
    std::uint32_t next() const noexcept;

    const Tape* tape_ = nullptr;
    std::uint32_t index_ = 0;
};

// A JSON text parsed into a flat list of its values in text order, each
// knowing where the next sibling starts: what the decoder reads an entry
// from, without allocating a node per value. It accepts and refuses what
// jansson's parser (as json::parse calls it) does: RFC 8259 grammar, UTF-8
// inside strings, \u escapes with paired surrogates (\u0000 allowed),
// integers within int64, reals within double; nesting to kMaxScanDepth.
// The text must outlive the tape.
class Tape {
public:
    static Result<Tape> parse(std::string_view text);
    View root() const noexcept { return View(this, 0); }

private:
    friend class View;
    struct Token {
        Kind kind = Kind::Null;
        bool escaped = false;      // a string with backslash escapes
        std::uint32_t next = 0;    // the index after this value's subtree
        std::uint32_t offset = 0;  // a string's text between its quotes
        std::uint32_t length = 0;
        std::int64_t integer = 0;
    };
    class Builder;

    std::string_view text_;
    std::vector<Token> tokens_;
};

inline Kind View::kind() const noexcept { return tape_->tokens_[index_].kind; }
inline std::uint32_t View::next() const noexcept { return tape_->tokens_[index_].next; }

template <typename Visit>
void View::for_each_member(Visit&& visit) const {
    if (!is_object()) return;
    for (std::uint32_t key = index_ + 1; key < next(); key = View(tape_, key + 1).next()) {
        visit(View(tape_, key), View(tape_, key + 1));
    }
}

template <typename Visit>
void View::for_each_element(Visit&& visit) const {
    if (!is_array()) return;
    for (std::uint32_t element = index_ + 1; element < next(); element = View(tape_, element).next()) {
        visit(View(tape_, element));
    }
}

// ---- implementation of the templates ----------------------------------------

namespace detail {
// Positions a scanner inside a container: after '[' or '{', whitespace skipped.
bool open_container(std::string_view text, char open, std::size_t& pos);
// After an element: ',' continues (true), the closing character ends (false, done=true).
bool next_separator(std::string_view text, char close, std::size_t& pos, bool& done);
// Inline: called before every value and separator, and node answers are
// compact, so most calls return at once.
inline std::size_t skip_whitespace(std::string_view text, std::size_t pos) noexcept {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t')) ++pos;
    return pos;
}
}  // namespace detail

template <typename Visit>
Result<bool> for_each_element(std::string_view array_text, Visit&& visit) {
    std::size_t pos = 0;
    if (!detail::open_container(array_text, '[', pos)) return make_error("JSON: expected an array");
    if (pos < array_text.size() && array_text[pos] == ']') {
        if (detail::skip_whitespace(array_text, pos + 1) != array_text.size()) return make_error("JSON: text after the array");
        return true;
    }
    while (true) {
        Scanner scanner(array_text.substr(pos));
        const std::string_view element = scanner.next_value();
        if (scanner.failed()) return make_error(scanner.error());
        pos += scanner.position();
        if (!visit(element)) return false;
        bool done = false;
        if (!detail::next_separator(array_text, ']', pos, done)) return make_error("JSON: expected ',' or ']' in an array");
        if (done) break;
    }
    if (detail::skip_whitespace(array_text, pos) != array_text.size()) return make_error("JSON: text after the array");
    return true;
}

template <typename Visit>
Result<bool> for_each_member(std::string_view object_text, Visit&& visit) {
    std::size_t pos = 0;
    if (!detail::open_container(object_text, '{', pos)) return make_error("JSON: expected an object");
    if (pos < object_text.size() && object_text[pos] == '}') {
        if (detail::skip_whitespace(object_text, pos + 1) != object_text.size()) return make_error("JSON: text after the object");
        return true;
    }
    while (true) {
        Scanner key_scanner(object_text.substr(pos));
        const std::string_view key = key_scanner.next_value();
        if (key_scanner.failed() || key.empty() || key.front() != '"') return make_error("JSON: expected a member name");
        pos = detail::skip_whitespace(object_text, pos + key_scanner.position());
        if (pos >= object_text.size() || object_text[pos] != ':') return make_error("JSON: expected ':' after a member name");
        Scanner value_scanner(object_text.substr(pos + 1));
        const std::string_view value = value_scanner.next_value();
        if (value_scanner.failed()) return make_error(value_scanner.error());
        pos += 1 + value_scanner.position();
        if (!visit(key.substr(1, key.size() - 2), value)) return false;
        bool done = false;
        if (!detail::next_separator(object_text, '}', pos, done)) return make_error("JSON: expected ',' or '}' in an object");
        if (done) break;
    }
    if (detail::skip_whitespace(object_text, pos) != object_text.size()) return make_error("JSON: text after the object");
    return true;
}

}  // namespace wallet::json
