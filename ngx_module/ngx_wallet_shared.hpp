// nginx helpers both project modules use: a JSON response in one buffer,
// response headers, request headers, and the request body held in memory.
// C++ glue over nginx's C API; none of them throws.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ngx_wallet_nginx.hpp"

namespace wallet::ngx {

// Sends `body` as the whole application/json response; returns the rc for
// ngx_http_finalize_request (or for a content handler to return).
ngx_int_t send_json(ngx_http_request_t* r, ngx_uint_t status, std::string_view body);

// As send_json, without copying: `body` must stay alive until the request
// ends (the router's and the API's hot paths answer from a buffer the
// request owns).
ngx_int_t send_json_unowned(ngx_http_request_t* r, ngx_uint_t status, std::string_view body);

// Sends `body` (copied) as the whole response with a literal content type.
ngx_int_t send_text(ngx_http_request_t* r, ngx_uint_t status, std::string_view content_type, std::string_view body);

// Adds a response header; name and value are copied into r->pool.
bool add_response_header(ngx_http_request_t* r, std::string_view name, std::string_view value);
// The same without copies: name and value must stay until the header is
// sent (literals, configuration, or what the caller keeps for the request).
bool add_response_header_unowned(ngx_http_request_t* r, std::string_view name, std::string_view value);

// Every value of a request header (case-insensitive name), joined by ", "
// in arrival order; empty when absent.
std::string request_header(ngx_http_request_t* r, std::string_view name);

enum class BodyRead { Ok, TooLarge };

// The body read by ngx_http_read_client_request_body, copied out. A body
// that nginx spilled to a file, or that is larger than max_bytes, is refused
// without being read (disk reads would block the event loop).
BodyRead request_body(ngx_http_request_t* r, std::size_t max_bytes, std::string& out);
// The same without a copy when nginx holds the body in one buffer (as with
// request_body_in_single_buf): `out` views that buffer, or else `scratch`.
BodyRead request_body_view(ngx_http_request_t* r, std::size_t max_bytes, std::string& scratch, std::string_view& out);

inline ngx_str_t to_ngx_str(std::string_view s) {
    return ngx_str_t{s.size(), reinterpret_cast<u_char*>(const_cast<char*>(s.data()))};
}
inline std::string_view to_view(const ngx_str_t& s) {
    return std::string_view(reinterpret_cast<const char*>(s.data), s.len);
}

}  // namespace wallet::ngx
