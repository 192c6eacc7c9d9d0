// Decimal: an exact fixed-point number for asset amounts. Money never passes
// through a float: the value is a signed 128-bit count of units of 10^-scale.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "wallet/result.hpp"

namespace wallet {

class Decimal {
public:
    // __extension__: __int128 is a GCC/Clang extension, fine under -Wpedantic.
    __extension__ using Units = __int128;

    // Scale = digits after the point. 18 covers every chain precision (HIVE 3,
    // VESTS 6, SMTs up to 12) and NUMERIC(30,6).
    static constexpr int kMaxScale = 18;
    // At most 30 significant digits before the point (NUMERIC(30,6) needs 24).
    static constexpr int kMaxIntegerDigits = 30;
    // |units| stays below 10^38 so that it always fits __int128 with room for
    // a sign; parsing and arithmetic refuse anything larger.
    static constexpr int kMaxTotalDigits = 38;

    // Zero at scale 0.
    Decimal() = default;

    // "1.000", "-0.5", "123.456789", "42". Digits on both sides of an optional
    // point; an optional leading '-'; no '+', exponent, spaces or other chars.
    // The scale is the number of digits printed after the point.
    static Result<Decimal> parse(std::string_view text);

    // The NAI form: an integer count of units ("1000", "-5") and the precision
    // it is counted in ("1000", 3 -> 1.000).
    static Result<Decimal> parse_units(std::string_view units, int scale);

    // From an already-known unit count, checked against the limits above.
    static Result<Decimal> from_units(Units units, int scale);

    Units units() const noexcept { return units_; }
    int scale() const noexcept { return scale_; }
    bool is_zero() const noexcept { return units_ == 0; }
    bool is_negative() const noexcept { return units_ < 0; }

    // The same value at another scale; an error if digits would be lost or the
    // value would leave the 38-digit range.
    Result<Decimal> rescaled(int scale) const;

    // Printed at exactly `scale` decimals (zero-padded); an error if that
    // would drop non-zero digits.
    Result<std::string> to_string(int scale) const;
    // Printed at its own scale: parse(x.to_string()) gives x back.
    std::string to_string() const;
    // The integer unit count at `scale`, as the NAI "amount" string prints it.
    Result<std::string> units_string(int scale) const;

    // Exact sum at the larger of the two scales; an error on overflow.
    Result<Decimal> add(const Decimal& other) const;
    Decimal operator-() const noexcept { return Decimal(-units_, scale_); }

    // Numeric comparison: 1.0 == 1.00 (both print differently, hence weak).
    friend std::weak_ordering operator<=>(const Decimal& a, const Decimal& b) noexcept;
    friend bool operator==(const Decimal& a, const Decimal& b) noexcept {
        return (a <=> b) == std::weak_ordering::equivalent;
    }

private:
    Decimal(Units units, int scale) noexcept : units_(units), scale_(scale) {}

    Units units_ = 0;
    int scale_ = 0;
};

}  // namespace wallet
