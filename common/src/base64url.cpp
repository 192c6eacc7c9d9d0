#include "wallet/base64url.hpp"

#include <array>
#include <cstdint>

namespace wallet {
namespace {

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::uint8_t kInvalid = 0xFF;

constexpr std::array<std::uint8_t, 256> make_decode_table() {
    std::array<std::uint8_t, 256> table{};
    table.fill(kInvalid);
    for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
        table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
    }
    return table;
}
constexpr auto kDecodeTable = make_decode_table();

char sextet_char(std::uint32_t group, int shift) { return kAlphabet[(group >> shift) & 0x3F]; }

}  // namespace

std::string base64url_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() * 4 + 2) / 3);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                                    static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                                    static_cast<unsigned char>(bytes[i + 2]);
        out += sextet_char(group, 18);
        out += sextet_char(group, 12);
        out += sextet_char(group, 6);
        out += sextet_char(group, 0);
    }
    const std::size_t left = bytes.size() - i;
    if (left == 1) {
        const std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        out += sextet_char(group, 18);
        out += sextet_char(group, 12);
    } else if (left == 2) {
        const std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                                    static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        out += sextet_char(group, 18);
        out += sextet_char(group, 12);
        out += sextet_char(group, 6);
    }
    return out;
}

Result<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return make_error("base64url: impossible length");
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t bits = 0;
    int bit_count = 0;
    for (const char c : text) {
        const std::uint8_t sextet = kDecodeTable[static_cast<unsigned char>(c)];
        if (sextet == kInvalid) return make_error("base64url: invalid character");
        bits = (bits << 6 | sextet) & 0xFFFFFF;
        bit_count += 6;
        if (bit_count >= 8) {
            bit_count -= 8;
            out += static_cast<char>((bits >> bit_count) & 0xFF);
        }
    }
    // 2 or 4 bits remain after a partial group; they must be zero.
    if ((bits & ((1U << bit_count) - 1)) != 0) return make_error("base64url: non-canonical trailing bits");
    return out;
}

}  // namespace wallet
