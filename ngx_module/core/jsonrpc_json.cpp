#include "jsonrpc_json.hpp"

#include "wallet/json_ascii.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/json_util.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <utility>

namespace jsonrpc {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Length of the well-formed UTF-8 sequence at text[pos], 0 when malformed.
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) {
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    unsigned char b0 = byte(pos);
    std::size_t left = text.size() - pos;
    auto cont = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
        return byte(pos + i) >= lo && byte(pos + i) <= hi;
    };
    if (b0 < 0x80) return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) return left >= 2 && cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (left < 3) return 0;
        unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80;
        unsigned char hi = b0 == 0xED ? 0x9F : 0xBF;  // no UTF-16 surrogates
        return cont(1, lo, hi) && cont(2) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (left < 4) return 0;
        unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
        return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// wallet::json::plain_ascii_run(text.substr(pos)), its whole blocks of
// sixteen bytes inline (most strings end in the first).
std::size_t plain_ascii_run_at(std::string_view text, std::size_t pos) noexcept {
    std::size_t at = pos;
#if defined(__SSE2__)
    for (; text.size() - at >= 16; at += 16) {
        const int mask = wallet::json::special_bytes<true>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + at)));
        if (mask != 0) return at - pos + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    return at - pos + wallet::json::plain_ascii_run(text.substr(at));
}

// Reads four hex digits at text[pos]; -1 when malformed.
long read_hex4(std::string_view text, std::size_t pos) {
    if (pos + 4 > text.size()) return -1;
    long value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        int h = hex_value(text[pos + i]);
        if (h < 0) return -1;
        value = value * 16 + h;
    }
    return value;
}

}  // namespace

bool valid_utf8(std::string_view text) {
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t n = utf8_sequence_length(text, pos);
        if (n == 0) return false;
        pos += n;
    }
    return true;
}

bool json_unescape(std::string_view body, std::string& out) {
    out.clear();
    out.reserve(body.size());
    for (std::size_t i = 0; i < body.size(); ++i) {
        char c = body[i];
        if (c != '\\') {
            out.push_back(c);
            continue;
        }
        if (++i >= body.size()) return false;
        switch (body[i]) {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': {
                long unit = read_hex4(body, i + 1);
                if (unit < 0) return false;
                i += 4;
                auto cp = static_cast<std::uint32_t>(unit);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (i + 2 >= body.size() || body[i + 1] != '\\' || body[i + 2] != 'u') return false;
                    long low = read_hex4(body, i + 3);
                    if (low < 0xDC00 || low > 0xDFFF) return false;
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<std::uint32_t>(low) - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return false;
                }
                append_utf8(out, cp);
                break;
            }
            default: return false;
        }
    }
    return true;
}

// ---- parser ------------------------------------------------------------------

[[gnu::always_inline]] inline bool JsonDocument::parse_short_string(bool indexed) {
#if defined(__SSE2__)
    if (text_.size() - pos_ > 16) {
        const char* const body = text_.data() + pos_ + 1;
        const int mask = wallet::json::special_bytes<true>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(body)));
        if (mask != 0) {
            const auto length = static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
            if (body[length] == '"') {
                const auto begin = static_cast<std::uint32_t>(pos_);
                pos_ += length + 2;
                if (indexed) {
                    nodes_.push_back({JsonKind::String, begin, static_cast<std::uint32_t>(pos_),
                                      static_cast<std::uint32_t>(nodes_.size() + 1), 0});
                }
                return true;
            }
        }
    }
#endif
    return parse_string(indexed);
}

JsonParseStatus JsonDocument::parse(std::string_view text, std::size_t max_depth) {
    return parse_indexing(text, max_depth, max_depth);
}

JsonParseStatus JsonDocument::parse_top(std::string_view text, std::size_t max_depth) {
    return parse_indexing(text, max_depth, 2);
}

JsonParseStatus JsonDocument::parse_indexing(std::string_view text, std::size_t max_depth, std::size_t indexed_depth) {
    indexed_depth_ = indexed_depth;
    text_ = text;
    pos_ = 0;
    max_depth_ = max_depth;
    too_deep_ = false;
    error_.clear();
    nodes_.clear();
    if (text.size() >= UINT32_MAX) {
        fail("document too large");
        return JsonParseStatus::Syntax;
    }
    // Room for a JSON-RPC envelope and its params without growing step by
    // step: every value takes at least two bytes with its separator.
    nodes_.reserve(std::min<std::size_t>(text.size() / 2 + 1, 32));
    skip_space();
    if (!parse_value(1)) return too_deep_ ? JsonParseStatus::TooDeep : JsonParseStatus::Syntax;
    skip_space();
    if (pos_ != text_.size()) {
        fail("unexpected data after the JSON value");
        return JsonParseStatus::Syntax;
    }
    return JsonParseStatus::Ok;
}

