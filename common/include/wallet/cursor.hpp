// Opaque, tamper-evident keyset-paging cursors. A cursor names the last row a
// page returned; it is bound to the account and the query that produced it,
// so a client can neither forge a position nor reuse a cursor elsewhere.
//
// Token = base64url(version | position | tag), where position is compact
// binary (varints) and tag = the first 16 bytes of
// HMAC-SHA256(secret, version | position | account | query fingerprint).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "wallet/result.hpp"
#include "wallet/timestamp.hpp"

namespace wallet {

// The sort key of the last event a page returned.
struct CursorPosition {
    Timestamp timestamp;
    std::int64_t block_num = 0;
    std::int32_t block_seq = 0;
    std::string role;  // at most CursorCodec::kMaxRoleLength bytes

    friend bool operator==(const CursorPosition&, const CursorPosition&) = default;
};

class CursorCodec {
public:
    // Longer texts are refused before any decoding work.
    static constexpr std::size_t kMaxCursorLength = 256;
    // Roles are short fixed words ("sender", "receiver" ...).
    static constexpr std::size_t kMaxRoleLength = 32;
    // The shortest secret create() accepts.
    static constexpr std::size_t kMinSecretLength = 16;

    // The secret keys the HMAC; every server answering one API must share it.
    explicit CursorCodec(std::string secret);
    // As the constructor, but refuses secrets shorter than kMinSecretLength.
    static Result<CursorCodec> create(std::string secret);

    // A role longer than kMaxRoleLength gives a cursor that decode refuses.
    std::string encode(const CursorPosition& position, std::string_view account,
                       std::string_view query_fingerprint) const;

    // An error value (never a crash) for anything that encode() did not make
    // with this secret, account and fingerprint: malformed, truncated, too
    // long, altered, or from another account, query or secret.
    Result<CursorPosition> decode(std::string_view cursor, std::string_view account,
                                  std::string_view query_fingerprint) const;

private:
    std::string tag(std::string_view version_and_position, std::string_view account,
                    std::string_view query_fingerprint) const;

    // HMAC-SHA256 keyed once with the secret (its padded key blocks).
    struct KeyedMac;
    std::shared_ptr<const KeyedMac> keyed_mac_;
};

}  // namespace wallet
