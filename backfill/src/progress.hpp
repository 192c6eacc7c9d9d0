// What the operator sees while the backfill runs: a live bar on a terminal,
// periodic log lines otherwise, and the final summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace wallet::backfill {

struct ProgressSnapshot {
    std::int64_t blocks_total = 0;  // blocks of the range
    std::int64_t blocks_done = 0;   // stored, by any run
    std::int64_t blocks_this_run = 0;
    std::int64_t events_this_run = 0;
    double seconds = 0;             // since this run started loading
};

// "1,234,567"
std::string with_thousands(std::int64_t value);
// "1:02:03", "4:05", or "?" when unknown.
std::string duration_text(double seconds);

// "[#####.....]  45.2%  90,400/200,000 blocks  3,012 blocks/s  61,200 rows/s  ETA 0:36"
std::string progress_bar(const ProgressSnapshot& snapshot, int bar_width = 30);
// "progress: 45.2% (90,400 of 200,000 blocks), 3,012 blocks/s, 61,200 rows/s, ETA 0:36"
std::string progress_log_line(const ProgressSnapshot& snapshot);

}  // namespace wallet::backfill
