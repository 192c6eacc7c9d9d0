#include "wallet/decimal.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace wallet {
namespace {

using Units = Decimal::Units;

constexpr std::array<Units, Decimal::kMaxTotalDigits + 1> make_powers_of_ten() {
    std::array<Units, Decimal::kMaxTotalDigits + 1> powers{};
    powers[0] = 1;
    for (std::size_t i = 1; i < powers.size(); ++i) powers[i] = powers[i - 1] * 10;
    return powers;
}
constexpr auto kPowersOfTen = make_powers_of_ten();

constexpr Units pow10(int exponent) { return kPowersOfTen[static_cast<std::size_t>(exponent)]; }

// Every unit count stays strictly below this in magnitude.
constexpr Units kUnitsLimit = pow10(Decimal::kMaxTotalDigits);
constexpr Units kIntegerPartLimit = pow10(Decimal::kMaxIntegerDigits);

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool valid_scale(int scale) { return scale >= 0 && scale <= Decimal::kMaxScale; }

Units magnitude(Units u) { return u < 0 ? -u : u; }

// The limits every Decimal obeys, checked wherever a unit count is made.
Result<Units> check_range(Units units, int scale) {
    if (!valid_scale(scale)) return make_error("decimal: scale out of range 0..18");
    const Units abs = magnitude(units);
    if (abs >= kUnitsLimit) return make_error("decimal: more than 38 digits");
    if (abs / pow10(scale) >= kIntegerPartLimit) return make_error("decimal: more than 30 integer digits");
    return units;
}

// Appends one decimal digit to a non-negative accumulator; false when the
// result would reach the 38-digit limit.
bool append_digit(Units& accumulator, char digit) {
    const Units d = digit - '0';
    if (accumulator > (kUnitsLimit - 1 - d) / 10) return false;
    accumulator = accumulator * 10 + d;
    return true;
}

// Formats a unit count already expressed at `scale`: digits written from the
// end of a buffer, with 64-bit divisions while the value fits (a 128-bit
// division per digit was 5% of the loader's instructions).
std::string format_units(Units units, int scale) {
    char buffer[64];  // 39 digits, '.', '-' and the leading zeros of scale <= 18
    char* const end = buffer + sizeof buffer;
    char* p = end;
    Units rest = magnitude(units);
    int written = 0;
    auto put = [&](char digit) {
        *--p = digit;
        if (++written == scale) *--p = '.';
    };
    while (rest > static_cast<Units>(UINT64_MAX)) {
        put(static_cast<char>('0' + static_cast<int>(rest % 10)));
        rest /= 10;
    }
    auto small = static_cast<std::uint64_t>(rest);
    do {
        put(static_cast<char>('0' + static_cast<int>(small % 10)));
        small /= 10;
    } while (small != 0);
    while (written <= scale) put('0');  // "0.001": zeros up to the one before the point
    if (units < 0) *--p = '-';
    return std::string(p, end);
}

}  // namespace

Result<Decimal> Decimal::parse(std::string_view text) {
    std::size_t pos = 0;
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) ++pos;

    Units units = 0;
    int integer_digits = 0;
    int significant_integer_digits = 0;
    for (; pos < text.size() && is_digit(text[pos]); ++pos, ++integer_digits) {
        if (significant_integer_digits > 0 || text[pos] != '0') ++significant_integer_digits;
        if (significant_integer_digits > kMaxIntegerDigits) return make_error("decimal: more than 30 integer digits");
        if (!append_digit(units, text[pos])) return make_error("decimal: more than 38 digits");
    }
    if (integer_digits == 0) return make_error("decimal: expected a digit");

    int scale = 0;
    if (pos < text.size() && text[pos] == '.') {
        for (++pos; pos < text.size() && is_digit(text[pos]); ++pos) {
            if (++scale > kMaxScale) return make_error("decimal: more than 18 decimals");
            if (!append_digit(units, text[pos])) return make_error("decimal: more than 38 digits");
        }
        if (scale == 0) return make_error("decimal: expected a digit after the point");
    }
    if (pos != text.size()) return make_error("decimal: unexpected character");
    return from_units(negative ? -units : units, scale);
}

Result<Decimal> Decimal::parse_units(std::string_view text, int scale) {
    if (!valid_scale(scale)) return make_error("decimal: scale out of range 0..18");
    std::size_t pos = 0;
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) ++pos;
    if (pos == text.size()) return make_error("decimal: expected a digit");
    Units units = 0;
    for (; pos < text.size(); ++pos) {
        if (!is_digit(text[pos])) return make_error("decimal: unit count must be an integer");
        if (!append_digit(units, text[pos])) return make_error("decimal: more than 38 digits");
    }
    return from_units(negative ? -units : units, scale);
}

Result<Decimal> Decimal::from_units(Units units, int scale) {
    auto checked = check_range(units, scale);
    if (!checked) return make_error(checked.error());
    return Decimal(units, scale);
}

Result<Decimal> Decimal::rescaled(int scale) const {
    if (!valid_scale(scale)) return make_error("decimal: scale out of range 0..18");
    if (scale >= scale_) {
        const Units factor = pow10(scale - scale_);
        if (magnitude(units_) > (kUnitsLimit - 1) / factor) return make_error("decimal: more than 38 digits");
        return from_units(units_ * factor, scale);
    }
    const Units divisor = pow10(scale_ - scale);
    if (units_ % divisor != 0) return make_error("decimal: value has more decimals than the requested scale");
    return Decimal(units_ / divisor, scale);
}

Result<std::string> Decimal::to_string(int scale) const {
    auto at_scale = rescaled(scale);
    if (!at_scale) return make_error(at_scale.error());
    return format_units(at_scale->units_, scale);
}

std::string Decimal::to_string() const { return format_units(units_, scale_); }

Result<std::string> Decimal::units_string(int scale) const {
    auto at_scale = rescaled(scale);
    if (!at_scale) return make_error(at_scale.error());
    return format_units(at_scale->units_, 0);
}

Result<Decimal> Decimal::add(const Decimal& other) const {
    const int scale = std::max(scale_, other.scale_);
    auto left = rescaled(scale);
    if (!left) return make_error(left.error());
    auto right = other.rescaled(scale);
    if (!right) return make_error(right.error());
    Units sum = 0;
    if (__builtin_add_overflow(left->units_, right->units_, &sum)) return make_error("decimal: more than 38 digits");
    return from_units(sum, scale);
}

std::weak_ordering operator<=>(const Decimal& a, const Decimal& b) noexcept {
    // Compare integer parts, then fractions brought to a common scale. Both
    // parts carry the value's sign, so this order is the numeric order, and
    // no intermediate can overflow (fractions stay below 10^36).
    const Units a_divisor = pow10(a.scale_);
    const Units b_divisor = pow10(b.scale_);
    const Units a_integer = a.units_ / a_divisor;
    const Units b_integer = b.units_ / b_divisor;
    if (a_integer != b_integer) return a_integer < b_integer ? std::weak_ordering::less : std::weak_ordering::greater;
    const int scale = std::max(a.scale_, b.scale_);
    const Units a_fraction = (a.units_ % a_divisor) * pow10(scale - a.scale_);
    const Units b_fraction = (b.units_ % b_divisor) * pow10(scale - b.scale_);
    if (a_fraction == b_fraction) return std::weak_ordering::equivalent;
    return a_fraction < b_fraction ? std::weak_ordering::less : std::weak_ordering::greater;
}

}  // namespace wallet
