// JSON-RPC parameters converted the way hived converts them (fc::variant),
// failing with the error objects hived gives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <jansson.h>

namespace sim {

struct RpcError {
    int code;
    std::string message;
};

// hived's json_rpc_plugin codes.
inline constexpr int kServerError = -32000;
inline constexpr int kNoParams = -32001;
inline constexpr int kParseParamsError = -32002;
inline constexpr int kErrorDuringCall = -32003;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kParseError = -32700;

// A failed FC_ASSERT inside a method: -32003 "Assert Exception:<expression>: <message>".
RpcError assert_failed(std::string_view expression, std::string_view message);
// fc's name of a value's type, as in "Invalid cast from object_type to Array".
std::string_view fc_type_name(const json_t* value);

// Conversions; absent (nullptr) and null give 0 / false / "".
std::optional<RpcError> to_uint64(const json_t* value, std::uint64_t& out);
std::optional<RpcError> to_uint32(const json_t* value, std::uint32_t& out);  // truncates, as fc does
std::optional<RpcError> to_bool(const json_t* value, bool& out);
// An account name (fixed_string<16>).
std::optional<RpcError> to_account(const json_t* value, std::string& out);

// An optional member: absent and null mean "not given".
template <typename T, typename Convert>
std::optional<RpcError> optional_member(const json_t* object, const char* key, std::optional<T>& out, Convert convert) {
    const json_t* value = json_object_get(object, key);
    if (value == nullptr || json_is_null(value)) return std::nullopt;
    T converted{};
    if (auto error = convert(value, converted)) return error;
    out = converted;
    return std::nullopt;
}

// Arguments of a named-parameter API: an object (absent params: {}).
std::optional<RpcError> as_object_args(const json_t* params);
// Arguments of condenser_api: an array.
std::optional<RpcError> as_array_args(const json_t* params);
// condenser_api's CHECK_ARG_SIZE.
std::optional<RpcError> check_arg_count(const json_t* args, std::size_t expected);

}  // namespace sim
