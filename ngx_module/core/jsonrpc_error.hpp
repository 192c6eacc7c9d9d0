// The router's JSON-RPC errors (decisions.md §5): its own error codes beside
// the standard ones of jsonrpc_writer.hpp, which renders them with the
// caller's id (null only when unknown) and error.data.request_id, which also
// appears in the log line that reports the error.
#pragma once

#include <string>

namespace jsonrpc {

namespace code {
inline constexpr int upstream_timeout = 1000;
inline constexpr int bad_upstream_response = 1100;
inline constexpr int upstream_unavailable = 1500;
inline constexpr int batch_too_large = 1600;
// The router's per-client and per-response budgets (JSONRPC_ROUTER.md).
inline constexpr int client_busy = 1700;
inline constexpr int response_too_large = 1800;
}  // namespace code

struct ErrorInfo {
    int code = 0;
    std::string message;
};

}  // namespace jsonrpc