bool JsonDocument::fail(const char* what) {
    if (error_.empty()) error_ = std::string(what) + " at offset " + std::to_string(pos_);
    return false;
}

bool JsonDocument::parse_value(std::size_t depth) {
    if (pos_ >= text_.size()) return fail("unexpected end of input");
    const bool indexed = depth <= indexed_depth_;
    if (!indexed) return skip_value(depth);
    std::size_t index = nodes_.size();
    auto begin = static_cast<std::uint32_t>(pos_);
    char c = text_[pos_];
    if (c == '{' || c == '[') {
        if (depth > max_depth_) {
            too_deep_ = true;
            return fail("nesting too deep");
        }
        bool object = c == '{';
        char close = object ? '}' : ']';
        if (indexed) nodes_.push_back({object ? JsonKind::Object : JsonKind::Array, begin, 0, 0, 0});
        if (depth >= indexed_depth_) {
            // Its elements are not indexed: checked in one loop.
            if (!skip_value(depth)) return false;
            nodes_[index].end = static_cast<std::uint32_t>(pos_);
            nodes_[index].count = skipped_count_;
            nodes_[index].next = static_cast<std::uint32_t>(nodes_.size());
            return true;
        }
        ++pos_;
        skip_space();
        std::uint32_t count = 0;
        if (pos_ < text_.size() && text_[pos_] == close) {
            ++pos_;
        } else {
            for (;;) {
                if (object) {
                    if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected an object key");
                    if (!parse_short_string(depth < indexed_depth_)) return false;
                    skip_space();
                    if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':'");
                    ++pos_;
                    skip_space();
                }
                if (!parse_value(depth + 1)) return false;
                ++count;
                skip_space();
                if (pos_ >= text_.size()) return fail("unexpected end of input");
                if (text_[pos_] == ',') {
                    ++pos_;
                    skip_space();
                    continue;
                }
                if (text_[pos_] == close) {
                    ++pos_;
                    break;
                }
                return fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
            }
        }
        if (indexed) {
            nodes_[index].end = static_cast<std::uint32_t>(pos_);
            nodes_[index].count = count;
            nodes_[index].next = static_cast<std::uint32_t>(nodes_.size());
        }
        return true;
    }
    if (c == '"') return parse_short_string(indexed);
    if (c == '-' || is_digit(c)) return parse_number(indexed);
    if (c == 't') return parse_literal("true", JsonKind::True, indexed);
    if (c == 'f') return parse_literal("false", JsonKind::False, indexed);
    if (c == 'n') return parse_literal("null", JsonKind::Null, indexed);
    return fail("unexpected character");
}

bool JsonDocument::skip_key() {
    if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected an object key");
    if (!parse_short_string(false)) return false;
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':'");
    ++pos_;
    skip_space();
    return true;
}

bool JsonDocument::skip_value(std::size_t depth) {
    // The value at depth + closers_.size(); closers_ ends with the innermost.
    closers_.clear();
    skipped_count_ = 0;
    for (;;) {
        if (pos_ >= text_.size()) return fail("unexpected end of input");
        const char c = text_[pos_];
        if (c == '{' || c == '[') {
            if (depth + closers_.size() > max_depth_) {
                too_deep_ = true;
                return fail("nesting too deep");
            }
            const char close = c == '{' ? '}' : ']';
            ++pos_;
            skip_space();
            if (pos_ >= text_.size() || text_[pos_] != close) {
                if (closers_.empty()) skipped_count_ = 1;
                closers_.push_back(close);
                if (close == '}' && !skip_key()) return false;
                continue;  // its first element
            }
            ++pos_;  // empty
        } else if (c == '"') {
            if (!parse_short_string(false)) return false;
        } else if (c == '-' || is_digit(c)) {
            if (!parse_number(false)) return false;
        } else if (c == 't') {
            if (!parse_literal("true", JsonKind::True, false)) return false;
        } else if (c == 'f') {
            if (!parse_literal("false", JsonKind::False, false)) return false;
        } else if (c == 'n') {
            if (!parse_literal("null", JsonKind::Null, false)) return false;
        } else {
            return fail("unexpected character");
        }
        // A value ended: the next element, or the end of what holds it.
        for (;;) {
            if (closers_.empty()) return true;
            skip_space();
            if (pos_ >= text_.size()) return fail("unexpected end of input");
            const char close = closers_.back();
            if (text_[pos_] == ',') {
                ++pos_;
                skip_space();
                if (closers_.size() == 1) ++skipped_count_;
                if (close == '}' && !skip_key()) return false;
                break;
            }
            if (text_[pos_] != close) return fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
            ++pos_;
            closers_.pop_back();
        }
    }
}

