#include "api_balances.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <tuple>
#include <utility>
#include <vector>

#include "jsonrpc_writer.hpp"
#include "wallet/balance_state.hpp"
#include "wallet/decimal.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"

namespace wallet::api {

namespace {

namespace col = balances_column;
using Units = Decimal::Units;
using C = BalanceComponent;

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
    if (is_null(rows, header, col::kN3)) return RpcError{jsonrpc::kInvalidParams, "unknown account"};
    if (!is_null(rows, header, col::kT3)) {
        return unavailable(std::string("the balance changes of block ") + PQgetvalue(rows, header, col::kT3) + " (" +
                           PQgetvalue(rows, header, col::kT4) + ") of " + query.account +
                           " cannot be read by this decoder version: a decoder that reads them must re-run the range");
    }
    return std::nullopt;
}

// A row of the statement in replay order: (block, block_seq, role code).
struct Step {
    std::int64_t block = 0;
    std::int64_t block_seq = 0;
    int role = 0;
    int row = 0;
    auto key() const { return std::tie(block, block_seq, role); }
};

std::string balances_json(const BalanceQuery& query, std::int64_t block, const BalanceState& state) {
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
        auto text = Decimal::from_units(state.value(component), precision).value().to_string(precision).value();
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
    int header = -1, snapshot = -1;
    std::vector<Step> steps;
    for (int row = 0; row < PQntuples(rows); ++row) {
        const std::int64_t kind = number(rows, row, col::kKind);
        if (kind == 0) {
            header = row;
        } else if (kind == 1) {
            snapshot = row;
        } else {
            const auto role = parse_role(PQgetvalue(rows, row, col::kT2));
            steps.push_back({number(rows, row, col::kN1), number(rows, row, col::kN2), role ? role_code(*role) : 0, row});
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
    BalanceState state;
    if (snapshot >= 0) {
        const auto bytes = bytes_of_hex(PQgetvalue(rows, snapshot, col::kT1));
        auto decoded = bytes ? BalanceState::decode(*bytes) : std::nullopt;
        if (!decoded) {
            answer.error = RpcError{jsonrpc::kInternalError, "internal error"};
            return answer;
        }
        state = std::move(*decoded);
    }
    std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.key() < b.key(); });
    for (const Step& step : steps) {
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
        for (const auto& change : *changes) {
            if (change.account == query.account) state.apply(change);
        }
    }
    answer.result = balances_json(query, number(rows, header, col::kN2), state);
    return answer;
}

}  // namespace wallet::api
