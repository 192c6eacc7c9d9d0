#include "wallet/base64url.hpp"

#include <random>
#include <string>

#include <gtest/gtest.h>

namespace wallet {
namespace {

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

TEST(Base64Url, Rfc4648Vectors) {
    // RFC 4648 section 10, without padding.
    const std::pair<const char*, const char*> vectors[] = {
        {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        EXPECT_EQ(base64url_encode(plain), encoded);
        EXPECT_EQ(base64url_decode(encoded).value(), plain);
    }
}

TEST(Base64Url, UsesTheUrlAlphabet) {
    // Standard base64 would print "+/8" and "/w".
    EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
    EXPECT_EQ(base64url_encode("\xff"), "_w");
    EXPECT_EQ(base64url_decode("-_8").value(), "\xfb\xff");
    EXPECT_EQ(base64url_encode(std::string("\0\0\0", 3)), "AAAA");
}

TEST(Base64Url, RoundTripsEveryLength) {
    std::mt19937 random(20240601);
    for (std::size_t length = 0; length <= 200; ++length) {
        std::string bytes(length, '\0');
        for (char& byte : bytes) byte = static_cast<char>(random() & 0xFF);
        const std::string text = base64url_encode(bytes);
        EXPECT_EQ(text.size(), (length * 4 + 2) / 3);
        auto decoded = base64url_decode(text);
        ASSERT_TRUE(decoded.ok()) << decoded.error();
        EXPECT_EQ(*decoded, bytes);
    }
}

TEST(Base64Url, RejectsBadText) {
    for (const char* text : {"Z", "Zm9vY", "Zg==", "Zg=", "Zm9v+A", "Zm9v/A", "Zm 9v", " Zg", "Zg\n", "Zm9v.A",
                             "Zg\xc3\xa9", "Z\x80", "Zm9v=", "===="}) {
        EXPECT_FALSE(base64url_decode(text).ok()) << '"' << text << '"';
    }
    EXPECT_FALSE(base64url_decode(std::string_view("Zg\0A", 4)).ok());
}

TEST(Base64Url, AcceptsOnlyCanonicalTrailingBits) {
    // After 2 characters 4 bits are unused, after 3 characters 2 bits: only
    // the characters leaving them zero are accepted (64/16 and 64/4 of them).
    int accepted_two = 0;
    int accepted_three = 0;
    for (const char last : kAlphabet) {
        const std::string two = std::string("Z") + last;
        const std::string three = std::string("Zm") + last;
        if (base64url_decode(two).ok()) {
            ++accepted_two;
            EXPECT_EQ(base64url_encode(base64url_decode(two).value()), two);
        }
        if (base64url_decode(three).ok()) {
            ++accepted_three;
            EXPECT_EQ(base64url_encode(base64url_decode(three).value()), three);
        }
    }
    EXPECT_EQ(accepted_two, 4);
    EXPECT_EQ(accepted_three, 16);
}

}  // namespace
}  // namespace wallet
