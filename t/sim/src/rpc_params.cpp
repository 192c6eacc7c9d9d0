#include "rpc_params.hpp"

#include <charconv>

namespace sim {

RpcError assert_failed(std::string_view expression, std::string_view message) {
    return {kErrorDuringCall, "Assert Exception:" + std::string(expression) + ": " + std::string(message)};
}

std::string_view fc_type_name(const json_t* value) {
    switch (json_typeof(value)) {
        case JSON_OBJECT: return "object_type";
        case JSON_ARRAY: return "array_type";
        case JSON_STRING: return "string_type";
        case JSON_INTEGER: return json_integer_value(value) < 0 ? "int64_type" : "uint64_type";
        case JSON_REAL: return "double_type";
        case JSON_TRUE:
        case JSON_FALSE: return "bool_type";
        case JSON_NULL: return "null_type";
    }
    return "null_type";
}

std::optional<RpcError> to_uint64(const json_t* value, std::uint64_t& out) {
    if (value == nullptr || json_is_null(value)) {
        out = 0;
        return std::nullopt;
    }
    if (json_is_integer(value)) {
        out = static_cast<std::uint64_t>(json_integer_value(value));
        return std::nullopt;
    }
    if (json_is_real(value)) {
        out = static_cast<std::uint64_t>(json_real_value(value));
        return std::nullopt;
    }
    if (json_is_boolean(value)) {
        out = json_is_true(value) ? 1 : 0;
        return std::nullopt;
    }
    if (json_is_string(value)) {
        // As boost::lexical_cast<uint64_t>: digits, an optional sign, negatives wrap.
        std::string_view text = json_string_value(value);
        bool negative = false;
        if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
            negative = text.front() == '-';
            text.remove_prefix(1);
        }
        std::uint64_t number = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
        if (text.empty() || error != std::errc() || end != text.data() + text.size())
            return RpcError{kServerError, "Parse Error:Couldn't parse uint64_t"};
        out = negative ? ~number + 1 : number;
        return std::nullopt;
    }
    return RpcError{kServerError, "Bad Cast:Invalid cast from " + std::string(fc_type_name(value)) + " to uint64"};
}

std::optional<RpcError> to_uint32(const json_t* value, std::uint32_t& out) {
    std::uint64_t wide = 0;
    if (auto error = to_uint64(value, wide)) return error;
    out = static_cast<std::uint32_t>(wide);
    return std::nullopt;
}

std::optional<RpcError> to_bool(const json_t* value, bool& out) {
    if (value == nullptr || json_is_null(value)) {
        out = false;
        return std::nullopt;
    }
    if (json_is_boolean(value)) {
        out = json_is_true(value);
        return std::nullopt;
    }
    if (json_is_integer(value)) {
        out = json_integer_value(value) != 0;
        return std::nullopt;
    }
    if (json_is_real(value)) {
        out = json_real_value(value) != 0.0;
        return std::nullopt;
    }
    if (json_is_string(value)) {
        std::string_view text = json_string_value(value);
        if (text == "true" || text == "false") {
            out = text == "true";
            return std::nullopt;
        }
        return RpcError{kServerError,
                        "Bad Cast:Cannot convert string to bool (only \"true\" or \"false\" can be converted)"};
    }
    return RpcError{kServerError, "Bad Cast:Invalid cast from " + std::string(fc_type_name(value)) + " to bool"};
}

std::optional<RpcError> to_account(const json_t* value, std::string& out) {
    if (value == nullptr || json_is_null(value)) {
        out.clear();
        return std::nullopt;
    }
    if (json_is_string(value)) {
        out = json_string_value(value);
    } else if (json_is_integer(value)) {
        out = std::to_string(json_integer_value(value));
    } else {
        return RpcError{kServerError, "Bad Cast:Invalid cast from " + std::string(fc_type_name(value)) + " to string"};
    }
    if (out.size() > 16)
        return assert_failed("in_len <= sizeof(data)", "Input too large: `" + out + "` (" + std::to_string(out.size()) +
                                                           ") for fixed size string: (16)");
    return std::nullopt;
}

std::optional<RpcError> as_object_args(const json_t* params) {
    if (params == nullptr || json_is_object(params)) return std::nullopt;
    return RpcError{kServerError, "Bad Cast:Invalid cast from " + std::string(fc_type_name(params)) + " to Object"};
}

std::optional<RpcError> as_array_args(const json_t* params) {
    if (params != nullptr && json_is_array(params)) return std::nullopt;
    return RpcError{kServerError, "Bad Cast:Invalid cast from " +
                                      std::string(params == nullptr ? "object_type" : fc_type_name(params)) +
                                      " to Array"};
}

std::optional<RpcError> check_arg_count(const json_t* args, std::size_t expected) {
    if (json_array_size(args) == expected) return std::nullopt;
    return assert_failed("args.size() == " + std::to_string(expected),
                         "Expected #s argument(s), was " + std::to_string(json_array_size(args)));
}

}  // namespace sim
