// RAII owners for the C handles the project uses. Every handle has exactly one
// owner; release happens in the deleter, never by hand.
#pragma once

#include <cstdlib>
#include <memory>

#include <curl/curl.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <libpq-fe.h>

namespace wallet {

struct JsonDeleter {
    void operator()(json_t* j) const noexcept { json_decref(j); }
};
struct PgConnDeleter {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct PgResultDeleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
struct CurlDeleter {
    void operator()(CURL* c) const noexcept { curl_easy_cleanup(c); }
};
struct CurlSlistDeleter {
    void operator()(curl_slist* s) const noexcept { curl_slist_free_all(s); }
};
struct RedisContextDeleter {
    void operator()(redisContext* c) const noexcept { redisFree(c); }
};
struct RedisReplyDeleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
// An async context is freed by hiredis itself after a disconnect callback; the
// owner frees it only while it is still connected.
struct RedisAsyncDeleter {
    void operator()(redisAsyncContext* c) const noexcept { redisAsyncFree(c); }
};
struct MallocDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};

using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;
using PgConnPtr = std::unique_ptr<PGconn, PgConnDeleter>;
using PgResultPtr = std::unique_ptr<PGresult, PgResultDeleter>;
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;
using CurlSlistPtr = std::unique_ptr<curl_slist, CurlSlistDeleter>;
using RedisContextPtr = std::unique_ptr<redisContext, RedisContextDeleter>;
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyDeleter>;
using RedisAsyncPtr = std::unique_ptr<redisAsyncContext, RedisAsyncDeleter>;
template <typename T>
using MallocPtr = std::unique_ptr<T, MallocDeleter>;

// A new reference owned by the caller (jansson "new" / "steal" semantics).
inline JsonPtr json_own(json_t* j) noexcept { return JsonPtr(j); }
// Take an extra reference to a borrowed value.
inline JsonPtr json_ref(json_t* j) noexcept { return JsonPtr(json_incref(j)); }

}  // namespace wallet
