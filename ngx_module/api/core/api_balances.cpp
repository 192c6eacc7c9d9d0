#include "api_balances.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "jsonrpc_writer.hpp"
#include "wallet/decimal.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"

namespace wallet::api {

namespace {

namespace col = balances_column;
using Units = Decimal::Units;
using C = BalanceComponent;

constexpr std::int64_t kSecondsPerDay = 86400;
constexpr std::int64_t kFirstDaySeconds = 1451606400;  // day 0 of wallet_balance_daily (migration 0017)

bool is_null(PGresult* rows, int row, int column) { return PQgetisnull(rows, row, column) != 0; }
std::int64_t number(PGresult* rows, int row, int column) { return std::strtoll(PQgetvalue(rows, row, column), nullptr, 10); }
std::optional<std::int64_t> optional_number(PGresult* rows, int row, int column) {
    if (is_null(rows, row, column)) return std::nullopt;
    return number(rows, row, column);
}

RpcError unavailable(std::string message) { return RpcError{kBalanceUnavailable, std::move(message)}; }

// The one row of the readiness checks (docs/wallet-history-api.md, get_balances).
std::optional<RpcError> check_readiness(const BalanceQuery& query, PGresult* rows, int header) {
    const auto indexed = optional_number(rows, header, col::kN1);
    if (!indexed) return unavailable("nothing is indexed yet");
    if (query.block && *query.block > *indexed) {
        return RpcError{jsonrpc::kInvalidParams, "block above indexed_block " + std::to_string(*indexed)};
    }
    const std::int64_t block = number(rows, header, col::kN2);
    const auto first = optional_number(rows, header, col::kN4);
    if (first != 1) {
        return unavailable("the store's history starts at block " + (first ? std::to_string(*first) : std::string("none")) +
                           ", not 1: a balance needs every block from 1");
    }
    if (const auto loading = optional_number(rows, header, col::kN5); loading && *loading <= block) {
        return unavailable("blocks from " + std::to_string(*loading) + " are still loading");
    }
    if (!is_null(rows, header, col::kT1) && number(rows, header, col::kT1) <= block) {
        return unavailable(std::string("blocks ") + PQgetvalue(rows, header, col::kT1) + ".." +
                           PQgetvalue(rows, header, col::kT2) +
                           " were loaded by an older decoder version: run wallet-backfill over them");
    }
    if (const auto missing = optional_number(rows, header, col::kN6)) {
        return unavailable("the balance sums lack the events of blocks up to " + std::to_string(*missing) +
                           " (stored before migration 0017): they need rebuilding");
    }
    if (is_null(rows, header, col::kN3)) return RpcError{jsonrpc::kInvalidParams, "unknown account"};
    if (!is_null(rows, header, col::kT3)) {
        return unavailable(std::string("the balance changes of block ") + PQgetvalue(rows, header, col::kT3) + " (" +
                           PQgetvalue(rows, header, col::kT4) + ") of " + query.account +
                           " cannot be read by this decoder version: a decoder that reads them must re-run the range");
    }
    return std::nullopt;
}

// The account's components replayed in time order: day sums as sums, the
// events of the replayed days change by change, with the state the
// stateful kinds need (docs/operations.md, "Balance changes").
class Replay {
public:
    explicit Replay(std::string account) : account_(std::move(account)) {}

    void add_day(int component, Units units) {
        if (component >= 0 && static_cast<std::size_t>(component) < kBalanceComponentCount) {
            values_[static_cast<std::size_t>(component)] += units;
        }
    }

    void apply(const BalanceChange& change) {
        if (change.account != account_) return;
        Units& value = at(change.component);
        const Units amount = change.amount.units();
        switch (change.kind) {
            case ChangeKind::add:
                value += amount;
                if (change.request_id && (change.component == C::savings_pending_amount_hive ||
                                          change.component == C::savings_pending_amount_hbd)) {
                    if (amount > 0) requests_[*change.request_id] = {change.component, amount};
                    if (amount < 0) requests_.erase(*change.request_id);
                }
                break;
            case ChangeKind::set: value = amount; break;
            case ChangeKind::delegation: {
                const bool out = change.component == C::delegated_vests;
                Units& pair = delegations_[{out, change.other.value_or("")}];
                const Units delta = amount - pair;
                // A decrease of the delegator's side waits for return_vesting_delegation.
                if (!out || delta > 0) value += delta;
                pair = amount;
                break;
            }
            case ChangeKind::savings_withdrawal_cancelled: {
                const auto request = change.request_id ? requests_.find(*change.request_id) : requests_.end();
                value += amount;
                if (request == requests_.end()) break;
                at(request->second.first) -= request->second.second;
                at(request->second.first == C::savings_pending_amount_hive ? C::hive_savings : C::hbd_savings) +=
                    request->second.second;
                requests_.erase(request);
                break;
            }
            case ChangeKind::power_down_step:
                if (at(C::withdrawn) >= at(C::to_withdraw) || at(C::vesting_shares) == 0) {
                    at(C::vesting_withdraw_rate) = at(C::to_withdraw) = at(C::withdrawn) = 0;
                }
                break;
        }
    }

