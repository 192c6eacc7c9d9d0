// A validating JSON parser that keeps the original text: every value is a
// span of the input, so numbers (big or fractional ids), strings and whole
// sub-documents pass through byte for byte. Used where a JSON-RPC proxy must
// not re-serialize what it forwards (ids, params, upstream results).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonrpc {

enum class JsonKind : std::uint8_t { Null, False, True, Number, String, Array, Object };

enum class JsonParseStatus : std::uint8_t { Ok, Syntax, TooDeep };

// One value of a parsed document. Object children alternate key, value.
struct JsonNode {
    JsonKind kind;
    std::uint32_t begin;  // offset of the value's first byte
    std::uint32_t end;    // offset one past its last byte
    std::uint32_t next;   // index of the node after this value's subtree
    std::uint32_t count;  // elements of an array, members of an object; 1 for a string with an escape, else 0
};

class JsonDocument {
public:
    // Parses `text` (which must outlive the document). Depth counts nested
    // arrays/objects; the top level is depth 1.
    JsonParseStatus parse(std::string_view text, std::size_t max_depth);
    // The same check of the whole text, but only the top-level value and
    // its direct children (an object's keys and values) are indexed: the
    // accessors work on the root, and give the text of anything deeper.
    // For a document read only at its top (an upstream reply's envelope).
    JsonParseStatus parse_top(std::string_view text, std::size_t max_depth);
    const std::string& error() const { return error_; }
    // Lets go of the node memory when it holds more than `nodes` (a document
    // reused for many parses keeps its memory from one to the next, but not
    // a large document's).
    void release_memory_over(std::size_t nodes) {
        if (nodes_.capacity() > nodes) std::vector<JsonNode>().swap(nodes_);
    }

    std::string_view source() const { return text_; }
    std::size_t root() const { return 0; }
    const JsonNode& node(std::size_t index) const { return nodes_[index]; }
    JsonKind kind(std::size_t index) const { return nodes_[index].kind; }
    std::string_view text(std::size_t index) const {
        return text_.substr(nodes_[index].begin, nodes_[index].end - nodes_[index].begin);
    }

    // Children of an array (elements) or object (key, value, key, value...).
    std::vector<std::size_t> children(std::size_t index) const;
    // The value of the first member named `key` in an object.
    std::optional<std::size_t> member(std::size_t object, std::string_view key) const;
    // The decoded contents of a string node (escapes resolved).
    std::string string_value(std::size_t index) const;
    // The same as a view: of the text itself when it has no escapes (no
    // copy), else of `scratch`, which holds the decoded contents.
    std::string_view string_view_of(std::size_t index, std::string& scratch) const;
    // A number written as plain digits (no sign, fraction or exponent);
    // one beyond 64 bits reads as the largest. Nothing for anything else.
    std::optional<std::uint64_t> unsigned_integer(std::size_t index) const;
    // Whether any object of the value at `index` (by default the whole
    // document) names a member twice (keys compared decoded, so "a" and
    // "\u0061" are the same name).
    bool has_duplicate_keys(std::size_t index = 0) const;
    // Compact text with object members sorted by key, recursively.
    std::string canonical(std::size_t index) const;

private:
    JsonParseStatus parse_indexing(std::string_view text, std::size_t max_depth, std::size_t indexed_depth);
    bool parse_value(std::size_t depth);
    // A value whose elements are deeper than indexed_depth_ (parse_top: an
    // upstream result), checked as parse_value would (the same errors at the
    // same offsets), without nodes and without recursion; skipped_count_ is
    // its count of elements or members.
    bool skip_value(std::size_t depth);
    // An object key, its ':' and the spaces around it (skip_value).
    bool skip_key();
    // `indexed`: the value gets a node (it is at most indexed_depth_ deep).
    bool parse_string(bool indexed);
    // parse_string, the common string (its closing quote among its first
    // sixteen bytes, nothing to check before it) inline.
    bool parse_short_string(bool indexed);
    bool parse_number(bool indexed);
    bool parse_literal(std::string_view word, JsonKind kind, bool indexed);
    // Inline: called around every value and separator (compact JSON has no space).
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
            ++pos_;
        }
    }
    bool fail(const char* what);
    void append_canonical(std::size_t index, std::string& out) const;

    std::string_view text_;
    std::size_t pos_ = 0;
    std::size_t max_depth_ = 0;
    std::size_t indexed_depth_ = 0;
    bool too_deep_ = false;
    std::string error_;
    std::vector<JsonNode> nodes_;
    std::string closers_;  // skip_value: what closes each open array or object
    std::uint32_t skipped_count_ = 0;  // skip_value: the elements or members of the value it checked
};

// Decodes the body of a JSON string literal (without its quotes); false on a
// bad escape. The literal must already be validated for UTF-8.
bool json_unescape(std::string_view literal_body, std::string& out);
// True when `text` is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF).
bool valid_utf8(std::string_view text);

}  // namespace jsonrpc
