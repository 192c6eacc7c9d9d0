#include "jsonrpc_error.hpp"

#include "jsonrpc_json.hpp"
#include "wallet/json_util.hpp"

namespace jsonrpc {

std::string render_error(std::string_view id_json, int code, std::string_view message, std::string_view request_id) {
    std::string out;
    out.reserve(96 + message.size() + id_json.size() + request_id.size());
    out += "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":";
    out += std::to_string(code);
    out += ",\"message\":";
    wallet::json::append_quoted(out, message);
    out += ",\"data\":{\"request_id\":";
    wallet::json::append_quoted(out, request_id);
    out += "}},\"id\":";
    out += id_json.empty() ? std::string_view("null") : id_json;
    out += '}';
    return out;
}

}  // namespace jsonrpc
