#include "api_inflight.hpp"

namespace wallet::api {

void InflightTable::empty_slot(Slot& slot) {
    // Its process is gone (or going): nothing else changes this slot's count.
    total_.fetch_sub(slot.count.exchange(0), std::memory_order_relaxed);
    slot.pid.store(0);
}

std::int64_t InflightTable::reclaim_dead(const Alive& alive) {
    std::int64_t released = 0;
    for (Slot& slot : slots_) {
        const std::int64_t pid = slot.pid.load();
        if (pid == 0 || alive(pid)) continue;
        released += slot.count.load();
        empty_slot(slot);
    }
    return released;
}

InflightTable::Slot* InflightTable::claim(std::int64_t pid, const Alive& alive) {
    reclaim_dead(alive);
    for (Slot& slot : slots_) {
        if (slot.pid.load() == pid) empty_slot(slot);  // a recycled pid: that process is gone
    }
    for (Slot& slot : slots_) {
        if (slot.pid.load() == 0) {
            slot.count.store(0);
            slot.pid.store(pid);
            return &slot;
        }
    }
    return nullptr;
}

void InflightTable::release(Slot* slot) {
    if (slot != nullptr) empty_slot(*slot);
}

bool InflightTable::try_enter(Slot* slot, std::int64_t max) {
    if (total_.fetch_add(1) >= max) {
        total_.fetch_sub(1);
        return false;
    }
    if (slot != nullptr) slot->count.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void InflightTable::leave(Slot* slot) {
    if (slot != nullptr) slot->count.fetch_sub(1, std::memory_order_relaxed);
    total_.fetch_sub(1);
}

}  // namespace wallet::api
