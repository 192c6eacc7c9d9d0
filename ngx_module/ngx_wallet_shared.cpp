#include "ngx_wallet_shared.hpp"

#include <strings.h>

#include <cstring>

namespace wallet::ngx {

namespace {

u_char* pool_copy(ngx_pool_t* pool, std::string_view text) {
    auto* p = static_cast<u_char*>(ngx_pnalloc(pool, text.size() == 0 ? 1 : text.size()));
    if (p != nullptr && !text.empty()) ngx_memcpy(p, text.data(), text.size());
    return p;
}

// One buffer holds the whole body: borrowed from `body`, or copied into the pool.
// `content_type` is a literal (nginx keeps pointing at it).
ngx_int_t send_buffer(ngx_http_request_t* r, ngx_uint_t status, std::string_view content_type, std::string_view body,
                      bool copy) {
    r->headers_out.status = status;
    r->headers_out.content_type = to_ngx_str(content_type);
    r->headers_out.content_type_len = content_type.size();
    r->headers_out.content_type_lowcase = nullptr;
    r->headers_out.content_length_n = static_cast<off_t>(body.size());
    if (r->headers_out.content_length) {
        r->headers_out.content_length->hash = 0;
        r->headers_out.content_length = nullptr;
    }
    ngx_buf_t* b = nullptr;
    if (copy || body.empty()) {
        b = ngx_create_temp_buf(r->pool, body.empty() ? 1 : body.size());
        if (b == nullptr) return NGX_ERROR;
        b->last = ngx_cpymem(b->pos, body.data(), body.size());
    } else {
        b = static_cast<ngx_buf_t*>(ngx_calloc_buf(r->pool));
        if (b == nullptr) return NGX_ERROR;
        b->pos = reinterpret_cast<u_char*>(const_cast<char*>(body.data()));
        b->last = b->pos + body.size();
        b->memory = 1;
    }
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out{b, nullptr};
    const ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) return rc;
    return ngx_http_output_filter(r, &out);
}

constexpr std::string_view kJson = "application/json";

}  // namespace

ngx_int_t send_json(ngx_http_request_t* r, ngx_uint_t status, std::string_view body) {
    return send_buffer(r, status, kJson, body, true);
}

ngx_int_t send_json_unowned(ngx_http_request_t* r, ngx_uint_t status, std::string_view body) {
    return send_buffer(r, status, kJson, body, false);
}

ngx_int_t send_text(ngx_http_request_t* r, ngx_uint_t status, std::string_view content_type, std::string_view body) {
    return send_buffer(r, status, content_type, body, true);
}

bool add_response_header(ngx_http_request_t* r, std::string_view name, std::string_view value) {
    auto* h = static_cast<ngx_table_elt_t*>(ngx_list_push(&r->headers_out.headers));
    if (h == nullptr) return false;
    h->hash = 1;
    h->key.data = pool_copy(r->pool, name);
    h->key.len = name.size();
    h->value.data = pool_copy(r->pool, value);
    h->value.len = value.size();
    return h->key.data != nullptr && h->value.data != nullptr;
}

bool add_response_header_unowned(ngx_http_request_t* r, std::string_view name, std::string_view value) {
    auto* h = static_cast<ngx_table_elt_t*>(ngx_list_push(&r->headers_out.headers));
    if (h == nullptr) return false;
    h->hash = 1;
    h->key = to_ngx_str(name);
    h->value = to_ngx_str(value);
    return true;
}

std::string request_header(ngx_http_request_t* r, std::string_view name) {
    std::string out;
    ngx_list_part_t* part = &r->headers_in.headers.part;
    auto* headers = static_cast<ngx_table_elt_t*>(part->elts);
    for (ngx_uint_t i = 0;; ++i) {
        if (i >= part->nelts) {
            if (part->next == nullptr) break;
            part = part->next;
            headers = static_cast<ngx_table_elt_t*>(part->elts);
            i = 0;
        }
        const ngx_table_elt_t& h = headers[i];
        if (h.key.len == name.size() &&
            ngx_strncasecmp(h.key.data, reinterpret_cast<u_char*>(const_cast<char*>(name.data())), name.size()) == 0) {
            if (!out.empty()) out += ", ";
            out.append(reinterpret_cast<const char*>(h.value.data), h.value.len);
        }
    }
    return out;
}

BodyRead request_body_view(ngx_http_request_t* r, std::size_t max_bytes, std::string& scratch, std::string_view& out) {
    out = {};
    scratch.clear();
    if (r->request_body == nullptr) return BodyRead::Ok;
    ngx_chain_t* bufs = r->request_body->bufs;
    for (ngx_chain_t* cl = bufs; cl != nullptr; cl = cl->next) {
        ngx_buf_t* b = cl->buf;
        if (b->in_file && !ngx_buf_in_memory(b)) return BodyRead::TooLarge;
        const auto size = static_cast<std::size_t>(b->last - b->pos);
        if (scratch.size() + size > max_bytes) return BodyRead::TooLarge;
        if (cl == bufs && cl->next == nullptr) {  // one buffer: read in place
            out = {reinterpret_cast<const char*>(b->pos), size};
            return BodyRead::Ok;
        }
        scratch.append(reinterpret_cast<const char*>(b->pos), size);
    }
    out = scratch;
    return BodyRead::Ok;
}

BodyRead request_body(ngx_http_request_t* r, std::size_t max_bytes, std::string& out) {
    std::string_view body;
    const BodyRead read = request_body_view(r, max_bytes, out, body);
    if (read == BodyRead::Ok && body.data() != out.data()) out.assign(body);
    return read;
}

}  // namespace wallet::ngx
