#include "wallet/cursor.hpp"

#include <cstdio>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "wallet/base64url.hpp"

namespace wallet {
namespace {

const std::string kSecret = "a test secret of thirty-two byte";
constexpr std::string_view kAccount = "blocktrades";
constexpr std::string_view kFingerprint = "op_types=transfer;direction=desc";

CursorPosition sample_position() {
    return CursorPosition{Timestamp::parse("2016-09-15T19:47:21").value(), 4999999, 17, "receiver"};
}

TEST(Cursor, RoundTrips) {
    const CursorCodec codec(kSecret);
    const CursorPosition positions[] = {
        sample_position(),
        CursorPosition{},
        CursorPosition{Timestamp::from_seconds(Timestamp::kMaxSeconds).value(), INT64_MAX, INT32_MAX,
                       std::string(CursorCodec::kMaxRoleLength, 'r')},
        CursorPosition{Timestamp::parse("2026-10-10T00:00:00").value(), INT64_MIN, INT32_MIN, ""},
        CursorPosition{Timestamp::parse("2020-03-20T14:00:00").value(), 41818752, 0, "sender"},
        CursorPosition{Timestamp::parse("2020-03-20T14:00:00").value(), -1, -1, std::string("a\0b", 3)},
    };
    for (const auto& position : positions) {
        const std::string cursor = codec.encode(position, kAccount, kFingerprint);
        EXPECT_LE(cursor.size(), CursorCodec::kMaxCursorLength);
        auto decoded = codec.decode(cursor, kAccount, kFingerprint);
        ASSERT_TRUE(decoded.ok()) << cursor << ": " << decoded.error();
        EXPECT_EQ(*decoded, position);
        // Only the URL-safe alphabet, so it travels unescaped.
        EXPECT_EQ(cursor.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                  std::string::npos);
    }
    std::printf("[ cursor   ] a typical cursor: %s\n", codec.encode(sample_position(), kAccount, kFingerprint).c_str());
}

// The tag is HMAC-SHA256 as OpenSSL's own HMAC() computes it, for secrets
// shorter than, equal to and longer than SHA-256's 64-byte block: the token
// is rebuilt here from the documented layout.
TEST(Cursor, TagIsHmacSha256OfTheDocumentedMessage) {
    const CursorPosition position = sample_position();
    for (const std::size_t secret_length : {16u, 32u, 63u, 64u, 65u, 200u}) {
        std::string secret;
        for (std::size_t i = 0; i < secret_length; ++i) secret += static_cast<char>('a' + (i * 7 + secret_length) % 26);
        const std::string cursor = CursorCodec(secret).encode(position, kAccount, kFingerprint);
        auto bytes = base64url_decode(cursor);
        ASSERT_TRUE(bytes.ok());
        ASSERT_GT(bytes->size(), 16u);
        const std::string body = bytes->substr(0, bytes->size() - 16);
        // version | position, then length-prefixed account and fingerprint (one-byte varints here).
        const std::string message = body + static_cast<char>(kAccount.size()) + std::string(kAccount) +
                                    static_cast<char>(kFingerprint.size()) + std::string(kFingerprint);
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        ASSERT_NE(HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length),
                  nullptr);
        EXPECT_EQ(bytes->substr(bytes->size() - 16), std::string(reinterpret_cast<const char*>(digest), 16))
            << "secret of " << secret_length << " bytes";
    }
}

TEST(Cursor, IsDeterministicAndBoundToItsInputs) {
    const CursorCodec codec(kSecret);
    const std::string cursor = codec.encode(sample_position(), kAccount, kFingerprint);
    EXPECT_EQ(codec.encode(sample_position(), kAccount, kFingerprint), cursor);
    EXPECT_NE(codec.encode(sample_position(), "gtg", kFingerprint), cursor);
    EXPECT_NE(codec.encode(sample_position(), kAccount, "other"), cursor);
    CursorPosition other = sample_position();
    other.block_seq += 1;
    EXPECT_NE(codec.encode(other, kAccount, kFingerprint), cursor);
}

TEST(Cursor, RefusesAnotherAccountQueryOrSecret) {
    const CursorCodec codec(kSecret);
    const std::string cursor = codec.encode(sample_position(), kAccount, kFingerprint);
    EXPECT_FALSE(codec.decode(cursor, "gtg", kFingerprint).ok());
    EXPECT_FALSE(codec.decode(cursor, "blocktrade", kFingerprint).ok());
    EXPECT_FALSE(codec.decode(cursor, "", kFingerprint).ok());
    EXPECT_FALSE(codec.decode(cursor, kAccount, "op_types=transfer;direction=asc").ok());
    EXPECT_FALSE(codec.decode(cursor, kAccount, "").ok());
    // The account/fingerprint boundary is part of what is signed.
    const std::string split = codec.encode(sample_position(), "abc", "def");
    EXPECT_FALSE(codec.decode(split, "abcd", "ef").ok());
    EXPECT_FALSE(codec.decode(split, "ab", "cdef").ok());
    EXPECT_FALSE(CursorCodec("another secret of 32 bytes here!").decode(cursor, kAccount, kFingerprint).ok());
    EXPECT_FALSE(CursorCodec("").decode(cursor, kAccount, kFingerprint).ok());
}

TEST(Cursor, RefusesEveryBitFlipOfTheText) {
    const CursorCodec codec(kSecret);
    const std::string cursor = codec.encode(sample_position(), kAccount, kFingerprint);
    int refused = 0;
    for (std::size_t i = 0; i < cursor.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string flipped = cursor;
            flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
            EXPECT_FALSE(codec.decode(flipped, kAccount, kFingerprint).ok()) << "char " << i << " bit " << bit;
            ++refused;
        }
    }
    EXPECT_EQ(refused, static_cast<int>(cursor.size() * 8));
}

