// The balance pass (issue 28; docs/store-layout.md, "Balances from the
// history"): in block order over the contiguous fully loaded prefix of the
// store, and never above the limit its caller gives (the last irreversible
// block: forks never reach it), one period of CHAIN_BALANCE_SNAPSHOT_BLOCKS at
// a time, it applies every stored event's balance changes to the states of
// their accounts and stores each account's events that change its balances
// in change runs (wallet/balance_runs.hpp): a run is the account's state
// after its start block and its events after it; it is closed at the end of
// the block where it reaches kRunEvents events (appended to
// wallet_balance_runs, never updated), and each account's last run stays open
// (wallet_balance_open_runs, migration 0026: rewritten with the events up to
// the checkpoint, one row per account). Each period is one
// transaction with the pass's checkpoint: idempotent and restartable; passes
// run beside each other wait for each other (the checkpoint row is locked).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <libpq-fe.h>

#include "wallet/balance_runs.hpp"
#include "wallet/decoder.hpp"
#include "wallet/event_store.hpp"
#include "wallet/result.hpp"

namespace wallet::store {

inline constexpr std::int64_t kDefaultSnapshotBlocks = 28'800;  // a day of 3-second blocks
// A run is closed at the end of the block where it reaches kRunEvents events
// (about 800 bytes, under the TOAST threshold); the account's next run starts
// there with its state.
inline constexpr std::int64_t kRunEvents = 64;

struct SnapshotStep {
    bool advanced = false;        // a period was done
    std::int64_t through = 0;     // the checkpoint after the step
    std::int64_t events = 0;      // events replayed
    std::int64_t runs = 0;        // runs written (the closed ones, and the open ones rewritten)
};

// The pass's input, kept by the writers (migration 0031): the balance changes
// of the events one write inserts, as wallet_balance_pending rows (one per
// block, wallet::encode_pending), written in the write's transaction. The
// pass reads them instead of the events and the blocks' operations.
class PendingBalanceChanges {
public:
    // An event the write inserts, its account's id, and its operation's
    // changes (every role's: the event's are its role's; an error: the
    // event is undecodable).
    void add(const WalletEvent& event, std::int32_t account_id, const Result<std::vector<CarriedBalanceChange>>& changes);
    // Inside the write's transaction; gives the accounts the changes name ids.
    Result<bool> write(PGconn* conn, AccountIds& ids);

private:
    struct Event {
        std::int64_t block_num = 0;
        std::int64_t block_seq = 0;
        Role role = Role::Sender;
        int op_type = 0;
        std::int32_t account = 0;
        bool undecodable = false;
        std::vector<std::pair<std::string, RunChange>> changes;  // (the account changed, stored name; "": the event's own)
    };
    std::vector<Event> events_;
};

// Does the next period if every block of it is stored and at or below
// limit_block; else nothing (advanced false). Its events come from
// wallet_balance_pending; a period at or below the checkpoint row's
// events_read_through (events stored before migration 0031, or written
// through wallet_operation_events) reads the events and their stored
// operations instead.
Result<SnapshotStep> advance_balance_snapshots(PGconn* conn, AccountIds& ids, const BalanceRules& rules,
                                               std::int64_t period_blocks, std::int64_t limit_block);

// A rewind below the pass's checkpoint (delete_events_above): the runs keep
// their events up to `through` (a closed or open run across it is cut there,
// later ones deleted) and the checkpoint goes down to it, so that the pass redoes the
// blocks after it.
Result<bool> cut_balance_runs(PGconn* conn, std::int64_t through);

}  // namespace wallet::store
