// Parsing and validation of one wallet_history JSON-RPC request (spec 000,
// "Endpoints", "Errors", "Limits"; decisions.md section 3). Everything a
// client sends is checked here, before any database work: the envelope, the
// method, every parameter, the date window and the cursor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wallet/balance_change.hpp"
#include "wallet/cursor.hpp"
#include "wallet/timestamp.hpp"

namespace wallet::api {

enum class Method {
    GetWalletHistory,
    GetAuthorRewards,
    GetCurationRewards,
    GetRewardTotals,
    GetStatus,
    GetMethods,
    GetBalances,  // additive (issue 28): after the spec's methods, so their metrics keep their places
    GetBalanceHistory,
    GetBalanceAggregation,
    GetDelegations,
};

// Every method name, in the order get_methods lists them.
const std::vector<std::string_view>& method_names();

// The op types the indexer stores (spec 000, Events), valid in op_types.
bool is_known_op_type(std::string_view op_type);
// The virtual ones: their events show trx_id null.
bool is_virtual_op_type(std::string_view op_type);

struct RequestLimits {
    std::int64_t default_limit = 50;
    std::int64_t max_limit = 200;
    std::int64_t max_range_days = 366;
    std::int64_t max_op_types = 16;
};

// A page request of get_wallet_history, get_author_rewards or
// get_curation_rewards, already validated.
struct PageQuery {
    std::string account;
    std::optional<Timestamp> from;  // inclusive
    std::optional<Timestamp> to;    // exclusive
    std::int64_t limit = 50;
    std::optional<CursorPosition> after;  // the last row of the previous page
    std::vector<std::string> op_types;    // sorted, unique; empty = every type of the scope
    // `scope: "all"`: without op_types, every stored type (and producer_reward
    // in totals), not only spec 000's 15 (docs/operations.md).
    bool all_types = false;
};

// Binds a cursor to the query that made it: method, window and op types (not
// the page size, which a client may change between pages).
std::string query_fingerprint(Method method, const PageQuery& query);

struct RpcError {
    int code = 0;
    std::string message;
};

// get_balances: the account, at `block` or at the last block at or before
// `time` (neither: the indexed block; never both).
struct BalanceQuery {
    std::string account;
    std::optional<std::int64_t> block;
    std::optional<Timestamp> time;
};

// The calendar periods of get_balance_aggregation (UTC), named as
// PostgreSQL's date_trunc names them.
enum class Granularity { Day, Month, Year };
std::string_view granularity_name(Granularity granularity);

// get_balance_history (a page of one component's changes) and
// get_balance_aggregation (per period), already validated.
struct BalanceHistoryQuery {
    std::string account;
    BalanceComponent component = BalanceComponent::hive_balance;
    std::optional<Timestamp> from;  // inclusive
    std::optional<Timestamp> to;    // exclusive
    std::int64_t limit = 50;                  // history
    std::optional<CursorPosition> after;      // history: the last row of the previous page
    Granularity granularity = Granularity::Day;  // aggregation
};

// Binds a balance history cursor to its query: method, component and window.
std::string balance_history_fingerprint(const BalanceHistoryQuery& query);

struct Call {
    Method method = Method::GetStatus;
    PageQuery page;  // paged methods and get_reward_totals (account, from, to)
    BalanceQuery balances;  // get_balances and get_delegations
    BalanceHistoryQuery history;  // get_balance_history and get_balance_aggregation
};

struct ParsedRequest {
    std::string id_json = "null";  // the request's id as JSON text
    std::optional<Call> call;
    std::optional<RpcError> error;  // set exactly when call is not
    std::optional<Method> method;   // a known method, even when its params are invalid (metrics)
};

ParsedRequest parse_request(std::string_view body, const RequestLimits& limits, const CursorCodec& cursors);

// wallet_history.subscribe and wallet_history.unsubscribe, the push methods of
// the router's WebSocket endpoint (issue 29), already validated.
struct PushRequest {
    enum class Kind { Subscribe, Unsubscribe };
    Kind kind = Kind::Subscribe;
    std::string id_json = "null";
    std::vector<std::string> accounts;    // subscribe: sorted, unique
    PageQuery filter;                     // subscribe: op_types and all_types only
    std::optional<CursorPosition> after;  // subscribe: the cursor's position
    std::string after_account;            // the account the cursor was made for
    bool irreversible_only = false;       // subscribe: events once their block is irreversible
    std::string subscription;             // unsubscribe
    std::optional<RpcError> error;
};

// Whether a message may be a push call (a cheap look before parsing).
bool names_push_method(std::string_view message);
// None when the message is not one JSON-RPC call of a push method (it is
// routed as any other message).
std::optional<PushRequest> parse_push_request(std::string_view body, const RequestLimits& limits,
                                              std::int64_t max_accounts, const CursorCodec& cursors);

}  // namespace wallet::api
