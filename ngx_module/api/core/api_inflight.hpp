// The global in-flight cap (WALLET_API_MAX_INFLIGHT) over every worker of one
// nginx, in memory shared by the workers. Each worker process counts its
// requests in a slot of its own, besides the total the cap reads, so that the
// requests of a worker that died with them in flight (crash, OOM kill: its
// request cleanups never run) are taken out of the total by the next worker
// that starts, or by any worker when the cap is reached. A reload keeps the
// table: the new workers take free slots, the old ones keep theirs until they
// exit.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace wallet::api {

class InflightTable {
public:
    struct Slot {
        std::atomic<std::int64_t> pid{0};  // 0: free
        std::atomic<std::int64_t> count{0};
    };
    // Whether a process exists (a slot of a process that does not is reclaimed).
    using Alive = std::function<bool(std::int64_t pid)>;

    // More than any number of workers alive at once (old and new ones during
    // a reload); a worker that finds none free counts in the total alone.
    static constexpr std::size_t kSlots = 512;

    // claim, release and reclaim_dead: the caller holds the zone's lock (the
    // request path below takes none).

    // Reclaims the slots of dead processes, then takes a free slot for `pid`;
    // nullptr when every slot belongs to a live process.
    Slot* claim(std::int64_t pid, const Alive& alive);
    // A worker that exits gives its slot back, with what it still counts.
    void release(Slot* slot);
    // Takes the requests of dead processes out of the total; returns how many.
    std::int64_t reclaim_dead(const Alive& alive);

    // One more request in flight, unless `max` are already; `slot` may be null.
    bool try_enter(Slot* slot, std::int64_t max);
    void leave(Slot* slot);

    std::int64_t total() const { return total_.load(std::memory_order_relaxed); }

private:
    void empty_slot(Slot& slot);

    std::atomic<std::int64_t> total_{0};
    std::array<Slot, kSlots> slots_{};
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free, "the table lives in memory shared by processes");

}  // namespace wallet::api
