// The cursor codec. Three views of one input, chosen by its first byte:
// a cursor text as a client sends it; a position body signed with the
// secret (the fuzzer cannot forge the HMAC, so this reaches the position
// reader), which decode must refuse or give back byte for byte; and a
// position built from the bytes, which must survive encode and decode.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz_check.hpp"
#include "wallet/base64url.hpp"
#include "wallet/cursor.hpp"

namespace {

constexpr std::string_view kSecret = "fuzz-target-cursor-secret";
constexpr std::string_view kAccount = "alice";
constexpr std::string_view kFingerprint = "get_wallet_history|2016-01-01|2016-02-01|transfer";

const wallet::CursorCodec& codec() {
    static const wallet::CursorCodec instance{std::string(kSecret)};
    return instance;
}

void append_length(std::string& out, std::size_t length) {
    while (length >= 0x80) {
        out += static_cast<char>((length & 0x7F) | 0x80);
        length >>= 7;
    }
    out += static_cast<char>(length);
}

// A token for arbitrary body bytes, tagged as cursor.hpp specifies:
// HMAC-SHA256(secret, version | position | len account | account | len fp | fp), first 16 bytes.
std::string signed_token(std::string_view position) {
    std::string message(1, '\x01');
    message += position;
    const std::string body = message;
    append_length(message, kAccount.size());
    message += kAccount;
    append_length(message, kFingerprint.size());
    message += kFingerprint;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), kSecret.data(), static_cast<int>(kSecret.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
    return wallet::base64url_encode(body + std::string(reinterpret_cast<const char*>(digest), 16));
}

template <typename T>
T take(std::string_view& bytes) {
    T value{};
    const std::size_t n = std::min(sizeof value, bytes.size());
    std::memcpy(&value, bytes.data(), n);
    bytes.remove_prefix(n);
    return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view input = fuzz::text(data, size);
    if (input.empty()) return 0;
    const char mode = input.front();
    input.remove_prefix(1);

    if (mode % 3 == 0) {
        (void)codec().decode(input, kAccount, kFingerprint);
    } else if (mode % 3 == 1) {
        const std::string token = signed_token(input);
        auto decoded = codec().decode(token, kAccount, kFingerprint);
        if (decoded) {
            fuzz::check(codec().encode(*decoded, kAccount, kFingerprint) == token,
                        "a cursor decodes only when encode writes it byte for byte");
        }
        fuzz::check(!codec().decode(token, "bob", kFingerprint), "a cursor is bound to its account");
    } else {
        const auto seconds = take<std::uint64_t>(input);
        wallet::CursorPosition position;
        auto timestamp = wallet::Timestamp::from_seconds(
            static_cast<std::int64_t>(seconds % static_cast<std::uint64_t>(wallet::Timestamp::kMaxSeconds + 1)));
        fuzz::check(timestamp.ok(), "seconds in range make a timestamp");
        position.timestamp = *timestamp;
        position.block_num = take<std::int64_t>(input);
        position.block_seq = take<std::int32_t>(input);
        position.role = std::string(input);
        const std::string token = codec().encode(position, kAccount, kFingerprint);
        auto decoded = codec().decode(token, kAccount, kFingerprint);
        if (position.role.size() <= wallet::CursorCodec::kMaxRoleLength &&
            token.size() <= wallet::CursorCodec::kMaxCursorLength) {
            fuzz::check(decoded.ok() && *decoded == position, "encode then decode gives the position back");
        } else {
            fuzz::check(!decoded.ok(), "a role longer than the limit gives a cursor decode refuses");
        }
    }
    return 0;
}
