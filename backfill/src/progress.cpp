#include "progress.hpp"

#include <cmath>
#include <cstdio>

namespace wallet::backfill {
namespace {

struct Figures {
    double percent = 0;
    std::int64_t blocks_per_s = 0;
    std::int64_t rows_per_s = 0;
    std::string eta;
};

Figures figures_of(const ProgressSnapshot& s) {
    Figures f;
    f.percent = s.blocks_total > 0 ? 100.0 * static_cast<double>(s.blocks_done) / static_cast<double>(s.blocks_total) : 100.0;
    const double block_rate = s.seconds > 0 ? static_cast<double>(s.blocks_this_run) / s.seconds : 0;
    f.blocks_per_s = std::llround(block_rate);
    f.rows_per_s = s.seconds > 0 ? std::llround(static_cast<double>(s.events_this_run) / s.seconds) : 0;
    const std::int64_t remaining = s.blocks_total - s.blocks_done;
    f.eta = remaining <= 0 ? "0:00" : block_rate > 0 ? duration_text(static_cast<double>(remaining) / block_rate) : "?";
    return f;
}

}  // namespace

std::string with_thousands(std::int64_t value) {
    std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

std::string duration_text(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const auto total = static_cast<std::int64_t>(std::llround(seconds));
    char text[48];
    if (total >= 3600) {
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                      static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
    } else {
        std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(total / 60), static_cast<long long>(total % 60));
    }
    return text;
}

std::string progress_bar(const ProgressSnapshot& snapshot, int bar_width) {
    const Figures f = figures_of(snapshot);
    const auto filled = static_cast<int>(std::floor(f.percent / 100.0 * bar_width));
    // Appended in place: `"[" + std::string(n, '#')` trips GCC 12's -Wrestrict
    // false positive (GCC bug 105329) at -O3.
    std::string bar = "[";
    bar.append(static_cast<std::size_t>(std::min(filled, bar_width)), '#')
        .append(static_cast<std::size_t>(std::max(bar_width - filled, 0)), '.')
        .push_back(']');
    char percent[16];
    std::snprintf(percent, sizeof percent, "%5.1f%%", f.percent);
    return bar + " " + percent + "  " + with_thousands(snapshot.blocks_done) + "/" + with_thousands(snapshot.blocks_total) +
           " blocks  " + with_thousands(f.blocks_per_s) + " blocks/s  " + with_thousands(f.rows_per_s) + " rows/s  ETA " + f.eta;
}

std::string progress_log_line(const ProgressSnapshot& snapshot) {
    const Figures f = figures_of(snapshot);
    char percent[16];
    std::snprintf(percent, sizeof percent, "%.1f%%", f.percent);
    return std::string("progress: ") + percent + " (" + with_thousands(snapshot.blocks_done) + " of " +
           with_thousands(snapshot.blocks_total) + " blocks), " + with_thousands(f.blocks_per_s) + " blocks/s, " +
           with_thousands(f.rows_per_s) + " rows/s, ETA " + f.eta;
}

}  // namespace wallet::backfill
