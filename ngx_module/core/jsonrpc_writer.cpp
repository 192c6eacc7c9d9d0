#include "jsonrpc_writer.hpp"

#include "wallet/json_util.hpp"

namespace wallet::jsonrpc {

namespace {

// Everything of an error response up to the end of error.message.
std::string error_head(std::string_view id_json, int code, std::string_view message, std::size_t more) {
    std::string out;
    out.reserve(64 + message.size() + id_json.size() + more);
    out += R"({"jsonrpc":"2.0","error":{"code":)";
    out += std::to_string(code);
    out += R"(,"message":)";
    json::append_quoted(out, message);
    return out;
}

}  // namespace

std::string error_response(std::string_view id_json, int code, std::string_view message) {
    std::string out = error_head(id_json, code, message, 0);
    out += '}';
    append_response_id(out, id_json);
    return out;
}

std::string error_response(std::string_view id_json, int code, std::string_view message, std::string_view request_id) {
    std::string out = error_head(id_json, code, message, 32 + request_id.size());
    out += R"(,"data":{"request_id":)";
    json::append_quoted(out, request_id);
    out += "}}";
    append_response_id(out, id_json);
    return out;
}

std::string result_response(std::string_view id_json, std::string_view result_json) {
    std::string out(kResultHead);
    out.reserve(out.size() + result_json.size() + id_json.size() + 16);
    out += result_json;
    append_response_id(out, id_json);
    return out;
}

void append_response_id(std::string& out, std::string_view id_json) {
    out += R"(,"id":)";
    out += id_json.empty() ? std::string_view("null") : id_json;
    out += '}';
}

}  // namespace wallet::jsonrpc
