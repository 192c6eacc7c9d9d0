#include "api_request.hpp"

#include <algorithm>
#include <array>

#include "jsonrpc_json.hpp"
#include "jsonrpc_writer.hpp"
#include "wallet/account_name.hpp"
#include "wallet/decoder.hpp"

namespace wallet::api {

namespace {

constexpr std::string_view kPrefix = "wallet_history.";

struct MethodEntry {
    std::string_view name;  // without the prefix
    Method method;
};

constexpr std::array<MethodEntry, 10> kMethods = {{
    {"get_wallet_history", Method::GetWalletHistory},
    {"get_author_rewards", Method::GetAuthorRewards},
    {"get_curation_rewards", Method::GetCurationRewards},
    {"get_reward_totals", Method::GetRewardTotals},
    {"get_status", Method::GetStatus},
    {"get_methods", Method::GetMethods},
    {"get_balances", Method::GetBalances},
    {"get_balance_history", Method::GetBalanceHistory},
    {"get_balance_aggregation", Method::GetBalanceAggregation},
    {"get_delegations", Method::GetDelegations},
}};

RpcError invalid_params(std::string message) { return RpcError{jsonrpc::kInvalidParams, std::move(message)}; }

// Which parameters each method accepts; anything else is refused, so that a
// misspelt filter never silently widens a query.
bool accepts_param(Method method, std::string_view key) {
    switch (method) {
    case Method::GetWalletHistory:
        return key == "account" || key == "from" || key == "to" || key == "limit" || key == "cursor" ||
               key == "op_types" || key == "scope";
    case Method::GetAuthorRewards:
    case Method::GetCurationRewards:
        return key == "account" || key == "from" || key == "to" || key == "limit" || key == "cursor";
    case Method::GetRewardTotals:
        return key == "account" || key == "from" || key == "to" || key == "scope";
    case Method::GetBalances:
        return key == "account" || key == "block" || key == "time";
    case Method::GetBalanceHistory:
        return key == "account" || key == "component" || key == "from" || key == "to" || key == "limit" ||
               key == "cursor";
    case Method::GetBalanceAggregation:
        return key == "account" || key == "component" || key == "granularity" || key == "from" || key == "to";
    case Method::GetDelegations:
        return key == "account";
    case Method::GetStatus:
    case Method::GetMethods:
        return false;
    }
    return false;
}

bool is_paged(Method method) {
    return method == Method::GetWalletHistory || method == Method::GetAuthorRewards ||
           method == Method::GetCurationRewards;
}

using ::jsonrpc::JsonDocument;
using ::jsonrpc::JsonKind;

// A request needs three levels (envelope, params, op_types); far deeper
// nesting is refused while parsing, before any of it is read.
constexpr std::size_t kMaxRequestDepth = 64;

// The params object of a request; absent (or null) params read as {}.
struct Params {
    const JsonDocument& doc;
    std::optional<std::size_t> object;

