#include "ngx_wallet_shared.hpp"

#include <cstring>

namespace ngx_wallet {

bool request_body_string(ngx_http_request_t* r, std::string& out) {
    out.clear();
    if (r->request_body == nullptr) return true;
    if (r->request_body->temp_file != nullptr) return false;
    for (ngx_chain_t* cl = r->request_body->bufs; cl != nullptr; cl = cl->next) {
        ngx_buf_t* b = cl->buf;
        if (b->in_file && !ngx_buf_in_memory(b)) return false;
        out.append(reinterpret_cast<const char*>(b->pos), static_cast<std::size_t>(b->last - b->pos));
    }
    return true;
}

bool add_header(ngx_http_request_t* r, std::string_view name, std::string_view value) {
    ngx_table_elt_t* h = static_cast<ngx_table_elt_t*>(ngx_list_push(&r->headers_out.headers));
    if (h == nullptr) return false;
    auto* mem = static_cast<u_char*>(ngx_pnalloc(r->pool, name.size() + value.size()));
    if (mem == nullptr) return false;
    std::memcpy(mem, name.data(), name.size());
    std::memcpy(mem + name.size(), value.data(), value.size());
    h->hash = 1;
    h->key = ngx_str_t{name.size(), mem};
    h->value = ngx_str_t{value.size(), mem + name.size()};
    return true;
}

ngx_int_t send_json(ngx_http_request_t* r, ngx_uint_t status, const std::string& body, bool copy) {
    static ngx_str_t json_type = ngx_string("application/json");
    r->headers_out.status = status;
    r->headers_out.content_type = json_type;
    r->headers_out.content_type_len = json_type.len;
    r->headers_out.content_length_n = static_cast<off_t>(body.size());
    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) return rc;
    ngx_buf_t* b = static_cast<ngx_buf_t*>(ngx_calloc_buf(r->pool));
    if (b == nullptr) return NGX_ERROR;
    u_char* data = reinterpret_cast<u_char*>(const_cast<char*>(body.data()));
    if (copy && !body.empty()) {
        data = static_cast<u_char*>(ngx_pnalloc(r->pool, body.size()));
        if (data == nullptr) return NGX_ERROR;
        std::memcpy(data, body.data(), body.size());
    }
    b->pos = data;
    b->last = data + body.size();
    b->memory = body.empty() ? 0 : 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out{b, nullptr};
    return ngx_http_output_filter(r, &out);
}

}  // namespace ngx_wallet
