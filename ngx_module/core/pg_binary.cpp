#include "pg_binary.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace wallet::api::pg_binary {

namespace {

std::uint64_t big_endian(std::string_view bytes) {
    std::uint64_t value = 0;
    for (const char c : bytes) value = value << 8 | static_cast<unsigned char>(c);
    return value;
}

std::int16_t int16_at(std::string_view bytes, std::size_t offset) {
    return static_cast<std::int16_t>(static_cast<std::uint16_t>(big_endian(bytes.substr(offset, 2))));
}

// Seconds from 1970-01-01 to PostgreSQL's epoch 2000-01-01.
constexpr std::int64_t kPostgresEpochSeconds = 946684800;
constexpr std::int64_t kMicrosPerSecond = 1000000;

// numeric_send's header: ndigits, weight, sign, dscale (int16 each), then
// ndigits base-10000 digits; digit i is worth 10000^(weight - i).
constexpr std::size_t kNumericHeader = 8;
constexpr std::uint16_t kNumericPositive = 0x0000;
constexpr std::uint16_t kNumericNegative = 0x4000;
constexpr std::uint16_t kNumericNaN = 0xC000;
constexpr std::uint16_t kNumericPlusInfinity = 0xD000;
constexpr std::uint16_t kNumericMinusInfinity = 0xF000;
constexpr int kDecimalDigitsPerDigit = 4;
constexpr int kGroupPowers[kDecimalDigitsPerDigit] = {1000, 100, 10, 1};

}  // namespace

std::optional<std::int64_t> integer(std::string_view bytes) {
    switch (bytes.size()) {
    case 2:
        return static_cast<std::int16_t>(static_cast<std::uint16_t>(big_endian(bytes)));
    case 4:
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(big_endian(bytes)));
    case 8:
        return static_cast<std::int64_t>(big_endian(bytes));
    default:
        return std::nullopt;
    }
}

std::optional<std::int64_t> epoch_seconds(std::string_view bytes) {
    if (bytes.size() != 8) return std::nullopt;
    const auto micros = static_cast<std::int64_t>(big_endian(bytes));
    // DT_NOBEGIN / DT_NOEND
    if (micros == std::numeric_limits<std::int64_t>::min() || micros == std::numeric_limits<std::int64_t>::max()) {
        return std::nullopt;
    }
    std::int64_t seconds = micros / kMicrosPerSecond;
    if (micros % kMicrosPerSecond < 0) --seconds;
    return seconds + kPostgresEpochSeconds;
}

char* write_numeric(std::string_view bytes, char* out, std::size_t capacity) {
    if (bytes.size() < kNumericHeader) return nullptr;
    const int ndigits = int16_at(bytes, 0);
    const int weight = int16_at(bytes, 2);
    const auto sign = static_cast<std::uint16_t>(int16_at(bytes, 4));
    const int dscale = int16_at(bytes, 6);
    if (ndigits < 0 || dscale < 0 || bytes.size() != kNumericHeader + 2 * static_cast<std::size_t>(ndigits)) {
        return nullptr;
    }
    auto word = [&](std::string_view text) -> char* {
        if (text.size() > capacity) return nullptr;
        std::memcpy(out, text.data(), text.size());
        return out + text.size();
    };
    switch (sign) {
    case kNumericNaN:
        return word("NaN");
    case kNumericPlusInfinity:
        return word("Infinity");
    case kNumericMinusInfinity:
        return word("-Infinity");
    case kNumericPositive:
    case kNumericNegative:
        break;
    default:
        return nullptr;
    }
    // Sign, whole digits, point and the display scale's digits at most.
    const std::size_t whole_digits = weight < 0 ? 1 : static_cast<std::size_t>(weight + 1) * kDecimalDigitsPerDigit;
    if (1 + whole_digits + 1 + static_cast<std::size_t>(dscale) > capacity) return nullptr;
    auto digit = [&](int index) -> int {
        return index >= 0 && index < ndigits ? int16_at(bytes, kNumericHeader + 2 * static_cast<std::size_t>(index)) : 0;
    };
    for (int i = 0; i < ndigits; ++i) {
        if (digit(i) < 0 || digit(i) > 9999) return nullptr;
    }

    char* at = out;
    if (sign == kNumericNegative) *at++ = '-';
    // The first `count` decimal digits of a group; a leading group skips its
    // leading zeros but always prints its last digit.
    auto put_group = [&at](int group, int count, bool leading) {
        for (int i = 0; i < count; ++i) {
            const int d = group / kGroupPowers[i] % 10;
            if (leading && d == 0 && i < kDecimalDigitsPerDigit - 1) continue;
            leading = false;
            *at++ = static_cast<char>('0' + d);
        }
    };
    int index = 0;
    if (weight < 0) {
        *at++ = '0';
        index = weight + 1;
    } else {
        for (; index <= weight; ++index) put_group(digit(index), kDecimalDigitsPerDigit, index == 0);
    }
    if (dscale > 0) {
        *at++ = '.';
        // The display scale may cut the last group.
        for (int wanted = dscale; wanted > 0; wanted -= kDecimalDigitsPerDigit, ++index) {
            put_group(digit(index), std::min(wanted, kDecimalDigitsPerDigit), false);
        }
    }
    return at;
}

}  // namespace wallet::api::pg_binary
