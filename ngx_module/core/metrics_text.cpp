#include "metrics_text.hpp"

#include <time.h>

namespace metrics {

std::uint64_t Histogram::count() const {
    std::uint64_t total = 0;
    for (const Counter& b : buckets) total += b.load(std::memory_order_relaxed);
    return total;
}

namespace {

std::uint64_t clock_us(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

}  // namespace

std::uint64_t monotonic_us() { return clock_us(CLOCK_MONOTONIC); }

std::uint64_t realtime_us() { return clock_us(CLOCK_REALTIME); }

std::string seconds_text(std::uint64_t us) {
    std::string fraction = std::to_string(us % 1000000);
    return std::to_string(us / 1000000) + "." + std::string(6 - fraction.size(), '0') + fraction;
}

void TextWriter::family(std::string_view name, std::string_view type, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
    out_.append(name).append(" ").append(type).append("\n");
}

void TextWriter::series(std::string_view name, Labels labels, std::string_view extra_name,
                        std::string_view extra_value) {
    out_.append(name);
    if (labels.size() == 0 && extra_name.empty()) return;
    out_.push_back('{');
    bool first = true;
    auto label = [&](std::string_view key, std::string_view value) {
        if (!first) out_.push_back(',');
        first = false;
        out_.append(key).append("=\"");
        for (char c : value) {
            if (c == '\\' || c == '"') {
                out_.push_back('\\');
                out_.push_back(c);
            } else if (c == '\n') {
                out_.append("\\n");
            } else {
                out_.push_back(c);
            }
        }
        out_.push_back('"');
    };
    for (const auto& [key, value] : labels) label(key, value);
    if (!extra_name.empty()) label(extra_name, extra_value);
    out_.push_back('}');
}

void TextWriter::sample(std::string_view name, Labels labels, std::uint64_t value) {
    sample(name, labels, std::to_string(value));
}

void TextWriter::sample(std::string_view name, Labels labels, std::string_view value) {
    series(name, labels);
    out_.append(" ").append(value).append("\n");
}

void TextWriter::histogram(std::string_view name, Labels labels, const Histogram& h) {
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.buckets.size(); ++i) {
        cumulative += h.buckets[i].load(std::memory_order_relaxed);
        std::string le = i < kLatencyBoundsUs.size() ? seconds_text(kLatencyBoundsUs[i]) : "+Inf";
        series(bucket, labels, "le", le);
        out_.append(" ").append(std::to_string(cumulative)).append("\n");
    }
    series(std::string(name) + "_sum", labels);
    out_.append(" ").append(seconds_text(h.sum_us.load(std::memory_order_relaxed))).append("\n");
    series(std::string(name) + "_count", labels);
    out_.append(" ").append(std::to_string(cumulative)).append("\n");
}

}  // namespace metrics
