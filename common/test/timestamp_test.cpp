#include "wallet/timestamp.hpp"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "hive_fixtures.hpp"

namespace wallet {
namespace {

std::int64_t seconds_of(std::string_view text) {
    auto parsed = Timestamp::parse(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
    return parsed.ok() ? parsed->seconds() : -1;
}

TEST(Timestamp, KnownInstants) {
    // Reference values from an independent UTC calendar implementation.
    EXPECT_EQ(seconds_of("1970-01-01T00:00:00"), 0);
    EXPECT_EQ(seconds_of("2016-03-24T16:05:00"), 1458835500);  // Hive/Steem block 1
    EXPECT_EQ(seconds_of("2000-02-29T12:34:56"), 951827696);
    EXPECT_EQ(seconds_of("2020-03-20T14:00:00"), 1584712800);  // HF23, Hive's first block
    EXPECT_EQ(seconds_of("2038-01-19T03:14:08"), 2147483648);
    EXPECT_EQ(seconds_of("2106-02-07T06:28:16"), 4294967296);
    EXPECT_EQ(seconds_of("9999-12-31T23:59:59"), Timestamp::kMaxSeconds);
}

TEST(Timestamp, AcceptsTheZAndZeroFractionForms) {
    const std::int64_t expected = 1458835500;
    EXPECT_EQ(seconds_of("2016-03-24T16:05:00Z"), expected);
    EXPECT_EQ(seconds_of("2016-03-24T16:05:00.000Z"), expected);
    EXPECT_EQ(seconds_of("2016-03-24T16:05:00.000"), expected);
}

TEST(Timestamp, Prints) {
    const Timestamp t = Timestamp::from_seconds(1458835500).value();
    EXPECT_EQ(t.to_iso_z(), "2016-03-24T16:05:00Z");
    EXPECT_EQ(t.to_node_form(), "2016-03-24T16:05:00");
    EXPECT_EQ(Timestamp().to_iso_z(), "1970-01-01T00:00:00Z");
    EXPECT_EQ(Timestamp::from_seconds(Timestamp::kMaxSeconds)->to_iso_z(), "9999-12-31T23:59:59Z");
}

TEST(Timestamp, RejectsMalformedOrImpossibleTimes) {
    for (const char* text : {
             "",                           // empty
             "2016-03-24",                 // date only
             "2016-03-24T16:05",           // no seconds
             "2016-03-24 16:05:00",        // space instead of T
             "2016-03-24t16:05:00",        // lowercase t
             "2016-03-24T16:05:00z",       // lowercase z
             "2016-03-24T16:05:00+00:00",  // an offset, even zero
             "2016-03-24T16:05:00-05:00",  // another offset
             "2016-03-24T16:05:00.5Z",     // a real fraction
             "2016-03-24T16:05:00.0Z",     // not exactly .000
             "2016-03-24T16:05:00.000000Z",
             "2016-03-24T16:05:00.001Z",
             "2016-03-24T16:05:00Z.000",
             "2016-03-24T16:05:00ZZ",
             "2016-03-24T16:05:00 ",
             " 2016-03-24T16:05:00",
             "2016-3-24T16:05:00",     // unpadded month
             "16-03-24T16:05:00",      // two-digit year
             "+2016-03-24T16:05:00",   // signed year
             "2016-02-30T00:00:00",    // Feb 30
             "2015-02-29T00:00:00",    // not a leap year
             "2100-02-29T00:00:00",    // century, not a leap year
             "2016-04-31T00:00:00",    // April has 30 days
             "2016-13-01T00:00:00",    // month 13
             "2016-00-01T00:00:00",    // month 0
             "2016-01-00T00:00:00",    // day 0
             "2016-01-32T00:00:00",    // day 32
             "2016-01-01T24:00:00",    // hour 24
             "2016-01-01T00:60:00",    // minute 60
             "2016-01-01T00:00:60",    // leap second
             "1969-12-31T23:59:59",    // before 1970
             "0000-01-01T00:00:00",    // year 0
             "10000-01-01T00:00:00",   // five-digit year
             "2016-01-01T00:00:0a",    // letter
             "2016-01-01T00:00:00\xef\xbc\xba",  // fullwidth Z
         }) {
        EXPECT_FALSE(Timestamp::parse(text).ok()) << '"' << text << '"';
    }
    EXPECT_FALSE(Timestamp::parse(std::string_view("2016-01-01T00:00:00\0", 20)).ok());
}

TEST(Timestamp, FromSecondsChecksRange) {
    EXPECT_TRUE(Timestamp::from_seconds(0).ok());
    EXPECT_TRUE(Timestamp::from_seconds(Timestamp::kMaxSeconds).ok());
    EXPECT_FALSE(Timestamp::from_seconds(-1).ok());
    EXPECT_FALSE(Timestamp::from_seconds(Timestamp::kMaxSeconds + 1).ok());
    EXPECT_FALSE(Timestamp::from_seconds(INT64_MIN).ok());
    EXPECT_FALSE(Timestamp::from_seconds(INT64_MAX).ok());
}

TEST(Timestamp, Orders) {
    EXPECT_LT(Timestamp::parse("2016-03-24T16:05:00").value(), Timestamp::parse("2016-03-24T16:05:01").value());
    EXPECT_EQ(Timestamp::parse("2016-03-24T16:05:00").value(), Timestamp::parse("2016-03-24T16:05:00Z").value());
}

// Against a naive day-by-day calendar walk from 1970 to 9999: a day's
// midnight prints as that date, parses back to the same second, and the day's
// last second still belongs to it. Every day is checked up to 2105 (the
// unsigned 32-bit limit and the 2100 non-leap year included); after that the
// first and last day of every month, to keep the test fast.
TEST(Timestamp, AgreesWithADayByDayCalendarWalk) {
    const int month_lengths[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    std::int64_t days = 0;
    int checked = 0;
    char expected[48];  // room for any int the format may print (-Wformat-truncation)
    for (int year = 1970; year <= 9999; ++year) {
        const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        for (int month = 1; month <= 12; ++month) {
            const int length = month_lengths[month - 1] + (month == 2 && leap ? 1 : 0);
            for (int day = 1; day <= length; ++day, ++days) {
                if (year > 2105 && day != 1 && day != length) continue;
                std::snprintf(expected, sizeof expected, "%04d-%02d-%02dT00:00:00", year, month, day);
                const Timestamp midnight = Timestamp::from_seconds(days * 86400).value();
                ASSERT_EQ(midnight.to_node_form(), expected);
                ASSERT_EQ(Timestamp::parse(expected)->seconds(), days * 86400);
                std::snprintf(expected, sizeof expected, "%04d-%02d-%02dT23:59:59", year, month, day);
                ASSERT_EQ(Timestamp::from_seconds(days * 86400 + 86399)->to_node_form(), expected);
                ++checked;
            }
        }
    }
    EXPECT_EQ(days * 86400 - 1, Timestamp::kMaxSeconds);
    EXPECT_GT(checked, 200000);
}

TEST(TimestampFixtures, EveryTimestampAndTimeFieldRoundTrips) {
    int checked = 0;
    for (const auto& path : test::hive_fixture_files()) {
        JsonPtr document = test::load_json_file(path);
        ASSERT_TRUE(document);
        test::walk_json(document.get(), [&](const test::JsonVisit& visit) {
            if (visit.key != "timestamp" && visit.key != "time") return;
            ASSERT_TRUE(json_is_string(visit.value)) << path << " ." << visit.key;
            const std::string original = test::json_string_of(visit.value);
            auto parsed = Timestamp::parse(original);
            ASSERT_TRUE(parsed.ok()) << path << ": " << original << ": " << parsed.error();
            EXPECT_EQ(parsed->to_node_form(), original) << path;
            EXPECT_EQ(parsed->to_iso_z(), original + 'Z') << path;
            EXPECT_EQ(Timestamp::parse(parsed->to_iso_z())->seconds(), parsed->seconds()) << path;
            ++checked;
        });
    }
    std::printf("[ times    ] %d timestamp/time values round-tripped\n", checked);
    EXPECT_GT(checked, 20000);
}

}  // namespace
}  // namespace wallet
