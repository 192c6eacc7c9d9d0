// UTC instants with one-second resolution, as the chain records them. The
// arithmetic is plain calendar math: no timegm, time zone or locale involved.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "wallet/result.hpp"

namespace wallet {

class Timestamp {
public:
    static constexpr std::int64_t kMinSeconds = 0;             // 1970-01-01T00:00:00
    static constexpr std::int64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59

    // The epoch.
    constexpr Timestamp() = default;

    // Seconds since 1970-01-01T00:00:00 UTC, within [kMinSeconds, kMaxSeconds].
    static Result<Timestamp> from_seconds(std::int64_t seconds);

    // Strict ISO 8601 in the two forms met in practice:
    //   "YYYY-MM-DDTHH:MM:SS"       the node's form
    //   "YYYY-MM-DDTHH:MM:SSZ"      the API's form
    // optionally with ".000" before the end or the 'Z' (what JavaScript's
    // toISOString sends). Refused: other fractions, offsets other than Z,
    // lowercase 't'/'z', a space for 'T', impossible dates (Feb 30, month 13,
    // hour 24, second 60) and years outside 1970..9999.
    static Result<Timestamp> parse(std::string_view text);

    std::int64_t seconds() const noexcept { return seconds_; }

    // "2016-03-24T16:05:00Z"
    std::string to_iso_z() const;
    // The same written to out (kIsoZSize bytes, no terminator); returns the end.
    static constexpr std::size_t kIsoZSize = 20;
    char* write_iso_z(char* out) const noexcept;
    // "2016-03-24T16:05:00", as hived prints it.
    std::string to_node_form() const;

    friend constexpr auto operator<=>(const Timestamp&, const Timestamp&) = default;

private:
    explicit constexpr Timestamp(std::int64_t seconds) : seconds_(seconds) {}

    std::int64_t seconds_ = 0;
};

}  // namespace wallet
