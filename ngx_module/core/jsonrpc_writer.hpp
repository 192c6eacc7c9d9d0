// A small append-only JSON text writer for JSON-RPC responses. Responses are
// built as text (not through a DOM) because they are mostly rows copied from
// PostgreSQL or bytes forwarded from a target; every string goes through
// wallet::json::append_quoted. The one renderer of JSON-RPC error responses,
// for the API module and the router alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wallet::jsonrpc {

// Standard JSON-RPC 2.0 error codes (the router's own codes are in jsonrpc_error.hpp).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// {"jsonrpc":"2.0","error":{"code":..,"message":..},"id":<id_json>}.
// `id_json` is the request's id as JSON text, copied as it is so that ids of
// every JSON type come back byte for byte ("null" when unknown or empty).
std::string error_response(std::string_view id_json, int code, std::string_view message);

// The same with error.data.request_id, the id the router also logs
// (decisions.md §5): {..,"message":..,"data":{"request_id":..}},"id":..}.
std::string error_response(std::string_view id_json, int code, std::string_view message, std::string_view request_id);

// {"jsonrpc":"2.0","result":<result_json>,"id":<id_json>}.
std::string result_response(std::string_view id_json, std::string_view result_json);
// The same in pieces, for results written in place:
// kResultHead, the result, then append_response_id.
inline constexpr std::string_view kResultHead = R"({"jsonrpc":"2.0","result":)";
void append_response_id(std::string& out, std::string_view id_json);  // ,"id":<id_json>}

}  // namespace wallet::jsonrpc
