// Values of PostgreSQL's binary result format (the *_send functions of the
// server), for the page statements: they come back binary so that PostgreSQL,
// the resource every worker shares, spends no CPU printing numbers and times
// as text. Each decoder checks the length it is given and says when the bytes
// are not a value of its type, never reading past them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace wallet::api::pg_binary {

// int2, int4 or int8 (big-endian two's complement of 2, 4 or 8 bytes).
std::optional<std::int64_t> integer(std::string_view bytes);

// timestamptz (microseconds since 2000-01-01 00:00:00 UTC) as whole seconds
// since 1970, rounded down; nullopt for +-infinity.
std::optional<std::int64_t> epoch_seconds(std::string_view bytes);

// numeric, written to out exactly as PostgreSQL's numeric_out prints it (the
// digits of its display scale; NaN, Infinity, -Infinity). Returns the end of
// the text, or nullptr when the bytes are no numeric or the text would not fit
// in capacity bytes.
char* write_numeric(std::string_view bytes, char* out, std::size_t capacity);

}  // namespace wallet::api::pg_binary