    std::optional<std::size_t> member(std::string_view key) const {
        return object ? doc.member(*object, key) : std::nullopt;
    }
};

// Refuses a parameter `accepts` does not name.
template <class Accepts>
std::optional<RpcError> refuse_unknown(const Params& params, Accepts accepts) {
    if (!params.object) return std::nullopt;
    const JsonDocument& doc = params.doc;
    std::string scratch;
    std::size_t key = *params.object + 1;  // key, value, key, value ...
    for (std::uint32_t i = 0; i < doc.node(*params.object).count; ++i) {
        if (!accepts(doc.string_view_of(key, scratch))) return invalid_params("unknown parameter");
        key = doc.node(doc.node(key).next).next;
    }
    return std::nullopt;
}

std::optional<RpcError> read_timestamp(const Params& params, const char* key, std::optional<Timestamp>& out) {
    const JsonDocument& doc = params.doc;
    const auto value = params.member(key);
    if (!value) return std::nullopt;
    if (doc.kind(*value) != JsonKind::String) return invalid_params(std::string("invalid ") + key);
    auto parsed = Timestamp::parse(doc.string_value(*value));
    if (!parsed) return invalid_params(std::string("invalid ") + key);
    out = *parsed;
    return std::nullopt;
}

std::optional<RpcError> read_account(const Params& params, std::string& account) {
    const JsonDocument& doc = params.doc;
    const auto value = params.member("account");
    if (!value) return invalid_params("missing account");
    if (doc.kind(*value) != JsonKind::String) return invalid_params("invalid account");
    account = doc.string_value(*value);
    if (!is_valid_account_name(account)) return invalid_params("invalid account");
    return std::nullopt;
}

// get_balances: account and an optional block (a block number from 1) or
// time (as `from` is read).
std::optional<RpcError> read_balance_params(const Params& params, BalanceQuery& query) {
    if (auto error = read_account(params, query.account)) return error;
    if (const auto block = params.member("block")) {
        const auto n = params.doc.unsigned_integer(*block);
        if (!n || *n < 1 || *n > 2147483647) return invalid_params("invalid block");
        query.block = static_cast<std::int64_t>(*n);
    }
    if (auto error = read_timestamp(params, "time", query.time)) return error;
    if (query.block && query.time) return invalid_params("block and time together: give one");
    return std::nullopt;
}

// from (inclusive) and to (exclusive), each optional, from before to.
std::optional<RpcError> read_window(const Params& params, std::optional<Timestamp>& from, std::optional<Timestamp>& to) {
    if (auto error = read_timestamp(params, "from", from)) return error;
    if (auto error = read_timestamp(params, "to", to)) return error;
    if (from && to && *from >= *to) return invalid_params("invalid date range");
    return std::nullopt;
}

// get_balance_history and get_balance_aggregation: account, component,
// window, and the page (limit, cursor) or the granularity.
std::optional<RpcError> read_balance_history_params(Method method, const Params& params, const RequestLimits& limits,
                                                    const CursorCodec& cursors, BalanceHistoryQuery& query) {
    const JsonDocument& doc = params.doc;
    if (auto error = read_account(params, query.account)) return error;
    const auto component = params.member("component");
    if (!component) return invalid_params("missing component");
    const auto parsed = doc.kind(*component) == JsonKind::String ? parse_component(doc.string_value(*component))
                                                                 : std::nullopt;
    if (!parsed) return invalid_params("unknown component");
    query.component = *parsed;
    if (auto error = read_window(params, query.from, query.to)) return error;
    if (method == Method::GetBalanceAggregation) {
        const auto granularity = params.member("granularity");
        if (!granularity) return invalid_params("missing granularity");
        const std::string name = doc.kind(*granularity) == JsonKind::String ? doc.string_value(*granularity) : std::string();
        if (name == "day") {
            query.granularity = Granularity::Day;
        } else if (name == "month") {
            query.granularity = Granularity::Month;
        } else if (name == "year") {
            query.granularity = Granularity::Year;
        } else {
            return invalid_params("invalid granularity");
        }
        return std::nullopt;
    }
    query.limit = limits.default_limit;
    if (const auto limit = params.member("limit")) {
        // Unlike the spec's pages (clamped), a new method says so.
        const auto n = doc.unsigned_integer(*limit);
        if (!n || *n < 1) return invalid_params("invalid limit");
        if (*n > static_cast<std::uint64_t>(limits.max_limit)) {
            return invalid_params("limit above " + std::to_string(limits.max_limit));
        }
        query.limit = static_cast<std::int64_t>(*n);
    }
    // The cursor is checked last: its signature covers the query above.
    if (const auto cursor = params.member("cursor")) {
        if (doc.kind(*cursor) != JsonKind::String) return invalid_params("invalid cursor");
        auto position = cursors.decode(doc.string_value(*cursor), query.account, balance_history_fingerprint(query));
        if (!position) return invalid_params("invalid cursor");
        query.after = std::move(position).value();
    }
    return std::nullopt;
}

// A list of names: a non-empty array of at most `max` strings (else
// `invalid_list` / `too_many`), each one `valid` (else `invalid_item`),
// sorted and without repeats.
template <class Valid>
std::optional<RpcError> read_names(const JsonDocument& doc, std::size_t list, std::size_t max, const char* invalid_list,
                                   const std::string& too_many, Valid valid, const char* invalid_item,
                                   std::vector<std::string>& out) {
    if (doc.kind(list) != JsonKind::Array || doc.node(list).count == 0) return invalid_params(invalid_list);
    if (doc.node(list).count > max) return invalid_params(too_many);
    for (const std::size_t item : doc.children(list)) {
        if (doc.kind(item) != JsonKind::String) return invalid_params(invalid_list);
        std::string name = doc.string_value(item);
        if (!valid(name)) return invalid_params(invalid_item);
        out.push_back(std::move(name));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return std::nullopt;
}

// "wallet" (the default): spec 000's types; "all": every stored type.
std::optional<RpcError> read_scope(const Params& params, PageQuery& query) {
    const JsonDocument& doc = params.doc;
    if (const auto scope = params.member("scope")) {
        const std::string value = doc.kind(*scope) == JsonKind::String ? doc.string_value(*scope) : std::string();
        if (value != "wallet" && value != "all") return invalid_params("invalid scope");
        query.all_types = value == "all";
    }
    return std::nullopt;
}

std::optional<RpcError> read_op_types(const Params& params, const RequestLimits& limits, PageQuery& query) {
    const JsonDocument& doc = params.doc;
    if (const auto types = params.member("op_types")) {
        return read_names(doc, *types, static_cast<std::size_t>(limits.max_op_types), "invalid op_types",
                          "too many op_types", is_known_op_type, "unknown op_type", query.op_types);
    }
    return std::nullopt;
}

std::optional<RpcError> read_params(Method method, const Params& params, const RequestLimits& limits,
                                    const CursorCodec& cursors, Call& call) {
    PageQuery& query = call.page;
    const JsonDocument& doc = params.doc;
    if (auto error = refuse_unknown(params, [method](std::string_view key) { return accepts_param(method, key); })) {
        return error;
    }
    if (method == Method::GetStatus || method == Method::GetMethods) return std::nullopt;
    if (method == Method::GetBalances || method == Method::GetDelegations) return read_balance_params(params, call.balances);
    if (method == Method::GetBalanceHistory || method == Method::GetBalanceAggregation) {
        return read_balance_history_params(method, params, limits, cursors, call.history);
    }

    if (auto error = read_account(params, query.account)) return error;

    if (auto error = read_window(params, query.from, query.to)) return error;
    if (query.from && query.to && query.to->seconds() - query.from->seconds() > limits.max_range_days * 86400) {
        return invalid_params("date range too long");
    }
    if (auto error = read_scope(params, query)) return error;
    if (!is_paged(method)) return std::nullopt;

    query.limit = limits.default_limit;
    if (const auto limit = params.member("limit")) {
        // Any integer from 1 up is clamped to the maximum, however large.
        const auto n = doc.unsigned_integer(*limit);
        if (!n || *n < 1) return invalid_params("invalid limit");
        query.limit = static_cast<std::int64_t>(std::min<std::uint64_t>(*n, static_cast<std::uint64_t>(limits.max_limit)));
    }

    if (auto error = read_op_types(params, limits, query)) return error;
    if (method == Method::GetAuthorRewards) query.op_types = {"author_reward"};
    if (method == Method::GetCurationRewards) query.op_types = {"curation_reward"};

    // The cursor is checked last: its signature covers the query above.
    if (const auto cursor = params.member("cursor")) {
        if (doc.kind(*cursor) != JsonKind::String) return invalid_params("invalid cursor");
        auto position = cursors.decode(doc.string_value(*cursor), query.account, query_fingerprint(method, query));
        if (!position) return invalid_params("invalid cursor");
        query.after = std::move(position).value();
    }
    return std::nullopt;
}

}  // namespace

const std::vector<std::string_view>& method_names() {
    static const std::vector<std::string_view> names = {
        "wallet_history.get_wallet_history", "wallet_history.get_author_rewards",
        "wallet_history.get_curation_rewards", "wallet_history.get_reward_totals",
        "wallet_history.get_status",         "wallet_history.get_methods",
        "wallet_history.get_balances",       "wallet_history.get_balance_history",
        "wallet_history.get_balance_aggregation", "wallet_history.get_delegations",
    };
    return names;
}

// The decoder owns the list of wallet operation types and their virtual-ness.
bool is_known_op_type(std::string_view op_type) { return wallet::is_wallet_operation(op_type); }

bool is_virtual_op_type(std::string_view op_type) {
    return wallet::is_wallet_operation(op_type) && wallet::is_virtual_operation(op_type, false);
}

std::string query_fingerprint(Method method, const PageQuery& query) {
    std::string out = std::to_string(static_cast<int>(method));
    out += '|';
    out += query.from ? std::to_string(query.from->seconds()) : "-";
    out += '|';
    out += query.to ? std::to_string(query.to->seconds()) : "-";
    for (const auto& type : query.op_types) {
        out += '|';
        out += type;
    }
    // Only when it widens the page: default cursors stay what they were.
    if (query.all_types && query.op_types.empty()) out += "|scope=all";
    return out;
}

std::string_view granularity_name(Granularity granularity) {
    switch (granularity) {
    case Granularity::Day: return "day";
    case Granularity::Month: return "month";
    case Granularity::Year: return "year";
    }
    return "day";
}

std::string balance_history_fingerprint(const BalanceHistoryQuery& query) {
    std::string out = std::to_string(static_cast<int>(Method::GetBalanceHistory));
    out += '|';
    out += component_name(query.component);
    out += '|';
    out += query.from ? std::to_string(query.from->seconds()) : "-";
    out += '|';
    out += query.to ? std::to_string(query.to->seconds()) : "-";
    return out;
}

namespace {

// Every parameter of wallet_history.subscribe, in the order they are read.
std::optional<RpcError> read_subscribe_params(const Params& params, const RequestLimits& limits,
                                              std::int64_t max_accounts, const CursorCodec& cursors, PushRequest& out) {
    const JsonDocument& doc = params.doc;
    if (auto error = refuse_unknown(params, [](std::string_view name) {
            return name == "accounts" || name == "op_types" || name == "scope" || name == "irreversible_only" ||
                   name == "cursor";
        })) {
        return error;
    }
    const auto accounts = params.member("accounts");
    if (!accounts) return invalid_params("missing accounts");
    if (auto error = read_names(doc, *accounts, static_cast<std::size_t>(max_accounts), "invalid accounts",
                                "too many accounts (at most " + std::to_string(max_accounts) + ")",
                                [](std::string_view name) { return is_valid_account_name(name); }, "invalid account",
                                out.accounts)) {
        return error;
    }
    if (auto error = read_scope(params, out.filter)) return error;
    if (auto error = read_op_types(params, limits, out.filter)) return error;
    if (const auto irreversible = params.member("irreversible_only")) {
        const JsonKind kind = doc.kind(*irreversible);
        if (kind != JsonKind::True && kind != JsonKind::False) return invalid_params("invalid irreversible_only");
        out.irreversible_only = kind == JsonKind::True;
    }
    // A cursor of get_wallet_history (with the same op_types and scope) or
    // of a notification, made for one of the accounts: checked last, as
    // its signature covers the filter above.
    if (const auto cursor = params.member("cursor")) {
        if (doc.kind(*cursor) != JsonKind::String) return invalid_params("invalid cursor");
        const std::string text = doc.string_value(*cursor);
        const std::string fingerprint = query_fingerprint(Method::GetWalletHistory, out.filter);
        for (const auto& account : out.accounts) {
            auto position = cursors.decode(text, account, fingerprint);
            if (position) {
                out.after = std::move(position).value();
                out.after_account = account;
                break;
            }
        }
        if (!out.after) return invalid_params("invalid cursor");
    }
    return std::nullopt;
}

}  // namespace

bool names_push_method(std::string_view message) {
    return message.find("wallet_history.subscribe") != std::string_view::npos ||
           message.find("wallet_history.unsubscribe") != std::string_view::npos;
}

std::optional<PushRequest> parse_push_request(std::string_view body, const RequestLimits& limits,
                                              std::int64_t max_accounts, const CursorCodec& cursors) {
    JsonDocument doc;
    if (doc.parse(body, kMaxRequestDepth) != ::jsonrpc::JsonParseStatus::Ok || doc.has_duplicate_keys()) return std::nullopt;
    const std::size_t root = doc.root();
    if (doc.kind(root) != JsonKind::Object) return std::nullopt;  // batches are routed (and refused) as before
    const auto method = doc.member(root, "method");
    if (!method || doc.kind(*method) != JsonKind::String) return std::nullopt;
    const std::string name = doc.string_value(*method);
    PushRequest out;
    if (name == "wallet_history.subscribe") {
        out.kind = PushRequest::Kind::Subscribe;
    } else if (name == "wallet_history.unsubscribe") {
        out.kind = PushRequest::Kind::Unsubscribe;
    } else {
        return std::nullopt;
    }
    if (const auto id = doc.member(root, "id")) {
        const JsonKind kind = doc.kind(*id);
        if (kind != JsonKind::String && kind != JsonKind::Number && kind != JsonKind::Null) {
            out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
            return out;
        }
        out.id_json = std::string(doc.text(*id));
    }
    const auto version = doc.member(root, "jsonrpc");
    std::string scratch;
    if (!version || doc.kind(*version) != JsonKind::String || doc.string_view_of(*version, scratch) != "2.0") {
        out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
        return out;
    }
    auto params = doc.member(root, "params");
    if (params && doc.kind(*params) == JsonKind::Null) params.reset();
    if (params && doc.kind(*params) != JsonKind::Object) {
        out.error = invalid_params("invalid params");
        return out;
    }
    const Params p{doc, params};
    if (out.kind == PushRequest::Kind::Subscribe) {
        out.error = read_subscribe_params(p, limits, max_accounts, cursors, out);
        return out;
    }
    const auto subscription = p.member("subscription");
    if (params) {
        if (doc.node(*params).count != (subscription ? 1u : 0u)) {
            out.error = invalid_params("unknown parameter");
            return out;
        }
    }
    if (!subscription || doc.kind(*subscription) != JsonKind::String) {
        out.error = invalid_params(subscription ? "invalid subscription" : "missing subscription");
        return out;
    }
    out.subscription = doc.string_value(*subscription);
    return out;
}

ParsedRequest parse_request(std::string_view body, const RequestLimits& limits, const CursorCodec& cursors) {
    ParsedRequest out;
    JsonDocument doc;
    // Duplicate names would make a request mean what one reader or another
    // picks; they are refused like malformed JSON.
    if (doc.parse(body, kMaxRequestDepth) != ::jsonrpc::JsonParseStatus::Ok || doc.has_duplicate_keys()) {
        out.error = RpcError{jsonrpc::kParseError, "parse error"};
        return out;
    }
    const std::size_t root = doc.root();
    if (doc.kind(root) == JsonKind::Array) {
        out.error = RpcError{jsonrpc::kInvalidRequest, "batch requests are not supported"};
        return out;
    }
    if (doc.kind(root) != JsonKind::Object) {
        out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
        return out;
    }
    if (const auto id = doc.member(root, "id")) {
        const JsonKind kind = doc.kind(*id);
        if (kind != JsonKind::String && kind != JsonKind::Number && kind != JsonKind::Null) {
            out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
            return out;
        }
        out.id_json = std::string(doc.text(*id));  // validated JSON, echoed byte for byte
    }
    const auto version = doc.member(root, "jsonrpc");
    const auto method = doc.member(root, "method");
    std::string scratch;
    if (!version || doc.kind(*version) != JsonKind::String || doc.string_view_of(*version, scratch) != "2.0" ||
        !method || doc.kind(*method) != JsonKind::String) {
        out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
        return out;
    }
    const std::string_view name = doc.string_view_of(*method, scratch);
    std::optional<Method> found;
    if (name.substr(0, kPrefix.size()) == kPrefix) {
        for (const auto& entry : kMethods) {
            if (name.substr(kPrefix.size()) == entry.name) found = entry.method;
        }
    }
    if (!found) {
        out.error = RpcError{jsonrpc::kMethodNotFound, "method not found"};
        return out;
    }
    out.method = found;
    Call call;
    call.method = *found;
    auto params = doc.member(root, "params");
    if (params && doc.kind(*params) == JsonKind::Null) params.reset();
    if (params && doc.kind(*params) != JsonKind::Object) {
        out.error = invalid_params("invalid params");
        return out;
    }
    if (auto error = read_params(call.method, Params{doc, params}, limits, cursors, call)) {
        out.error = std::move(error);
        return out;
    }
    out.call = std::move(call);
    return out;
}

}  // namespace wallet::api