bool JsonDocument::parse_string(bool indexed) {
    auto begin = static_cast<std::uint32_t>(pos_);
    std::uint32_t escaped = 0;
    ++pos_;  // opening quote
    while (pos_ < text_.size()) {
        // The run of plain printable ASCII (most of any string), sixteen
        // bytes at a time; the code below looks at what ends it (DEL too,
        // which it passes).
        pos_ += plain_ascii_run_at(text_, pos_);
        if (pos_ >= text_.size()) break;
        auto u = static_cast<unsigned char>(text_[pos_]);
        if (u == '"') {
            ++pos_;
            auto end = static_cast<std::uint32_t>(pos_);
            if (indexed) {
                nodes_.push_back({JsonKind::String, begin, end, static_cast<std::uint32_t>(nodes_.size() + 1), escaped});
            }
            return true;
        }
        if (u < 0x20) return fail("control character in string");
        if (u == '\\') {
            escaped = 1;
            if (pos_ + 1 >= text_.size()) return fail("unexpected end of input");
            char e = text_[pos_ + 1];
            if (e == 'u') {
                long unit = read_hex4(text_, pos_ + 2);
                if (unit < 0) return fail("bad \\u escape");
                pos_ += 6;
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    if (pos_ + 1 >= text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
                        return fail("unpaired surrogate escape");
                    }
                    long low = read_hex4(text_, pos_ + 2);
                    if (low < 0xDC00 || low > 0xDFFF) return fail("unpaired surrogate escape");
                    pos_ += 6;
                } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                    return fail("unpaired surrogate escape");
                }
                continue;
            }
            if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
                return fail("bad escape");
            }
            pos_ += 2;
            continue;
        }
        if (u < 0x80) {
            ++pos_;
            continue;
        }
        std::size_t n = utf8_sequence_length(text_, pos_);
        if (n == 0) return fail("invalid UTF-8");
        pos_ += n;
    }
    return fail("unterminated string");
}

bool JsonDocument::parse_number(bool indexed) {
    auto begin = static_cast<std::uint32_t>(pos_);
    // A plain integer (most numbers: ids, counts, block numbers) here, any
    // other by the scanner.
    std::size_t end = pos_;
    if (is_digit(text_[end]) && text_[end] != '0') {
        while (++end < text_.size() && is_digit(text_[end])) {
        }
    }
    if (end > pos_ && (end == text_.size() || (text_[end] != '.' && text_[end] != 'e' && text_[end] != 'E'))) {
        pos_ = end;
    } else if (!wallet::json::scan_number(text_, pos_)) {
        return fail("bad number");
    }
    if (indexed) nodes_.push_back({JsonKind::Number, begin, static_cast<std::uint32_t>(pos_),
                      static_cast<std::uint32_t>(nodes_.size() + 1), 0});
    return true;
}

bool JsonDocument::parse_literal(std::string_view word, JsonKind kind, bool indexed) {
    if (text_.substr(pos_, word.size()) != word) return fail("unexpected character");
    auto begin = static_cast<std::uint32_t>(pos_);
    pos_ += word.size();
    if (indexed) nodes_.push_back({kind, begin, static_cast<std::uint32_t>(pos_), static_cast<std::uint32_t>(nodes_.size() + 1), 0});
    return true;
}

// ---- access ------------------------------------------------------------------

std::vector<std::size_t> JsonDocument::children(std::size_t index) const {
    std::vector<std::size_t> out;
    const JsonNode& n = nodes_[index];
    if (n.kind != JsonKind::Array && n.kind != JsonKind::Object) return out;
    std::size_t child_count = n.kind == JsonKind::Object ? std::size_t{n.count} * 2 : n.count;
    out.reserve(child_count);
    std::size_t child = index + 1;
    for (std::size_t i = 0; i < child_count; ++i) {
        out.push_back(child);
        child = nodes_[child].next;
    }
    return out;
}

