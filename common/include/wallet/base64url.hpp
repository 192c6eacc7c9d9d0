// base64url (RFC 4648 section 5) without padding, for tokens that travel in
// JSON and URLs. Raw bytes are carried in std::string.
#pragma once

#include <string>
#include <string_view>

#include "wallet/result.hpp"

namespace wallet {

std::string base64url_encode(std::string_view bytes);

// Strict inverse of base64url_encode: only [A-Za-z0-9_-], no '=' padding, no
// length that leaves a lone character, and unused trailing bits must be zero,
// so every byte string has exactly one accepted text.
Result<std::string> base64url_decode(std::string_view text);

}  // namespace wallet