    Units value(std::size_t component) const { return values_[component]; }

private:
    Units& at(C component) { return values_[static_cast<std::size_t>(component)]; }

    std::string account_;
    std::array<Units, kBalanceComponentCount> values_{};
    std::map<std::int64_t, std::pair<C, Units>> requests_;           // savings withdrawals in flight
    std::map<std::pair<bool, std::string>, Units> delegations_;       // (out, other account) -> VESTS
};

// A row of the statement in replay order: (day, block, block_seq, role code), sums first.
struct Step {
    std::int64_t day = 0;
    std::int64_t block = -1;  // -1: a day sum
    std::int64_t block_seq = 0;
    int role = 0;
    int row = 0;
    auto key() const { return std::tie(day, block, block_seq, role); }
};

std::string balances_json(const BalanceQuery& query, std::int64_t block, const Replay& replay) {
    std::string out = "{\"account\":";
    json::append_quoted(out, query.account);
    out += ",\"block\":" + std::to_string(block) + ",\"balances\":{";
    for (std::size_t index = 0; index < kBalanceComponentCount; ++index) {
        const auto component = static_cast<C>(index);
        if (index > 0) out += ',';
        out += '"';
        out += component_name(component);
        out += "\":";
        const int precision = component_precision(component);
        auto text = Decimal::from_units(replay.value(index), precision).value().to_string(precision).value();
        if (precision == 0) {
            out += text;
        } else {
            out += '"' + text + '"';
        }
    }
    return out + "}}";
}

}  // namespace

BalancesAnswer balances_answer(const BalanceQuery& query, PGresult* rows, const store::BalanceRules& rules) {
    BalancesAnswer answer;
    int header = -1;
    std::vector<Step> steps;
    for (int row = 0; row < PQntuples(rows); ++row) {
        const std::int64_t kind = number(rows, row, col::kKind);
        if (kind == 0) {
            header = row;
        } else if (kind == 1) {
            steps.push_back({number(rows, row, col::kN1), -1, 0, 0, row});
        } else {
            const std::int64_t seconds = number(rows, row, col::kN3) - kFirstDaySeconds;
            const std::int64_t day = (seconds - (seconds < 0 ? kSecondsPerDay - 1 : 0)) / kSecondsPerDay;
            const auto role = parse_role(PQgetvalue(rows, row, col::kT2));
            steps.push_back({day, number(rows, row, col::kN1), number(rows, row, col::kN2), role ? role_code(*role) : 0, row});
        }
    }
    if (header < 0) {
        answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
        return answer;
    }
    if (auto error = check_readiness(query, rows, header)) {
        answer.error = std::move(error);
        return answer;
    }
    std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.key() < b.key(); });
    Replay replay(query.account);
    for (const Step& step : steps) {
        if (step.block < 0) {
            replay.add_day(static_cast<int>(number(rows, step.row, col::kN2)), number(rows, step.row, col::kN3));
            continue;
        }
        WalletEvent event;
        event.account = PQgetvalue(rows, step.row, col::kT1);
        event.role = role_of_code(step.role).value_or(Role::Sender);
        event.op_type = PQgetvalue(rows, step.row, col::kT3);
        event.block_num = step.block;
        event.block_seq = step.block_seq;
        event.payload = std::make_shared<const std::string>(PQgetvalue(rows, step.row, col::kT4));
        auto changes = balance_changes(event, rules.assets, rules.forks);
        if (!changes) {
            // The writers list such events (wallet_balance_undecodable); a
            // carried change of another account's event is refused here.
            answer.error = unavailable("the balance changes of block " + std::to_string(step.block) + " (" +
                                       event.op_type + ") cannot be read by this decoder version");
            return answer;
        }
        for (const auto& change : *changes) replay.apply(change);
    }
    answer.result = balances_json(query, number(rows, header, col::kN2), replay);
    return answer;
}

}  // namespace wallet::api
