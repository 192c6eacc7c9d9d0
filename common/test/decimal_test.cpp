#include "wallet/decimal.hpp"

#include <string>

#include <gtest/gtest.h>

namespace wallet {
namespace {

Decimal dec(std::string_view text) {
    auto parsed = Decimal::parse(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
    return parsed.ok() ? *parsed : Decimal{};
}

TEST(Decimal, ParsesAndPrintsAtItsOwnScale) {
    for (const char* text : {"0", "1", "1.000", "-0.5", "123.456789", "0.000000", "0.001", "-12.340",
                             "999999999999999999999999.999999", "-999999999999999999999999.999999",
                             "0.000000000000000001", "123456789012345678901234567890"}) {
        EXPECT_EQ(dec(text).to_string(), text);
    }
}

TEST(Decimal, KeepsScaleAndUnits) {
    const Decimal d = dec("123.456789");
    EXPECT_EQ(d.scale(), 6);
    EXPECT_TRUE(d.units() == 123456789);
    EXPECT_EQ(dec("-0.5").scale(), 1);
    EXPECT_TRUE(dec("-0.5").units() == -5);
}

TEST(Decimal, NegativeZeroIsZero) {
    const Decimal d = dec("-0.000");
    EXPECT_TRUE(d.is_zero());
    EXPECT_FALSE(d.is_negative());
    EXPECT_EQ(d.to_string(), "0.000");
}

TEST(Decimal, RejectsMalformedText) {
    for (const char* text : {"", "-", "+1", "1.", ".5", "-.5", "1e3", "1E3", "1.0e-3", " 1", "1 ", "1,000", "1.2.3",
                             "0x10", "--1", "1-", "abc", "1.000 HIVE", "\t1", "1..0", "NaN", "inf", "٣"}) {
        EXPECT_FALSE(Decimal::parse(text).ok()) << '"' << text << '"';
    }
    EXPECT_FALSE(Decimal::parse(std::string_view("1\0" "5", 3)).ok());
}

TEST(Decimal, RejectsOutOfRangeText) {
    // 31 significant integer digits.
    EXPECT_FALSE(Decimal::parse("1234567890123456789012345678901").ok());
    EXPECT_FALSE(Decimal::parse("-1234567890123456789012345678901.5").ok());
    // Leading zeros are not significant.
    EXPECT_TRUE(Decimal::parse("0000123456789012345678901234567890").ok());
    // 19 decimals.
    EXPECT_FALSE(Decimal::parse("0.0000000000000000001").ok());
    // 30 integer digits and 18 decimals do not fit 38 digits.
    EXPECT_FALSE(Decimal::parse("123456789012345678901234567890.123456789012345678").ok());
    // 30 + 8 = 38 digits do.
    EXPECT_TRUE(Decimal::parse("123456789012345678901234567890.12345678").ok());
}

TEST(Decimal, HoldsNumeric30_6Exactly) {
    const char* max = "999999999999999999999999.999999";
    const Decimal d = dec(max);
    EXPECT_EQ(d.to_string(6).value(), max);
    auto sum = d.add(-d);
    ASSERT_TRUE(sum.ok());
    EXPECT_TRUE(sum->is_zero());
    auto doubled = d.add(d);
    ASSERT_TRUE(doubled.ok());
    EXPECT_EQ(doubled->to_string(), "1999999999999999999999999.999998");
}

TEST(Decimal, ParsesUnitCounts) {
    EXPECT_EQ(Decimal::parse_units("1000", 3)->to_string(), "1.000");
    EXPECT_EQ(Decimal::parse_units("18325", 6)->to_string(), "0.018325");
    EXPECT_EQ(Decimal::parse_units("0", 6)->to_string(), "0.000000");
    EXPECT_EQ(Decimal::parse_units("-5", 1)->to_string(), "-0.5");
    EXPECT_EQ(Decimal::parse_units("448144916705468383", 6)->to_string(), "448144916705.468383");
    EXPECT_EQ(Decimal::parse_units("7", 0)->to_string(), "7");
    for (const char* text : {"", "-", "1.0", "1e3", " 1", "+1", "0x1"}) {
        EXPECT_FALSE(Decimal::parse_units(text, 3).ok()) << '"' << text << '"';
    }
    EXPECT_FALSE(Decimal::parse_units("1", -1).ok());
    EXPECT_FALSE(Decimal::parse_units("1", 19).ok());
    EXPECT_FALSE(Decimal::parse_units("123456789012345678901234567890123456789", 18).ok());
    EXPECT_FALSE(Decimal::parse_units("1234567890123456789012345678901", 0).ok());
}

TEST(Decimal, PrintsAtOtherScales) {
    EXPECT_EQ(dec("1").to_string(3).value(), "1.000");
    EXPECT_EQ(dec("-0.5").to_string(3).value(), "-0.500");
    EXPECT_EQ(dec("1.500").to_string(1).value(), "1.5");
    EXPECT_EQ(dec("1.000").to_string(0).value(), "1");
    EXPECT_EQ(dec("0.018325").units_string(6).value(), "18325");
    EXPECT_EQ(dec("-2.5").units_string(3).value(), "-2500");
    EXPECT_FALSE(dec("1.001").to_string(2).ok());
    EXPECT_FALSE(dec("0.000001").to_string(5).ok());
    EXPECT_FALSE(dec("1").to_string(19).ok());
    EXPECT_FALSE(dec("1").to_string(-1).ok());
    // Widening past 38 digits is refused rather than wrapped.
    EXPECT_FALSE(dec("123456789012345678901234567890").to_string(9).ok());
}

TEST(Decimal, AddsExactlyAtTheLargerScale) {
    auto sum = dec("1.5").add(dec("0.018325"));
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(sum->to_string(), "1.518325");
    EXPECT_EQ(dec("0.1").add(dec("0.2"))->to_string(), "0.3");
    EXPECT_EQ(dec("-1.000").add(dec("0.001"))->to_string(), "-0.999");
    EXPECT_EQ(dec("0.001").add(dec("-0.001"))->to_string(), "0.000");
    // 0.1 added ten times is exactly 1 (no float drift).
    Decimal total;
    for (int i = 0; i < 10; ++i) total = total.add(dec("0.1")).value();
    EXPECT_EQ(total.to_string(), "1.0");
}

TEST(Decimal, AdditionOverflowIsAnError) {
    // The largest value: 30 integer digits and 8 decimals (38 digits).
    const Decimal big = dec("999999999999999999999999999999.99999999");
    EXPECT_FALSE(big.add(dec("0.00000001")).ok());
    EXPECT_FALSE((-big).add(dec("-1")).ok());
    EXPECT_FALSE(big.add(big).ok());  // would also overflow __int128 itself
    EXPECT_FALSE((-big).add(-big).ok());
    // Rescaling the big operand to the other's scale overflows too.
    EXPECT_FALSE(big.add(dec("0.000000001")).ok());
    EXPECT_TRUE(big.add(-big)->is_zero());
}

TEST(Decimal, ComparesNumerically) {
    EXPECT_EQ(dec("1.0"), dec("1.000"));
    EXPECT_EQ(dec("0"), dec("-0.000"));
    EXPECT_LT(dec("0.999"), dec("1"));
    EXPECT_LT(dec("-1"), dec("-0.999"));
    EXPECT_LT(dec("-1.5"), dec("-0.9"));
    EXPECT_LT(dec("-0.5"), dec("0.2"));
    EXPECT_GT(dec("1.000001"), dec("1.000"));
    EXPECT_GT(dec("2"), dec("1.999999999999999999"));
    EXPECT_LT(dec("-2"), dec("-1.999999999999999999"));
    EXPECT_NE(dec("0.001"), dec("0.0001"));
    // Extremes of the range compare without overflow.
    EXPECT_LT(dec("-999999999999999999999999999999.99999999"), dec("0.000000000000000001"));
    EXPECT_GT(dec("999999999999999999999999999999.99999999"), dec("99999999999999999999.999999999999999999"));
    EXPECT_GT(dec("99999999999999999999.999999999999999999"), dec("99999999999999999999.99999999999999999"));
}

TEST(Decimal, NegationIsExact) {
    EXPECT_EQ((-dec("1.250")).to_string(), "-1.250");
    EXPECT_EQ((-dec("-1.250")).to_string(), "1.250");
    EXPECT_TRUE((-dec("0")).is_zero());
}

TEST(Decimal, FromUnitsChecksRange) {
    EXPECT_TRUE(Decimal::from_units(1000, 3).ok());
    EXPECT_FALSE(Decimal::from_units(1, 19).ok());
    Decimal::Units huge = 1;
    for (int i = 0; i < 38; ++i) huge *= 10;
    EXPECT_FALSE(Decimal::from_units(huge, 18).ok());
    EXPECT_TRUE(Decimal::from_units(huge - 1, 8).ok());
    EXPECT_FALSE(Decimal::from_units(huge - 1, 7).ok());  // 31 integer digits
}

}  // namespace
}  // namespace wallet
