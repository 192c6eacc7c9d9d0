#include "wallet/balance_runs.hpp"

#include <limits>

#include "wallet/varint.hpp"

namespace wallet {

namespace {

// The events' varints: block delta, block_seq, flags (the Role's index << 2
// | carried << 1 | undecodable: one byte), op type, [the carrying event's account id], the
// number of changes, then each change: a header, the zigzag amount, and
// the extras. The header of a plain change (no other account, no request
// id) is component * 5 + kind, below 120 (one byte); one with extras is
// 128 + (component * 5 + kind) * 4 + has_other * 2 + has_request.
constexpr std::uint64_t kKinds = 5;
constexpr std::uint64_t kPlainLimit = kBalanceComponentCount * kKinds;  // 120
constexpr std::uint64_t kExtended = 128;
constexpr std::uint64_t kMaxChanges = 1'000'000;
constexpr std::uint64_t kRoles = static_cast<std::uint64_t>(Role::Maker) + 1;

}  // namespace

RunChange RunChange::of(const BalanceChange& change) {
    return {change.component, change.kind, change.amount.units(), change.other, change.request_id};
}

BalanceChange RunChange::to_change(std::string account) const {
    BalanceChange change;
    change.account = std::move(account);
    change.component = component;
    change.kind = kind;
    change.amount = Decimal::from_units(amount, component_precision(component)).value();
    change.other = other;
    change.request_id = request_id;
    return change;
}

namespace {

// An event's bytes after its block: block_seq, flags, op type, [carrying
// account], its changes (the layout above).
Result<bool> put_event(std::string& out, const RunEvent& event) {
    if (event.block_seq < 0 || event.op_type < 0) {
        return make_error("runs: event at block " + std::to_string(event.block_num) + " out of order or negative");
    }
    varint::put(out, static_cast<std::uint64_t>(event.block_seq));
    varint::put(out, (static_cast<std::uint64_t>(event.role) << 2) | (event.carried_by ? 2u : 0u) |
                         (event.undecodable ? 1u : 0u));
    varint::put(out, static_cast<std::uint64_t>(event.op_type));
    if (event.carried_by) varint::put_signed(out, *event.carried_by);
    varint::put(out, event.changes.size());
    for (const auto& change : event.changes) {
        const std::uint64_t code = static_cast<std::uint64_t>(change.component) * kKinds + static_cast<std::uint64_t>(change.kind);
        if (!change.other && !change.request_id) {
            varint::put(out, code);
        } else {
            varint::put(out, kExtended + code * 4 + (change.other ? 2u : 0u) + (change.request_id ? 1u : 0u));
        }
        if (!varint::put_wide(out, change.amount)) {
            return make_error("runs: an amount at block " + std::to_string(event.block_num) + " is out of range");
        }
        if (change.other) varint::put_text(out, *change.other);
        if (change.request_id) varint::put_signed(out, *change.request_id);
    }
    return true;
}

constexpr std::uint64_t kMaxInt = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());

// put_event's bytes back into `event` (its block set by the caller); the
// malformed part's name on error.
std::optional<std::string> read_event(varint::Reader& in, RunEvent& event) {
    const auto seq = in.next();
    const auto flags = in.next();
    const auto op_type = in.next();
    if (!seq || !flags || !op_type) return "event";
    if (*seq > kMaxInt || (*flags >> 2) >= kRoles || *op_type > kMaxInt) return "event out of range";
    event.block_seq = static_cast<std::int64_t>(*seq);
    event.role = static_cast<Role>(*flags >> 2);
    event.undecodable = (*flags & 1u) != 0;
    event.op_type = static_cast<int>(*op_type);
    if ((*flags & 2u) != 0) {
        const auto id = in.next_signed();
        if (!id || *id < std::numeric_limits<std::int32_t>::min() || *id > std::numeric_limits<std::int32_t>::max()) {
            return "carrying account";
        }
        event.carried_by = static_cast<std::int32_t>(*id);
    }
    const auto changes = in.next();
    if (!changes || *changes > kMaxChanges || *changes > in.left() / 2) return "change count";
    event.changes.reserve(*changes);
    for (std::uint64_t j = 0; j < *changes; ++j) {
        const auto header = in.next();
        if (!header || (*header >= kPlainLimit && *header < kExtended)) return "change header";
        const bool extended = *header >= kExtended;
        const std::uint64_t code = extended ? (*header - kExtended) / 4 : *header;
        if (code >= kPlainLimit) return "change header";
        RunChange& change = event.changes.emplace_back();
        change.component = static_cast<BalanceComponent>(code / kKinds);
        change.kind = static_cast<ChangeKind>(code % kKinds);
        const auto amount = in.next_signed();
        if (!amount) return "amount";
        change.amount = *amount;
        if (extended && ((*header - kExtended) & 2u) != 0) {
            auto other = in.text();
            if (!other) return "other account";
            change.other = std::move(*other);
        }
        if (extended && ((*header - kExtended) & 1u) != 0) {
            const auto request = in.next_signed();
            if (!request) return "request id";
            change.request_id = *request;
        }
    }
    return std::nullopt;
}

}  // namespace

