#include "wallet/cursor.hpp"

#include <optional>
#include <utility>

#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "wallet/base64url.hpp"

namespace wallet {
namespace {

constexpr char kVersion = 1;
constexpr std::size_t kTagLength = 16;
constexpr std::size_t kMaxVarintLength = 10;  // 64 bits, 7 per byte

void append_varint(std::string& out, std::uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7F) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

// Signed values as zigzag varints: small magnitudes stay short either sign.
std::uint64_t zigzag(std::int64_t value) {
    return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}
std::int64_t unzigzag(std::uint64_t value) {
    return static_cast<std::int64_t>((value >> 1) ^ (~(value & 1) + 1));
}

// Reads the compact position written by encode(); refuses anything that
// encode() would not have written byte for byte.
class PositionReader {
public:
    explicit PositionReader(std::string_view bytes) : bytes_(bytes) {}

    std::optional<std::uint64_t> varint() {
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < kMaxVarintLength && !bytes_.empty(); ++i) {
            const auto byte = static_cast<unsigned char>(bytes_.front());
            bytes_.remove_prefix(1);
            const std::uint64_t payload = byte & 0x7FU;
            // The tenth byte may only carry the 64th bit.
            if (i == kMaxVarintLength - 1 && payload > 1) return std::nullopt;
            value |= payload << (7 * i);
            if ((byte & 0x80U) == 0) {
                // A zero final byte after others is an over-long encoding.
                if (i > 0 && byte == 0) return std::nullopt;
                return value;
            }
        }
        return std::nullopt;
    }

    std::optional<std::string_view> bytes(std::uint64_t count) {
        if (count > bytes_.size()) return std::nullopt;
        const std::string_view taken = bytes_.substr(0, static_cast<std::size_t>(count));
        bytes_.remove_prefix(static_cast<std::size_t>(count));
        return taken;
    }

    bool at_end() const { return bytes_.empty(); }

private:
    std::string_view bytes_;
};

Result<CursorPosition> read_position(std::string_view bytes) {
    const Error malformed = make_error("cursor: malformed position");
    PositionReader reader(bytes);
    const auto seconds = reader.varint();
    const auto block_num = reader.varint();
    const auto block_seq = reader.varint();
    const auto role_length = reader.varint();
    if (!seconds || !block_num || !block_seq || !role_length || *role_length > CursorCodec::kMaxRoleLength) {
        return malformed;
    }
    const auto role = reader.bytes(*role_length);
    if (!role || !reader.at_end() || *seconds > static_cast<std::uint64_t>(Timestamp::kMaxSeconds)) return malformed;

    const std::int64_t seq = unzigzag(*block_seq);
    if (seq < INT32_MIN || seq > INT32_MAX) return malformed;
    auto timestamp = Timestamp::from_seconds(static_cast<std::int64_t>(*seconds));
    if (!timestamp) return malformed;
    return CursorPosition{*timestamp, unzigzag(*block_num), static_cast<std::int32_t>(seq), std::string(*role)};
}

}  // namespace

// HMAC-SHA256 (RFC 2104) on a SHA-256 fetched once: OpenSSL's one-shot HMAC
// and SHA256() look the algorithm up on every call, and a duplicated keyed
// EVP_MAC context costs several allocations; this costs one digest context
// per tag and two compression rounds (the padded keys' rounds are done once,
// each tag starts from a copy of their states).
struct CursorCodec::KeyedMac {
    static constexpr std::size_t kBlockSize = 64;

    struct DigestFree {
        void operator()(EVP_MD* md) const noexcept { EVP_MD_free(md); }
    };
    struct ContextFree {
        void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
    };
    using Context = std::unique_ptr<EVP_MD_CTX, ContextFree>;

    // Null without a secret or when OpenSSL has no SHA-256: tag() then gives
    // no tag at all, and decode refuses every cursor.
    static std::shared_ptr<const KeyedMac> create(std::string_view secret) {
        if (secret.empty()) return nullptr;
        auto keyed = std::make_shared<KeyedMac>();
        keyed->sha256.reset(EVP_MD_fetch(nullptr, "SHA256", nullptr));
        if (!keyed->sha256) return nullptr;
        // A key longer than a block is replaced by its digest.
        unsigned char key[kBlockSize] = {};
        if (secret.size() > kBlockSize) {
            unsigned int length = 0;
            if (EVP_Digest(secret.data(), secret.size(), key, &length, keyed->sha256.get(), nullptr) != 1) return nullptr;
        } else {
            std::memcpy(key, secret.data(), secret.size());
        }
        unsigned char inner_pad[kBlockSize];
        unsigned char outer_pad[kBlockSize];
        for (std::size_t i = 0; i < kBlockSize; ++i) {
            inner_pad[i] = static_cast<unsigned char>(key[i] ^ 0x36);
            outer_pad[i] = static_cast<unsigned char>(key[i] ^ 0x5c);
        }
        keyed->inner.reset(EVP_MD_CTX_new());
        keyed->outer.reset(EVP_MD_CTX_new());
        const bool ready = keyed->inner && keyed->outer &&
                           EVP_DigestInit_ex(keyed->inner.get(), keyed->sha256.get(), nullptr) == 1 &&
                           EVP_DigestUpdate(keyed->inner.get(), inner_pad, kBlockSize) == 1 &&
                           EVP_DigestInit_ex(keyed->outer.get(), keyed->sha256.get(), nullptr) == 1 &&
                           EVP_DigestUpdate(keyed->outer.get(), outer_pad, kBlockSize) == 1;
        OPENSSL_cleanse(key, sizeof key);
        OPENSSL_cleanse(inner_pad, sizeof inner_pad);
        OPENSSL_cleanse(outer_pad, sizeof outer_pad);
        return ready ? keyed : nullptr;
    }

