// Helpers both of the project's nginx modules use: the request body as one
// string, JSON responses, response headers. C++ glue over nginx's C API; none
// of them throws.
#pragma once

#include <string>
#include <string_view>

#include "ngx_wallet_nginx.hpp"

namespace ngx_wallet {

// Copies the in-memory request body into `out`. False when (part of) it was
// spilled to a temporary file (client_body_buffer_size smaller than the limit).
bool request_body_string(ngx_http_request_t* r, std::string& out);

// Adds a response header; the value is copied into the request pool.
bool add_header(ngx_http_request_t* r, std::string_view name, std::string_view value);

// Sends `body` as an application/json response; the caller finalizes the
// request with the returned code. `body` must stay alive until the request
// ends (it is referenced, not copied, when `copy` is false).
ngx_int_t send_json(ngx_http_request_t* r, ngx_uint_t status, const std::string& body, bool copy = true);

inline ngx_str_t to_ngx_str(std::string_view s) {
    return ngx_str_t{s.size(), reinterpret_cast<u_char*>(const_cast<char*>(s.data()))};
}
inline std::string_view to_view(const ngx_str_t& s) {
    return std::string_view(reinterpret_cast<const char*>(s.data), s.len);
}

}  // namespace ngx_wallet