TEST(Cursor, RefusesEveryBitFlipOfTheBytes) {
    // Flips that keep the text valid base64url must be caught by the tag.
    const CursorCodec codec(kSecret);
    const std::string bytes = base64url_decode(codec.encode(sample_position(), kAccount, kFingerprint)).value();
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string flipped = bytes;
            flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
            EXPECT_FALSE(codec.decode(base64url_encode(flipped), kAccount, kFingerprint).ok())
                << "byte " << i << " bit " << bit;
        }
    }
}

TEST(Cursor, RefusesEveryTruncationAndExtension) {
    const CursorCodec codec(kSecret);
    const std::string cursor = codec.encode(sample_position(), kAccount, kFingerprint);
    for (std::size_t length = 0; length < cursor.size(); ++length) {
        EXPECT_FALSE(codec.decode(cursor.substr(0, length), kAccount, kFingerprint).ok()) << "prefix " << length;
        EXPECT_FALSE(codec.decode(cursor.substr(cursor.size() - length), kAccount, kFingerprint).ok())
            << "suffix " << length;
    }
    const std::string bytes = base64url_decode(cursor).value();
    for (std::size_t length = 0; length < bytes.size(); ++length) {
        EXPECT_FALSE(codec.decode(base64url_encode(bytes.substr(0, length)), kAccount, kFingerprint).ok());
    }
    EXPECT_FALSE(codec.decode(cursor + "A", kAccount, kFingerprint).ok());
    EXPECT_FALSE(codec.decode(cursor + "AAAA", kAccount, kFingerprint).ok());
    EXPECT_FALSE(codec.decode(base64url_encode(bytes + std::string(1, '\0')), kAccount, kFingerprint).ok());
    EXPECT_FALSE(codec.decode(cursor + std::string(CursorCodec::kMaxCursorLength, 'A'), kAccount, kFingerprint).ok());
    EXPECT_FALSE(codec.decode(std::string(100000, 'A'), kAccount, kFingerprint).ok());
}

TEST(Cursor, RefusesRandomGarbage) {
    const CursorCodec codec(kSecret);
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::mt19937 random(7);
    int tried = 0;
    for (int i = 0; i < 4000; ++i) {
        std::string text(random() % 300, '\0');
        for (char& c : text) c = alphabet[random() % alphabet.size()];
        EXPECT_FALSE(codec.decode(text, kAccount, kFingerprint).ok()) << text;
        ++tried;
    }
    for (int i = 0; i < 2000; ++i) {
        std::string text(random() % 80, '\0');
        for (char& c : text) c = static_cast<char>(random() & 0xFF);
        EXPECT_FALSE(codec.decode(text, kAccount, kFingerprint).ok());
        ++tried;
    }
    // Well-formed tokens with a valid version byte but a forged tag.
    for (int i = 0; i < 2000; ++i) {
        std::string bytes(1 + random() % 60, '\0');
        for (char& c : bytes) c = static_cast<char>(random() & 0xFF);
        bytes[0] = 1;
        EXPECT_FALSE(codec.decode(base64url_encode(bytes), kAccount, kFingerprint).ok());
        ++tried;
    }
    std::printf("[ cursor   ] %d random cursors refused\n", tried);
}

TEST(Cursor, RefusesAnOverlongRole) {
    const CursorCodec codec(kSecret);
    CursorPosition position = sample_position();
    position.role = std::string(CursorCodec::kMaxRoleLength + 1, 'r');
    EXPECT_FALSE(codec.decode(codec.encode(position, kAccount, kFingerprint), kAccount, kFingerprint).ok());
}

TEST(Cursor, CreateRefusesShortSecrets) {
    EXPECT_FALSE(CursorCodec::create("").ok());
    EXPECT_FALSE(CursorCodec::create(std::string(CursorCodec::kMinSecretLength - 1, 's')).ok());
    auto codec = CursorCodec::create(kSecret);
    ASSERT_TRUE(codec.ok());
    const std::string cursor = codec->encode(sample_position(), kAccount, kFingerprint);
    EXPECT_EQ(CursorCodec(kSecret).decode(cursor, kAccount, kFingerprint).value(), sample_position());
}

}  // namespace
}  // namespace wallet
