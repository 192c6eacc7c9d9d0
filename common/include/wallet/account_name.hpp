// Hive account names, checked with the chain's own rules so that a request for
// a name that can never exist is refused before it reaches the database.
#pragma once

#include <cstddef>
#include <string_view>

namespace wallet {

inline constexpr std::size_t kMinAccountNameLength = 3;
inline constexpr std::size_t kMaxAccountNameLength = 16;

// Length 3..16 in all; split on '.', every segment is at least 3 characters,
// starts with a lowercase letter, ends with a lowercase letter or a digit, has
// only [a-z0-9-] and no "--".
bool is_valid_account_name(std::string_view name) noexcept;

}  // namespace wallet
