// The balance snapshot pass (issue 28; docs/store-layout.md, "Balances from
// the history"): in block order over the contiguous fully loaded prefix of
// the store, and never above the limit its caller gives (the last
// irreversible block: forks never reach it), one period of
// CHAIN_BALANCE_SNAPSHOT_BLOCKS at a time, it applies every stored event's
// balance changes to the states of their accounts and stores, at the period's
// end, the state of each account whose balances changed in it, or that had
// events, since its last snapshot (wallet_balance_snapshots), and within the
// period that of a busy account every kSnapshotEvents of its events. Each period is one transaction with the pass's
// checkpoint: idempotent and restartable; passes run beside each other wait
// for each other (the checkpoint row is locked).
#pragma once

#include <cstdint>

#include <libpq-fe.h>

#include "wallet/event_store.hpp"
#include "wallet/result.hpp"

namespace wallet::store {

inline constexpr std::int64_t kDefaultSnapshotBlocks = 28'800;  // a day of 3-second blocks
// Within a period, an account also gets a snapshot at the end of each block
// where kSnapshotEvents events that a read of its balances replays (its own,
// and those carrying a change of it) have passed since its last one: below
// the pass a read replays fewer, however busy the account.
inline constexpr std::int64_t kSnapshotEvents = 16;

struct SnapshotStep {
    bool advanced = false;        // a period was done
    std::int64_t through = 0;     // the checkpoint after the step
    std::int64_t events = 0;      // events replayed
    std::int64_t snapshots = 0;   // snapshots written
};

// Does the next period if every block of it is stored and at or below
// limit_block; else nothing (advanced false).
Result<SnapshotStep> advance_balance_snapshots(PGconn* conn, AccountIds& ids, const BalanceRules& rules,
                                               std::int64_t period_blocks, std::int64_t limit_block);

}  // namespace wallet::store
