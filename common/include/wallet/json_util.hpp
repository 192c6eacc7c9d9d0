// Small jansson helpers shared by the decoder, the node client and the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <jansson.h>

#include "wallet/handles.hpp"
#include "wallet/result.hpp"

namespace wallet::json {

// Parses one JSON document (object, array or scalar); the error names the
// position and jansson's reason.
Result<JsonPtr> parse(std::string_view text);

// Compact serialization in the value's own key order.
std::string dump_compact(const json_t* value);

// The one JSON string escaper. Writes text as a JSON string literal: quotes,
// backslashes and \b \f \n \r \t with their short escapes, other control
// characters and DEL (0x7f) as \u00XX, all other bytes as they are. `out`
// must have room for quoted_capacity(text.size()) bytes; returns the end.
char* write_quoted(char* out, std::string_view text) noexcept;
constexpr std::size_t quoted_capacity(std::size_t text_size) noexcept { return text_size * 6 + 2; }

// The length of text's prefix that a JSON string holds as it is (no
// control character, DEL, '"' or '\\'): sixteen bytes at a time where SSE2
// is there (every x86-64). Shared by the escaper and the scanners.
std::size_t plain_run(std::string_view text) noexcept;
// plain_run that stops at bytes from 0x80 up too (whose UTF-8 a parser checks).
std::size_t plain_ascii_run(std::string_view text) noexcept;

// Appends text as a JSON string literal (see write_quoted).
void append_quoted(std::string& out, std::string_view text);
// text as a JSON string literal (see write_quoted).
std::string quoted(std::string_view text);

// A string value's bytes (it may hold NULs), nullopt for any other type.
std::optional<std::string_view> string_view_of(const json_t* value);

// An integer that the node may print as a JSON number or, above 2^53, as a
// string of decimal digits (node-api.md section 2). An optional leading '-'.
Result<std::int64_t> to_int64(const json_t* value);

// Decimal digits with an optional leading '-', within int64.
Result<std::int64_t> parse_int64(std::string_view text);

// A shared, read-only reference to a jansson value: copies take a reference
// (jansson counts references atomically), the last owner frees it.
class SharedJson {
public:
    SharedJson() = default;
    // Takes an extra reference to a borrowed value.
    static SharedJson borrow(json_t* value) noexcept { return SharedJson(json_incref(value)); }
    SharedJson(const SharedJson& other) noexcept : value_(json_incref(other.value_)) {}
    SharedJson(SharedJson&& other) noexcept : value_(std::exchange(other.value_, nullptr)) {}
    SharedJson& operator=(SharedJson other) noexcept {
        std::swap(value_, other.value_);
        return *this;
    }
    ~SharedJson() { json_decref(value_); }

    const json_t* get() const noexcept { return value_; }
    explicit operator bool() const noexcept { return value_ != nullptr; }

private:
    explicit SharedJson(json_t* value) noexcept : value_(value) {}
    json_t* value_ = nullptr;
};

}  // namespace wallet::json
