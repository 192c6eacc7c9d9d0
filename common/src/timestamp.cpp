#include "wallet/timestamp.hpp"

#include <array>

namespace wallet {
namespace {

constexpr std::int64_t kEpochYear = 1970;
constexpr std::int64_t kLastYear = 9999;
constexpr std::int64_t kSecondsPerDay = 86400;
constexpr std::string_view kNodeFormPattern = "dddd-dd-ddTdd:dd:dd";  // 'd' = any digit
constexpr std::string_view kZeroFraction = ".000";

// Days before the first of each month in a common year.
constexpr std::array<std::int64_t, 12> kDaysBeforeMonth = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

struct CivilTime {
    std::int64_t year, month, day, hour, minute, second;
};

bool is_leap_year(std::int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

std::int64_t days_in_month(std::int64_t year, std::int64_t month) {
    if (month == 2) return is_leap_year(year) ? 29 : 28;
    return (month == 4 || month == 6 || month == 9 || month == 11) ? 30 : 31;
}

// Leap days in the years 1..year (Gregorian rules throughout).
std::int64_t leap_days_through(std::int64_t year) { return year / 4 - year / 100 + year / 400; }

// Days from 1970-01-01 to January 1st of `year` (year >= 1970).
std::int64_t days_before_year(std::int64_t year) {
    return 365 * (year - kEpochYear) + leap_days_through(year - 1) - leap_days_through(kEpochYear - 1);
}

std::int64_t days_before_month(std::int64_t year, std::int64_t month) {
    return kDaysBeforeMonth[static_cast<std::size_t>(month - 1)] + (month > 2 && is_leap_year(year) ? 1 : 0);
}

std::int64_t days_from_civil(std::int64_t year, std::int64_t month, std::int64_t day) {
    return days_before_year(year) + days_before_month(year, month) + (day - 1);
}

CivilTime civil_from_seconds(std::int64_t seconds) {
    const std::int64_t days = seconds / kSecondsPerDay;
    const std::int64_t second_of_day = seconds % kSecondsPerDay;
    // days / 365 never undercounts the years; step back over the leap days.
    std::int64_t year = kEpochYear + days / 365;
    while (days_before_year(year) > days) --year;
    const std::int64_t day_of_year = days - days_before_year(year);
    // No month is longer than 32 days: day_of_year / 32 never overshoots the
    // month, and is at most two short of it.
    const std::int64_t leap_day = is_leap_year(year) ? 1 : 0;
    auto days_before = [leap_day](std::int64_t month) {
        return kDaysBeforeMonth[static_cast<std::size_t>(month - 1)] + (month > 2 ? leap_day : 0);
    };
    std::int64_t month = day_of_year / 32 + 1;
    while (month < 12 && days_before(month + 1) <= day_of_year) ++month;
    return CivilTime{year,
                     month,
                     day_of_year - days_before(month) + 1,
                     second_of_day / 3600,
                     second_of_day / 60 % 60,
                     second_of_day % 60};
}

std::int64_t digits_value(std::string_view digits) {
    std::int64_t value = 0;
    for (const char c : digits) value = value * 10 + (c - '0');
    return value;
}

// Two digits of 0..99, from a table (the API writes a timestamp per event).
char* write_two_digits(char* out, std::int64_t value) {
    static constexpr auto kPairs = [] {
        std::array<char, 200> pairs{};
        for (std::size_t i = 0; i < 100; ++i) {
            pairs[2 * i] = static_cast<char>('0' + i / 10);
            pairs[2 * i + 1] = static_cast<char>('0' + i % 10);
        }
        return pairs;
    }();
    const auto at = static_cast<std::size_t>(value) * 2;
    out[0] = kPairs[at];
    out[1] = kPairs[at + 1];
    return out + 2;
}

// "YYYY-MM-DDTHH:MM:SS" (kNodeFormPattern.size() bytes).
char* write_node_form(char* out, std::int64_t seconds) {
    const CivilTime t = civil_from_seconds(seconds);
    out = write_two_digits(out, t.year / 100);
    out = write_two_digits(out, t.year % 100);
    *out++ = '-';
    out = write_two_digits(out, t.month);
    *out++ = '-';
    out = write_two_digits(out, t.day);
    *out++ = 'T';
    out = write_two_digits(out, t.hour);
    *out++ = ':';
    out = write_two_digits(out, t.minute);
    *out++ = ':';
    return write_two_digits(out, t.second);
}

}  // namespace

Result<Timestamp> Timestamp::from_seconds(std::int64_t seconds) {
    if (seconds < kMinSeconds || seconds > kMaxSeconds) return make_error("timestamp: outside 1970..9999");
    return Timestamp(seconds);
}

Result<Timestamp> Timestamp::parse(std::string_view text) {
    if (text.size() < kNodeFormPattern.size()) return make_error("timestamp: expected YYYY-MM-DDTHH:MM:SS");
    for (std::size_t i = 0; i < kNodeFormPattern.size(); ++i) {
        const char expected = kNodeFormPattern[i];
        const bool matches = expected == 'd' ? (text[i] >= '0' && text[i] <= '9') : text[i] == expected;
        if (!matches) return make_error("timestamp: expected YYYY-MM-DDTHH:MM:SS");
    }
    std::string_view rest = text.substr(kNodeFormPattern.size());
    if (rest.substr(0, kZeroFraction.size()) == kZeroFraction) rest.remove_prefix(kZeroFraction.size());
    if (rest == "Z") rest.remove_prefix(1);
    if (!rest.empty()) return make_error("timestamp: only a trailing Z (or .000Z) may follow the seconds");

    const CivilTime t{digits_value(text.substr(0, 4)),  digits_value(text.substr(5, 2)),
                      digits_value(text.substr(8, 2)),  digits_value(text.substr(11, 2)),
                      digits_value(text.substr(14, 2)), digits_value(text.substr(17, 2))};
    if (t.year < kEpochYear || t.year > kLastYear) return make_error("timestamp: year outside 1970..9999");
    if (t.month < 1 || t.month > 12) return make_error("timestamp: month outside 1..12");
    if (t.day < 1 || t.day > days_in_month(t.year, t.month)) return make_error("timestamp: no such day in that month");
    if (t.hour > 23 || t.minute > 59 || t.second > 59) return make_error("timestamp: time of day out of range");
    return Timestamp(days_from_civil(t.year, t.month, t.day) * kSecondsPerDay + t.hour * 3600 + t.minute * 60 + t.second);
}

char* Timestamp::write_iso_z(char* out) const noexcept {
    out = write_node_form(out, seconds_);
    *out++ = 'Z';
    return out;
}

std::string Timestamp::to_iso_z() const {
    char text[kIsoZSize];
    return std::string(text, static_cast<std::size_t>(write_iso_z(text) - text));
}

std::string Timestamp::to_node_form() const {
    char text[kIsoZSize];
    return std::string(text, static_cast<std::size_t>(write_node_form(text, seconds_) - text));
}

}  // namespace wallet
