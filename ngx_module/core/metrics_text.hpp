// Prometheus metrics shared by the router and the wallet_history API:
// counters and latency histograms as lock-free atomics that live in an nginx
// shared memory zone (every worker adds to the same ones), and the writer of
// the text exposition format 0.0.4 that a scrape returns. nginx-free.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace metrics {

using Counter = std::atomic<std::uint64_t>;
static_assert(Counter::is_always_lock_free, "shared-memory counters must be lock-free");

// Upper bounds of the latency buckets, in microseconds (1 ms .. 10 s).
inline constexpr std::array<std::uint64_t, 12> kLatencyBoundsUs = {1000,   2500,   5000,    10000,   25000,   50000,
                                                                    100000, 250000, 500000, 1000000, 2500000, 10000000};

// A latency histogram: one counter per bucket (not cumulative; the writer
// sums them) plus +Inf, and the sum in microseconds. Adding is two relaxed
// atomic increments, so a scrape may see one in flight: harmless.
struct Histogram {
    std::array<Counter, kLatencyBoundsUs.size() + 1> buckets{};
    Counter sum_us{0};

    void observe(std::uint64_t us) {
        std::size_t i = 0;
        while (i < kLatencyBoundsUs.size() && us > kLatencyBoundsUs[i]) ++i;
        buckets[i].fetch_add(1, std::memory_order_relaxed);
        sum_us.fetch_add(us, std::memory_order_relaxed);
    }
    std::uint64_t count() const;
};

inline void add(Counter& counter, std::uint64_t n = 1) { counter.fetch_add(n, std::memory_order_relaxed); }

// Microseconds on the monotonic clock (latencies).
std::uint64_t monotonic_us();
// Microseconds since the epoch on the realtime clock (a delay from a time
// another process took, e.g. a database writer's commit).
std::uint64_t realtime_us();

using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// Appends families in the text format: "# HELP" and "# TYPE" once per
// family, then its samples; label values are escaped (\\, \", \n).
class TextWriter {
public:
    void family(std::string_view name, std::string_view type, std::string_view help);
    void sample(std::string_view name, Labels labels, std::uint64_t value);
    void sample(std::string_view name, Labels labels, std::string_view value);
    // name_bucket{...,le="..."} (cumulative), name_sum (seconds), name_count.
    void histogram(std::string_view name, Labels labels, const Histogram& h);
    std::string& text() { return out_; }

private:
    void series(std::string_view name, Labels labels, std::string_view extra_name = {}, std::string_view extra_value = {});
    std::string out_;
};

// Seconds with 6 decimals ("0.012500") of a count of microseconds.
std::string seconds_text(std::uint64_t us);

}  // namespace metrics