    // The MAC of the concatenated parts into digest (32 bytes); false on an OpenSSL failure.
    template <std::size_t N>
    bool mac(const std::string_view (&parts)[N], unsigned char* digest) const {
        Context context(EVP_MD_CTX_new());
        if (!context || EVP_MD_CTX_copy_ex(context.get(), inner.get()) != 1) return false;
        for (const std::string_view part : parts) {
            if (EVP_DigestUpdate(context.get(), part.data(), part.size()) != 1) return false;
        }
        unsigned char inner_digest[EVP_MAX_MD_SIZE];
        unsigned int inner_length = 0;
        unsigned int length = 0;
        return EVP_DigestFinal_ex(context.get(), inner_digest, &inner_length) == 1 &&
               EVP_MD_CTX_copy_ex(context.get(), outer.get()) == 1 &&
               EVP_DigestUpdate(context.get(), inner_digest, inner_length) == 1 &&
               EVP_DigestFinal_ex(context.get(), digest, &length) == 1 && length == 32;
    }

    std::unique_ptr<EVP_MD, DigestFree> sha256;
    // SHA-256 states after the key padded with 0x36 (inner) and 0x5c (outer);
    // EVP_MD_CTX_free cleanses them.
    Context inner;
    Context outer;
};

CursorCodec::CursorCodec(std::string secret) : keyed_mac_(KeyedMac::create(secret)) {}

Result<CursorCodec> CursorCodec::create(std::string secret) {
    if (secret.size() < kMinSecretLength) return make_error("cursor: secret shorter than 16 bytes");
    return CursorCodec(std::move(secret));
}

std::string CursorCodec::tag(std::string_view version_and_position, std::string_view account,
                             std::string_view query_fingerprint) const {
    // Length prefixes keep (account, fingerprint) pairs from sliding into
    // each other: ("ab", "c") and ("a", "bc") sign different messages.
    std::string account_length;
    append_varint(account_length, account.size());
    std::string fingerprint_length;
    append_varint(fingerprint_length, query_fingerprint.size());
    const std::string_view parts[] = {version_and_position, account_length, account, fingerprint_length,
                                      query_fingerprint};
    unsigned char digest[EVP_MAX_MD_SIZE];
    if (!keyed_mac_ || !keyed_mac_->mac(parts, digest)) return std::string();  // decode then refuses everything
    return std::string(reinterpret_cast<const char*>(digest), kTagLength);
}

std::string CursorCodec::encode(const CursorPosition& position, std::string_view account,
                                std::string_view query_fingerprint) const {
    std::string bytes(1, kVersion);
    append_varint(bytes, static_cast<std::uint64_t>(position.timestamp.seconds()));
    append_varint(bytes, zigzag(position.block_num));
    append_varint(bytes, zigzag(position.block_seq));
    append_varint(bytes, position.role.size());
    bytes += position.role;
    bytes += tag(bytes, account, query_fingerprint);
    return base64url_encode(bytes);
}

Result<CursorPosition> CursorCodec::decode(std::string_view cursor, std::string_view account,
                                           std::string_view query_fingerprint) const {
    if (cursor.empty()) return make_error("cursor: empty");
    if (cursor.size() > kMaxCursorLength) return make_error("cursor: too long");
    auto bytes = base64url_decode(cursor);
    if (!bytes) return make_error("cursor: " + bytes.error());
    if (bytes->size() < 1 + kTagLength) return make_error("cursor: too short");
    if ((*bytes)[0] != kVersion) return make_error("cursor: unknown version");

    // Authenticate first, then parse only bytes this server wrote.
    const std::string_view body = std::string_view(*bytes).substr(0, bytes->size() - kTagLength);
    const std::string_view received_tag = std::string_view(*bytes).substr(bytes->size() - kTagLength);
    const std::string expected_tag = tag(body, account, query_fingerprint);
    if (expected_tag.size() != kTagLength ||
        CRYPTO_memcmp(expected_tag.data(), received_tag.data(), kTagLength) != 0) {
        return make_error("cursor: not issued for this account and query");
    }
    return read_position(body.substr(1));
}

}  // namespace wallet