Result<std::string> encode_run(const std::vector<RunEvent>& events, std::int64_t after) {
    std::string out;
    varint::put(out, events.size());
    std::int64_t previous = after;
    for (const auto& event : events) {
        if (event.block_num < previous || (event.block_num == previous && &event == &events.front())) {
            return make_error("runs: event at block " + std::to_string(event.block_num) + " out of order or negative");
        }
        varint::put(out, static_cast<std::uint64_t>(event.block_num - previous));
        previous = event.block_num;
        if (auto put = put_event(out, event); !put) return make_error(put.error());
    }
    return out;
}

Result<std::vector<RunEvent>> decode_run(std::string_view bytes, std::int64_t after) {
    varint::Reader in(bytes);
    const auto malformed = [](std::string what) -> Result<std::vector<RunEvent>> {
        return make_error("runs: malformed bytes (" + std::move(what) + ")");
    };
    const auto count = in.next();
    // Every event takes at least 5 bytes: a count beyond that is malformed.
    if (!count || *count > in.left() / 5) return malformed("count");
    std::vector<RunEvent> events;
    events.reserve(*count);
    std::int64_t block = after;
    for (std::uint64_t i = 0; i < *count; ++i) {
        RunEvent& event = events.emplace_back();
        const auto delta = in.next();
        if (!delta) return malformed("event");
        if (*delta > kMaxInt || (*delta == 0 && i == 0) ||
            block > std::numeric_limits<std::int32_t>::max() - static_cast<std::int64_t>(*delta)) {
            return malformed("event out of range");
        }
        block += static_cast<std::int64_t>(*delta);
        event.block_num = block;
        if (auto failed = read_event(in, event)) return malformed(*failed);
    }
    if (!in.done()) return malformed("trailing bytes");
    return events;
}

Result<std::string> encode_pending(const std::vector<PendingEvent>& events) {
    std::string out;
    varint::put(out, events.size());
    for (const auto& pending : events) {
        varint::put_signed(out, pending.account);
        if (auto put = put_event(out, pending.event); !put) return make_error(put.error());
    }
    return out;
}

Result<std::vector<PendingEvent>> decode_pending(std::string_view bytes, std::int64_t block) {
    varint::Reader in(bytes);
    const auto malformed = [](std::string what) -> Result<std::vector<PendingEvent>> {
        return make_error("pending balance changes: malformed bytes (" + std::move(what) + ")");
    };
    const auto count = in.next();
    if (!count || *count > in.left() / 5) return malformed("count");
    std::vector<PendingEvent> events;
    events.reserve(*count);
    for (std::uint64_t i = 0; i < *count; ++i) {
        PendingEvent& pending = events.emplace_back();
        const auto account = in.next_signed();
        if (!account || *account < std::numeric_limits<std::int32_t>::min() || *account > std::numeric_limits<std::int32_t>::max()) {
            return malformed("account");
        }
        pending.account = static_cast<std::int32_t>(*account);
        pending.event.block_num = block;
        if (auto failed = read_event(in, pending.event)) return malformed(*failed);
    }
    if (!in.done()) return malformed("trailing bytes");
    return events;
}

Result<BalanceState> run_state_at(std::string_view state, std::string_view changes, std::int64_t after, std::int64_t block) {
    auto start = BalanceState::decode(state);
    if (!start) return make_error("runs: the state after block " + std::to_string(after) + " is unreadable");
    auto events = decode_run(changes, after);
    if (!events) return make_error(events.error());
    for (const RunEvent& event : *events) {
        if (event.block_num > block) break;
        for (const RunChange& change : event.changes) start->apply(change.to_change(std::string()));
    }
    return std::move(*start);
}

}  // namespace wallet
