// Hand-written JSON output: the simulator writes every response this way
// because serialization is most of its work. The writer appends to an
// OutputBuffer, which grows without zero-filling and is reused between
// requests, through memcpy and no per-piece bookkeeping beyond one check.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <jansson.h>

#define SIM_INLINE inline __attribute__((always_inline))

namespace sim {

class OutputBuffer {
public:
    char* data() { return data_.get(); }
    const char* data() const { return data_.get(); }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return capacity_; }
    void clear() { size_ = 0; }
    void resize(std::size_t size) { size_ = size; }  // within capacity
    void reserve(std::size_t capacity);
    std::string_view view() const { return {data_.get(), size_}; }
    std::string str() const { return std::string(view()); }

private:
    std::unique_ptr<char[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

class JsonWriter {
public:
    explicit JsonWriter(OutputBuffer& out) : out_(out) {}

    OutputBuffer& buffer() { return out_; }
    std::size_t size() const { return out_.size(); }
    // Forgets everything written after `size` bytes.
    void truncate(std::size_t size) { out_.resize(size); }

    // Direct writing: room for `max` bytes, written through the returned
    // pointer (kept in a register by the caller), then committed.
    SIM_INLINE char* cursor(std::size_t max) {
        reserve(max);
        return out_.data() + out_.size();
    }
    SIM_INLINE void commit(char* end) { out_.resize(static_cast<std::size_t>(end - out_.data())); }

    // Makes room for n more bytes.
    SIM_INLINE void reserve(std::size_t n) {
        if (out_.capacity() - out_.size() < n) out_.reserve(out_.size() + n);
    }
    // Text that is already JSON (punctuation, keys with their quotes, ...).
    SIM_INLINE void raw(std::string_view text) {
        reserve(text.size());
        std::memcpy(out_.data() + out_.size(), text.data(), text.size());
        out_.resize(out_.size() + text.size());
    }
    SIM_INLINE void put(char c) {
        reserve(1);
        out_.data()[out_.size()] = c;
        out_.resize(out_.size() + 1);
    }
    // A quoted string known to need no escaping (hex ids, account names, numbers).
    SIM_INLINE void plain_string(std::string_view text) {
        reserve(text.size() + 2);
        char* at = out_.data() + out_.size();
        *at++ = '"';
        std::memcpy(at, text.data(), text.size());
        at[text.size()] = '"';
        out_.resize(out_.size() + text.size() + 2);
    }
    SIM_INLINE void uint(std::uint64_t value) {
        reserve(20);
        char* at = out_.data() + out_.size();
        out_.resize(out_.size() + static_cast<std::size_t>(std::to_chars(at, at + 20, value).ptr - at));
    }
    SIM_INLINE void integer(std::int64_t value) {
        reserve(20);
        char* at = out_.data() + out_.size();
        out_.resize(out_.size() + static_cast<std::size_t>(std::to_chars(at, at + 20, value).ptr - at));
    }
    // Short text kept in a fixed 32-byte slot: one fixed-size copy, no call.
    struct Slot {
        char text[32];
        std::uint8_t length;
    };
    SIM_INLINE void slot(const Slot& piece) {
        reserve(sizeof piece.text);
        std::memcpy(out_.data() + out_.size(), piece.text, sizeof piece.text);
        out_.resize(out_.size() + piece.length);
    }
    static Slot make_slot(std::string_view text) {
        Slot piece{};
        std::memcpy(piece.text, text.data(), std::min(text.size(), sizeof piece.text));
        piece.length = static_cast<std::uint8_t>(std::min(text.size(), sizeof piece.text));
        return piece;
    }
    void boolean(bool value) { raw(value ? std::string_view("true") : std::string_view("false")); }
    void null() { raw("null"); }
    // A quoted, escaped string.
    void string(std::string_view text);
    // `digits` (an integer, maybe negative) as a decimal with `precision` places.
    void decimal(std::string_view digits, int precision);
    void decimal(std::int64_t amount, int precision);
    // Lower-case hex of the low `digits` nibbles of value.
    void hex(std::uint64_t value, int digits);
    // Any jansson value, object keys in insertion order.
    void json(const json_t* value);

private:
    OutputBuffer& out_;
};

// Lower-case hex of the low `digits` nibbles of value into `out`.
void write_hex(char* out, std::uint64_t value, int digits);

// A string escaped for JSON, with its quotes (for text written many times).
std::string escaped(std::string_view text);

// Parses JSON like json_loadb(JSON_DECODE_ANY), but integers beyond int64
// (uint64 filter masks, which hived accepts) become strings of their digits,
// which every uint64 parameter also accepts, instead of failing the parse.
json_t* parse_json(std::string_view text, json_error_t* error);

}  // namespace sim
