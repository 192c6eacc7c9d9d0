// Compact per-account change runs (issue 28; docs/store-layout.md, "Change
// runs"): wallet_balance_runs.changes holds, for a run of consecutive events
// of one account that change its balances (its own, and those of other
// accounts carrying a change of it), each event's key and the account's
// changes from it, as varints. The snapshot pass writes them beside the
// account's state at the run's start (BalanceState::encode); a read decodes
// the state and applies the run's changes up to its block.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wallet/balance_change.hpp"
#include "wallet/balance_state.hpp"
#include "wallet/result.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet {

// A change of the run's account (BalanceChange without the account, the
// amount in units of the component's precision).
struct RunChange {
    BalanceComponent component = BalanceComponent::hive_balance;
    ChangeKind kind = ChangeKind::add;
    BalanceState::Units amount = 0;
    std::optional<std::string> other;
    std::optional<std::int64_t> request_id;

    static RunChange of(const BalanceChange& change);
    BalanceChange to_change(std::string account) const;

    friend bool operator==(const RunChange&, const RunChange&) = default;
};

// One event of a run: its key in replay order (block, block_seq, role), its
// op type's code (wallet_events.op_type), the event's own account when it
// is another account's event carrying this account's changes, and the
// changes. An event of the account whose changes the decoder cannot read is
// kept, marked and without changes (reads refuse from its block on).
struct RunEvent {
    std::int64_t block_num = 0;
    std::int64_t block_seq = 0;
    Role role = Role::Sender;
    int op_type = 0;   // wallet_events.op_type
    std::optional<std::int32_t> carried_by;  // the event's account id, for another account's event
    bool undecodable = false;
    std::vector<RunChange> changes;

    friend bool operator==(const RunEvent&, const RunEvent&) = default;
};

// The bytes of a run's events (blocks ascending, deltas from `after`, the
// block of the state the run starts from). Errors: a block out of order or
// at or before `after`, an amount out of the int64 range.
Result<std::string> encode_run(const std::vector<RunEvent>& events, std::int64_t after);
// Their events back; malformed bytes (truncated, out of range, trailing)
// give an error, never undefined behaviour.
Result<std::vector<RunEvent>> decode_run(std::string_view bytes, std::int64_t after);

// The pass's input, kept by the writers (migration 0031,
// wallet_balance_pending: one row per block and write): the block's events
// that change balances, each under the account whose run it joins (the
// event's own account, or with carried_by the account of another's event
// carrying a change of it), in the pass's order. The block is the row's.
struct PendingEvent {
    std::int32_t account = 0;
    RunEvent event;

    friend bool operator==(const PendingEvent&, const PendingEvent&) = default;
};
Result<std::string> encode_pending(const std::vector<PendingEvent>& events);
// Malformed bytes give an error, never undefined behaviour.
Result<std::vector<PendingEvent>> decode_pending(std::string_view bytes, std::int64_t block);

// The account's state after block `block` from one of its runs
// (wallet_balance_runs: the state after `after`, BalanceState::encode, and
// the run's bytes): the state with the changes of the run's events up to
// `block` applied (an undecodable event has none: the readers refuse from
// its block on by wallet_balance_undecodable). Errors: malformed bytes.
Result<BalanceState> run_state_at(std::string_view state, std::string_view changes, std::int64_t after, std::int64_t block);

}  // namespace wallet