std::optional<std::size_t> JsonDocument::member(std::size_t object, std::string_view key) const {
    const JsonNode& n = nodes_[object];
    if (n.kind != JsonKind::Object) return std::nullopt;
    // A key's decoded text is never longer than its raw text, and is that
    // text when it has no escapes: most keys are told apart without decoding.
    const bool plain_key = key.find('\\') == std::string_view::npos;
    std::size_t child = object + 1;
    for (std::uint32_t i = 0; i < n.count; ++i) {
        std::size_t value = nodes_[child].next;
        const std::string_view raw = text(child);
        const std::string_view body = raw.substr(1, raw.size() - 2);
        if (plain_key && body == key) return value;
        if (body.size() > key.size() && nodes_[child].count != 0) {  // escaped: decoded, maybe shorter
            std::string scratch;
            if (string_view_of(child, scratch) == key) return value;
        }
        child = nodes_[value].next;
    }
    return std::nullopt;
}

std::string JsonDocument::string_value(std::size_t index) const {
    std::string_view raw = text(index);
    std::string out;
    if (nodes_[index].kind != JsonKind::String) return out;
    json_unescape(raw.substr(1, raw.size() - 2), out);  // validated while parsing
    return out;
}

std::string_view JsonDocument::string_view_of(std::size_t index, std::string& scratch) const {
    if (nodes_[index].kind != JsonKind::String) return {};
    const std::string_view raw = text(index);
    if (nodes_[index].count == 0) return raw.substr(1, raw.size() - 2);  // no escape
    scratch = string_value(index);
    return scratch;
}

std::optional<std::uint64_t> JsonDocument::unsigned_integer(std::size_t index) const {
    if (nodes_[index].kind != JsonKind::Number) return std::nullopt;
    const std::string_view digits = text(index);
    if (digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error == std::errc::result_out_of_range) return std::numeric_limits<std::uint64_t>::max();
    return value;
}

bool JsonDocument::has_duplicate_keys(std::size_t value) const {
    std::vector<std::string> keys;
    // A value's subtree is the nodes up to its `next`.
    const std::size_t end = std::min<std::size_t>(nodes_[value].next, nodes_.size());
    for (std::size_t index = value; index < end; ++index) {
        const JsonNode& n = nodes_[index];
        if (n.kind != JsonKind::Object || n.count < 2) continue;
        // The common small object whose keys have no escapes: its raw keys
        // compared pairwise, without decoding (or allocating) any.
        constexpr std::uint32_t kSmall = 8;
        if (n.count <= kSmall) {
            std::array<std::string_view, kSmall> raw;
            bool plain = true;
            std::size_t child = index + 1;
            for (std::uint32_t i = 0; i < n.count && plain; ++i) {
                raw[i] = text(child);
                plain = nodes_[child].count == 0;  // no escape
                child = nodes_[nodes_[child].next].next;
            }
            if (plain) {
                for (std::uint32_t i = 1; i < n.count; ++i) {
                    for (std::uint32_t j = 0; j < i; ++j) {
                        if (raw[i] == raw[j]) return true;
                    }
                }
                continue;
            }
        }
        keys.clear();
        std::size_t child = index + 1;
        for (std::uint32_t i = 0; i < n.count; ++i) {
            keys.push_back(string_value(child));
            child = nodes_[nodes_[child].next].next;
        }
        std::sort(keys.begin(), keys.end());
        if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return true;
    }
    return false;
}

std::string JsonDocument::canonical(std::size_t index) const {
    std::string out;
    out.reserve(text(index).size());
    append_canonical(index, out);
    return out;
}

void JsonDocument::append_canonical(std::size_t index, std::string& out) const {
    const JsonNode& n = nodes_[index];
    if (n.kind == JsonKind::Array) {
        out.push_back('[');
        std::size_t child = index + 1;
        for (std::uint32_t i = 0; i < n.count; ++i) {
            if (i > 0) out.push_back(',');
            append_canonical(child, out);
            child = nodes_[child].next;
        }
        out.push_back(']');
        return;
    }
    if (n.kind == JsonKind::Object) {
        std::vector<std::pair<std::string, std::size_t>> members;  // decoded key, key node
        members.reserve(n.count);
        std::size_t child = index + 1;
        for (std::uint32_t i = 0; i < n.count; ++i) {
            members.emplace_back(string_value(child), child);
            child = nodes_[nodes_[child].next].next;
        }
        std::stable_sort(members.begin(), members.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        out.push_back('{');
        bool first = true;
        for (const auto& [key, key_node] : members) {
            if (!first) out.push_back(',');
            first = false;
            wallet::json::append_quoted(out, key);
            out.push_back(':');
            append_canonical(nodes_[key_node].next, out);
        }
        out.push_back('}');
        return;
    }
    if (n.kind == JsonKind::String) {
        // Escapes normalized, so equal strings give equal keys.
        wallet::json::append_quoted(out, string_value(index));
        return;
    }
    out += text(index);
}

}  // namespace jsonrpc
