#include "api_request.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>

#include <jansson.h>

#include "jsonrpc_writer.hpp"
#include "wallet/account_name.hpp"
#include "wallet/decoder.hpp"
#include "wallet/handles.hpp"

namespace wallet::api {

namespace {

constexpr std::string_view kPrefix = "wallet_history.";

struct MethodEntry {
    std::string_view name;  // without the prefix
    Method method;
};

constexpr std::array<MethodEntry, 6> kMethods = {{
    {"get_wallet_history", Method::GetWalletHistory},
    {"get_author_rewards", Method::GetAuthorRewards},
    {"get_curation_rewards", Method::GetCurationRewards},
    {"get_reward_totals", Method::GetRewardTotals},
    {"get_status", Method::GetStatus},
    {"get_methods", Method::GetMethods},
}};

RpcError invalid_params(std::string message) { return RpcError{jsonrpc::kInvalidParams, std::move(message)}; }

// Which parameters each method accepts; anything else is refused, so that a
// misspelt filter never silently widens a query.
bool accepts_param(Method method, std::string_view key) {
    switch (method) {
    case Method::GetWalletHistory:
        return key == "account" || key == "from" || key == "to" || key == "limit" || key == "cursor" ||
               key == "op_types";
    case Method::GetAuthorRewards:
    case Method::GetCurationRewards:
        return key == "account" || key == "from" || key == "to" || key == "limit" || key == "cursor";
    case Method::GetRewardTotals:
        return key == "account" || key == "from" || key == "to";
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

std::optional<RpcError> read_timestamp(json_t* params, const char* key, std::optional<Timestamp>& out) {
    json_t* value = json_object_get(params, key);
    if (value == nullptr) return std::nullopt;
    if (!json_is_string(value)) return invalid_params(std::string("invalid ") + key);
    auto parsed = Timestamp::parse(std::string_view(json_string_value(value), json_string_length(value)));
    if (!parsed) return invalid_params(std::string("invalid ") + key);
    out = *parsed;
    return std::nullopt;
}

std::optional<RpcError> read_params(Method method, json_t* params, const RequestLimits& limits,
                                    const CursorCodec& cursors, PageQuery& query) {
    const char* key = nullptr;
    json_t* value = nullptr;
    json_object_foreach(params, key, value) {
        if (!accepts_param(method, key)) return invalid_params("unknown parameter");
    }
    if (method == Method::GetStatus || method == Method::GetMethods) return std::nullopt;

    json_t* account = json_object_get(params, "account");
    if (account == nullptr) return invalid_params("missing account");
    if (!json_is_string(account)) return invalid_params("invalid account");
    query.account.assign(json_string_value(account), json_string_length(account));
    if (!is_valid_account_name(query.account)) return invalid_params("invalid account");

    if (auto error = read_timestamp(params, "from", query.from)) return error;
    if (auto error = read_timestamp(params, "to", query.to)) return error;
    if (query.from && query.to) {
        if (*query.from >= *query.to) return invalid_params("invalid date range");
        if (query.to->seconds() - query.from->seconds() > limits.max_range_days * 86400) {
            return invalid_params("date range too long");
        }
    }
    if (!is_paged(method)) return std::nullopt;

    query.limit = limits.default_limit;
    if (json_t* limit = json_object_get(params, "limit")) {
        if (!json_is_integer(limit)) return invalid_params("invalid limit");
        const json_int_t n = json_integer_value(limit);
        if (n < 1) return invalid_params("invalid limit");
        query.limit = std::min<std::int64_t>(n, limits.max_limit);
    }

    if (json_t* types = json_object_get(params, "op_types")) {
        if (!json_is_array(types) || json_array_size(types) == 0) return invalid_params("invalid op_types");
        if (json_array_size(types) > static_cast<std::size_t>(limits.max_op_types)) {
            return invalid_params("too many op_types");
        }
        std::size_t index = 0;
        json_t* type = nullptr;
        json_array_foreach(types, index, type) {
            if (!json_is_string(type)) return invalid_params("invalid op_types");
            std::string name(json_string_value(type), json_string_length(type));
            if (!is_known_op_type(name)) return invalid_params("unknown op_type");
            query.op_types.push_back(std::move(name));
        }
        std::sort(query.op_types.begin(), query.op_types.end());
        query.op_types.erase(std::unique(query.op_types.begin(), query.op_types.end()), query.op_types.end());
    }
    if (method == Method::GetAuthorRewards) query.op_types = {"author_reward"};
    if (method == Method::GetCurationRewards) query.op_types = {"curation_reward"};

    // The cursor is checked last: its signature covers the query above.
    if (json_t* cursor = json_object_get(params, "cursor")) {
        if (!json_is_string(cursor)) return invalid_params("invalid cursor");
        auto position = cursors.decode(std::string_view(json_string_value(cursor), json_string_length(cursor)),
                                       query.account, query_fingerprint(method, query));
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
    return out;
}

ParsedRequest parse_request(std::string_view body, const RequestLimits& limits, const CursorCodec& cursors) {
    ParsedRequest out;
    json_error_t parse_error;
    JsonPtr root(json_loadb(body.data(), body.size(), JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &parse_error));
    if (!root) {
        out.error = RpcError{jsonrpc::kParseError, "parse error"};
        return out;
    }
    if (json_is_array(root.get())) {
        out.error = RpcError{jsonrpc::kInvalidRequest, "batch requests are not supported"};
        return out;
    }
    if (!json_is_object(root.get())) {
        out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
        return out;
    }
    json_t* id = json_object_get(root.get(), "id");
    if (id != nullptr) {
        if (!(json_is_string(id) || json_is_number(id) || json_is_null(id))) {
            out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
            return out;
        }
        MallocPtr<char> text(json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT));
        if (text) out.id_json = text.get();
    }
    json_t* version = json_object_get(root.get(), "jsonrpc");
    json_t* method = json_object_get(root.get(), "method");
    if (!json_is_string(version) || std::string_view(json_string_value(version)) != "2.0" ||
        !json_is_string(method)) {
        out.error = RpcError{jsonrpc::kInvalidRequest, "invalid request"};
        return out;
    }
    std::string_view name(json_string_value(method), json_string_length(method));
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
    json_t* params = json_object_get(root.get(), "params");
    JsonPtr empty;
    if (params == nullptr || json_is_null(params)) {
        empty = json_own(json_object());
        params = empty.get();
    }
    if (!json_is_object(params)) {
        out.error = invalid_params("invalid params");
        return out;
    }
    Call call;
    call.method = *found;
    if (auto error = read_params(call.method, params, limits, cursors, call.page)) {
        out.error = std::move(error);
        return out;
    }
    out.call = std::move(call);
    return out;
}

}  // namespace wallet::api
